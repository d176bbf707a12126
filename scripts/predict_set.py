"""Predict every run of a plan-suite set with the command users run, before the set runs.

For each run of ``snsim.torchsim.suite.PLAN_SETS[SET]``, ``snsim predict ... --format json``
(``snsim.cli.main`` with the run's model, batch, input shape, training setup and plan, and
``--torch-version`` left at its default unless given), one CSV row per run: the run's name
(``suite.run_name``), the predicted peaks and step, which torch ran the prediction and which
one it modelled, the reserved peak in a process that ran CUDA work before the model
(``peak_reserved_warm_process_bytes``, since session 36), the transformers installed (a Hugging Face model's code moves with it), what
its convolution workspaces rest on (measured, other batches or dtypes, neighbours, modelled), and
how long the prediction took, and with fp16 the optimizer steps GradScaler is predicted to
skip first (since session 68). Commit the CSV before the device runs the
set; ``scripts/probe_predict_compare.py``-style comparisons read it against the suite's
``summary.csv``.

    PYTHONPATH=. python scripts/predict_set.py heldout22 \\
        --csv traces/h200/plans_heldout22/predicted_before_run.csv
    PYTHONPATH=. python scripts/predict_set.py heldout33 --gpu h100 \\
        --csv traces/h100/plans_heldout33/predicted_after_run_h100_borrowed.csv
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import sys
import time
from pathlib import Path

FIELDS = ("run", "peak_allocated_bytes", "peak_reserved_bytes", "step_time_s", "feasible",
          "torch_version", "torch_modelled", "peak_reserved_warm_process_bytes",
          "transformers_version", "workspace_sources", "skipped_steps", "predict_wall_s",
          "argv")


def run_argv(run, torch_version=None, gpu="h200"):
    """``snsim predict`` arguments of a suite run."""
    argv = ["predict", "--model", run["model"], "--batch", str(run["batch"]), "--gpu", gpu,
            "--optimizer", run.get("optimizer", "sgd-momentum"),
            "--optimizer-impl", run.get("optimizer_impl", "foreach"),
            "--amp", run.get("amp") or "none", "--policy", run["policy"], "--format", "json"]
    if run.get("matmul_precision"):
        argv += ["--matmul-precision", run["matmul_precision"]]
    if run.get("param_dtype"):
        argv += ["--param-dtype", run["param_dtype"]]
    if run.get("input_shape"):
        argv += ["--input-shape", ",".join(str(v) for v in run["input_shape"])]
    for opt in run.get("options", []):
        argv += ["--option", opt]
    if torch_version:
        argv += ["--torch-version", torch_version]
    return argv


def main(argv=None):
    from snsim.cli import main as snsim_main
    from snsim.torchsim.suite import PLAN_SETS, run_name
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", choices=sorted(PLAN_SETS))
    ap.add_argument("--csv", required=True)
    ap.add_argument("--torch-version", default=None,
                    help="passed to snsim predict (default: its own default)")
    ap.add_argument("--gpu", default="h200", help="the hardware preset (default h200)")
    args = ap.parse_args(argv)
    rows = []
    for run in PLAN_SETS[args.set]:
        a = run_argv(run, args.torch_version, args.gpu)
        out = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out):
            rc = snsim_main(a)
        wall = time.perf_counter() - t0
        if rc not in (0, 3):
            print(f"{run_name(run)}: snsim predict exited {rc}", file=sys.stderr)
            continue
        r = json.loads(out.getvalue())
        rows.append({"run": run_name(run), **{k: r[k] for k in FIELDS[1:8]},
                     "transformers_version": r.get("libraries", {}).get("transformers", ""),
                     # which workspaces were measured and which guessed (snsim predict's own)
                     "workspace_sources": json.dumps(r.get("workspace_sources", {})),
                     # fp16: the optimizer steps GradScaler skips first, as predicted
                     "skipped_steps": r.get("skipped_steps", ""),
                     "predict_wall_s": round(wall, 1), "argv": " ".join(a[1:])})
        print(f"{rows[-1]['run']}: alloc {r['peak_allocated_bytes'] / 2**30:.3f} GiB, reserved "
              f"{r['peak_reserved_bytes'] / 2**30:.3f} GiB, step {r['step_time_s'] * 1e3:.1f} ms"
              f" ({wall:.0f} s)", flush=True)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
