"""Find the out-of-memory edge of real training steps under a capped caching allocator (GPU).

For every (model, cap): ``torch.cuda.set_per_process_memory_fraction(cap / total)`` caps what
the caching allocator may reserve; a bisection over the batch size finds the largest batch
whose training steps run (three iterations: the first creates the optimizer state, the third
is a steady one) and the smallest that fails. ``snsim predict --budget CAP`` is then asked
about both batches on a CPU (``snsim.torchsim.report``); its verdicts are right when it says
"fits" for the first and "does not fit" for the second.

    python scripts/oom_edge.py --out edge.json [--models torchvision:resnet50,...] [--caps 8GiB,20GiB]

Conditions as in ``snsim capture``: fp32, SGD momentum (foreach), ``zero_grad(set_to_none)``,
cudnn.benchmark off, TF32 on for cuDNN and off for matmul.
"""
import argparse
import gc
import json
import time

import torch

from snsim.torchsim.capture import provenance, require_cuda
from snsim.torchsim.models import resolve_model
from snsim.torchsim.amp import TrainSetup
from snsim.torchsim.record import train_step
from snsim.units import parse_bytes


def runs(spec, batch, optimizer, iterations=3):
    """True when ``iterations`` training steps of ``spec`` at ``batch`` run without an OOM."""
    net = opt = x = y = None
    try:
        net = spec.build().cuda().train()
        x = torch.randn((batch,) + tuple(spec.input_shape), device="cuda")
        y = torch.randint(0, 1000, (batch,), device="cuda")
        opt = TrainSetup(optimizer).make_optimizer(net.parameters())
        for _ in range(iterations):
            train_step(net, opt, x, y, aux_loss_weight=spec.aux_loss_weight)
        torch.cuda.synchronize()
        return True
    except torch.OutOfMemoryError:
        return False
    finally:
        del net, opt, x, y
        gc.collect()
        torch.cuda.empty_cache()


def edge(spec, cap_bytes, optimizer, lo, hi):
    """(largest batch that runs, smallest that fails) within [lo, hi], by bisection."""
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, cap_bytes / total))
    if not runs(spec, lo, optimizer):
        return None, lo
    while runs(spec, hi, optimizer):   # grow until a batch fails
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if runs(spec, mid, optimizer):
            lo = mid
        else:
            hi = mid
    return lo, hi


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="torchvision:resnet50,torchvision:vgg16,"
                    "torchvision:densenet121,torchvision:mobilenet_v2")
    ap.add_argument("--caps", default="8GiB,20GiB")
    ap.add_argument("--optimizer", default="sgd-momentum")
    args = ap.parse_args(argv)
    require_cuda()
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for text in args.models.split(","):
        spec = resolve_model(text)
        for cap in args.caps.split(","):
            cap_bytes = parse_bytes(cap, field="cap")
            t0 = time.perf_counter()
            ok, bad = edge(spec, cap_bytes, args.optimizer, 1, 32)
            rows.append({"model": text, "cap_bytes": cap_bytes, "largest_fitting_batch": ok,
                         "first_failing_batch": bad, "wall_s": round(time.perf_counter() - t0, 1)})
            print(json.dumps(rows[-1]), flush=True)
    torch.cuda.set_per_process_memory_fraction(1.0)
    doc = {"provenance": provenance(torch, tool="scripts/oom_edge.py", optimizer=args.optimizer),
           "edges": rows}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
