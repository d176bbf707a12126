"""Re-predict the fresh captures' executed plans with the current code (a re-prediction, not the
before-run figures ``snsim execute`` stored beside each run, which stay as they were).

For every ``NAME_bB_POLICY.json`` that ``scripts/plans_on_fresh_captures.sh`` wrote (default
folder traces/h200/plans_on_fresh_captures/), ``predict_plan`` (what ``snsim predict --policy``
does, CPU only) of ``torchvision:NAME`` at batch ``B`` under ``POLICY``, against the measured
run; writes one CSV row per run (with this machine's torch) and prints the mean and max |err|.

    PYTHONPATH=. python scripts/repredict_fresh.py --csv docs/data/fresh_repredicted_h200.csv
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import re

from snsim.torchsim.validate import FRESH_CAPTURES, pct_error

KEYS = ("peak_allocated_bytes", "peak_reserved_bytes", "step_time_s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=os.path.join("traces", "h200", FRESH_CAPTURES))
    ap.add_argument("--csv", required=True)
    args = ap.parse_args(argv)
    import torch
    from snsim.torchsim.execute import predict_plan
    rows = []
    for path in sorted(glob.glob(os.path.join(args.folder, "*_b*_*.json"))):
        m = re.fullmatch(r"(.+)_b(\d+)_([a-z_]+)\.json", os.path.basename(path))
        if m is None:
            continue
        name, batch, policy = m.group(1), int(m.group(2)), m.group(3)
        with open(path) as fh:
            measured = {r["quantity"]: r for r in json.load(fh)["rows"]}
        summary, _ = predict_plan(f"torchvision:{name}", batch, policy)
        row = {"run": f"{name}_b{batch}_{policy}", "policy": policy, "torch": torch.__version__}
        for key in KEYS:
            q = key.replace("peak_", "").replace("_bytes", "").replace("_s", "")
            meas = measured[key]["measured"]
            row[f"pred_{q}"], row[f"meas_{q}"] = summary[key], meas
            row[f"err_{q}_pct"] = round(pct_error(summary[key], meas), 3)
            row[f"stored_err_{q}_pct"] = measured[key]["error_pct"]
        rows.append(row)
        print(row["run"], {k: v for k, v in row.items() if k.startswith("err_")}, flush=True)
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    with open(args.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for q in ("allocated", "reserved", "step_time"):
        now = [abs(r[f"err_{q}_pct"]) for r in rows]
        before = [abs(r[f"stored_err_{q}_pct"]) for r in rows]
        print(f"{q}: re-predicted mean |err| {sum(now) / len(now):.2f}% (max {max(now):.2f}%), "
              f"stored before the runs {sum(before) / len(before):.2f}% (max {max(before):.2f}%) "
              f"over {len(rows)} runs")


if __name__ == "__main__":
    main()
