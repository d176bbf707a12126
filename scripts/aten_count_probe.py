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
import functools
import sys
from pathlib import Path


def run_one(config, warmup, iters, device="cuda"):
    import torch
    from torch.profiler import ProfilerActivity, profile
    from snsim.torchsim.amp import TrainSetup, warm_up
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.plans import as_plan, make_transform
    from snsim.torchsim.predict import infer_target_of
    from snsim.torchsim.record import train_step
    model, batch, opt_name, amp, plan_text = config.rsplit(":", 4)
    setup = TrainSetup(opt_name, "foreach", None if amp == "none" else amp)
    policy, *options = plan_text.split("/")
    spec = resolve_model(model)
    net = spec.build()
    net.train()
    target = infer_target_of(net, spec.make_input(2))
    net.to(device)
    x = spec.make_input(int(batch), device)
    y = target.make(int(batch), device)
    net = make_transform(as_plan(policy, dict(o.split("=", 1) for o in options) or None))(net)
    opt = setup.make_optimizer(net.parameters())
    kw = {"autocast": setup.autocast(device), "scaler": setup.grad_scaler(device),
          "step_scope": setup.step_scope(device), "aux_loss_weight": spec.aux_loss_weight}
    warm_up(functools.partial(train_step, net, opt, x, y, **kw), kw["scaler"], warmup)
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
