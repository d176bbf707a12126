"""The launching thread's cost of a module's forward beyond its aten calls: the Python a
module runs around them (argument checks, mask handling, shape arithmetic), on a real GPU.

For each module class in :data:`CASES`, at a tiny input on CUDA (the kernels are shorter than
their issue, so the thread's wall is the host cost), with and without bf16 autocast:

* ``wall_s``: seconds per forward call, ``--calls`` calls in a loop (no profiler, collector
  off, one synchronisation at the end), median of ``--rounds`` rounds;
* under ``torch.profiler`` (CPU activity), 20 calls after a first one: per call, the top-level aten calls, split into
  those that launch a kernel (any aten op not in :data:`snsim.kernel_table.NO_KERNEL_OPS`,
  or with such an op below it) and views; ``kernel_calls_s`` the wall inside the kernel
  calls, ``view_calls_s`` inside the views, each less the profiler's own cost per event below
  it (``profiler_event_s``: an empty op's wall under the profiler less without it).

``extra = wall - kernel_calls`` is what the module costs the thread beyond its kernel calls'
own issue; the in-network host model charges ``per_call_s`` per kernel call for it
(``scripts/module_host_fit.py`` writes the difference per class). Writes
``module_host_probe.csv`` under ``--out``.

    OUT=dir PYTHONPATH=. python3 scripts/module_host_probe.py --out "$OUT"
    PYTHONPATH=. python scripts/module_host_probe.py --out /tmp/mh --device cpu --calls 5
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import statistics
import sys
import time
from pathlib import Path


def _cases(torch, device):
    """``(class name, module, input builder)``; shapes tiny, layouts as torchvision and
    torch.nn use them."""
    nn = torch.nn
    d, s, b = 64, 8, 2

    def seq(*shape):
        return lambda: torch.randn(*shape, device=device, requires_grad=True)

    class SelfAttention(nn.Module):   # torchvision ViT's call: query = key = value
        def __init__(self, batch_first):
            super().__init__()
            self.m = nn.MultiheadAttention(d, 4, batch_first=batch_first)

        def forward(self, x):
            return self.m(x, x, x, need_weights=False)[0]

    out = [
        ("MultiheadAttention", SelfAttention(True), seq(b, s, d)),
        ("MultiheadAttention_seqfirst", SelfAttention(False), seq(s, b, d)),
        ("TransformerEncoderLayer", nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True),
         seq(b, s, d)),
        ("Linear", nn.Linear(d, d), seq(b, s, d)),
        ("LayerNorm", nn.LayerNorm(d), seq(b, s, d)),
        ("GELU", nn.GELU(), seq(b, s, d)),
        ("Dropout", nn.Dropout(0.1), seq(b, s, d)),
        ("Dropout_p0", nn.Dropout(0.0), seq(b, s, d)),
        ("Conv2d", nn.Conv2d(8, 8, 3, padding=1), seq(b, 8, 8, 8)),
        ("BatchNorm2d", nn.BatchNorm2d(8), seq(b, 8, 8, 8)),
        ("ReLU", nn.ReLU(inplace=False), seq(b, 8, 8, 8)),
    ]
    try:
        import torchvision.models.vision_transformer as vt
        out.append(("EncoderBlock", vt.EncoderBlock(4, d, 4 * d, 0.0, 0.0), seq(b, s, d)))
    except ImportError:   # pragma: no cover
        pass
    return out


def _profiler_event_s(torch, calls=2000):
    """Wall of an empty aten op under the profiler less without it."""
    from torch.profiler import ProfilerActivity, profile
    x = torch.empty(0)

    def loop():
        t0 = time.perf_counter()
        for _ in range(calls):
            torch.ops.aten.alias(x)
        return (time.perf_counter() - t0) / calls
    bare = loop()
    with profile(activities=[ProfilerActivity.CPU]):
        prof = loop()
    return max(0.0, prof - bare)


def _count(e):
    return 1 + sum(_count(c) for c in e.cpu_children)


def _launches(e, no_kernel):
    name = e.name.removeprefix("aten::")
    if e.name.startswith("aten::") and name not in no_kernel:
        return True
    return any(_launches(c, no_kernel) for c in e.cpu_children)


def measure(device, calls, rounds):
    import torch
    from torch.profiler import ProfilerActivity, profile
    from snsim.kernel_table import NO_KERNEL_OPS
    no_kernel = set(NO_KERNEL_OPS)
    cuda = device == "cuda"
    ev = _profiler_event_s(torch)
    rows = []
    for amp in ("none", "bf16"):
        for name, mod, make in _cases(torch, device):
            mod = mod.to(device).train()
            x = make()
            ctx = ((lambda: torch.autocast(device, dtype=torch.bfloat16)) if amp == "bf16"
                   else contextlib.nullcontext)

            def call():
                with ctx():
                    return mod(x)
            for _ in range(20):
                call()
            if cuda:
                torch.cuda.synchronize()
            gc.collect()
            gc.disable()
            walls = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(calls):
                    call()
                walls.append((time.perf_counter() - t0) / calls)
                if cuda:
                    torch.cuda.synchronize()
            gc.enable()
            reps = 21    # the first call under the profiler pays its start: left out
            with profile(activities=[ProfilerActivity.CPU]) as p:
                with ctx():
                    t0 = time.perf_counter()
                    for _ in range(reps):
                        mod(x)
                    prof_wall = (time.perf_counter() - t0) / reps
            top = sorted((e for e in p.events()
                          if e.cpu_parent is None and e.name.startswith("aten::")),
                         key=lambda e: e.time_range.start)
            top = top[len(top) // reps:]
            n = reps - 1
            kern = [e for e in top if _launches(e, no_kernel)]
            views = [e for e in top if not _launches(e, no_kernel)]
            ksec = sum(e.cpu_time_total * 1e-6 - _count(e) * ev for e in kern) / n
            vsec = sum(e.cpu_time_total * 1e-6 - _count(e) * ev for e in views) / n
            names = [e.name[6:] for e in kern][:len(kern) // n]
            kern, views = kern[:len(kern) // n], views[:len(views) // n]
            rows.append({"class": name, "amp": amp, "wall_s": statistics.median(walls),
                         "profiled_wall_s": prof_wall, "kernel_calls": len(kern),
                         "kernel_calls_s": max(0.0, ksec), "view_calls": len(views),
                         "view_calls_s": max(0.0, vsec),
                         "kernel_call_names": " ".join(names),
                         "profiler_event_s": ev, "torch": torch.__version__})
            r = rows[-1]
            print(f"{name:<28} {amp:4} wall {r['wall_s'] * 1e6:8.1f} us  kernel calls "
                  f"{r['kernel_calls']:3d} {r['kernel_calls_s'] * 1e6:8.1f} us  views "
                  f"{r['view_calls']:3d} {r['view_calls_s'] * 1e6:7.1f} us  "
                  f"({r['kernel_call_names']})", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", help="cuda; cpu: a dry run of the code")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rows = measure(args.device, args.calls, args.rounds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "module_host_probe.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
