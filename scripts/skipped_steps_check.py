"""fp16's skipped steps estimated before a run against the counts GPU runs measured.

For every committed plan-suite run in fp16 whose document records how many optimizer steps
GradScaler skipped in its warm-up (``measured.skipped_warmup_steps``; traces/h100 and
traces/h200, plans_* folders), one row per model, batch and input shape: the counts measured
(every run of it, any plan, any lease), and :func:`snsim.torchsim.amp.estimate_skipped_steps`
(what ``snsim predict --amp fp16`` now assumes by default) with the largest gradient it
rests on. No GPU; about a second a model.

    PYTHONPATH=. python scripts/skipped_steps_check.py --csv docs/data/fp16_skipped_steps_s69.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import glob
import os
import sys
import time


def measured_counts(root="traces"):
    """``{(model, batch, input_shape): [count, ...]}`` of the committed fp16 plan runs."""
    from snsim.torchsim.validate import plan_runs
    out = collections.defaultdict(list)
    for folder in sorted(glob.glob(os.path.join(root, "h*", "plans_*"))):
        for run in plan_runs(os.path.dirname(folder), os.path.basename(folder)):
            m = run.get("measured") or {}
            if m.get("amp") != "fp16" or m.get("skipped_warmup_steps") is None:
                continue
            shape = tuple(run.get("input_shape") or ())
            out[(run["model"], int(run["batch"]), shape)].append(m["skipped_warmup_steps"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--root", default="traces")
    args = ap.parse_args(argv)
    from snsim.torchsim.amp import estimate_skipped_steps
    from snsim.torchsim.models import resolve_model
    rows = []
    for (model, batch, shape), counts in sorted(measured_counts(args.root).items()):
        spec = resolve_model(model, input_shape=shape or None)
        t0 = time.perf_counter()
        try:
            steps, top = estimate_skipped_steps(spec, batch)
            err = ""
        except Exception as e:      # one model that cannot run on this CPU: say so, go on
            steps, top, err = "", "", f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        rows.append({"model": model, "batch": batch,
                     "input_shape": "x".join(str(v) for v in shape),
                     "measured": " ".join(str(c) for c in counts), "estimated": steps,
                     "max_grad": f"{top:.4g}" if top != "" else "", "error": err,
                     "wall_s": round(time.perf_counter() - t0, 1)})
        print(",".join(str(v) for v in rows[-1].values()), flush=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
