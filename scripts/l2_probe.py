"""How much of a kernel's tight-loop time is its inputs staying in the GPU's L2 cache.

``snsim calibrate`` times each shape by calling it over and over on the same tensors: an input
smaller than the L2 (60 MiB on the H200: ``L2_cache_size`` 62,914,560 B) is read from the cache
on every call after the first, where a real step reads most of a kernel's inputs --
activations saved in forward, weights -- from device memory. For each op and size this times
the same call three ways:

* ``hot``: the same tensors every call (how the table is timed);
* ``cold``: ``K`` sets of tensors used in turn, ``K`` times the inputs at least
  4 x :data:`L2_PROBE_BYTES` (K at most 64: 128 MiB and more in all, over twice the L2), so no
  call finds its inputs in the cache;
* ``fresh``: each call on tensors a fill kernel has just written (the in-network case of an op
  reading its producer's output), the fill's own time taken off.

    OUT=dir PYTHONPATH=. python3 scripts/l2_probe.py --out "$OUT"

Writes ``l2_probe.csv``: op (its dtype in the name), input MiB, bytes the call reads and writes
(empty for the GEMM), hot / cold / fresh GPU seconds per call, and K.
"""
from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

L2_PROBE_BYTES = 50 * 2**20   # for choosing K only; below the H200's 60 MiB L2


def _time(torch, fns, reps):
    """Median GPU seconds per call of ``fns`` called in turn, ``reps`` rounds of len(fns)."""
    for f in fns[:2]:
        f()
    torch.cuda.synchronize()
    out = []
    for _ in range(3):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            for f in fns:
                f()
        e1.record()
        torch.cuda.synchronize()
        out.append(e0.elapsed_time(e1) * 1e-3 / (reps * len(fns)))
    return statistics.median(out)


def cases(torch, mib):
    """``(op, dtype, bytes, make)``: ``make()`` gives a fresh set of inputs and the call."""
    n = mib * 2**20 // 4
    rows = max(1, n // 768)

    def add(dtype):
        def make():
            a = torch.randn(n, device="cuda", dtype=dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            return (a, b), lambda: torch.add(a, b)
        return make

    def ln():
        w = torch.ones(768, device="cuda")
        bias = torch.zeros(768, device="cuda")

        def make():
            x = torch.randn(rows, 768, device="cuda")
            return (x,), lambda: torch.nn.functional.layer_norm(x, (768,), w, bias)
        return make

    def gelu_bwd():
        def make():
            x = torch.randn(n, device="cuda")
            g = torch.randn(n, device="cuda")
            return (x, g), lambda: torch.ops.aten.gelu_backward(g, x)
        return make

    def mm_bf16():
        k = 768
        m = max(64, (mib * 2**20) // (2 * k))
        w = torch.randn(3072, k, device="cuda", dtype=torch.bfloat16)

        def make():
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            return (x,), lambda: torch.mm(x, w.t())
        return make

    el = n * 4
    return [("add_fp32", el * 3, add(torch.float32)),
            ("layer_norm_fp32", rows * 768 * 4 * 2, ln()),
            ("gelu_backward_fp32", el * 3, gelu_bwd()),
            ("mm_bf16_k768_n3072", None, mm_bf16())]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mib", default="2,8,16,32,48,64,128,512")
    args = ap.parse_args(argv)
    import torch
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fields = ("op", "input_mib", "bytes", "hot_s", "cold_s", "fresh_s", "k")
    with open(out / "l2_probe.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(fields)
        for mib in [int(v) for v in args.mib.split(",")]:
            for op, nbytes, make in cases(torch, mib):
                k = max(2, -(-4 * L2_PROBE_BYTES // (mib * 2**20)))
                k = min(k, 64)
                sets = [make() for _ in range(k)]
                calls = [f for _, f in sets]
                reps = max(1, 200 // k)
                hot = _time(torch, calls[:1], reps * k)
                cold = _time(torch, calls, reps)
                inputs, first = sets[0]

                def fill(inputs=inputs):
                    for t in inputs:
                        t.add_(0.0)
                f_only = _time(torch, [fill], 50)
                both = _time(torch, [lambda first=first: (fill(), first())], 50)
                fresh = both - f_only
                w.writerow([op, mib, nbytes or "", f"{hot:.4e}", f"{cold:.4e}", f"{fresh:.4e}",
                            k])
                print(f"{op:22s} {mib:4d} MiB  hot {hot*1e6:9.1f} us  cold {cold*1e6:9.1f} "
                      f"us  fresh {fresh*1e6:9.1f} us  ({cold/hot:.2f}x, {fresh/hot:.2f}x)",
                      flush=True)
                del sets, calls, inputs, first
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
