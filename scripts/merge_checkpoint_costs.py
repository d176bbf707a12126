"""Add a run of ``scripts/steptime_probe.py ckpt`` to a preset's checkpoint cost table.

``configs/kernels/<preset>_checkpoint_costs.csv`` holds every probe run's rows, each with the
``source`` file it came from (the probe's CSV is committed under ``configs/kernels/probe/``);
:func:`snsim.kernel_table.fit_plan_host_costs` fits over all of them. Rows of a source already
in the table are replaced.

    PYTHONPATH=. python scripts/merge_checkpoint_costs.py \\
        configs/kernels/probe/checkpoint_costs_2.csv [--preset h200]
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

FIELDS = ["source", "name", "phase", "n", "layers_per_block", "saved_tensors", "ops", "args",
          "host_s"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("probe_csv")
    ap.add_argument("--preset", default="h200")
    args = ap.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(root, "configs", "kernels", f"{args.preset}_checkpoint_costs.csv")
    source = "probe/" + os.path.basename(args.probe_csv)
    rows = []
    if os.path.exists(out):
        rows = [r for r in csv.DictReader(open(out, newline="")) if r["source"] != source]
    for r in csv.DictReader(open(args.probe_csv, newline="")):
        rows.append({"source": source, "name": r["name"], "phase": r["phase"], "n": r["n"],
                     "layers_per_block": r.get("layers_per_block") or "1",
                     "saved_tensors": r["saved_tensors"], "ops": r.get("ops", ""),
                     "args": r.get("args", ""),
                     "host_s": r["host_s"]})
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows({k: r.get(k, "") for k in FIELDS} for r in rows)
    sys.path.insert(0, root)
    from snsim.kernel_table import fit_plan_host_costs, read_plan_host_rows
    fit = fit_plan_host_costs(read_plan_host_rows(out))
    print(f"{out}: {len(rows)} rows")
    for key, by in fit.items():
        print(f"  {key:<20} " + "  ".join(f"{p} {v * 1e6:8.3f} us" for p, v in by.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
