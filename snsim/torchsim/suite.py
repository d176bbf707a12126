"""The validation suite: capture every network × batch and execute the plans, in one process.

``python -m snsim.torchsim.suite --out traces/h200`` (on a CUDA machine) writes one trace per
configuration; ``docs/VALIDATION.md`` is generated from them by
``python -m snsim.torchsim.report``. Each capture starts from an empty allocator cache
(``empty_cache()``, cuBLAS workspaces cleared), as a fresh process would.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback

DEEP_RESNET = "torchvision:resnet:3,16,62,3"   # ResNet(Bottleneck, [3, 16, 62, 3]): 254 layers
# batch sizes at which the H200 is busy for the whole step: at smaller ones eager PyTorch is
# CPU-bound and the step-boundary hooks' own CPU time shows in the measured step times
CAPTURES = (
    ("torchvision:alexnet", (128, 256)),
    ("torchvision:vgg16", (32, 64)),
    ("torchvision:resnet50", (128, 256)),
    ("torchvision:resnet101", (128, 256)),
    ("torchvision:resnet152", (128, 256)),
    (DEEP_RESNET, (128, 192)),
    ("torchvision:densenet121", (256, 384)),
    ("torchvision:inception_v3", (128, 256)),
)
EXECUTIONS = (
    ("torchvision:resnet50", 256, "recompute"),
    ("torchvision:resnet50", 256, "offload"),
    ("torchvision:resnet50", 256, "superneurons"),
    ("torchvision:vgg16", 64, "recompute"),
    ("torchvision:vgg16", 64, "offload"),
)


def _name(model, batch, policy=None):
    from .models import resolve_model
    n = resolve_model(model).name
    return f"{n}_b{batch}" + (f"_{policy}" if policy else "")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m snsim.torchsim.suite", description=__doc__)
    p.add_argument("--out", default="traces/h200")
    p.add_argument("--only", choices=("capture", "execute", "all"), default="all")
    p.add_argument("--match", default="", help="run only configurations whose name has this")
    p.add_argument("--timing-iters", type=int, default=5)
    p.add_argument("--plain-iters", type=int, default=10)
    args = p.parse_args(argv)
    from .capture import capture, write_capture
    from .execute import execute
    from .validate import validate
    failures = 0
    done = []
    jobs = []
    if args.only in ("capture", "all"):
        jobs += [(m, b, None) for m, bs in CAPTURES for b in bs]
    if args.only in ("execute", "all"):
        jobs += list(EXECUTIONS)
    for model, batch, policy in jobs:
        name = _name(model, batch, policy)
        if args.match and args.match not in name:
            continue
        path = f"{args.out}/{name}.json.gz"
        t0 = time.perf_counter()
        try:
            if policy is None:
                doc = capture(model, batch, timing_iters=args.timing_iters,
                              plain_iters=args.plain_iters)
            else:
                plain = f"{args.out}/{_name(model, batch)}.json.gz"
                import os
                doc = execute(model, batch, policy, timing_iters=args.timing_iters,
                              plain_iters=args.plain_iters,
                              plain_trace=plain if os.path.exists(plain) else None)
            write_capture(doc, path)
            done.append(path)
            m = doc["measured"]
            print(f"{name}: {time.perf_counter() - t0:.1f} s, allocated "
                  f"{m['peak_allocated_bytes']:,} B, reserved {m['peak_reserved_bytes']:,} B, "
                  f"step {m['step_time_s'] * 1e3:.2f} ms (hooked "
                  f"{m['hooked_step_time_s'] * 1e3:.2f} ms), base "
                  f"{m.get('base_allocated_bytes')}, notes "
                  f"{ {k: v for k, v in doc['program']['notes'].items() if k != 'allocator_trace_sample'} }",
                  flush=True)
            if doc.get("predictions"):
                print(f"   prediction {doc['predictions']}", flush=True)
        except Exception:   # keep going: one broken configuration must not stop the suite
            failures += 1
            print(f"{name}: FAILED after {time.perf_counter() - t0:.1f} s", flush=True)
            traceback.print_exc()
    if done:
        for r in validate(done):
            print(f"{r['trace']:<40} alloc {r['err_allocated_pct']:+7.2f}%  reserved "
                  f"{r['err_reserved_pct']:+7.2f}%  step {r['err_step_time_pct']:+7.2f}%  "
                  f"(engine alloc {r['err_engine_allocated_pct']:+.2f}%)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
