"""Where a plan's forward and backward spend the launching thread's time, by Python function
(``cProfile``), beside the same model's plain step.

For each ``MODEL:BATCH:POLICY:OPTIMIZER:AMP`` (``MODEL`` as ``scripts/plan_gpu_busy.py``
writes it, ``@size`` allowed), built and trained as that script does (``plan_step``), after
three warm-up steps: the wall of forward (with the loss) and of ``backward()`` over ``--steps``
steps, the GPU synchronised before each step only, once plain and once under ``cProfile``;
then the ``--top`` functions by own time and by cumulative time under the profiler. Written
to stdout.

    # on the GPU (about 30 s per configuration):
    PYTHONPATH=. python3 scripts/plan_host_pyprofile.py \\
        torchvision:resnet152:48:offload:sgd-momentum:fp16 > out.txt
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time


def run(cfg, steps, top):
    import torch
    from plan_gpu_busy import plan_step
    model, batch, policy, optimizer, amp = cfg.rsplit(":", 4)
    step, sync = plan_step(model, int(batch), policy, "", optimizer, amp, "cuda")
    for _ in range(3):
        step()
    sync()
    for label, prof in (("plain timing", None), ("under cProfile", cProfile.Profile())):
        walls = {"F": 0.0, "B": 0.0}
        for _ in range(steps):
            sync()
            clock = [time.perf_counter()]
            if prof is not None:
                prof.enable()
            step(clock=clock)
            if prof is not None:
                prof.disable()
            walls["F"] += clock[1] - clock[0]
            walls["B"] += clock[2] - clock[1]
        torch.cuda.synchronize()
        print(f"{cfg} {label}: forward {walls['F'] / steps * 1e3:.2f} ms, backward "
              f"{walls['B'] / steps * 1e3:.2f} ms per step")
    for key in ("tottime", "cumtime"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(top)
        print(f"--- {cfg}: top {top} by {key} over {steps} steps ---")
        print("\n".join(out.getvalue().splitlines()[6:]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    for cfg in args.configs:
        run(cfg, args.steps, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
