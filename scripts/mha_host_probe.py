"""What ``nn.MultiheadAttention``'s Python costs the launching thread in a real forward, beyond
its aten calls (issue 10 item 3; docs/DESIGN.md known limits, "the launching thread's work
outside aten calls in vision transformers").

For torchvision's ViT-B/16 at a small batch (the GPU keeps up with the host), fp32 and bf16
autocast, the forward's wall on the launching thread (no synchronisation inside; median of
``--reps`` after warm-ups, collector off) for:

* ``stock``: the model as torchvision builds it;
* ``lean``: every ``EncoderBlock.self_attention`` replaced by :class:`LeanSelfAttention`, which
  issues the same aten calls as ``F.multi_head_attention_forward`` does for this call
  (batch-first self-attention, packed input projection, no masks, no weights returned) with
  none of its argument checks, mask canonicalisation and branches.

``stock - lean`` per attention call is the Python the module runs around its aten calls. The
same aten calls are checked by counting them under a ``TorchDispatchMode`` (``calls``).
Writes ``mha_host_probe.csv`` under ``--out``.

    OUT=dir PYTHONPATH=. python3 scripts/mha_host_probe.py --out "$OUT"
    PYTHONPATH=. python scripts/mha_host_probe.py --out /tmp/mha --device cpu --reps 3
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import gc
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F


class LeanSelfAttention(torch.nn.Module):
    """``nn.MultiheadAttention(x, x, x, need_weights=False)`` (batch first, packed projection,
    no masks) as the aten calls ``F.multi_head_attention_forward`` makes, without its
    Python checks."""

    def __init__(self, mha):
        super().__init__()
        self.mha = mha

    def forward(self, q, k=None, v=None, need_weights=False):
        m = self.mha
        x = q.transpose(1, 0)
        tgt, bsz, e = x.shape
        h = m.num_heads
        hd = e // h
        proj = F.linear(x, m.in_proj_weight, m.in_proj_bias)
        proj = proj.unflatten(-1, (3, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        q, k, v = proj[0], proj[1], proj[2]
        q = q.view(tgt, bsz * h, hd).transpose(0, 1).view(bsz, h, tgt, hd)
        k = k.view(tgt, bsz * h, hd).transpose(0, 1).view(bsz, h, tgt, hd)
        v = v.view(tgt, bsz * h, hd).transpose(0, 1).view(bsz, h, tgt, hd)
        out = F.scaled_dot_product_attention(q, k, v, None, 0.0, False)
        out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt, e)
        out = F.linear(out, m.out_proj.weight, m.out_proj.bias)
        return out.view(tgt, bsz, e).transpose(1, 0), None


def _aten_calls(fn):
    from torch.utils._python_dispatch import TorchDispatchMode
    seen = collections.Counter()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen[func.__name__] += 1
            return func(*args, **(kwargs or {}))
    with Count():
        fn()
    return seen


def measure(device, batch, reps):
    import torchvision
    rows = []
    for amp in ("none", "bf16"):
        for variant in ("stock", "lean"):
            torch.manual_seed(0)
            net = torchvision.models.vit_b_16(weights=None).to(device).train()
            n_attn = 0
            if variant == "lean":
                for blk in net.encoder.layers:
                    blk.self_attention = LeanSelfAttention(blk.self_attention)
                    n_attn += 1
            else:
                n_attn = len(net.encoder.layers)
            x = torch.randn(batch, 3, 224, 224, device=device)
            ctx = ((lambda: torch.autocast(device, dtype=torch.bfloat16)) if amp == "bf16"
                   else contextlib.nullcontext)

            def fwd():
                with ctx():
                    return net(x)
            for _ in range(5):
                fwd().sum().backward()
            calls = _aten_calls(fwd)
            if device == "cuda":
                torch.cuda.synchronize()
            gc.collect()
            gc.disable()
            walls = []
            for _ in range(reps):
                t0 = time.perf_counter()
                out = fwd()
                walls.append(time.perf_counter() - t0)
                out.sum().backward()
                if device == "cuda":
                    torch.cuda.synchronize()
            gc.enable()
            rows.append({"model": "vit_b_16", "batch": batch, "amp": amp, "variant": variant,
                         "forward_wall_s": statistics.median(walls),
                         "forward_wall_min_s": min(walls), "attention_calls": n_attn,
                         "aten_calls": sum(calls.values()), "torch": torch.__version__})
            r = rows[-1]
            print(f"vit_b_16 b{batch} {amp:4} {variant:5}: forward {r['forward_wall_s'] * 1e3:.2f}"
                  f" ms (min {r['forward_wall_min_s'] * 1e3:.2f}), {r['aten_calls']} aten calls",
                  flush=True)
    by = {(r["amp"], r["variant"]): r for r in rows}
    for amp in ("none", "bf16"):
        stock, lean = by[amp, "stock"], by[amp, "lean"]
        d = stock["forward_wall_s"] - lean["forward_wall_s"]
        print(f"{amp}: stock - lean {d * 1e3:.2f} ms, "
              f"{d / stock['attention_calls'] * 1e6:.1f} us per attention call; aten calls "
              f"stock {stock['aten_calls']}, lean {lean['aten_calls']}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args(argv)
    rows = measure(args.device, args.batch, args.reps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "mha_host_probe.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
