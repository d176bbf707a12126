"""Where the host process's own mappings sit among the driver's device reservations (issue 8).

Under unified addressing every cudaMalloc'd range is also reserved in the host process's
address space (``scripts/va_probe.py``: each new segment appears in ``/proc/self/maps`` as a
``---p`` range, 32 MiB per 20 MiB segment), so host ``mmap``/``munmap`` and the driver's
reservations compete for the same space. GPT-2 b16 (held-out set 8,
``traces/h200/plans_history/gpt2_b16_adam_fp16_checkpoint_selective_lazy.json.gz``) placed the
20 MiB segments of its parameter upload alternately above and below its first (148 MiB)
segment, as if ranges above kept being freed while the upload ran: the model is built on the
CPU after CUDA is initialised (``snsim.torchsim.execute.measure``), so its parameters' host
buffers lie among the driver's reservations, and ``net.to("cuda")`` frees each one after its
copy.

This runs ``measure`` exactly as ``scripts/plan_alloc_history.py`` does (allocator history
on), in one fresh process per run, and records, with the allocator's allocation count:

* before each parameter's upload and after the last (``net.to`` replaced by the same
  ``Module._apply`` with a recording ``Tensor.to``): the map's changes (ranges of 64 KiB or
  more) and the segments made since the last record;
* at the start of each training step (``record.train_step`` wrapped, as
  plan_alloc_history does): the same; in the first step's forward also before and after each
  module call where the reserved bytes, the device memory in use (``cudaMemGetInfo``: also
  the module code lazy loading maps) or the map changed (global forward hooks: they alter no
  dispatch and allocate nothing on the device);
* the whole map after CUDA's initialisation, after the model is built and at the end; glibc's
  version and the transparent-huge-page setting.

Usage (one H200, from the repository root, about 1 minute):

    PYTHONPATH=$PWD python3 scripts/host_va_probe.py --out $OUT

writes ``$OUT/host_va_<run>.json.gz`` per run (``--only RUN,...``, a run named twice is run
again in another fresh process, ``_2`` added to its file's name; ``--run RUN`` measures one in
this process; ``--device cpu`` exercises the code without a GPU, no addresses). Commit them
under traces/h200/host_va/. ``--summary FILE...`` prints each record that made a segment or
changed the map, addresses in MiB from the run's first segment (no GPU).
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import time

import va_probe   # scripts/: this script's directory is first on sys.path

_KIB = 1 << 10
RUNS = {
    # name: (model, batch, policy, plan options, setup, input_shape)
    "gpt2_b16_adam_fp16_checkpoint_selective": (
        "hf:gpt2", 16, "checkpoint", {"modules": "GPT2Block", "selective": "true"},
        ("adam", "foreach", "fp16"), (512,)),
    "resnet18_b256_fp16_plain": (
        "torchvision:resnet18", 256, "plain", {}, ("sgd-momentum", "foreach", "fp16"), None),
    "transformer_encoder_b32_plain": (
        "snsim:transformer_encoder", 32, "plain", {}, (), None),
    # the lazy-loading window's cuBLAS hole: a prediction with it misses these three
    # (+13.87 %, -10.40 %, +13.03 % reserved; without it 0.00, -0.16, -0.04 %) and hits the
    # fourth (0.00 %; +9.02 % without): where their first GEMM's 64 MiB goes in a fresh process
    "efficientnet_b2_b48_adamw_bf16_checkpoint": (
        "torchvision:efficientnet_b2", 48, "checkpoint", {"modules": "MBConv"},
        ("adamw", "foreach", "bf16"), None),
    "swin_v2_t_b24_bf16_superneurons": (
        "torchvision:swin_v2_t", 24, "superneurons", {}, ("sgd-momentum", "foreach", "bf16"), None),
    "mvit_v2_s_b8_adamw_bf16_checkpoint": (
        "torchvision:mvit_v2_s", 8, "checkpoint", {"modules": "MultiscaleBlock"},
        ("adamw", "foreach", "bf16"), None),
    "regnet_y_3_2gf_b64_adamw_bf16_superneurons": (
        "torchvision:regnet_y_3_2gf", 64, "superneurons", {}, ("adamw", "foreach", "bf16"), None),
}


def read_maps(min_bytes=64 * _KIB):
    """This process's map (:func:`va_probe.read_maps`), ranges of at least 64 KiB by default."""
    return va_probe.read_maps(min_bytes)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def probe(name, device="cuda", batch=0, history=True):
    import torch
    import snsim.torchsim.record as record
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import measure
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.plans import as_plan
    model, run_batch, policy, opts, setup, input_shape = RUNS[name]
    history_on = history   # the allocator's history costs host memory, which moves host maps
    batch = batch or run_batch
    cuda = device == "cuda"
    if cuda:
        torch.cuda.init()
        torch.empty(1, device="cuda")   # the context, as measure's _clean_cuda makes it
    recs, state = [], {"maps": read_maps(), "segs": set()}
    full = {"after_init": read_maps(0)}

    def record_point(label, **extra):
        now = read_maps()
        rec = {"label": label, "maps": va_probe.maps_diff(state["maps"], now), **extra}
        state["maps"] = now
        if cuda:
            st = torch.cuda.memory_stats()
            rec["allocations"] = int(st.get("allocation.all.allocated", 0))
            free_b, total_b = torch.cuda.mem_get_info()   # module code the driver maps too
            rec["device_used_bytes"] = int(total_b - free_b)
            rec["reserved_bytes"] = int(torch.cuda.memory_reserved())
            segs = {(int(s["address"]), int(s["total_size"]))
                    for s in torch.cuda.memory_snapshot()}
            rec["new_segments"] = sorted(segs - state["segs"])
            rec["gone_segments"] = sorted(state["segs"] - segs)
            state["segs"] = segs
        recs.append(rec)

    spec = resolve_model(model, input_shape=input_shape)

    def recording_build():
        net = spec.build()
        full["after_build"] = read_maps(0)
        record_point("built")

        def to(dev, *a, **kw):   # what Module.to does for float parameters, recorded
            def fn(t):
                record_point("upload", nbytes=int(t.nbytes), shape=list(t.shape),
                             dtype=str(t.dtype))
                return t.to(dev)
            out = net._apply(fn)
            record_point("uploaded")
            return out
        net.to = to
        return net

    class Recording:   # the spec (frozen) with a recording build
        def __getattr__(self, attr):
            return getattr(spec, attr)
        build = staticmethod(recording_build)
    step = record.train_step
    steps = [0]

    def on_module(module, *args):   # the first step's forward: where its segments go
        if not cuda:
            return
        free_b, total_b = torch.cuda.mem_get_info()
        used = (torch.cuda.memory_reserved(), total_b - free_b)
        now = read_maps()
        if used != state["reserved"] or now != state["maps"]:
            state["reserved"] = used
            record_point("module", module=type(module).__name__)

    def marked_step(*a, **kw):
        record_point("step")
        steps[0] += 1
        if steps[0] > 1:
            return step(*a, **kw)
        from torch.nn.modules import module as nn_module
        state["reserved"] = None
        handles = [nn_module.register_module_forward_pre_hook(on_module),
                   nn_module.register_module_forward_hook(on_module)]
        try:
            return step(*a, **kw)
        finally:
            for h in handles:
                h.remove()
    record.train_step = marked_step
    plan = as_plan(None if policy == "plain" else policy, dict(opts))
    history = None
    if cuda and history_on:
        torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                 max_entries=2_000_000)
    try:
        measured = measure(Recording(), batch, plan, optimizer=TrainSetup.parse(*setup),
                           device=device, **({} if cuda else {"iters": 1, "warmup_iters": 1}))
        if cuda and history_on:
            snap = torch.cuda.memory._snapshot()
            history = [[e["action"], int(e.get("addr", 0)), int(e.get("size", 0)),
                        int(e.get("stream", 0))]
                       for trace in snap.get("device_traces", []) for e in trace]
    finally:
        if cuda and history_on:
            torch.cuda.memory._record_memory_history(enabled=None)
    record_point("end")
    full["end"] = read_maps(0)
    return {"run": name, "config": {"model": model, "batch": batch, "policy": policy,
                                    "options": opts, "setup": list(setup)},
            "torch": torch.__version__,
            "CUDA_MODULE_LOADING": os.environ.get("CUDA_MODULE_LOADING", ""),
            "allocator_history": history_on,
            "glibc": os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None,
            "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
            "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
            "torch_threads": torch.get_num_threads(),
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "measured": {k: v for k, v in measured.items()
                         if k in ("peak_allocated_bytes", "peak_reserved_bytes")},
            "records": recs, "full_maps": full, "events": history}


