"""The SuperNeurons offloader's own host time inside a real network, measured in its hooks.

``scripts/offload_innet.py`` takes the offloader's in-network host cost from whole-phase walls
(``offload`` less ``plain``), which also hold whatever else makes the thread wait in that
phase. This probe times the offloader's Python itself: every call of ``Offloader.pack``
(forward: the saved-tensor hook, and for an offloaded tensor its D2H copy's issue) and
``Offloader.unpack`` (backward: the hook, the prefetches it issues and the compute stream's
wait) is clocked with ``time.perf_counter`` while the network trains as ``snsim execute``
runs it (``plan_gpu_busy.plan_step``). Per configuration and phase: the hooks' summed wall per
step, the number of calls, of copies out and of prefetches, and the phase walls of the
launching thread (GPU synchronised before each step only) of the plan and of the plain step;
the gauge of the process (``snsim gauge``) first.

    # on the GPU (about 1 minute for the default configurations):
    PYTHONPATH=. python3 scripts/offload_hook_walls.py --csv "$OUT/offload_hook_walls.csv"
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

CONFIGS = (   # (model, batch, optimizer, amp): held-out set 29's and the calibration networks
    ("torchvision:densenet121", 64, "sgd-momentum", "fp16"),
    ("torchvision:densenet121", 32, "sgd-momentum", "none"),
    ("torchvision:resnet50", 32, "sgd-momentum", "none"),
    ("torchvision:mobilenet_v2", 64, "sgd-momentum", "none"),
    ("torchvision:swin_s", 32, "adamw", "bf16"),
    ("torchvision:efficientnet_b3", 64, "sgd-momentum", "bf16"),
    ("torchvision:resnet152", 48, "sgd-momentum", "fp16"),
)
FIELDS = ("model", "batch", "optimizer", "amp", "policy", "gauge_add_us", "step_s",
          "host_F_s", "host_B_s", "host_U_s", "pack_wall_s", "n_pack", "n_copy_out",
          "unpack_wall_s", "n_unpack", "n_prefetch", "issue_wall_s")


class _Clock:
    """Summed ``perf_counter`` wall and calls of the wrapped methods, per name."""

    def __init__(self):
        self.wall = {}
        self.calls = {}

    def wrap(self, cls, name):
        fn = getattr(cls, name)
        clock = self

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                clock.wall[name] = clock.wall.get(name, 0.0) + time.perf_counter() - t0
                clock.calls[name] = clock.calls.get(name, 0) + 1
        setattr(cls, name, timed)

    def reset(self):
        self.wall.clear()
        self.calls.clear()


def measure(model, batch, optimizer, amp, policy, iters, clock):
    import torch
    sys.path.insert(0, "scripts")
    from plan_gpu_busy import plan_step
    step, sync = plan_step(model, batch, policy, "", optimizer, amp, "cuda")
    for _ in range(3):
        step()
    sync()
    ends = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(iters)]
    for a, b in ends:
        a.record()
        step()
        b.record()
    sync()
    step_s = statistics.median(a.elapsed_time(b) / 1e3 for a, b in ends)
    walls = {"F": [], "B": [], "U": []}
    hooks = []
    for _ in range(iters):
        sync()
        clock.reset()
        t = [time.perf_counter()]
        step(clock=t)
        for ph, a, b in zip("FBU", t, t[1:]):
            walls[ph].append(b - a)
        hooks.append((dict(clock.wall), dict(clock.calls)))
    sync()
    wall, calls = hooks[len(hooks) // 2]
    del step
    torch.cuda.empty_cache()
    return {"step_s": step_s, **{f"host_{p}_s": statistics.median(v) for p, v in walls.items()},
            "pack_wall_s": wall.get("pack", 0.0), "n_pack": calls.get("pack", 0),
            "n_copy_out": calls.get("_retire", 0),
            "unpack_wall_s": wall.get("unpack", 0.0), "n_unpack": calls.get("unpack", 0),
            "n_prefetch": calls.get("_issue", 0), "issue_wall_s": wall.get("_issue", 0.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--only", default="", help="models whose name contains this")
    args = ap.parse_args(argv)
    from snsim.torchsim.hostpace import gauge_add_s
    from snsim.torchsim.plans import Offloader
    clock = _Clock()
    for name in ("pack", "unpack", "_issue", "_retire"):
        clock.wrap(Offloader, name)
    gauge_us = gauge_add_s() * 1e6
    print(f"gauge {gauge_us:.2f} us", flush=True)
    rows = []
    for model, batch, optimizer, amp in CONFIGS:
        if args.only and args.only not in model:
            continue
        for policy in ("plain", "offload"):
            r = {"model": model, "batch": batch, "optimizer": optimizer, "amp": amp,
                 "policy": policy, "gauge_add_us": round(gauge_us, 3),
                 **measure(model, batch, optimizer, amp, policy, args.iters, clock)}
            rows.append(r)
            print(", ".join(f"{k}={r[k]:.4g}" if isinstance(r[k], float) else f"{k}={r[k]}"
                            for k in FIELDS), flush=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
