"""Where the launching thread's forward time goes outside aten kernels' issue: cProfile of
training forwards (autocast as the suite runs them), per Python function, on the GPU.

    OUT=dir PYTHONPATH=. python3 scripts/forward_pyprofile.py --out "$OUT" \\
        --configs torchvision:vit_b_32:4:bf16,torchvision:resnet50:4:none

Writes ``<config>.txt`` per configuration: the top functions by own time over ``--steps``
forwards (after warm-up), and the forward's wall time per step with and without cProfile.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import time
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True, help="model:batch:amp, comma-separated")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args(argv)
    import torch

    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_model
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for cfg in args.configs.split(","):
        model, batch, amp = cfg.rsplit(":", 2)
        spec = resolve_model(model)
        m = spec.build().cuda().train()
        x = spec.make_input(int(batch), "cuda")
        autocast = TrainSetup("sgd", "foreach", None if amp == "none" else amp).autocast(
            "cuda") or contextlib.nullcontext

        def fwd(m=m, x=x, autocast=autocast):
            with autocast():
                y = m(x)
            return y

        for _ in range(5):
            fwd()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            fwd()
        wall = (time.perf_counter() - t0) / args.steps
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.steps):
            fwd()
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        st = pstats.Stats(prof, stream=s)
        st.sort_stats("tottime").print_stats(40)
        name = cfg.replace(":", "_").replace("/", "-")
        (out / f"{name}.txt").write_text(f"{cfg}: forward wall {wall * 1e3:.3f} ms/step "
                                         f"(no cProfile), {args.steps} steps profiled\n"
                                         + s.getvalue())
        print(f"{cfg}: forward wall {wall * 1e3:.3f} ms", flush=True)
        del m


if __name__ == "__main__":
    main()
