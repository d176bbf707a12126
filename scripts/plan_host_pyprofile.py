"""Where a plan's forward and backward spend the launching thread's time, by Python function
(``cProfile``), beside the same model's plain step.

For each ``MODEL:BATCH:POLICY:OPTIMIZER:AMP`` (``MODEL`` as ``scripts/plan_gpu_busy.py``
writes it, ``@size`` allowed), built and trained as ``snsim execute`` runs it, after three
warm-up steps: the wall of forward (with the loss) and of ``backward()`` over ``--steps``
steps, the GPU synchronised before each step only, once plain and once under ``cProfile``;
then the ``--top`` functions by own time and by cumulative time under the profiler. Written
to stdout.

    # on the GPU (about 30 s per configuration):
    PYTHONPATH=. python3 scripts/plan_host_pyprofile.py \\
        torchvision:resnet152:48:offload:sgd-momentum:fp16 > out.txt
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import sys
import time


def run(cfg, steps, top):
    import torch

    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_sized
    from snsim.torchsim.plans import as_plan, make_transform
    from snsim.torchsim.predict import infer_target_of
    from snsim.torchsim.record import compute_loss
    model, batch, policy, optimizer, amp = cfg.rsplit(":", 4)
    batch = int(batch)
    spec = resolve_sized(model)
    setup = TrainSetup(optimizer, "foreach", None if amp == "none" else amp)
    net = spec.build().train()
    target = infer_target_of(net, spec.make_input(2))
    net = net.to("cuda")
    x, y = spec.make_input(batch, "cuda"), target.make(batch, "cuda")
    net = make_transform(as_plan(policy, []))(net)
    opt = setup.make_optimizer(net.parameters())
    autocast = setup.autocast("cuda") or contextlib.nullcontext
    scaler = setup.grad_scaler("cuda")
    walls = {"F": 0.0, "B": 0.0}

    def step():
        t0 = time.perf_counter()
        with autocast():
            loss = compute_loss(net(x), y, spec.aux_loss_weight)
        if scaler is not None:
            loss = scaler.scale(loss)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        walls["F"] += t1 - t0
        walls["B"] += t2 - t1
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    for label, prof in (("plain timing", None), ("under cProfile", cProfile.Profile())):
        walls.update(F=0.0, B=0.0)
        for _ in range(steps):
            torch.cuda.synchronize()
            if prof is not None:
                prof.enable()
            step()
            if prof is not None:
                prof.disable()
        torch.cuda.synchronize()
        print(f"{cfg} {label}: forward {walls['F'] / steps * 1e3:.2f} ms, backward "
              f"{walls['B'] / steps * 1e3:.2f} ms per step")
    for key in ("tottime", "cumtime"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(top)
        print(f"--- {cfg}: top {top} by {key} over {steps} steps ---")
        print("\n".join(s.getvalue().splitlines()[6:]))


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
