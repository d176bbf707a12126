"""Leave one network out over ``scripts/host_innet_probe.py``'s measurements: the in-network
host costs fitted (``scripts/host_innet_fit.py``) without a network, its configurations'
phase walls predicted (:func:`snsim.torchsim.opcost.host_issue_s` of their CPU recordings)
-- the host model on networks it was not fitted to, in the probe's own lease of the machine
(no lease factor), so the CPU's speed is the same on both sides.

    PYTHONPATH=. python scripts/host_innet_loo.py traces/h200/profile_host/innet --cache /tmp/rec \
        --engine traces/h200/profile_host/engine/engine_p*.csv

The autograd engine's costs (``--engine``, :func:`host_innet_fit.read_engine`) are taken back
from the table's lease to the probe's (divided by :func:`host_innet_fit.lease_factor`).
"""
import argparse
import collections
import csv
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--engine", nargs="+", required=True,
                    help="scripts/engine_host_probe.py's CSVs (one per fresh process)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "scripts"))
    import host_innet_fit as fitting
    from host_by_family import modelled, recording

    from snsim.kernel_table import load_host_costs, load_kernel_table, read_host_innet
    from snsim.trace import open_text
    table = load_kernel_table("h200")
    base = dict(load_host_costs("h200"))
    folder = Path(args.folder)
    with open_text(folder / "host_innet_calls.csv", newline="") as f:
        calls = list(csv.DictReader(f))
    with open_text(folder / "host_innet_steps.csv", newline="") as f:
        steps = list(csv.DictReader(f))
    engine_s = fitting.read_engine(args.engine, table)
    lease = fitting.lease_factor(steps, table)
    engine_s = dict(engine_s, accumulate_s=engine_s["accumulate_s"] / lease,
                    cat_input_s=engine_s["cat_input_s"] / lease)
    errs = collections.defaultdict(list)
    for net in sorted({s["model"] for s in steps}):
        train = [s for s in steps if s["model"] != net]
        names = {s["config"] for s in train}
        ts, tn, reads, engine_n = fitting.table_issue_by_family(train, table, args.cache)
        rows = fitting.fit([r for r in calls if r["config"] in names], train, ts, tn, reads,
                           engine_n, engine_s)
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="") as f:
            w = csv.DictWriter(f, fieldnames=["kind", "name", "phase", "value", "n", "source"])
            w.writeheader()
            w.writerows(rows)
        costs = dict(base, innet=read_host_innet(f.name))
        os.unlink(f.name)
        for s in steps:
            if s["model"] != net:
                continue
            mod = modelled(recording(s, args.cache), table, costs)
            out, tot_m, tot_w = [], 0.0, 0.0
            for ph in "FBU":
                m = sum(v[0] for k, v in mod.items() if k[0] == ph)
                wall = float(s[f"wall_{ph}_s"])
                tot_m, tot_w = tot_m + m, tot_w + wall
                errs[ph].append(100 * (m - wall) / wall)
                out.append(f"{ph} {m * 1e3:6.2f}/{wall * 1e3:6.2f} {errs[ph][-1]:+6.1f}%")
            errs["F+B+U"].append(100 * (tot_m - tot_w) / tot_w)
            print(f"{s['config']:<32} {'  '.join(out)}  F+B+U {errs['F+B+U'][-1]:+6.1f}%",
                  flush=True)
    for k, v in errs.items():
        print(f"{k:<5} median {statistics.median(v):+.1f}%  median |err| "
              f"{statistics.median(map(abs, v)):.1f}%  max |err| {max(map(abs, v)):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
