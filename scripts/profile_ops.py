"""Measured GPU time per aten op of real training steps (torch.profiler), to set beside the
kernel table's prediction of the same ops (``scripts/op_breakdown.py --profile``).

For each configuration: the model is built as ``snsim capture`` builds it, warmed up, and
``--steps`` training steps (as ``snsim.torchsim.record.train_step`` runs them: autocast,
GradScaler, the optimizer) are profiled with CPU and CUDA activities and input shapes. Every
top-level aten op (no aten op above it: a module's call, or an autograd node's) gets the GPU
time of the kernels it and the ops below it launched, and the host time of its call (the
launching thread's wall time inside the op, the ops below it included: the issue cost of that
op in a real step, to set beside the kernel table's tight-loop ``host_s``; the profiler adds
its own per-event cost, ``profiler_event_s`` in the summary, timed on an empty op).
``profile_ops.csv``: per configuration, op and input shapes, its family
(:func:`snsim.kernel_table.family_of`), the phase (F forward and loss, B backward, U optimizer
step), calls, GPU and host seconds per step, the slowest kernel's name and the kernel count;
``profile_summary.csv``: per configuration, the step time without the profiler, the GPU busy
time per step, the launching thread's wall time per phase without the profiler (``wall_F_s``
...: the host's issue time while the launch queue has room), the host time in top-level aten
ops per phase, the op count.
A model with an input size other than its default is written ``model@size`` (``hf:gpt2@512``,
``torchvision:resnet50@3x160x160``).

    # on the GPU (about 15 s per configuration):
    OUT=dir PYTHONPATH=. python3 scripts/profile_ops.py --out "$OUT"
    # a dry run of the code on the CPU (CPU times, no kernels):
    PYTHONPATH=. python scripts/profile_ops.py --out /tmp/prof --device cpu \\
        --configs torchvision:resnet18:1:sgd-momentum:foreach:none --steps 1

The default configurations are the held-out suite's largest step-time misses
(traces/h200/plans_heldout/summary.csv, plain plans), ResNet-50 in fp16 and bf16 (batch norm's
cuDNN and native kernels), and the fp32 captures' largest GPU-bound misses (ConvNeXt-T b64,
AlexNet b256, Inception-v3 b128, the transformer encoder b32), in that order: a run cut short by
``--deadline-s`` keeps the first.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

DEFAULT_CONFIGS = ",".join([
    "torchvision:regnet_y_1_6gf:96:sgd-momentum:foreach:none",
    "torchvision:shufflenet_v2_x1_0:256:sgd-momentum:foreach:none",
    "torchvision:mnasnet1_0:128:sgd-momentum:foreach:fp16",
    "torchvision:convnext_tiny:64:adamw:fused:bf16",
    "torchvision:convnext_tiny:64:sgd-momentum:foreach:none",
    "torchvision:resnet101:96:sgd-momentum:foreach:none",
    "torchvision:densenet169:64:sgd-momentum:foreach:none",
    "torchvision:resnet50:128:sgd-momentum:foreach:fp16",
    "torchvision:resnet50:128:sgd-momentum:foreach:bf16",
    "torchvision:alexnet:256:sgd-momentum:foreach:none",
    "torchvision:inception_v3:128:sgd-momentum:foreach:none",
    "snsim:transformer_encoder:32:sgd-momentum:foreach:none",
])


def _top_level(evt):
    """Whether ``evt`` is an aten op with no aten op above it."""
    if not evt.name.startswith("aten::"):
        return False
    p = evt.cpu_parent
    while p is not None:
        if p.name.startswith("aten::"):
            return False
        p = p.cpu_parent
    return True


def _gpu_us(evt):
    """Microseconds of the kernels ``evt`` and the ops below it launched."""
    return sum(k.duration for k in evt.kernels) + sum(_gpu_us(c) for c in evt.cpu_children)


def _chain(evt):
    """Names from ``evt`` down its single-child aten calls, calls that launch no kernel left
    out (``conv2d>convolution>_convolution>cudnn_convolution``): the recorder of
    ``snsim predict`` sees one of them."""
    from snsim.kernel_table import NO_KERNEL_OPS
    names = [evt.name[len("aten::"):]]
    while True:
        kids = [c for c in evt.cpu_children if c.name.startswith("aten::")
                and c.name[len("aten::"):] not in NO_KERNEL_OPS]
        if len(kids) != 1:
            return names
        evt = kids[0]
        names.append(evt.name[len("aten::"):])


def _kernels(evt, out):
    for k in evt.kernels:
        out[k.name] = out.get(k.name, 0.0) + k.duration
    for c in evt.cpu_children:
        _kernels(c, out)
    return out


def _profiler_event_s(torch, n=2000):
    """Host seconds the profiler adds per recorded op: an empty op (``aten::empty`` of no
    elements) timed under the profiler and without it."""
    from torch.profiler import ProfilerActivity, profile

    def loop():
        t0 = time.perf_counter()
        for _ in range(n):
            torch.empty(0)
        return (time.perf_counter() - t0) / n
    bare = min(loop() for _ in range(3))
    with profile(activities=[ProfilerActivity.CPU]):
        prof = min(loop() for _ in range(3))
    return max(prof - bare, 0.0)


class _PhaseClock:
    """An instrument for :func:`snsim.torchsim.record.train_step` that notes when each phase
    starts on the launching thread: the forward and loss (F) until ``before_backward``, the
    backward (B) until ``loss.backward()`` returns, the optimizer (U) until the step ends.
    While the GPU's launch queue has room these are the host's issue times."""

    def __init__(self):
        self.at = {}

    def mark(self, label, phase, kind=""):
        if label in ("<input>", "optimizer.step", "<end>"):
            self.at[label] = time.perf_counter()

    def before_backward(self, loss):
        self.at["backward"] = time.perf_counter()

    def walls(self):
        a = self.at
        return {"F": a["backward"] - a["<input>"], "B": a["optimizer.step"] - a["backward"],
                "U": a["<end>"] - a["optimizer.step"]}


def _phase_of(events):
    """``{id(evt): phase}`` of top-level ops ``events`` of whole steps, each step marked by a
    ``snsim_step`` range: the autograd engine runs a CUDA backward on its own thread (B);
    the launching thread's ops before the step's first backward op are the forward and loss
    (F), those after its last the optimizer step (U)."""
    steps = sorted((e.time_range.start, e.time_range.end) for e in events
                   if e.name == "snsim_step")
    main = next((e.thread for e in events if e.name == "snsim_step"), None)
    out = {}
    for lo, hi in steps:
        mine = [e for e in events if _top_level(e) and lo <= e.time_range.start <= hi]
        bwd = [e.time_range.start for e in mine if e.thread != main]
        b0, b1 = (min(bwd), max(bwd)) if bwd else (hi, hi)
        for e in mine:
            out[id(e)] = ("B" if e.thread != main else "F" if e.time_range.start < b0
                          else "U" if e.time_range.start > b1 else "B")
    return out


def profile_one(text, batch, optimizer, impl, amp, *, steps, device, out_dir, walls=None):
    """Profile one configuration; with ``walls=None`` only time it without the profiler
    (returns the step and phase walls), else profile it and return its summary row with
    ``walls`` (the timing pass's) in it. The walls are taken in a pass before any profiling:
    after a CUDA profile the process stays slower (Kineto leaves CUPTI attached unless
    ``TEARDOWN_CUPTI=1``: pytorch/pytorch#144455; the host walls of this script's later
    configurations on the H200 read up to 1.8x its first's for the same forward)."""
    import torch

    from snsim.torchsim.record import train_step, warm_training

    w = warm_training(text, batch, optimizer, impl, amp, device)
    text, spec, setup, net, opt, x, y, kw, sync = (w.text, w.spec, w.setup, w.net, w.opt, w.x,
                                                    w.y, w.kw, w.sync)
    del w       # the locals hold the model alone: freed below before the cache is emptied
    if walls is not None:
        return _profile(net, opt, x, y, kw, spec, setup, batch, text, optimizer, impl, amp,
                        steps=steps, device=device, out_dir=out_dir, walls=walls, sync=sync)
    wall = []
    for _ in range(5):     # step time without the profiler
        t0 = time.perf_counter()
        train_step(net, opt, x, y, **kw)
        sync()
        wall.append(time.perf_counter() - t0)
    phase_walls = {"F": [], "B": [], "U": []}
    for _ in range(5):     # the launching thread's time per phase, without the profiler
        clock = _PhaseClock()
        train_step(net, opt, x, y, inst=clock, **kw)
        sync()
        for ph, v in clock.walls().items():
            phase_walls[ph].append(v)
    del net, opt, x, y
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"step_s": statistics.median(wall),
            **{f"wall_{ph}_s": statistics.median(phase_walls[ph]) for ph in "FBU"}}


def _profile(net, opt, x, y, kw, spec, setup, batch, text, optimizer, impl, amp, *, steps,
             device, out_dir, walls, sync):
    import torch
    from torch.profiler import ProfilerActivity, profile

    from snsim.kernel_table import family_of, load_kernel_table
    from snsim.torchsim.record import train_step
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts, record_shapes=True) as prof:
        for _ in range(steps):
            with torch.profiler.record_function("snsim_step"):
                train_step(net, opt, x, y, **kw)
        sync()
    events = prof.events()
    phase = _phase_of(events)
    table = load_kernel_table("h200")
    known = set(table.families()) if table is not None else set()
    rows = {}
    for evt in events:
        if not _top_level(evt) or id(evt) not in phase:
            continue
        chain = _chain(evt)
        fam = next((family_of(n) for n in chain if family_of(n) in known), family_of(chain[0]))
        shapes = str(evt.input_shapes)
        key = (">".join(chain), shapes, phase[id(evt)])
        r = rows.setdefault(key, {"op": key[0], "family": fam, "shapes": shapes,
                                  "phase": key[2], "calls": 0, "gpu_s": 0.0, "host_s": 0.0,
                                  "kernels": {}})
        r["calls"] += 1
        r["gpu_s"] += _gpu_us(evt) * 1e-6
        r["host_s"] += evt.time_range.elapsed_us() * 1e-6
        _kernels(evt, r["kernels"])
    name = f"{spec.name}_b{batch}{setup.slug}"
    path = Path(out_dir) / "profile_ops.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["config", "op", "family", "shapes", "phase",
                                          "calls_per_step", "gpu_s_per_step",
                                          "host_s_per_step", "top_kernel", "kernels"])
        if new:
            w.writeheader()
        for r in sorted(rows.values(), key=lambda r: -r["gpu_s"]):
            ks = sorted(r["kernels"].items(), key=lambda kv: -kv[1])
            w.writerow({"config": name, "op": r["op"], "family": r["family"],
                        "shapes": r["shapes"], "phase": r["phase"],
                        "calls_per_step": r["calls"] / steps,
                        "gpu_s_per_step": r["gpu_s"] / steps,
                        "host_s_per_step": r["host_s"] / steps,
                        "top_kernel": ks[0][0][:160] if ks else "", "kernels": len(ks)})
    gpu = sum(r["gpu_s"] for r in rows.values()) / steps
    host = {ph: sum(r["host_s"] for r in rows.values() if r["phase"] == ph) / steps
            for ph in "FBU"}
    calls = {ph: sum(r["calls"] for r in rows.values() if r["phase"] == ph) / steps
             for ph in "FBU"}
    event_s = _profiler_event_s(torch)
    del net, opt, x, y, prof
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"config": name, "model": text, "batch": batch, "optimizer": optimizer,
            "impl": impl, "amp": amp, "step_s": walls["step_s"],
            "gpu_busy_s": gpu, **{f"wall_{ph}_s": walls[f"wall_{ph}_s"] for ph in "FBU"},
            **{f"host_{ph}_s": host[ph] for ph in "FBU"},
            **{f"ops_{ph}": calls[ph] for ph in "FBU"}, "profiler_event_s": event_s,
            "ops": len(rows), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version() if device == "cuda" else ""}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="comma list of model:batch:optimizer:impl:amp (amp none|bf16|fp16, "
                         "or purebf16|purefp16: --param-dtype)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--deadline-s", type=float, default=170.0,
                    help="start no configuration after this long")
    args = ap.parse_args(argv)
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("profile_ops: no CUDA device (--device cpu: a dry run)", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = False
    Path(args.out).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summary = []
    configs = args.configs.split(",")
    for cfg in configs:
        if len(cfg.rsplit(":", 4)) != 5:
            print(f"profile_ops: --configs entry {cfg!r}: needs model:batch:optimizer:impl:amp",
                  file=sys.stderr)
            return 2
    timed = {}
    for cfg in configs:      # every configuration's walls before any profile (profile_one)
        text, batch, opt, impl, amp = cfg.rsplit(":", 4)
        try:
            timed[cfg] = profile_one(text, int(batch), opt, impl, amp, steps=args.steps,
                                     device=args.device, out_dir=args.out)
        except Exception as e:     # one configuration failing leaves the others
            print(f"profile_ops: {cfg}: {type(e).__name__}: {e}", file=sys.stderr)
    for cfg in configs:
        if cfg not in timed:
            continue
        if time.perf_counter() - t0 > args.deadline_s:
            print(f"profile_ops: out of time before {cfg}", file=sys.stderr)
            break
        text, batch, opt, impl, amp = cfg.rsplit(":", 4)
        try:
            r = profile_one(text, int(batch), opt, impl, amp, steps=args.steps,
                            device=args.device, out_dir=args.out, walls=timed[cfg])
        except Exception as e:     # one configuration failing leaves the others
            print(f"profile_ops: {cfg}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        summary.append(r)
        print(f"{r['config']}: step {r['step_s'] * 1e3:.2f} ms, GPU busy "
              f"{r['gpu_busy_s'] * 1e3:.2f} ms, {r['ops']} op shapes "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        with open(Path(args.out) / "profile_summary.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(summary[0]))
            w.writeheader()
            w.writerows(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
