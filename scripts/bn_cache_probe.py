"""Batch norm's time per element against the batch, with its inputs hot in L2 and cold.

``snsim calibrate`` times a call in a tight loop on the same tensors (``calibrate._Bench``):
an input smaller than the L2 cache stays in it between calls. In a training step the input of
a batch norm was written by the convolution before it and the gradient by the op after it;
whether that is still in L2 depends on its size. This times ``native_batch_norm`` and
``native_batch_norm_backward`` (bf16 input, fp32 weight: autocast's call) at several batches,
``hot`` as calibrate does and ``cold`` with the inputs rotated over enough copies that none is
in L2 when its call starts, to tell the table rows' regime from the in-network one
(ResNet-50 b192 bf16 predicted +10 % in held-out set 32, two thirds of it batch norm).

    OUT=dir PYTHONPATH=. python3 scripts/bn_cache_probe.py --out $OUT    # on a GPU, ~1 min

Writes ``$OUT/bn_cache_probe.csv``: op, shape, batch, mode, GPU seconds per call, ns per
element.
"""
import argparse
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from snsim.torchsim.calibrate import _Bench  # noqa: E402

SHAPES = ((64, 56, 56), (256, 56, 56), (128, 28, 28), (1024, 14, 14), (64, 112, 112))
BATCHES = (32, 64, 128, 192, 256)
COLD_BYTES = 512 * 2**20      # the copies rotated over: ten times the L2


def sets(n, make):
    return [make() for _ in range(n)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the code")
    ap.add_argument("--small", action="store_true", help="one shape, two batches (dry run)")
    args = ap.parse_args(argv)
    dt = getattr(torch, args.dtype)
    bench = _Bench(torch, args.device)
    dev = args.device
    shapes, batches = ((SHAPES[:1], (2, 4)) if args.small else (SHAPES, BATCHES))
    aten = torch.ops.aten
    rows = []
    for c, h, w in shapes:
        for b in batches:
            numel = b * c * h * w
            copies = max(1, min(16, -(-COLD_BYTES // (numel * 2))))
            for mode, k in (("hot", 1), ("cold", copies + 1)):
                xs = sets(k, lambda: torch.randn(b, c, h, w, device=dev, dtype=dt))
                gs = sets(k, lambda: torch.randn(b, c, h, w, device=dev, dtype=dt))
                wt = torch.ones(c, device=dev)
                bs = torch.zeros(c, device=dev)
                rm, rv = torch.zeros(c, device=dev), torch.ones(c, device=dev)
                _, sm, si = aten.native_batch_norm(xs[0], wt, bs, rm, rv, True, 0.1, 1e-5)
                it = {"i": 0}

                def fwd():
                    it["i"] = (it["i"] + 1) % k
                    aten.native_batch_norm(xs[it["i"]], wt, bs, rm, rv, True, 0.1, 1e-5)

                def bwd():
                    it["i"] = (it["i"] + 1) % k
                    aten.native_batch_norm_backward(gs[it["i"]], xs[it["i"]], wt, rm, rv, sm, si,
                                                    True, 1e-5, [True, True, True])
                for op, f in (("native_batch_norm", fwd), ("native_batch_norm_backward", bwd)):
                    gpu_s, _ = bench(f)
                    rows.append({"op": op, "shape": f"c{c}hw{h * w}", "batch": b, "mode": mode,
                                 "copies": k, "gpu_s": f"{gpu_s:.4e}",
                                 "ns_per_element": f"{gpu_s / numel * 1e9:.5f}"})
                    print(rows[-1], flush=True)
                xs = gs = None
                if dev == "cuda":
                    torch.cuda.empty_cache()
    with open(os.path.join(args.out, "bn_cache_probe.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


if __name__ == "__main__":
    main()
