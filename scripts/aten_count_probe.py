"""Which aten calls one training step of a plan makes on a real GPU, and the launching
thread's time in each: the ground truth for the op sequence a fake run records.

For each configuration ``MODEL:BATCH:OPTIMIZER:AMP:PLAN`` (as ``scripts/plan_step_probe.py``:
built, placed and transformed as ``snsim execute`` does it), after ``--warmup`` steps, ``--iters``
steps run under ``torch.profiler`` with CPU activity only; per aten op name (``aten::...``
events at any depth) the calls per step, and the self and total host microseconds per step.
``scripts/aten_count_compare.py`` sets these counts against the fake run's.

Writes ``aten_counts.csv`` under ``--out``.

    OUT=dir PYTHONPATH=. python3 scripts/aten_count_probe.py --out "$OUT" \\
        --configs torchvision:vit_b_16:2:sgd-momentum:bf16:checkpoint/modules=EncoderBlock
    # a dry run on the CPU:
    PYTHONPATH=. python scripts/aten_count_probe.py --out /tmp/probe --device cpu \\
        --configs torchvision:resnet18:2:sgd-momentum:none:plain --iters 1 --warmup 1
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # plan_step_probe


def run_one(config, warmup, iters, device="cuda"):
    import torch
    from torch.profiler import ProfilerActivity, profile
    from plan_step_probe import warmed_step
    from snsim.torchsim.record import train_step
    net, opt, x, y, kw = warmed_step(config, warmup, device)
    if device == "cuda":
        torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(iters):
            train_step(net, opt, x, y, **kw)
        if device == "cuda":
            torch.cuda.synchronize()
    rows = []
    for a in prof.key_averages():
        if a.key.startswith("aten::"):
            rows.append({"config": config, "op": a.key[6:], "calls_per_step": a.count / iters,
                         "self_host_us_per_step": a.self_cpu_time_total / iters,
                         "host_us_per_step": a.cpu_time_total / iters,
                         "torch": torch.__version__})
    return sorted(rows, key=lambda r: r["op"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--device", default="cuda", help="cuda; cpu: a dry run of the code")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for config in args.configs.split(","):
        got = run_one(config, args.warmup, args.iters, args.device)
        print(f"{config}: {sum(r['calls_per_step'] for r in got):.0f} aten calls per step, "
              f"{sum(r['self_host_us_per_step'] for r in got) / 1e3:.1f} ms self host",
              flush=True)
        rows += got
    with open(out / "aten_counts.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
