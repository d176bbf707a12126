"""Which kernel CUDA's ``scaled_dot_product_attention`` runs, by input layout, on a real GPU.

``snsim predict`` records attention on the CPU and must name the kernel the GPU would run
(:func:`snsim.torchsim.predict.cuda_sdpa_backend`). torch's choice (``sdp_utils.cpp``) reads
dtypes, head dims, masks, GQA and the strides of q, k and v: Hugging Face models hand it
packed-QKV views (GPT-2), contiguous (batch, heads, seq, dim) tensors after rotary embeddings
with a value still a view of the packed projection (Pythia's GPT-NeoX), or fewer key/value heads
(``enable_gqa``: SmolLM2, Qwen2). This probe builds each layout, runs forward and backward under a
dispatch mode and writes the aten attention ops that ran, beside what
``cuda_sdpa_backend`` predicts for the same tensors, one CSV row per case:

    OUT=dir PYTHONPATH=. python3 scripts/sdpa_choice_probe.py --out "$OUT"
    PYTHONPATH=. python scripts/sdpa_choice_probe.py --out /tmp/sdpa --device cpu   # dry run
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

# (name, batch, heads, kv heads, seq, head dim)
SHAPES = [("h16_s128_d64", 2, 16, 16, 128, 64), ("h12_s197_d64", 2, 12, 12, 197, 64),
          ("h16_s50_d80", 2, 16, 16, 50, 80), ("h8_s256_d128", 2, 8, 8, 256, 128),
          ("h9kv3_s256_d64", 2, 9, 3, 256, 64), ("h14kv2_s128_d64", 2, 14, 2, 128, 64),
          ("h4_s64_d256", 2, 4, 4, 64, 256), ("h12_s1024_d64", 1, 12, 12, 1024, 64)]
LAYOUTS = ("bhsd", "bshd", "packed", "rotary_mix", "bhsd_v_packed")
DTYPES = ("bfloat16", "float16", "float32")


def make_qkv(torch, layout, b, h, hkv, s, d, dtype, device):
    """q, k, v of (b, heads, s, d) with the strides a model gives them: ``bhsd`` contiguous;
    ``bshd`` a transposed contiguous (b, s, heads, d) (a model that projects then views);
    ``packed`` views of one (b, s, 3, heads, d) projection (GPT-2); ``rotary_mix`` q and k
    contiguous (b, heads, s, d), v a view of a packed (b, s, heads, 3d) projection (GPT-NeoX);
    ``bhsd_v_packed`` as rotary_mix with v from a (b, s, 3, heads, d) projection."""
    def leaf(*shape):
        return torch.randn(*shape, dtype=dtype, device=device, requires_grad=True)
    if layout == "bhsd":
        return leaf(b, h, s, d), leaf(b, hkv, s, d), leaf(b, hkv, s, d)
    if layout == "bshd":
        return (leaf(b, s, h, d).transpose(1, 2), leaf(b, s, hkv, d).transpose(1, 2),
                leaf(b, s, hkv, d).transpose(1, 2))
    if hkv != h:
        return None
    if layout == "packed":
        p = leaf(b, s, 3, h, d)
        return tuple(p[:, :, i].transpose(1, 2) for i in range(3))
    if layout == "rotary_mix":
        p = leaf(b, s, h, 3 * d).transpose(1, 2)
        q, k, v = p.chunk(3, dim=-1)
        return q.contiguous(), k.contiguous(), v
    if layout == "bhsd_v_packed":
        p = leaf(b, s, 3, h, d)
        return leaf(b, h, s, d), leaf(b, h, s, d), p[:, :, 2].transpose(1, 2)
    raise ValueError(layout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    from snsim.torchsim.predict import cuda_sdpa_backend

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.__name__.split(".")[0]
            if "attention" in name or name in ("bmm", "baddbmm", "_softmax"):
                if name not in self.names:
                    self.names.append(name)
            return func(*args, **(kwargs or {}))

    os.makedirs(args.out, exist_ok=True)
    rows = []
    for dname in DTYPES:
        dtype = getattr(torch, dname)
        for sname, b, h, hkv, s, d in SHAPES:
            for layout in LAYOUTS:
                for causal, mask, drop in ((True, None, 0.0), (False, None, 0.0),
                                           (False, "bool", 0.0), (False, "float", 0.0),
                                           (True, None, 0.1)):
                    qkv = make_qkv(torch, layout, b, h, hkv, s, d, dtype, args.device)
                    if qkv is None:
                        continue
                    q, k, v = qkv
                    m = (torch.ones(s, s, dtype=torch.bool, device=args.device).tril()
                         if mask else None)
                    if mask == "float":
                        m = torch.zeros(s, s, dtype=dtype, device=args.device).masked_fill(
                            ~m, float("-inf"))
                    gqa = hkv != h
                    row = {"dtype": dname, "shape": sname, "layout": layout,
                           "causal": causal, "mask": mask or "", "dropout": drop,
                           "q_stride": list(q.stride()), "k_stride": list(k.stride()),
                           "v_stride": list(v.stride()),
                           "predicted": cuda_sdpa_backend(q, k, v, m, drop, gqa,
                                                          cudnn_first=True)}
                    try:
                        mode = Ops()
                        with mode:
                            o = F.scaled_dot_product_attention(
                                q, k, v, attn_mask=m, dropout_p=drop, is_causal=causal,
                                enable_gqa=gqa)
                            o.float().sum().backward()
                        row["ran"] = " ".join(mode.names)
                    except Exception as e:      # one case that cannot run: a row
                        row["ran"] = f"error: {type(e).__name__}: {str(e)[:120]}"
                    rows.append(row)
                    print(row["dtype"], row["shape"], row["layout"], causal, mask, drop,
                          "pred", row["predicted"], "ran", row["ran"], flush=True)
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version() if args.device == "cuda" else "",
                "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
    path = os.path.join(args.out, "sdpa_choice.csv")
    with open(path, "w", newline="") as f:
        f.write("# " + " ".join(f"{k}={v}" for k, v in versions.items()) + "\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} cases", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
