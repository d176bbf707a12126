"""The step-time gate's captures against the median of their configuration's processes: each
capture of ``--step-csv`` (``scripts/compare_step_time.py``'s, the prediction it holds) whose
configuration ``scripts/plan_step_probe.py`` measured again (``--probe`` CSVs, gc on, the
harness ``snsim capture`` and ``snsim execute`` time steps with) gets the median of the
captured step and the repeats, and the prediction's error against it beside its error against
the capture alone.

A CPU-bound step moves with the pace of the process that launches it (docs/VALIDATION.md,
"How repeatable a measured step is"): one capture is one draw. GPU-bound captures vary by
well under 1 % between processes and were not repeated.

    PYTHONPATH=. python scripts/step_repeats_compare.py --step-csv docs/data/step_time_h200.csv \\
        --probe traces/h200/probe_s18/plan_step_probe.csv \\
        traces/h200/probe_s18/cpu_bound/plan_step_probe.csv --csv docs/data/step_repeats_h200.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import gzip
import json
import os
import statistics
import sys


def capture_config(path):
    """``MODEL:BATCH:OPTIMIZER:AMP:PLAN`` of a capture (its provenance), as the probe names
    configurations."""
    with gzip.open(path, "rt") as f:
        prov = json.load(f)["provenance"]
    amp = prov.get("amp") or "none"
    plan = prov.get("plan") or prov.get("policy") or "plain"
    return f"{prov['model']}:{prov['batch']}:{prov.get('optimizer', 'sgd-momentum')}:{amp}:{plan}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step-csv", default="docs/data/step_time_h200.csv")
    ap.add_argument("--traces", default="traces", help="folder the captures' paths are under")
    ap.add_argument("--probe", nargs="+", required=True, help="plan_step_probe.csv files")
    ap.add_argument("--csv", required=True, help="output")
    args = ap.parse_args(argv)
    repeats = collections.defaultdict(list)
    for path in args.probe:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["collector"] == "on":
                    repeats[r["config"]].append(float(r["step_s"]) * 1e3)
    with open(args.step_csv, newline="") as f:
        steps = list(csv.DictReader(f))
    rows = []
    for s in steps:
        # compare_step_time names a capture by its folder and file: h200/x, cpu_bound/x
        path = next((p for p in (os.path.join(args.traces, s["capture"]),
                                 os.path.join(args.traces, "h200", s["capture"]))
                     if os.path.exists(p)), s["capture"])
        if not os.path.exists(path):
            print(f"{path}: no such capture", file=sys.stderr)
            return 1
        config = capture_config(path)
        meas, pred = float(s["meas_ms"]), float(s["table_host_ms"])
        got = repeats.get(config, [])
        med = statistics.median([meas] + got)
        rows.append({"capture": s["capture"], "group": s["group"], "config": config,
                     "captured_ms": f"{meas:.3f}",
                     "repeats_ms": ";".join(f"{v:.3f}" for v in got),
                     "median_ms": f"{med:.3f}", "pred_ms": f"{pred:.3f}",
                     "err_capture_pct": f"{100 * (pred - meas) / meas:.3f}",
                     "err_median_pct": f"{100 * (pred - med) / med:.3f}"})
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for col, label in (("err_capture_pct", "against each capture"),
                       ("err_median_pct", "against the median of capture and repeats")):
        e = [abs(float(r[col])) for r in rows]
        print(f"{label}: n={len(e)} median |err| {statistics.median(e):.2f} % "
              f"max |err| {max(e):.2f} %")
    print(f"captures with repeats: {sum(1 for r in rows if r['repeats_ms'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