def summary(path, out=sys.stdout):
    """Print a result file's records that made segments or changed the map (MiB from the
    first segment; ``+[lo,hi)`` a range mapped, ``-[lo,hi)`` one unmapped)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    recs = doc["records"]
    base = next((r["new_segments"][0][0] for r in recs if r.get("new_segments")), 0)

    def rel(a):
        return f"{(a - base) / (1 << 20):+.2f}"
    print(f"== {doc['run']} ({doc['device']}, torch {doc['torch']}, {doc['glibc']}, "
          f"{doc['torch_threads']} threads, THP {doc['thp']}): reserved "
          f"{doc['measured'].get('peak_reserved_bytes')}, first segment at {base:#x}", file=out)
    for r in recs:
        segs = " ".join(f"SEG {rel(a)}:{s / (1 << 20):g}" for a, s in r.get("new_segments", []))
        maps = " ".join([f"+[{rel(lo)},{rel(hi)}){p}{'/' + pa.split('/')[-1] if pa else ''}"
                         for lo, hi, p, pa in r["maps"]["added"]]
                        + [f"-[{rel(lo)},{rel(hi)}){p}" for lo, hi, p, pa in r["maps"]["removed"]])
        what = r.get("module") or (f"{r['nbytes'] / (1 << 20):.2f} MiB" if "nbytes" in r else "")
        if "device_used_bytes" in r:
            what += (f" used-reserved {(r['device_used_bytes'] - r['reserved_bytes']) / (1 << 20):.1f}"
                     f" MiB")
        if segs or maps or r["label"] != "upload":
            print(f"{r['label']:8s} n={r.get('allocations')} {what} | {segs} | {maps}", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--only", default="", help="comma-separated run names")
    ap.add_argument("--run", default="", help="measure this run in this process")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--tag", default="", help="suffix of the output file name (--run)")
    ap.add_argument("--summary", nargs="+", metavar="FILE", help="print result files")
    ap.add_argument("--batch", type=int, default=0, help="override the runs' batch (CPU dry run)")
    ap.add_argument("--no-history", action="store_true",
                    help="leave the allocator's event history off (segments and maps only)")
    args = ap.parse_args(argv)
    if args.summary:
        for path in args.summary:
            summary(path)
        return
    names = [s for s in args.only.split(",") if s] or list(RUNS)
    unknown = [n for n in names + ([args.run] if args.run else []) if n not in RUNS]
    if unknown:
        sys.exit(f"host_va_probe: unknown run(s) {', '.join(unknown)}; known: {', '.join(RUNS)}")
    os.makedirs(args.out, exist_ok=True)
    if args.run:
        t0 = time.perf_counter()
        doc = probe(args.run, args.device, args.batch, history=not args.no_history)
        doc["wall_s"] = round(time.perf_counter() - t0, 1)
        tag = f"_{args.tag}" if args.tag else ""
        path = os.path.join(args.out, f"host_va_{args.run}{tag}.json.gz")
        with gzip.open(path, "wt") as f:
            json.dump(doc, f)
        print(f"{args.run}: {len(doc['records'])} records, reserved "
              f"{doc['measured'].get('peak_reserved_bytes')}, {doc['wall_s']} s -> {path}",
              flush=True)
        return
    seen = {}
    for name in names:   # one fresh process each: the driver and the host map start clean
        seen[name] = seen.get(name, 0) + 1   # a name listed again: another fresh process
        tag = str(seen[name]) if seen[name] > 1 else ""
        subprocess.run([sys.executable, os.path.abspath(__file__), "--run", name, "--out",
                        args.out, "--device", args.device, "--batch", str(args.batch),
                        "--tag", tag] + (["--no-history"] if args.no_history else []),
                       check=True)


if __name__ == "__main__":
    main()
