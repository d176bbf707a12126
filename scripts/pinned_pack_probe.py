"""What a pinned save_on_cpu pack costs the launching thread beyond its copy (H200, issue 8).

torch 2.11's ``save_on_cpu(pin_memory=True)`` packs each saved tensor as
``torch.empty(size, pin_memory=True).copy_(tensor)``: a block from the CachingHostAllocator,
then a synchronous D2H copy. Per size (4 KiB-16 MiB), the median over 5 rounds of 200 calls,
each batch kept alive until it ends as a step's packs are (the cache warm after 50): the
pinned ``empty`` alone, ``copy_`` into a pinned buffer made once, the whole pack, and a device
``empty`` for scale. Seconds per call, to ``$OUT/pin_probe.json``.

    OUT=dir python3 scripts/pinned_pack_probe.py
"""
import torch, time, json, os, statistics
torch.cuda.init(); dev = "cuda"
out = {}
for n in (1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24):
    src = torch.empty(n, dtype=torch.uint8, device=dev)
    dst = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    res = {}
    for name, fn in (
        ("empty_pinned", lambda: torch.empty(n, dtype=torch.uint8, pin_memory=True)),
        ("copy_into_pinned", lambda: dst.copy_(src)),
        ("pack", lambda: torch.empty(n, dtype=torch.uint8, pin_memory=True).copy_(src)),
        ("empty_cuda", lambda: torch.empty(n, dtype=torch.uint8, device=dev)),
    ):
        keep = []
        for _ in range(50):
            keep.append(fn())
        keep.clear(); torch.cuda.synchronize()
        ts = []
        for r in range(5):
            keep = []
            t0 = time.perf_counter()
            for _ in range(200):
                keep.append(fn())     # live until the batch ends, as a step's packs are
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) / 200)
            keep.clear()
        res[name] = statistics.median(ts)
    out[str(n)] = res
    print(n, {k: round(v * 1e6, 2) for k, v in res.items()}, flush=True)
json.dump(out, open(os.path.join(os.environ["OUT"], "pin_probe.json"), "w"), indent=1)
