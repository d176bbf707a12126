"""Does glibc hand ``save_on_cpu(pin_memory=False)``'s packs fresh pages every step? (issue 10)

A pageable pack is a new host tensor (``torch.empty`` then ``copy_``); the step frees it in
backward. glibc serves a request above its mmap threshold with fresh pages from the kernel
(faulted in as the copy writes them) and raises that threshold, up to 32 MiB, to the size of
each mapped chunk it frees; below it, memory comes from the heap and is reused once freed,
unless ``free`` trims the heap's top. ``snsim.torchsim.opcost`` takes the fresh-page copy rate
above 32 MiB and the recycled one below (``FRESH_PAGES_BYTES``). This replays one plan's
packs on this machine's CPU, without a GPU: the pack sizes of the predicted step (its
``d2h_pageable`` copies, in order), allocated and written in order each step with a few small
allocations between them, then freed in reverse order from another thread (autograd's device
thread frees them on CUDA), and prints per step the minor page faults of the forward (fresh
4 KiB pages) and its seconds.

    PYTHONPATH=. python scripts/pageable_pack_probe.py --model torchvision:vit_b_32 --batch 96 \\
        --optimizer adamw --amp bf16 [--steps 6]
"""
from __future__ import annotations

import argparse
import resource
import sys
import threading
import time

PAGE_BYTES = 4096


def pack_sizes(model, batch, optimizer, amp, input_shape=None):
    """The byte sizes of the predicted step's pageable packs, in issue order."""
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import predict_plan
    from snsim.torchsim.plans import PlanSpec
    _, prog = predict_plan(model, batch, PlanSpec.parse("cpu_offload", ["pin_memory=false"]),
                           optimizer=TrainSetup.parse(optimizer, "foreach", amp),
                           input_shape=input_shape)
    return [int(op[3]) for op in prog["ops"] if str(op[1]) == "d2h_pageable"]


def replay(sizes, steps, small_numel=16, pin_top=False):
    """Per step ``(fresh_bytes, forward_s)``: the packs' pattern on this CPU, with three
    fp32 tensors of ``small_numel`` elements allocated after each pack; ``pin_top``: the last
    three live on until the step's packs are freed (a host object made after the packs)."""
    import torch

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = []
    for _ in range(steps):
        f0, t0 = faults(), time.perf_counter()
        packs, small = [], []
        for n in sizes:
            t = torch.empty(n, dtype=torch.uint8)
            t.fill_(1)          # the copy writes every page
            packs.append(t)
            # the step's own small host allocations between packs, each set freed at the
            # next pack (the result depends on them: docs/DESIGN.md, known limits)
            small = [torch.empty(small_numel) for _ in range(3)]
        f1, t1 = faults(), time.perf_counter()
        # pin_top: the last small set outlives the backward, above the packs
        live = [small] if pin_top else []
        del small

        def backward():
            while packs:
                packs.pop()
        th = threading.Thread(target=backward)
        th.start()
        th.join()
        live.clear()
        out.append(((f1 - f0) * PAGE_BYTES, t1 - t0))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--optimizer", default="sgd-momentum")
    ap.add_argument("--amp", default=None, choices=("bf16", "fp16"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--small-numel", type=int, default=16,
                    help="elements of the three small fp32 tensors made after each pack")
    ap.add_argument("--pin-top", action="store_true",
                    help="keep the last small tensors alive until the packs are freed")
    args = ap.parse_args(argv)
    sizes = pack_sizes(args.model, args.batch, args.optimizer, args.amp)
    total = sum(sizes)
    print(f"{args.model} b{args.batch}: {len(sizes)} packs, {total / 2**20:.1f} MiB, largest "
          f"{max(sizes, default=0) / 2**20:.2f} MiB")
    for i, (fresh, sec) in enumerate(replay(sizes, args.steps, args.small_numel, args.pin_top)):
        print(f"step {i}: fresh pages {fresh / 2**20:7.1f} MiB "
              f"({100 * fresh / max(total, 1):5.1f} % of the packs), forward {sec * 1e3:6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
