"""Where ``save_on_cpu(pin_memory=True)``'s forward time goes in a real network, measured.

torch 2.11's pinned pack (``torch.autograd.graph.save_on_cpu``) allocates a pinned host tensor
and copies the saved tensor into it with a blocking ``copy_``: the launching thread waits for
the GPU at every saved tensor. The prediction charges each pack its issue costs and the copy's
PCIe time (``snsim.kernel_table.host_stream``'s ``synchronous`` ops); held-out cpu_offload runs
stepped slower than that (docs/VALIDATION.md). This probe splits the forward's wall time (from
an idle GPU to the forward's kernels done) under saved-tensor hooks that do one part of the
pack each, in one process:

* ``plain`` no hooks; ``noop`` hooks that return the tensor;
* ``sync`` a pack that synchronises the stream and keeps the tensor (the wait alone);
* ``alloc`` a pack that allocates the pinned host tensor and keeps both (the caching host
  allocator's cost);
* ``copy_nb`` alloc and a non-blocking copy (torch 2.12's pack); ``copy_sync`` alloc and the
  blocking copy (torch 2.11's pack); ``save_on_cpu`` the real context (its unpack too, in the
  step's backward, timed as ``B``).

And, alone: the round trip of one tiny kernel from an idle GPU (issue, start, end, the host
woken) against its issue cost in a tight loop, and a pinned D2H copy's blocking round trip
against its non-blocking issue, by size: what a synchronisation costs beyond the work.

    OUT=dir PYTHONPATH=. python3 scripts/pack_probe.py --out "$OUT"
    PYTHONPATH=. python scripts/pack_probe.py --out /tmp/pp --device cpu --quick   # dry run
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import json
import os
import statistics
import sys
import time

CONFIGS = [
    # (model, batch, amp): set 24's under-predicted run, and the standard suite's offloads
    ("torchvision:resnet152", 32, "fp16"),
    ("torchvision:resnet50", 64, "none"),
    ("torchvision:efficientnet_b0", 64, "bf16"),
    ("torchvision:densenet121", 32, "none"),
    ("torchvision:vit_b_16", 32, "bf16"),
    ("snsim:gpt", 4, "none"),
]
VARIANTS = ("plain", "noop", "sync", "alloc", "copy_nb", "copy_sync", "save_on_cpu")


def _hooks(variant, torch, cuda):
    """The saved-tensor hooks context of one variant (None: no hooks)."""
    if variant == "plain":
        return None
    if variant == "save_on_cpu":
        return torch.autograd.graph.save_on_cpu(pin_memory=cuda)

    def host_like(t):
        return torch.empty(t.size(), dtype=t.dtype, layout=t.layout, pin_memory=cuda)

    def pack(t):
        if variant == "sync":
            if cuda:
                torch.cuda.current_stream().synchronize()
            return t
        if variant == "noop":
            return t
        p = host_like(t)
        if variant == "copy_nb":
            p.copy_(t, non_blocking=cuda)
        elif variant == "copy_sync":
            p.copy_(t)
        return (t, p)

    def unpack(x):
        return x[0] if isinstance(x, tuple) else x
    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


def run_config(model, batch, amp, args):
    import torch

    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_sized
    from snsim.torchsim.predict import infer_target_of
    from snsim.torchsim.record import compute_loss
    cuda = args.device == "cuda"
    dev = args.device
    spec = resolve_sized(model)
    setup = TrainSetup("sgd-momentum", "foreach", None if amp == "none" else amp)
    net = spec.build().train()
    target = infer_target_of(net, spec.make_input(2))
    net = net.to(dev)
    x = spec.make_input(batch, dev)
    y = target.make(batch, dev)
    autocast = setup.autocast(dev) or contextlib.nullcontext
    aux = spec.aux_loss_weight

    def sync():
        if cuda:
            torch.cuda.synchronize()

    counted = {"n": 0, "bytes": 0}

    def count(t):
        counted["n"] += 1
        counted["bytes"] += t.numel() * t.element_size()
        return t
    with torch.autograd.graph.saved_tensors_hooks(count, lambda t: t):
        with autocast():
            compute_loss(net(x), y, aux).backward()
    net.zero_grad(set_to_none=True)
    out = {"model": model, "batch": batch, "amp": amp, "packs": counted["n"],
           "pack_bytes": counted["bytes"]}
    for variant in VARIANTS:
        issue, wall, back = [], [], []
        for i in range(args.warmup + args.iters):
            sync()
            ctx = _hooks(variant, torch, cuda) or contextlib.nullcontext()
            t0 = time.perf_counter()
            with ctx:
                with autocast():
                    loss = compute_loss(net(x), y, aux)
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            loss.backward()
            sync()
            t3 = time.perf_counter()
            net.zero_grad(set_to_none=True)
            del loss
            if i >= args.warmup:
                issue.append(t1 - t0)
                wall.append(t2 - t0)
                back.append(t3 - t2)
        med = statistics.median
        out[f"{variant}_issue_s"] = f"{med(issue):.6e}"
        out[f"{variant}_wall_s"] = f"{med(wall):.6e}"
        out[f"{variant}_back_s"] = f"{med(back):.6e}"
    return out


def micro(args):
    """Round trips from an idle GPU against issue costs in a tight loop (seconds)."""
    import torch

    from snsim.torchsim.hostpace import gauge_add_s
    cuda = args.device == "cuda"
    dev = args.device
    res = {"gauge_add_s": gauge_add_s(dev)}
    a = torch.ones(1024, device=dev)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def best(fn, n=200, rounds=5):
        vals = []
        for _ in range(rounds):
            sync()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            vals.append((time.perf_counter() - t0) / n)
        return statistics.median(vals)

    res["add_issue_s"] = best(lambda: torch.add(a, a))

    def add_rt():
        torch.add(a, a)
        sync()
    res["add_roundtrip_s"] = best(add_rt)

    def sync_only():
        sync()
    res["sync_idle_s"] = best(sync_only)
    sizes = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20]
    for nb in sizes:
        src = torch.empty(nb // 4, device=dev)
        dst = torch.empty(nb // 4, pin_memory=cuda)
        n = 50 if nb >= 4 << 20 else 200
        res[f"d2h_{nb}_nb_issue_s"] = best(lambda: dst.copy_(src, non_blocking=cuda), n=n)
        res[f"d2h_{nb}_sync_s"] = best(lambda: dst.copy_(src), n=n)

        def pack():
            p = torch.empty(src.size(), dtype=src.dtype, pin_memory=cuda)
            p.copy_(src)
            return p
        res[f"d2h_{nb}_pack_s"] = best(pack, n=n)
        if cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            sync()
            e0.record()
            for _ in range(n):
                dst.copy_(src, non_blocking=True)
            e1.record()
            sync()
            res[f"d2h_{nb}_gpu_s"] = e0.elapsed_time(e1) * 1e-3 / n
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="one small configuration")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import torch
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}
    m = micro(args)
    with open(os.path.join(args.out, "pack_probe_micro.json"), "w") as f:
        json.dump({**meta, **m}, f, indent=1)
    print(" ".join(f"{k}={v * 1e6:.2f}us" for k, v in m.items()), flush=True)
    configs = ([("torchvision:resnet18@3x64x64", 2, "none")] if args.quick else CONFIGS)
    rows = []
    for cfg in configs:
        t0 = time.perf_counter()
        try:
            r = run_config(*cfg, args)
        except Exception as e:       # one line, then the next configuration
            print(f"  {cfg}: {type(e).__name__}: {e}", flush=True)
            continue
        gc.collect()
        if args.device == "cuda":
            torch.cuda.empty_cache()
        rows.append(r)
        print(f"  {r['model']} b{r['batch']} {r['amp']}: {r['packs']} packs, "
              f"{r['pack_bytes'] / 2**20:.0f} MiB; " + ", ".join(
                  f"{v} {float(r[f'{v}_issue_s']) * 1e3:.1f}/{float(r[f'{v}_wall_s']) * 1e3:.1f}"
                  f"/{float(r[f'{v}_back_s']) * 1e3:.1f}" for v in VARIANTS)
              + f" ms (issue/wall/back; {time.perf_counter() - t0:.0f} s)", flush=True)
        with open(os.path.join(args.out, "pack_probe.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
