"""Where cudaMalloc puts the caching allocator's segments, and what moves them (issue 8).

The engine's ``segment_placement="driver"`` orders segments as cudaMalloc did on the H200's
fresh processes with ``CUDA_MODULE_LOADING=EAGER`` (large segments each below the last); with
the default lazy loading, transformer_encoder b32 checkpoint put four first-iteration segments
into a hole above earlier ones (traces/h200/plans_history/transformer_encoder_b32_checkpoint_*).
This probe records, in one fresh process per loading mode, after every step:

* the allocator's segments (``torch.cuda.memory_snapshot()``: address, size),
* the device memory in use (``cudaMemGetInfo``),
* the context's per-thread stack limit (``cuCtxGetLimit(CU_LIMIT_STACK_SIZE)``: the driver
  raises it, and re-sizes the context's local memory, when a kernel needs more stack than it
  holds; under lazy loading that happens at a kernel's first launch, mid-run),
* the process's virtual memory map (``/proc/self/maps``, ranges of 1 MiB or more): under
  unified addressing a device allocation's address range is also reserved in the host
  process, so a host ``mmap``/``munmap`` and a driver reservation compete for the same space.

Steps: CUDA initialised; segments of 20, 32, 96 and 128 MiB (``torch.empty``: no kernel);
then for each of a few kernels never launched before in this process (elementwise, layer
norm, softmax, a linear layer (cuBLASLt), cuBLAS GEMM, cuDNN convolution, sort) the first launch, followed by a new
32 MiB segment; then a host buffer of 256 MiB made and freed followed by a new 96 MiB segment;
then 64 MiB of pinned host memory followed by a new 96 MiB segment; then the first forward
and backward of a small ``nn.TransformerEncoderLayer`` (embedding, attention) and of
torchvision's ResNet-18 (batch 2), each followed by a new 32 MiB segment.

Usage (one H200, from the repository root, about 30 s):

    PYTHONPATH=$PWD python3 scripts/va_probe.py --out $OUT

runs itself once per mode (``lazy``: CUDA_MODULE_LOADING unset, torch's default; ``eager``)
and writes ``$OUT/va_probe_<mode>.json``. ``--mode lazy|eager`` runs one mode in this process.
``--summary FILE...`` prints, for result files, each new segment's place among the earlier
ones and the map changes of each step (no GPU).
"""
import argparse
import json
import os
import subprocess
import sys
import time

_MIB = 1 << 20
STEPS_KERNELS = ("gelu", "layer_norm", "softmax", "linear", "gemm", "conv2d", "sort")


def read_maps(min_bytes=_MIB):
    """``[[start, end, perms, path], ...]``: the ranges of this process's map of at least
    ``min_bytes`` (Linux only; [] elsewhere)."""
    out = []
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(None, 5)
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if hi - lo >= min_bytes:
            out.append([lo, hi, parts[1], parts[5] if len(parts) > 5 else ""])
    return out


def maps_diff(before, after):
    """Ranges that appeared and that disappeared between two :func:`read_maps` lists."""
    b = {tuple(r) for r in before}
    a = {tuple(r) for r in after}
    return {"added": sorted(list(r) for r in a - b), "removed": sorted(list(r) for r in b - a)}


def _driver():
    """libcuda through ctypes, or None (no driver: the CPU dry run)."""
    import ctypes
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def stack_limit_bytes(lib):
    """``cuCtxGetLimit(CU_LIMIT_STACK_SIZE)`` of the current context, or None."""
    import ctypes
    if lib is None:
        return None
    v = ctypes.c_size_t(0)
    return int(v.value) if lib.cuCtxGetLimit(ctypes.byref(v), 0) == 0 else None


def loading_mode(lib):
    """``cuModuleGetLoadingMode``: 1 eager, 2 lazy, or None."""
    import ctypes
    if lib is None:
        return None
    v = ctypes.c_int(0)
    return int(v.value) if lib.cuModuleGetLoadingMode(ctypes.byref(v)) == 0 else None


def _model_step(torch, name, dev):
    """The first forward and backward of a small model (its kernels' first launches)."""
    torch.manual_seed(0)
    if name == "transformer":
        emb = torch.nn.Embedding(1000, 256).to(dev)
        layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True).to(dev)
        x = torch.randint(0, 1000, (4, 128), device=dev)
        loss = layer(emb(x)).float().pow(2).mean()
    else:
        import torchvision
        net = torchvision.models.resnet18(num_classes=10).to(dev)
        x = torch.randn(2, 3, 224, 224, device=dev)
        loss = torch.nn.functional.cross_entropy(net(x), torch.zeros(2, dtype=torch.long,
                                                                      device=dev))
    loss.backward()
    if dev == "cuda":
        torch.cuda.synchronize()


def _segments(torch):
    return sorted([int(s["address"]), int(s["total_size"])]
                  for s in torch.cuda.memory_snapshot())


