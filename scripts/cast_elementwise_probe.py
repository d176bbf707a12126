"""Elementwise kernels whose operands differ in dtype (issue 10): how much slower TensorIterator's
casting paths run than the same op on operands of one dtype.

Under autocast a bf16/fp16 tensor meets an fp32 one in elementwise ops - a linear's output added
to the fp32 residual stream, an fp32 attention mask or position bias added to half-precision
scores (GPT-Neo, T5). ATen then needs dynamic casting (``gpu_kernel_impl``): no vectorized kernel,
``unrolled_elementwise_kernel`` with per-element casts where the operands are contiguous, the
casting ``elementwise_kernel<128, 4>`` with offset calculators where one is broadcast. The H100
profile of GPT-Neo-125M b8 s1024 bf16 (traces/h100/profile_s60) ran its mask add
(bf16[8, 12, 1024, 1024] + fp32[8, 1, 1024, 1024]) at 1.16 TB/s. This times, per size, the same
add four ways - contiguous and broadcast operand, one dtype and two - with CUDA events:

    PYTHONPATH=. python3 scripts/cast_elementwise_probe.py --out $OUT/cast_probe.csv

Writes ``case,dtype_a,dtype_b,dtype_out,shape_a,shape_b,bytes,time_s`` (bytes: what the call
reads and writes, operands at their own dtype).
"""
from __future__ import annotations

import argparse
import csv


def _time(fn, reps=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import torch
    rows = []
    half = (torch.bfloat16, torch.float16)
    for b, h, s in ((1, 12, 512), (4, 12, 512), (8, 12, 512), (4, 12, 1024), (8, 12, 1024),
                    (16, 12, 1024), (8, 16, 2048)):
        for lead, mask_shape in (("batch", (b, 1, s, s)), ("heads", (1, h, s, s)),
                                 ("same", (b, h, s, s))):
            for da in (torch.float32,) + half:
                for db in (torch.float32, da):
                    x = torch.randn(b, h, s, s, device="cuda", dtype=da)
                    m = torch.randn(*mask_shape, device="cuda", dtype=db)
                    out = torch.promote_types(da, db)
                    t = _time(lambda: x + m)
                    nbytes = (x.numel() * x.element_size() + m.numel() * m.element_size()
                              + x.numel() * out.itemsize)
                    rows.append([lead, str(da)[6:], str(db)[6:], str(out)[6:],
                                 "x".join(map(str, x.shape)), "x".join(map(str, mask_shape)),
                                 nbytes, f"{t:.9f}"])
            torch.cuda.empty_cache()
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "dtype_a", "dtype_b", "dtype_out", "shape_a", "shape_b", "bytes",
                    "time_s"])
        w.writerows(rows)
    print(f"{args.out}: {len(rows)} rows on {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
