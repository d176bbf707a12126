"""Predicted (``snsim predict``, CPU only) against measured step time for every plain capture.

For each capture without a plan in the given folders, the model is recorded once under
FakeTensorMode and its op times are modelled three ways: the kernel table with the host as a
second resource (what ``snsim predict`` does when the preset has a table), the table without
the host (GPU time only) and the roofline (no table). Prints a markdown table and the
median / max |err| of each, split into captures of a network the in-network host model was
fitted on (``in_table``: ``scripts/host_innet_probe.py``'s ``DEFAULT_CONFIGS``) and the others,
and GPU- vs CPU-bound folders.

    PYTHONPATH=. python scripts/compare_step_time.py traces/h200 traces/h200/cpu_bound \\
        traces/h200/cpu_bound_heldout --table configs/kernels/h200.csv.gz \\
        --csv docs/data/step_time_h200.csv --cache /tmp/records --before old.csv

``--cache DIR`` keeps each capture's recording (pickled ops and marks) so a second run only
re-times them; ``--before CSV`` (an earlier run's ``--csv``, of older code) adds its
``table_host_err_pct`` as ``before_err_pct``. ``group`` is ``heldout`` for
``cpu_bound_heldout/``, ``cpu`` for ``cpu_bound/``, else ``gpu``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import pickle
import statistics
import sys
from pathlib import Path


def _captures(folders):
    for folder in folders:
        for path in sorted(Path(folder).glob("*.json.gz")):
            doc = json.load(gzip.open(path))
            prov = doc.get("provenance", {})
            if prov.get("policy") or not prov.get("model"):
                continue
            yield path, prov, doc["measured"]["step_time_s"]


def _zoo(name, batch, hw, table, meas):
    """The zoo twin's ``--framework pytorch`` step time (sum of its steps), when there is one."""
    from snsim.program_torch import build_torch_program
    from snsim.zoo import NETWORKS, build_network
    if name not in NETWORKS:
        return {}
    G = build_network(name, batch=batch, twin=True)
    out = {}
    for label, tab in (("zoo_table", table), ("zoo_roofline", "none")):
        if tab is None:
            continue
        t = sum(st.time_s for st in build_torch_program(G, hardware=hw,
                                                        kernel_table=tab).steps)
        out[f"{label}_ms"] = t * 1e3
        out[f"{label}_err_pct"] = 100 * (t - meas) / meas
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--table", default=None, help="kernel table (default: the preset's)")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--limit", type=int, default=0, help="only the first N captures")
    ap.add_argument("--cache", default=None, help="folder for the captures' recordings")
    ap.add_argument("--before", default=None, help="an earlier --csv: its errors as before")
    ap.add_argument("--before-commit", default="", help="the commit --before was made with")
    ap.add_argument("--no-zoo", action="store_true", help="skip the zoo twins")
    args = ap.parse_args(argv)

    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.opcost import op_times_s
    from snsim.torchsim.predict import record_fake

    hw = load_hardware(args.gpu)
    table = load_kernel_table(args.table or args.gpu)
    if table is None:
        print(f"no kernel table for {args.table or args.gpu}: roofline only", file=sys.stderr)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from host_innet_probe import DEFAULT_CONFIGS
    seen = {cfg.split(":")[1] for cfg in DEFAULT_CONFIGS.split(",")}
    before = {}
    if args.before:
        import csv
        with open(args.before, newline="") as f:
            before = {r["capture"]: float(r["table_host_err_pct"]) for r in csv.DictReader(f)}
    rows = []
    for i, (path, prov, meas) in enumerate(_captures(args.folders)):
        if args.limit and i >= args.limit:
            break
        spec = resolve_model(prov["model"], input_shape=tuple(prov["input_shape"]))
        cached = Path(args.cache) / f"{path.parent.name}__{path.name}.pkl" if args.cache \
            else None
        got = ()
        if cached is not None and cached.exists():
            with open(cached, "rb") as f:
                got = pickle.load(f)
        if len(got) != 4:   # a cache from before the gradient sums were kept: recorded again
            got = ()
        if got:
            ops, marks, host_sids, acc = got
        else:
            rec = record_fake(spec, prov["batch"], prov.get("optimizer", "sgd-momentum"))["rec"]
            ops, marks, host_sids = rec.ops, rec.marks, set(rec.excluded)
            acc = rec.accumulation_ops
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                with open(cached, "wb") as f:
                    pickle.dump((ops, marks, host_sids, acc), f)
        group = ("heldout" if path.parent.name == "cpu_bound_heldout" else
                 "cpu" if path.parent.name == "cpu_bound" else "gpu")
        row = {"capture": f"{path.parent.name}/{path.name}", "network": spec.name,
               "batch": prov["batch"], "bound": "cpu" if "cpu_bound" in str(path) else "gpu",
               "group": group, "in_table": spec.name in seen, "meas_ms": meas * 1e3}
        for label, tab, host in (("table_host", table, True), ("table_gpu", table, False),
                                 ("roofline", None, False)):
            if tab is None and label != "roofline":
                continue
            rep = {}
            # host_sids: a foreach Adam's step counters live on the host; their .item() does
            # not wait for the GPU (as snsim predict passes them)
            op_times_s(ops, hw, marks, table=tab, host=host, report=rep, host_sids=host_sids,
                       accumulations=acc)
            row[f"{label}_ms"] = rep["step_s"] * 1e3
            row[f"{label}_err_pct"] = 100 * (rep["step_s"] - meas) / meas
            if label == "table_host":
                for k in ("table_s", "fitted_s", "proxy_s", "roofline_s", "host_s", "wait_s"):
                    row["src_" + k[:-2] + "_ms"] = rep[k] * 1e3
        if row["capture"] in before:
            row["before_err_pct"] = before[row["capture"]]
            row["before_commit"] = args.before_commit
        if not args.no_zoo:
            row.update(_zoo(spec.name, prov["batch"], hw, table, meas))
        rows.append(row)
        print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), file=sys.stderr, flush=True)
    if not rows:
        print("no plain captures found", file=sys.stderr)
        return 1
    cols = list(dict.fromkeys(k for r in rows for k in r))
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(f"{r.get(c, ''):.2f}" if isinstance(r.get(c), float)
                                else str(r.get(c, "")) for c in cols) + " |")
    print()
    for label in ("table_host", "table_gpu", "roofline", "zoo_table", "zoo_roofline"):
        key = f"{label}_err_pct"
        if not any(key in r for r in rows):
            continue
        for name, sel in (("all", rows), ("gpu-bound", [r for r in rows if r["bound"] == "gpu"]),
                          ("cpu-bound", [r for r in rows if r["group"] == "cpu"]),
                          ("cpu-bound held out", [r for r in rows if r["group"] == "heldout"]),
                          ("network in table", [r for r in rows if r["in_table"]]),
                          ("network not in table", [r for r in rows if not r["in_table"]])):
            errs = [abs(r[key]) for r in sel if key in r]
            if errs:
                print(f"{label:<11} {name:<21} n={len(errs):<3} median |err| "
                      f"{statistics.median(errs):6.2f}%  max |err| {max(errs):6.2f}%")
    if args.csv:
        import pandas as pd
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
