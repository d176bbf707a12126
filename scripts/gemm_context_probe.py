"""A network's GEMMs against the same GEMMs alone: is a matmul's kernel time inside a training
step what ``snsim calibrate``'s tight loop measures (its ``_Bench``: the same operands call
after call, so they stay in L2), or what the same call costs with its operands out of L2?

For each configuration: the model is stepped as ``snsim capture`` steps it and two steps are
profiled (CUDA activity, input shapes); every ``aten::mm``, ``addmm`` and ``bmm`` event, at any
depth, gives its kernels' time per call and its phase (F forward, B backward on the autograd
thread, U optimizer). Then each distinct (op, shapes, dtype) is timed alone on fresh operands
in three layouts (``nn`` both contiguous, ``nt`` the second a transposed view as a Linear's
forward reads its weight, ``tn`` the first transposed as a weight gradient reads its
``dy``): ``loop_us`` by calibrate's ``_Bench``, ``cold_us`` with a 512 MiB write between calls
(the L2 flushed; each call timed alone by events). The SM clock (NVML) is read after the
profiled steps and after the loops. Writes ``gemm_context.csv`` under ``--out``.

    OUT=dir PYTHONPATH=. python3 scripts/gemm_context_probe.py --out "$OUT"
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

DEFAULT_CONFIGS = ",".join([
    "torchvision:vit_b_16:8:sgd-momentum:foreach:none",
    "torchvision:vit_b_16:64:sgd-momentum:foreach:none",
    "torchvision:swin_s:16:sgd-momentum:foreach:none",
    "torchvision:vit_b_16:32:sgd-momentum:foreach:bf16",
])
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def _clock_mhz(torch):
    try:
        return float(torch.cuda.clock_rate())
    except Exception:       # no NVML
        return float("nan")


def _net_gemms(torch, text, batch, optimizer, impl, amp, steps=2):
    """{(op, shapes, dtype, phase, layout): [per-call kernel microseconds]} of profiled
    steps, and the SM clock after them."""
    from torch.profiler import ProfilerActivity, profile

    from snsim.torchsim.record import train_step, warm_training
    w = warm_training(text, batch, optimizer, impl, amp, "cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as prof:
        for _ in range(steps):
            with torch.profiler.record_function("snsim_step"):
                train_step(w.net, w.opt, w.x, w.y, **w.kw)
        w.sync()
    clock = _clock_mhz(torch)
    events = prof.events()
    main = next((e.thread for e in events if e.name == "snsim_step"), None)
    out = {}
    for e in events:
        if e.name not in GEMM_OPS or not e.kernels:
            continue
        p = e.cpu_parent
        under = []
        while p is not None:
            under.append(p.name)
            p = p.cpu_parent
        if any(n in GEMM_OPS for n in under):
            continue
        phase = "B" if e.thread != main else ("U" if any("optimizer" in n.lower()
                                                         for n in under) else "F")
        shapes = tuple(tuple(s) for s in e.input_shapes if s)
        dtype = str(next((t for t in (getattr(e, "input_dtypes", None) or []) if t), ""))
        out.setdefault((e.name[6:], shapes, dtype, phase, _layout(e)), []).append(
            sum(k.duration for k in e.kernels))
    del w, prof
    torch.cuda.empty_cache()
    return out, clock


def _layout(evt):
    """``nn``/``nt``/``tn``/``tt`` of a profiled matmul's two matrix operands (a transposed
    one has a unit stride on its second-last dim), ``?`` where the profiler gave no strides."""
    strides = [s for s in (getattr(evt, "structured_input_strides", None) or [])
               if s and len(s) >= 2]
    if len(strides) < 2:
        return "?"
    return "".join("t" if s[-1] != 1 and s[-2] == 1 else "n" for s in strides[-2:])


def _operands(torch, op, shapes, dtype, layout):
    """Fresh operands of ``op`` at ``shapes`` in ``layout`` (``nn``, ``nt``, ``tn``)."""
    mats = [s for s in shapes if len(s) >= 2]
    a_shape, b_shape = mats[-2], mats[-1]

    def mat(shape, transposed):
        if not transposed:
            return torch.randn(*shape, device="cuda", dtype=dtype)
        *lead, r, c = shape
        return torch.randn(*lead, c, r, device="cuda", dtype=dtype).transpose(-1, -2)
    a = mat(a_shape, layout == "tn")
    b = mat(b_shape, layout == "nt")
    if op == "addmm":
        bias = torch.randn(*shapes[0], device="cuda", dtype=dtype)
        return lambda: torch.ops.aten.addmm.default(bias, a, b)
    f = torch.ops.aten.mm.default if op == "mm" else torch.ops.aten.bmm.default
    return lambda: f(a, b)


def _cold_us(torch, f, flush, n=15):
    times = []
    for _ in range(n):
        flush.zero_()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        f()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="comma list of model:batch:optimizer:impl:amp (amp none|bf16|fp16)")
    ap.add_argument("--deadline-s", type=float, default=240.0,
                    help="start no configuration after this long")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("gemm_context_probe: no CUDA device", file=sys.stderr)
        return 2
    from snsim.torchsim.calibrate import _Bench
    torch.backends.cudnn.benchmark = False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bench = _Bench(torch, "cuda")
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    dtypes = {"float": torch.float32, "c10::BFloat16": torch.bfloat16,
              "c10::Half": torch.float16}
    rows = []
    t0 = time.perf_counter()
    for cfg in args.configs.split(","):
        if time.perf_counter() - t0 > args.deadline_s:
            print(f"gemm_context_probe: out of time before {cfg}", file=sys.stderr)
            break
        text, batch, opt, impl, amp = cfg.rsplit(":", 4)
        try:
            gemms, net_clock = _net_gemms(torch, text, int(batch), opt, impl, amp)
        except Exception as e:
            print(f"gemm_context_probe: {cfg}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        for (op, shapes, dtype, phase, net_layout), us in sorted(gemms.items()):
            dt = dtypes.get(dtype) or (None if dtype else {"none": torch.float32,
                                                          "bf16": torch.bfloat16,
                                                          "fp16": torch.float16}[amp])
            if dt is None:
                continue
            row = {"config": cfg, "op": op, "shapes": str(list(map(list, shapes))),
                   "dtype": str(dt)[6:], "phase": phase, "net_layout": net_layout, "calls": len(us),
                   "net_us": statistics.median(us), "net_clock_mhz": net_clock}
            for layout in ("nn", "nt", "tn"):
                f = _operands(torch, op, shapes, dt, layout)
                gpu_s, _ = bench(f)
                row[f"loop_{layout}_us"] = gpu_s * 1e6
                row[f"cold_{layout}_us"] = _cold_us(torch, f, flush)
                del f
            row["loop_clock_mhz"] = _clock_mhz(torch)
            rows.append(row)
        torch.cuda.empty_cache()
        print(f"gemm_context_probe: {cfg}: {len(gemms)} GEMMs", file=sys.stderr, flush=True)
    if not rows:
        return 1
    with open(out / "gemm_context.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
