"""Re-predict the executed plan suite with the current code (a re-prediction, not the stored
before-run figures, which stay as they were in the suite files).

For every completed run of ``traces/h200/plans_table/`` (or ``--folder``), ``predict_plan``
(what ``snsim predict --policy`` does, CPU only) with the run's model, batch, plan options and
training setup (optimizer, its kernels, autocast); prints and writes one CSV row per run with
the stored before-run step time, the re-predicted one and the measured one, the re-predicted
peaks (to check that a step-time change left memory alone), and the mean / median |err| per
policy. Rows already in ``--csv`` are kept (a cut-short run resumes).

    PYTHONPATH=. python scripts/repredict_plans.py --csv docs/data/plans_repredicted_h200.csv
    PYTHONPATH=. python scripts/repredict_plans.py --folder plans_heldout \\
        --csv docs/data/plans_heldout_repredicted_h200.csv \\
        [--policies cpu_offload,superneurons,checkpoint]
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

FIELDS = ["run", "policy", "model", "batch", "setup", "options", "meas_step_s",
          "stored_pred_step_s", "stored_err_pct", "repred_step_s", "repred_err_pct",
          "repred_allocated_bytes", "repred_reserved_bytes", "meas_allocated_bytes",
          "repred_wall_s"]


def summary(rows):
    lines = []
    for pol in sorted({r["policy"] for r in rows}) + ["all"]:
        sel = [r for r in rows if pol == "all" or r["policy"] == pol]
        for key in ("stored_err_pct", "repred_err_pct"):
            e = [abs(float(r[key])) for r in sel]
            lines.append(f"{pol:<13} {key:<15} n={len(e):<3} mean |err| "
                         f"{statistics.mean(e):6.2f}%  median {statistics.median(e):6.2f}%  "
                         f"max {max(e):6.2f}%")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="traces/h200")
    ap.add_argument("--folder", default="plans_table")
    ap.add_argument("--policies", default="cpu_offload,superneurons,checkpoint")
    ap.add_argument("--csv", required=True)
    args = ap.parse_args(argv)
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import predict_plan
    from snsim.torchsim.validate import plan_runs
    done = {}
    if os.path.exists(args.csv):
        done = {r["run"]: r for r in csv.DictReader(open(args.csv, newline=""))}
    order = args.policies.split(",")
    runs = sorted((r for r in plan_runs(args.root, args.folder) if r["policy"] in order),
                  key=lambda r: (order.index(r["policy"]), r["name"]))
    rows = []
    for run in runs:
        if run["name"] in done:
            rows.append(done[run["name"]])
            continue
        opts = dict(o.split("=", 1) for o in run["options"])
        p, m = run["prediction"], run["measured"]
        t0 = time.time()
        # the run's whole training setup (optimizer, its kernels, autocast), as the suite ran it
        setup = TrainSetup.parse(p.get("optimizer", "sgd-momentum"),
                                 p.get("optimizer_impl", "foreach"), p.get("amp"))
        out, _ = predict_plan(run["model"], int(run["batch"]), run["policy"], options=opts,
                              optimizer=setup, input_shape=tuple(run["input_shape"]))
        meas = m["step_time_s"]
        row = {"run": run["name"], "policy": run["policy"], "model": run["model"],
               "batch": run["batch"], "setup": setup.slug or "-",
               "options": " ".join(run["options"]),
               "meas_step_s": f"{meas:.6g}", "stored_pred_step_s": f"{p['step_time_s']:.6g}",
               "stored_err_pct": f"{100 * (p['step_time_s'] / meas - 1):.2f}",
               "repred_step_s": f"{out['step_time_s']:.6g}",
               "repred_err_pct": f"{100 * (out['step_time_s'] / meas - 1):.2f}",
               "repred_allocated_bytes": out["peak_allocated_bytes"],
               "repred_reserved_bytes": out["peak_reserved_bytes"],
               "meas_allocated_bytes": m["peak_allocated_bytes"],
               "repred_wall_s": f"{time.time() - t0:.0f}"}
        rows.append(row)
        print(" ".join(f"{k}={row[k]}" for k in ("run", "meas_step_s", "stored_err_pct",
                                                   "repred_err_pct", "repred_wall_s")),
              flush=True)
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    if rows:
        print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
