"""What copies cost compute, and what memory plans' mechanisms cost the host: measurements for
issue 10 items 3-4. (The host's cost per aten call, module call, autograd node and parameter in
a real step is ``scripts/host_innet_probe.py``'s.)

Four parts, each writing one CSV (run on a CUDA machine through scripts/device_steptime.sh;
on a CPU they run with tiny counts as a dry run, and the copy grid is skipped):

``copy``  (copy_slowdown.csv) -- compute kernels (conv, GEMM, elementwise, batch norm) timed
  with CUDA events alone and while H2D / D2H / both copies of a size run on other streams,
  pinned (async on a copy stream) and pageable (issued by a second host thread, as a
  blocking copy is), and each copy's bandwidth alone and under compute.

``bw``    (copy_bandwidth.csv) -- copy bandwidth by size, pinned and pageable, both directions,
  and the host time a pageable copy holds the issuing thread.

``soc``   (save_on_cpu_costs.csv) -- ``save_on_cpu(pin_memory=True)``'s pack and unpack
  hooks by tensor size: host seconds per call and per free, GPU seconds per copy, against the
  same copies into buffers allocated once (calibrate's pattern).

``ckpt``  (checkpoint_costs.csv) -- host seconds per block of ``torch.utils.checkpoint`` and of
  bare ``saved_tensors_hooks`` against a plain chain of tiny conv-BN-ReLU blocks, forward and
  backward (the host cost the executed checkpoint / superneurons plans show and the op-level
  host model does not charge).

Usage: ``PYTHONPATH=. python3 scripts/steptime_probe.py PART --out DIR [--quick]``.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import csv
import os
import sys
import threading
import time

import torch
import torch.nn.functional as F
import torch.utils._python_dispatch

DEV = torch.device("cuda" if torch.cuda.is_available() else "cpu")
CUDA = DEV.type == "cuda"


def sync():
    if CUDA:
        torch.cuda.synchronize()


def write_rows(path, rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} rows", flush=True)


def chain(kind, n):
    """A loss at the end of ``n`` tiny ops of ``kind``; returns (loss, leaves)."""
    x = torch.randn(2, 8, 8, 8, device=DEV, requires_grad=True)
    leaves = [x]
    h = x
    if kind == "conv":
        w = torch.randn(8, 8, 3, 3, device=DEV, requires_grad=True) * 0.1
        w.retain_grad()
    for i in range(n):
        if kind == "add":
            h = h + 1.0
        elif kind == "mul":
            h = h * 1.0001
        elif kind == "relu":
            h = torch.relu(h)
        elif kind == "view":
            h = h.view(2, 512).view(2, 8, 8, 8)
        elif kind == "conv":
            h = F.conv2d(h, w, padding=1)
        elif kind == "batch_norm":
            h = F.batch_norm(h, None, None, training=True)
        elif kind.startswith("cat"):
            k = int(kind[3:])
            h = torch.cat([h] + [h.narrow(1, 0, 1)] * (k - 1), 1).narrow(1, 0, 8)
        elif kind == "leaf":
            p = torch.randn(2, 8, 8, 8, device=DEV, requires_grad=True)
            leaves.append(p)
            h = h + p
    return h.sum(), leaves


# -- host: checkpointing ---------------------------------------------------------------------
# tensor arguments the checkpoint_args variant adds to each checkpoint call
EXTRA_ARGS = 15


def _ignore_extra(block, h, extras):
    return block(h)


def host_checkpoint(n_layers, reps, layers_per_block=(1, 2, 4, 8), amp="none", only=None):
    """Host seconds per block of a chain of ``n_layers`` tiny conv-BN-ReLU layers (kernels of
    microseconds, so the host is the bottleneck), grouped ``k`` layers to a block for each
    ``k`` of ``layers_per_block``, forward issue and ``backward()`` return, for: ``plain``;
    ``hooks`` (identity ``saved_tensors_hooks`` around the forward: the Python pack/unpack
    calls alone, as ``save_on_cpu`` and the superneurons offloader install them);
    ``checkpoint`` (``torch.utils.checkpoint(use_reentrant=False)`` around every block: its
    hooks, its bookkeeping and the recomputation); and the SuperNeurons executor's Python hooks
    (``snsim.torchsim.plans.Offloader``, its copies left out -- they are ops the model times):
    ``conv_hook`` (its forward hook on every convolution) and ``offloader`` (its
    ``saved_tensors_hooks`` pack/unpack around the forward, nothing large enough to copy);
    ``offloader_copies`` (CUDA only) is the ``Offloader`` as a plan runs it, hooks on the
    convolutions and every convolution's output copied out in forward (its stream, event and
    retiring wait) and prefetched back in backward (a device buffer, the H2D stream, the
    compute stream's wait): against ``offloader`` and ``conv_hook``, the Python path of one
    offloaded tensor (the copies of 1 KiB take microseconds of the copy engine). ``only``:
    the variants to run (default all).
    ``selective`` is ``checkpoint`` with selective checkpointing's ``context_fn``
    (``snsim.torchsim.plans.selective_context_fn``: a Python dispatch mode and policy call per
    aten op, in forward and recomputation). ``saved_tensors`` is the pack calls per block of
    the plain forward and ``ops`` the ops selective checkpointing's dispatch mode asks its
    policy about (forward; the mode ignores ``detach``). ``checkpoint_args`` is ``checkpoint``
    given ``EXTRA_ARGS`` more tensor arguments that the block ignores (DenseNet's layers take
    the block's feature list): checkpoint stashes an RNG state per tensor argument and saves
    each (``args`` is their count). The rows at several block sizes separate
    checkpoint's cost per call from its cost per saved tensor. ``amp`` ``bf16`` / ``fp16``:
    every forward runs under ``torch.autocast`` of that dtype (the recomputation re-enters it
    and casts the weights again), as a mixed-precision step does."""
    from torch.utils.checkpoint import checkpoint
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from snsim.torchsim.plans import _POLICY_CALLS, Offloader, selective_context_fn
    selective = selective_context_fn()
    counted = selective_context_fn(counted=True)
    layers = [torch.nn.Sequential(
        torch.nn.Conv2d(8, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(inplace=True)).to(DEV) for _ in range(n_layers)]
    layers_conv = [m for layer in layers for m in layer if isinstance(m, torch.nn.Conv2d)]
    x0 = torch.randn(2, 8, 8, 8, device=DEV, requires_grad=True)
    extras = [torch.randn(2, 8, 8, 8, device=DEV) for _ in range(EXTRA_ARGS)]
    packs = [0]
    autocast = (contextlib.nullcontext if amp == "none" else functools.partial(
        torch.autocast, DEV.type, dtype={"bf16": torch.bfloat16, "fp16": torch.float16}[amp]))

    def pack(t):
        packs[0] += 1
        return t

    rows = []
    for k in layers_per_block:
        blocks = [torch.nn.Sequential(*layers[i:i + k]) for i in range(0, n_layers, k)]

        def run(variant):
            h = x0
            if variant == "hooks":
                with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                    for b in blocks:
                        h = b(h)
            elif variant in ("offloader", "offloader_copies"):
                off.begin(None, None)
                for b in blocks:
                    h = b(h)
                off.end(None, None, None)
            else:
                for b in blocks:
                    if variant == "checkpoint_args":
                        h = checkpoint(_ignore_extra, b, h, extras, use_reentrant=False)
                    elif variant in ("checkpoint", "selective"):
                        kw = {"context_fn": selective} if variant == "selective" else {}
                        h = checkpoint(b, h, use_reentrant=False, **kw)
                    else:
                        h = b(h)
            return h.sum()

        # the ops selective checkpointing's dispatch mode asks its policy about per block (what
        # snsim predict counts in a network: snsim.torchsim.plans._POLICY_CALLS)
        asked = _POLICY_CALLS[0]
        checkpoint(blocks[0], x0, use_reentrant=False, context_fn=counted)
        ops_per_block = _POLICY_CALLS[0] - asked
        variants = tuple(v for v in ("plain", "hooks", "checkpoint", "conv_hook", "offloader",
                                     "offloader_copies", "selective", "checkpoint_args")
                         if (only is None or v in only)
                         and (CUDA or v != "offloader_copies"))
        times = {v: ([], []) for v in variants}
        # offloader_copies: one Offloader for all repetitions, as a training run keeps one
        # (its pinned host buffers made once); every convolution's output is copied out
        copier = Offloader(shadow=False, min_bytes=0) if "offloader_copies" in variants \
            else None
        # variants interleaved within each repetition: a drift of the host's speed during the
        # probe falls on all of them alike (their differences are the figures)
        for i in range(reps + 2):
            for variant in variants:
                off = copier if variant == "offloader_copies" else \
                    Offloader(shadow=not CUDA, min_bytes=1 << 62)   # copies nothing
                handles = [m.register_forward_hook(off.on_conv) for m in layers_conv] \
                    if variant in ("conv_hook", "offloader_copies") else []
                sync()
                t0 = time.perf_counter()
                with autocast():
                    loss = run(variant)
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
                sync()
                for hd in handles:
                    hd.remove()
                if i >= 2:                       # two warm-up runs
                    times[variant][0].append(t1 - t0)
                    times[variant][1].append(t2 - t1)
                del loss
        packs[0] = 0
        run("hooks")
        per_block = packs[0] / len(blocks)
        for variant in variants:
            f_s, b_s = times[variant]
            for phase, v in (("F", f_s), ("B", b_s)):
                rows.append({"part": "checkpoint", "name": variant, "phase": phase,
                             "n": len(blocks), "layers_per_block": k,
                             "host_s": f"{sorted(v)[len(v) // 2] / len(blocks):.4e}",
                             "saved_tensors": f"{per_block:g}", "ops": ops_per_block,
                             "args": 1 + (EXTRA_ARGS if variant == "checkpoint_args" else 0),
                             "amp": amp})
    for r in rows:
        print(f"  k={r['layers_per_block']} {r['name']:<10} {r['phase']}: "
              f"{float(r['host_s']) * 1e6:7.2f} us per block "
              f"({r['saved_tensors']} saved tensors per block)", flush=True)
    return rows


# -- host and copies: save_on_cpu's pack and unpack ------------------------------------------
SOC_SIZES = (4 << 10, 64 << 10, 1 << 20, 8 << 20)


def _gpu_span_s(issue):
    """GPU seconds of the work ``issue()`` enqueues, timed between events with the GPU kept
    busy (``torch.cuda._sleep``) while the host issues it, so the span is the GPU's alone."""
    sync()
    torch.cuda._sleep(int(2e8))               # ~0.1 s of GPU time: the host runs ahead
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    out = issue()
    e1.record()
    sync()
    return e0.elapsed_time(e1) * 1e-3, out


def save_on_cpu_costs(quick):
    """Host seconds per call of ``save_on_cpu(pin_memory=True)``'s pack hook (a pinned
    ``torch.empty`` from the caching host allocator and a non-blocking D2H ``copy_``) and
    unpack hook (``.to(device, non_blocking=True)``: a device allocation and an H2D copy), and
    per free of a packed tensor (the host allocator records an event per stream that used
    it), with the GPU idle; and the GPU seconds per copy of each, with the host running ahead.
    ``prealloc`` rows time the same copies into buffers allocated once (calibrate's pattern).
    fp16 tensors of each size of ``SOC_SIZES``, ``n`` of them (up to 256 MiB in all)."""
    from torch.autograd.graph import save_on_cpu
    hooks = save_on_cpu(pin_memory=CUDA)
    pack, unpack = hooks.pack_hook, hooks.unpack_hook
    rows = []
    for nbytes in SOC_SIZES[:2] if quick else SOC_SIZES:
        n = 4 if quick else max(16, min(400, (256 << 20) // nbytes))
        src = [torch.randn(nbytes // 2, device=DEV).half() for _ in range(n)]
        for _ in range(3):                   # warm the caching host and device allocators
            packed = [pack(t) for t in src]
            outs = [unpack(p) for p in packed]
            sync()
            del packed, outs
        sync()
        res = {}
        for rep in range(3 if quick else 5):
            sync()
            t0 = time.perf_counter()
            packed = [pack(t) for t in src]
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            outs = [unpack(p) for p in packed]
            t3 = time.perf_counter()
            sync()
            del outs
            t4 = time.perf_counter()
            del packed
            t5 = time.perf_counter()
            sync()
            for key, v in (("pack_host", t1 - t0), ("unpack_host", t3 - t2),
                           ("free_host", t5 - t4)):
                res.setdefault(key, []).append(v / n)
        if CUDA:
            for rep in range(3):
                g, packed = _gpu_span_s(lambda: [pack(t) for t in src])
                res.setdefault("pack_gpu", []).append(g / n)
                g, outs = _gpu_span_s(lambda: [unpack(p) for p in packed])
                res.setdefault("unpack_gpu", []).append(g / n)
                del packed, outs
                sync()
            host = [torch.empty(nbytes // 2, dtype=torch.half, pin_memory=True)
                    for _ in range(n)]
            dev = [torch.empty_like(t) for t in src]
            for rep in range(3):
                g, _ = _gpu_span_s(lambda: [h.copy_(t, non_blocking=True)
                                            for h, t in zip(host, src)])
                res.setdefault("prealloc_d2h_gpu", []).append(g / n)
                g, _ = _gpu_span_s(lambda: [d.copy_(h, non_blocking=True)
                                            for d, h in zip(dev, host)])
                res.setdefault("prealloc_h2d_gpu", []).append(g / n)
                sync()
                t0 = time.perf_counter()
                for h, t in zip(host, src):
                    h.copy_(t, non_blocking=True)
                t1 = time.perf_counter()
                sync()
                for d, h in zip(dev, host):
                    d.copy_(h, non_blocking=True)
                t2 = time.perf_counter()
                sync()
                res.setdefault("prealloc_d2h_host", []).append((t1 - t0) / n)
                res.setdefault("prealloc_h2d_host", []).append((t2 - t1) / n)
            del host, dev
        for key, v in res.items():
            med = sorted(v)[len(v) // 2]
            rows.append({"part": "save_on_cpu", "name": key, "bytes": nbytes, "n": n,
                         "seconds_per_call": f"{med:.4e}",
                         "bytes_per_s": f"{nbytes / med:.4e}" if key.endswith("gpu") else ""})
            print(f"  {nbytes:>9} B x{n:<4} {key:<18} {med * 1e6:9.2f} us per call", flush=True)
        del src
    return rows


class OpCounter(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


# -- copies vs compute --------------------------------------------------------------------
def compute_cases(quick):
    s = 1 if not quick else 0
    cases = {}
    x = torch.randn(32 if s else 2, 128, 56, 56, device=DEV)
    w = torch.randn(128, 128, 3, 3, device=DEV)
    cases["conv3x3_b32_c128_56"] = lambda: F.conv2d(x, w, padding=1)
    a = torch.randn(4096 if s else 64, 4096 if s else 64, device=DEV)
    cases["gemm_fp32_4096"] = lambda: a @ a
    ab = a.to(torch.bfloat16)
    cases["gemm_bf16_4096"] = lambda: ab @ ab
    e1 = torch.randn(64 * 2**20 if s else 1024, device=DEV)   # 256 MiB fp32
    e2 = torch.randn_like(e1)
    cases["add_256MiB"] = lambda: torch.add(e1, e2)
    xb = torch.randn(64 if s else 2, 256, 56, 56, device=DEV)
    rm, rv = torch.zeros(256, device=DEV), torch.ones(256, device=DEV)
    cases["batch_norm_b64_c256_56"] = lambda: F.batch_norm(xb, rm, rv, training=True)
    return cases


def event_time_s(fn, reps, stream=None):
    s = stream or torch.cuda.current_stream()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(s):
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
    return e0, e1


class CopyLoad:
    """Copies of ``nbytes`` in ``direction`` (h2d, d2h, both) on side streams, pinned
    (async) or pageable (a second host thread issuing blocking copies), until stopped."""

    def __init__(self, nbytes, direction, pinned):
        n = nbytes // 4
        self.dirs = ["h2d", "d2h"] if direction == "both" else [direction]
        self.pinned = pinned
        self.host = {d: torch.empty(n, pin_memory=pinned) for d in self.dirs}
        self.dev = {d: torch.empty(n, device=DEV) for d in self.dirs}
        self.streams = {d: torch.cuda.Stream() for d in self.dirs}
        self.nbytes = nbytes
        self.copies = {d: 0 for d in self.dirs}
        self._stop = threading.Event()
        self._threads = []

    def one(self, d):
        with torch.cuda.stream(self.streams[d]):
            if d == "h2d":
                self.dev[d].copy_(self.host[d], non_blocking=self.pinned)
            else:
                self.host[d].copy_(self.dev[d], non_blocking=self.pinned)
        self.copies[d] += 1

    def enqueue(self, seconds, bw_guess):
        """Pinned: enqueue enough async copies to cover ``seconds``."""
        k = max(2, int(seconds * bw_guess / self.nbytes) + 2)
        for d in self.dirs:
            for _ in range(k):
                self.one(d)

    def start_threads(self):
        def loop(d):
            while not self._stop.is_set():
                self.one(d)
                self.streams[d].synchronize()
        for d in self.dirs:
            th = threading.Thread(target=loop, args=(d,), daemon=True)
            th.start()
            self._threads.append(th)

    def stop(self):
        self._stop.set()
        for th in self._threads:
            th.join()
        for s in self.streams.values():
            s.synchronize()


def copy_slowdown(quick):
    if not CUDA:
        print("copy grid: no CUDA device, skipped", flush=True)
        return []
    torch.backends.cudnn.benchmark = False
    rows = []
    cases = compute_cases(quick)
    sizes = (2**20, 16 * 2**20, 256 * 2**20) if not quick else (2**20,)
    main = torch.cuda.Stream()
    for cname, fn in cases.items():
        # reps so that one timed run lasts about 50 ms
        e0, e1 = event_time_s(fn, 3, main)
        sync()
        one = e0.elapsed_time(e1) * 1e-3 / 3
        reps = max(3, int(0.05 / max(one, 1e-6)))
        alone = []
        for _ in range(3):
            e0, e1 = event_time_s(fn, reps, main)
            sync()
            alone.append(e0.elapsed_time(e1) * 1e-3 / reps)
        t_alone = sorted(alone)[1]
        rows.append({"kernel": cname, "copy": "none", "pinned": "", "copy_bytes": 0,
                     "kernel_s": f"{t_alone:.4e}", "slowdown": "1.0", "reps": reps})
        for nbytes in sizes:
            for direction in ("h2d", "d2h", "both"):
                for pinned in (True, False):
                    load = CopyLoad(nbytes, direction, pinned)
                    load.one(load.dirs[0])   # warm the buffers
                    sync()
                    load.copies = {d: 0 for d in load.dirs}
                    c0 = time.perf_counter()
                    if pinned:
                        load.enqueue(t_alone * reps * 2.0, 50e9)   # outlast the kernels
                    else:
                        load.start_threads()
                        time.sleep(0.005)
                    e0, e1 = event_time_s(fn, reps, main)
                    e1.synchronize()
                    t = e0.elapsed_time(e1) * 1e-3 / reps
                    load.stop()
                    sync()
                    wall = time.perf_counter() - c0
                    moved = sum(load.copies.values()) * nbytes
                    rows.append({"kernel": cname, "copy": direction, "pinned": int(pinned),
                                 "copy_bytes": nbytes, "kernel_s": f"{t:.4e}",
                                 "slowdown": f"{t / t_alone:.4f}", "reps": reps,
                                 "copies": sum(load.copies.values()),
                                 "copy_bytes_per_s_wall": f"{moved / wall:.4e}"})
                    del load
        print(f"  {cname}: alone {t_alone*1e3:.3f} ms; max slowdown "
              f"{max(float(r['slowdown']) for r in rows if r['kernel'] == cname):.3f}",
              flush=True)
    return rows


def copy_bandwidth(quick):
    if not CUDA:
        print("copy bandwidth: no CUDA device, skipped", flush=True)
        return []
    rows = []
    sizes = [4**k * 1024 for k in range(0, 11)] if not quick else [1024, 2**20]   # 1 KiB..1 GiB
    for nbytes in sizes:
        for direction in ("h2d", "d2h"):
            for pinned in (True, False):
                n = nbytes // 4
                h = torch.empty(n, pin_memory=pinned)
                d = torch.empty(n, device=DEV)
                reps = max(3, min(200, int(2e9 / nbytes)))

                def one():
                    if direction == "h2d":
                        d.copy_(h, non_blocking=pinned)
                    else:
                        h.copy_(d, non_blocking=pinned)
                one()
                sync()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.perf_counter()
                e0.record()
                for _ in range(reps):
                    one()
                host_issue = (time.perf_counter() - t0) / reps
                e1.record()
                e1.synchronize()
                wall = (time.perf_counter() - t0) / reps
                gpu = e0.elapsed_time(e1) * 1e-3 / reps
                rows.append({"direction": direction, "pinned": int(pinned), "bytes": nbytes,
                             "reps": reps, "gpu_s": f"{gpu:.4e}", "wall_s": f"{wall:.4e}",
                             "host_issue_s": f"{host_issue:.4e}",
                             "bytes_per_s": f"{nbytes / max(wall, gpu):.4e}"})
                del h, d
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=("copy", "bw", "ckpt", "soc"))
    p.add_argument("--out", required=True)
    p.add_argument("--amp", default="none", choices=("none", "bf16", "fp16"),
                   help="ckpt: run the blocks' forward under torch.autocast of this dtype")
    p.add_argument("--quick", action="store_true", help="tiny counts (a CPU dry run)")
    p.add_argument("--variants", default="",
                   help="ckpt: comma-separated variants to run (default all)")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    print(f"torch {torch.__version__} device {DEV}"
          f" {torch.cuda.get_device_name() if CUDA else ''}", flush=True)
    t0 = time.perf_counter()
    if a.part == "copy":
        write_rows(os.path.join(a.out, "copy_slowdown.csv"), copy_slowdown(a.quick))
    elif a.part == "ckpt":
        write_rows(os.path.join(a.out, "checkpoint_costs.csv"),
                   host_checkpoint(8 if a.quick else 200, 1 if a.quick else 11, amp=a.amp,
                                   only=a.variants.split(",") if a.variants else None))
    elif a.part == "soc":
        write_rows(os.path.join(a.out, "save_on_cpu_costs.csv"), save_on_cpu_costs(a.quick))
    else:
        write_rows(os.path.join(a.out, "copy_bandwidth.csv"), copy_bandwidth(a.quick))
    print(f"{a.part}: {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
