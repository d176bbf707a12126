"""Which aten op allocated each large block of a training step (CUDA only).

Records the caching allocator's history with C++ and Python stacks over one steady
iteration of a torchvision model (optionally under autocast) and prints, for every
allocation of at least --min-bytes, its size and the aten/autograd frames that made it:
the tool for finding a block the FakeTensor recording does not make (docs/DESIGN.md,
known limits).

    python scripts/alloc_frames_probe.py torchvision:swin3d_t 4 --amp bf16 --out DIR
"""
import argparse
import json
import os
import re


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--amp", default=None, choices=[None, "bf16", "fp16"])
    ap.add_argument("--min-bytes", type=int, default=50_000_000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--short", action="store_true", help="frames without argument lists")
    args = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F
    import torchvision
    from snsim.torchsim.models import resolve_model
    spec = resolve_model(args.model)
    model = torchvision.models.get_model(spec.name).cuda().train()
    x = torch.randn((args.batch,) + tuple(spec.input_shape), device="cuda")
    y = torch.randint(0, 400, (args.batch,), device="cuda")
    if spec.name == "inception_v3" or spec.name == "googlenet":
        model.aux_logits = False
        for attr in ("AuxLogits", "aux1", "aux2"):
            if hasattr(model, attr):
                setattr(model, attr, None)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.amp)

    def step():
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            out = model(x)
            if isinstance(out, dict):
                out = out["out"].flatten(2).mean(-1)
            loss = F.cross_entropy(out.float(), y)
        loss.backward()
        model.zero_grad(set_to_none=True)
    step()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=200000, stacks="all", context="all")
    step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    keep = re.compile(r"at::native::|at::_ops::|autograd::generated::|autograd::Engine|"
                      r"torch::autograd::|\.py$")
    rows = []
    for e in snap["device_traces"][0]:
        if e["action"] != "alloc" or e["size"] < args.min_bytes:
            continue
        frames = []
        for fr in e.get("frames", []):
            name, fn = fr.get("name", ""), fr.get("filename", "")
            if keep.search(name) or fn.endswith(".py") and "torch/" in fn or "torchvision" in fn:
                if args.short:   # the function's name without its argument list
                    name = name.split("(")[0]
                frames.append(f"{name} {os.path.basename(fn)}:{fr.get('line', '')}")
        rows.append({"size": e["size"], "frames": frames[:40]})
    os.makedirs(args.out, exist_ok=True)
    name = args.model.split(":")[-1] + f"_b{args.batch}" + (f"_{args.amp}" if args.amp else "")
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump({"torch": torch.__version__, "cuda": torch.version.cuda, "rows": rows}, f)
    print(name, len(rows), "allocations >=", args.min_bytes)


if __name__ == "__main__":
    main()
