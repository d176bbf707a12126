"""Re-predict the executed plan suite with the current code (a re-prediction, not the stored
before-run figures, which stay as they were in the suite files).

For every completed run of ``traces/h200/plans_table/`` (or the ``--folder`` list),
``zero.predict_policy`` (what ``snsim predict --policy`` does, CPU only: ``predict_plan``, or
``predict_zero`` for a ZeRO plan) with the run's model, batch, plan options and training setup
(optimizer, its kernels, autocast, matmul precision, parameters' dtype), and ``save_on_cpu``
as the run's torch packs (:func:`run_torch`, :func:`snsim.torchsim.plans.pack_blocks_of`);
prints and writes one CSV row per run with the stored before-run step time and peaks, the
re-predicted ones and the measured ones, and the mean / median / max |err| per policy. Rows
already in ``--csv`` are kept (a cut-short run resumes).

    PYTHONPATH=. python scripts/repredict_plans.py --csv plans_repredicted.csv \\
        [--folder plans,plans_heldout] [--policies plain,cpu_offload,superneurons,checkpoint]
        [--gauge before|after] [--match REGEX]

``--gauge before``: each run predicted with the host pace its own process read before the model
was built (``measured.host_gauge_add_s_before``, :mod:`snsim.torchsim.hostpace`; what a user
passes as ``snsim predict --host-gauge-us`` after ``snsim gauge`` on their machine); runs
measured without a gauge are skipped. ``--gauge after``: the pace read after the timed steps
(``measured.host_gauge_add_s_after``: ``snsim execute`` gauges only after its steps since the
gauge's CUDA work before the model moved the driver's placement of later segments).
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

FIELDS = ["run", "policy", "model", "batch", "setup", "options", "meas_step_s", "stored_pred_step_s",
          "stored_err_pct", "repred_step_s", "repred_err_pct", "repred_wall_s", "folder",
          "meas_allocated_bytes", "stored_err_allocated_pct", "repred_err_allocated_pct",
          "meas_reserved_bytes", "stored_err_reserved_pct", "repred_err_reserved_pct",
          "host_gauge_add_us", "repred_fast_step_s", "repred_slow_step_s",
          "range_err_pct"]
# step time, then the peaks (rows written before the peaks were kept have none)
ERROR_COLUMNS = (("stored_err_pct", "repred_err_pct"),
                 ("stored_err_allocated_pct", "repred_err_allocated_pct"),
                 ("stored_err_reserved_pct", "repred_err_reserved_pct"))


def range_err_pct(lo, hi, meas):
    """How far ``meas`` lies outside ``[lo, hi]``, in % of ``meas`` (0 inside; negative: the
    range is below the run, as a step error's sign).

    >>> [round(range_err_pct(0.9, 1.2, m), 2) for m in (1.0, 1.5, 0.6)]
    [0.0, -20.0, 50.0]
    """
    if lo <= meas <= hi:
        return 0.0
    return 100 * ((hi if meas > hi else lo) / meas - 1)


def summary(rows):
    lines = []
    e = [abs(float(r["range_err_pct"])) for r in rows if r.get("range_err_pct")]
    if e:
        lines.append(f"host-pace range: {sum(1 for x in e if x == 0)} of {len(e)} runs inside "
                     f"[fast, slow]; |err| to the range mean {statistics.mean(e):.2f}%  "
                     f"median {statistics.median(e):.2f}%  max {max(e):.2f}%")
    for pol in sorted({r["policy"] for r in rows}) + ["all"]:
        sel = [r for r in rows if pol == "all" or r["policy"] == pol]
        for pair in ERROR_COLUMNS:
            for key in pair:
                e = [abs(float(r[key])) for r in sel if r.get(key)]
                if not e:
                    continue
                lines.append(f"{pol:<13} {key:<24} n={len(e):<3} mean |err| "
                             f"{statistics.mean(e):6.2f}%  median "
                             f"{statistics.median(e):6.2f}%  max {max(e):6.2f}%")
    return lines


def run_torch(run):
    """The torch release that ran ``run`` (its provenance), or None (the installed one)."""
    return (run.get("provenance") or {}).get("torch") or None


def _pct(pred, meas):
    return f"{100 * (pred / meas - 1):.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="traces/h200")
    ap.add_argument("--folder", default="plans_table",
                    help="plan-suite folders under --root, comma-separated")
    ap.add_argument("--policies", default="cpu_offload,superneurons,checkpoint",
                    help="comma-separated; plain counts too")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--gauge", default="none", choices=("none", "before", "after"),
                    help="the host pace to predict each run at (default none: the table's)")
    ap.add_argument("--match", default=None,
                    help="only the runs whose name this regular expression finds")
    ap.add_argument("--skipped", default="none", choices=("none", "measured", "estimated"),
                    help="the optimizer steps fp16's GradScaler skips first: none; measured "
                         "(the run's measured.skipped_warmup_steps, at most 3: 1, 2 and 3 "
                         "gave the same peaks on VGG-19-BN b64 recompute; no prediction, "
                         "since a user cannot know them before the run); estimated (what "
                         "snsim predict does by default: amp.estimate_skipped_steps)")
    args = ap.parse_args(argv)
    import re
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.validate import plan_runs
    from snsim.torchsim.zero import parse_plan, predict_policy
    done = {}
    if os.path.exists(args.csv):
        done = {r["run"]: r for r in csv.DictReader(open(args.csv, newline=""))}
    order = args.policies.split(",")
    runs = sorted(({**r, "folder": folder} for folder in args.folder.split(",")
                   for r in plan_runs(args.root, folder) if r["policy"] in order
                   and (args.match is None or re.search(args.match, r["name"]))),
                  key=lambda r: (order.index(r["policy"]), r["folder"], r["name"]))
    rows = []
    for run in runs:
        if run["name"] in done:
            rows.append(done[run["name"]])
            continue
        opts = dict(o.split("=", 1) for o in run["options"])
        p, m = run["prediction"], run["measured"]
        if p is None:   # no before-run prediction stored (the model could not be predicted)
            print(f"run={run['name']} skipped: no stored prediction", flush=True)
            continue
        gauge = m.get(f"host_gauge_add_s_{args.gauge}") if args.gauge != "none" else None
        if args.gauge != "none" and gauge is None:
            print(f"run={run['name']} skipped: measured without a gauge", flush=True)
            continue
        t0 = time.time()
        # the run's whole training setup: optimizer, its kernels, autocast, matmul precision,
        # the parameters' dtype
        skipped = 0                     # none, and every run without GradScaler
        if p.get("amp") == "fp16" and args.skipped == "measured":
            skipped = min(int(m.get("skipped_warmup_steps") or 0), 3)
        elif p.get("amp") == "fp16" and args.skipped == "estimated":
            skipped = None              # TrainSetup's default: snsim predict estimates it
        setup = TrainSetup.parse(p.get("optimizer", "sgd-momentum"),
                                 p.get("optimizer_impl") or "foreach", p.get("amp"), skipped,
                                 p.get("matmul_precision"), p.get("param_dtype"))
        out, _ = predict_policy(run["model"], int(run["batch"]),
                                parse_plan(run["policy"], opts, setup), optimizer=setup,
                                input_shape=tuple(run["input_shape"]),
                                torch_version=run_torch(run), host_gauge_s=gauge,
                                gpu=(run.get("provenance") or {}).get("hardware") or "h200")
        meas = m["step_time_s"]
        row = {"run": run["name"], "policy": run["policy"], "model": run["model"],
               "batch": run["batch"], "setup": setup.slug or "-",
               "options": " ".join(run["options"]),
               "meas_step_s": f"{meas:.6g}", "stored_pred_step_s": f"{p['step_time_s']:.6g}",
               "stored_err_pct": f"{100 * (p['step_time_s'] / meas - 1):.2f}",
               "repred_step_s": f"{out['step_time_s']:.6g}",
               "repred_err_pct": f"{100 * (out['step_time_s'] / meas - 1):.2f}",
               "repred_wall_s": f"{time.time() - t0:.0f}", "folder": run["folder"],
               "host_gauge_add_us": f"{gauge * 1e6:.3f}" if gauge is not None else ""}
        rng = out.get("step_time_host_range_s")
        if rng:     # the step at the preset's fast and slow groups' paces (no --gauge)
            lo, hi = min(rng[0], out["step_time_s"]), max(rng[1], out["step_time_s"])
            row.update(repred_fast_step_s=f"{rng[0]:.6g}", repred_slow_step_s=f"{rng[1]:.6g}",
                       range_err_pct=f"{range_err_pct(lo, hi, meas):.2f}")
        for q in ("allocated", "reserved"):
            key = f"peak_{q}_bytes"
            row[f"meas_{q}_bytes"] = m[key]
            row[f"stored_err_{q}_pct"] = _pct(p[key], m[key])
            row[f"repred_err_{q}_pct"] = _pct(out[key], m[key])
        rows.append(row)
        print(" ".join(f"{k}={row[k]}" for k in ("run", "meas_step_s", "stored_err_pct",
                                                   "repred_err_pct", "repred_err_allocated_pct",
                                                   "repred_err_reserved_pct", "repred_wall_s")),
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