def _kernel(torch, name, dev):
    """The first launch of one kernel family (inputs made with ``torch.empty``/``fill_``)."""
    x = torch.empty(256, 256, device=dev).fill_(0.5)
    if name == "gelu":
        y = torch.nn.functional.gelu(x)
    elif name == "layer_norm":
        y = torch.nn.functional.layer_norm(x, (256,))
    elif name == "softmax":
        y = torch.softmax(x, dim=-1)
    elif name == "linear":   # addmm with a bias: cuBLASLt's epilogue GEMM in torch
        y = torch.nn.functional.linear(x, x, x[0])
    elif name == "gemm":
        y = x @ x
    elif name == "conv2d":
        w = torch.empty(16, 3, 3, 3, device=dev).fill_(0.1)
        y = torch.nn.functional.conv2d(torch.empty(2, 3, 32, 32, device=dev).fill_(1.0), w)
    elif name == "sort":
        y = torch.sort(x, dim=-1).values
    else:
        raise ValueError(name)
    if dev == "cuda":
        torch.cuda.synchronize()
    return y


def probe(mode, dev="cuda"):
    """The step records of one process (``dev="cpu"`` only exercises the steps' code)."""
    import torch
    cuda = dev == "cuda"
    steps = []
    keep = []
    maps = read_maps()
    lib = _driver() if cuda else None

    def record(label, **extra):
        nonlocal maps
        now = read_maps()
        rec = {"step": label, "maps": maps_diff(maps, now), **extra}
        if cuda:
            rec["stack_limit_bytes"] = stack_limit_bytes(lib)
            free_b, total_b = torch.cuda.mem_get_info()
            rec["device_used_bytes"] = int(total_b - free_b)
            rec["segments"] = _segments(torch)
        steps.append(rec)
        maps = now

    def segment(mib):   # a tensor of exactly mib MiB: a new segment of that size (>= 10 MiB)
        keep.append(torch.empty(mib * _MIB, dtype=torch.uint8, device=dev))

    if cuda:
        torch.cuda.init()
        torch.empty(1, device=dev)
    record("init", maps_all=read_maps())
    for mib in (20, 20, 32, 96, 128):
        segment(mib)
        record(f"segment {mib} MiB")
    for name in STEPS_KERNELS:
        keep.append(_kernel(torch, name, dev))
        record(f"first {name}")
        segment(32)
        record("segment 32 MiB")
    host = torch.empty(256 * _MIB, dtype=torch.uint8).fill_(1)   # malloc -> mmap
    record("host 256 MiB made")
    del host
    record("host 256 MiB freed")
    segment(96)
    record("segment 96 MiB")
    pinned = torch.empty(64 * _MIB, dtype=torch.uint8, pin_memory=cuda)
    record("pinned 64 MiB made")
    segment(96)
    record("segment 96 MiB")
    del pinned
    for name in ("transformer", "resnet18"):
        _model_step(torch, name, dev)
        record(f"first {name} step")
        segment(32)
        record("segment 32 MiB")
    return {"mode": mode, "torch": torch.__version__,
            "CUDA_MODULE_LOADING": os.environ.get("CUDA_MODULE_LOADING", ""),
            "loading_mode": loading_mode(lib),
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "final_maps": read_maps(), "steps": steps}


def summary(doc):
    """Lines: each step's device memory change, map changes, and each new segment's rank."""
    lines = [f"== {doc['mode']} ({doc['device']}, torch {doc['torch']})"]
    prev_used = None
    prev = []
    for s in doc["steps"]:
        used = s.get("device_used_bytes")
        delta = "" if used is None or prev_used is None else f" used {(used - prev_used) / _MIB:+.1f} MiB"
        segs = s.get("segments", [])
        new = [x for x in segs if x not in prev]
        place = "" if s.get("stack_limit_bytes") is None else f" stack {s['stack_limit_bytes']} B"
        for addr, size in new:
            above = sum(1 for a, _ in prev if a > addr)
            place += f" new {size // _MIB} MiB seg: {above} of {len(prev)} earlier above it;"
        lines.append(f"  {s['step']:<22}{delta}{place}")
        for kind in ("added", "removed"):
            for lo, hi, perms, path in s["maps"][kind]:
                lines.append(f"      {kind:<8}{lo:#x}-{hi:#x} {(hi - lo) / _MIB:9.1f} MiB {perms} {path}")
        prev_used = used if used is not None else prev_used
        prev = segs
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--mode", choices=("lazy", "eager"), help="run one mode in this process")
    ap.add_argument("--device", default="cuda", help="cpu: exercise the steps without a GPU")
    ap.add_argument("--summary", nargs="+", metavar="FILE", help="print result files")
    args = ap.parse_args(argv)
    if args.summary:
        for path in args.summary:
            with open(path) as f:
                print("\n".join(summary(json.load(f))))
        return
    os.makedirs(args.out, exist_ok=True)
    if args.mode:
        t0 = time.perf_counter()
        doc = probe(args.mode, args.device)
        doc["wall_s"] = round(time.perf_counter() - t0, 2)
        path = os.path.join(args.out, f"va_probe_{args.mode}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        print("\n".join(summary(doc)))
        return
    for mode in ("lazy", "eager"):
        env = dict(os.environ)
        env.pop("CUDA_MODULE_LOADING", None)
        if mode == "eager":
            env["CUDA_MODULE_LOADING"] = "EAGER"
        subprocess.run([sys.executable, __file__, "--out", args.out, "--mode", mode,
                        "--device", args.device], env=env, check=False, timeout=120)


if __name__ == "__main__":
    main()
