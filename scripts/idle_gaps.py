"""Where the GPU waits in a real training step: its idle gaps, and what the launching thread
was doing when each ended.

For each configuration the model is built, warmed up and stepped as
``scripts/profile_ops.py`` does (``snsim.torchsim.record.train_step``, the GPU synchronised after
each step, as the plan suite times steps), and ``--steps`` steps are profiled (torch.profiler,
CPU and CUDA activities; the Chrome trace is read back). On the GPU timeline of a step (its
kernels, memcpys and memsets, from the step's start on the launching thread to its last
kernel's end) every gap of more than ``--min-gap-us`` is attributed to:

* ``start``: before the step's first kernel (the host issuing the step's first ops);
* ``launch``: the kernel that ends the gap was launched after the GPU had gone idle: the host
  was behind. Named by the top-level aten op (or Python function) that launched it, and its
  phase (F forward and loss, B backward, U optimizer);
* ``wait``: the kernel had been launched before the gap began (an event wait, a host copy,
  a synchronisation the GPU had to finish first).

``idle_gaps.csv``: per configuration, kind, phase and launching op: gaps per step and idle
microseconds per step; ``idle_summary.csv``: per configuration, the step, its GPU busy and idle
time and the idle by kind. The profiler adds its own host cost per op (~1-2 us), so host gaps
read somewhat longer than in an unprofiled step.

    OUT=dir PYTHONPATH=. python3 scripts/idle_gaps.py --out "$OUT" \\
        --configs torchvision:mnasnet1_0:128:sgd-momentum:foreach:fp16
    # a dry run of the code on the CPU (no kernels: no gaps)
    PYTHONPATH=. python scripts/idle_gaps.py --out /tmp/gaps --device cpu \\
        --configs torchvision:resnet18:1:sgd-momentum:foreach:none --steps 1
"""
from __future__ import annotations

import argparse
import bisect
import collections
import csv
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _load(path):
    with open(path) as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def profile_events(prof):
    """The Chrome-trace events of a finished ``torch.profiler`` run (written to a temporary
    file and read back); also ``scripts/optstep_host_probe.py``'s and
    ``plan_timeline_probe.py``'s."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        return _load(path)


def kernel_launches(events):
    """``{correlation id: the host call that launched the kernel}``: the CUDA runtime's, and
    the driver API's (cuBLAS and cuDNN launch some kernels through cuLaunchKernel)."""
    out = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X":
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                out[c] = e
    return out


def _top_ops(events):
    """Per thread, the sorted top-level host ranges (aten ops and Python functions that no
    other such range of the same thread encloses), as ``(start, end, name)``."""
    by_tid = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "python_function",
                                                   "user_annotation") \
                and e.get("name") != "snsim_step":
            by_tid[e["tid"]].append((e["ts"], e["ts"] + e.get("dur", 0), e["name"]))
    out = {}
    for tid, rs in by_tid.items():
        rs.sort(key=lambda r: (r[0], -r[1]))
        top, end = [], -1.0
        for r in rs:
            if r[0] >= end:
                top.append(r)
                end = r[1]
        out[tid] = top
    return out


def _enclosing(tops, tid, ts):
    rs = tops.get(tid, [])
    i = bisect.bisect_right(rs, (ts, float("inf"), "")) - 1
    if i >= 0 and rs[i][0] <= ts <= rs[i][1]:
        return rs[i][2]
    return "<python>"


def gaps(events, *, min_gap_us=5.0):
    """``(steps, rows)``: per profiled step ``(start, first kernel, last end, busy us)`` and
    one row per idle gap ``(kind, phase, op, us)`` (see the module docstring)."""
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["tid"]) for e in events
                   if e.get("name") == "snsim_step" and e.get("ph") == "X"
                   and e.get("cat") == "user_annotation")
    launches = kernel_launches(events)
    gpu = sorted((e["ts"], e["ts"] + e.get("dur", 0), (e.get("args") or {}).get("correlation"))
                 for e in events if e.get("cat") in _GPU_CATS and e.get("ph") == "X")
    tops = _top_ops(events)
    main = steps[0][2] if steps else None
    out_steps, rows = [], []
    for k, (lo, hi, _tid) in enumerate(steps):
        nxt = steps[k + 1][0] if k + 1 < len(steps) else float("inf")
        mine = []
        for g in gpu:
            ln = launches.get(g[2])
            if ln is not None and lo <= ln["ts"] <= hi:
                mine.append((g, ln))
        if not mine:
            continue
        mine.sort(key=lambda m: m[0][0])
        # the backward runs on the autograd engine's thread: its launches are B; the
        # launching thread's before the first of them F, after the last U
        bthreads = [ln["ts"] for _, ln in mine if ln["tid"] != main]
        b0, b1 = (min(bthreads), max(bthreads)) if bthreads else (hi, hi)

        def phase(ln):
            if ln["tid"] != main:
                return "B"
            return "F" if ln["ts"] < b0 else "U" if ln["ts"] > b1 else "B"
        busy, end = 0.0, lo
        first = mine[0][0][0]
        for (s, e, _c), ln in mine:
            gap = s - end
            if gap > min_gap_us:
                if end == lo:
                    kind = "start"
                elif ln["ts"] + ln.get("dur", 0) > end:
                    kind = "launch"
                else:
                    kind = "wait"
                rows.append((kind, phase(ln), _enclosing(tops, ln["tid"], ln["ts"]), gap))
            if e > end:
                busy += e - max(s, end)
                end = e
        out_steps.append((lo, first, end, busy, min(nxt, end) - lo))
    return out_steps, rows


def profile_gaps(text, batch, optimizer, impl, amp, *, steps, device, min_gap_us):
    """``(summary row, gap rows)`` of one configuration."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from snsim.torchsim.record import train_step, warm_training
    w = warm_training(text, batch, optimizer, impl, amp, device)
    net, opt, x, y, kw, sync = w.net, w.opt, w.x, w.y, w.kw, w.sync
    name = f"{w.spec.name}_b{batch}{w.setup.slug}"
    del w
    wall = []
    for _ in range(5):     # the step without the profiler, as the suite times it
        t0 = time.perf_counter()
        train_step(net, opt, x, y, **kw)
        sync()
        wall.append(time.perf_counter() - t0)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(steps):
            with torch.profiler.record_function("snsim_step"):
                train_step(net, opt, x, y, **kw)
            sync()
    events = profile_events(prof)
    st, rows = gaps(events, min_gap_us=min_gap_us)
    n = max(len(st), 1)
    agg = collections.defaultdict(lambda: [0, 0.0])
    for kind, ph, op, us in rows:
        a = agg[(kind, ph, op)]
        a[0] += 1
        a[1] += us
    kinds = collections.Counter()
    for kind, _ph, _op, us in rows:
        kinds[kind] += us
    span = [s[2] - s[0] for s in st]
    summary = {"config": name, "model": text, "batch": batch, "optimizer": optimizer,
               "impl": impl, "amp": amp, "step_s": statistics.median(wall),
               "profiled_span_us": statistics.median(span) if span else 0.0,
               "busy_us": sum(s[3] for s in st) / n,
               "idle_us": sum(us for *_, us in rows) / n,
               **{f"idle_{k}_us": kinds[k] / n for k in ("start", "launch", "wait")},
               "steps": len(st), "torch": torch.__version__}
    gap_rows = [{"config": name, "kind": k, "phase": ph, "op": op, "gaps_per_step": c / n,
                 "idle_us_per_step": us / n} for (k, ph, op), (c, us) in agg.items()]
    gap_rows.sort(key=lambda r: -r["idle_us_per_step"])
    del net, opt, x, y, prof
    if device == "cuda":
        torch.cuda.empty_cache()
    return summary, gap_rows


def _append(path, rows):
    if not rows:
        return
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            w.writeheader()
        w.writerows(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True,
                    help="comma list of model:batch:optimizer:impl:amp (amp none|bf16|fp16)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--min-gap-us", type=float, default=5.0)
    ap.add_argument("--deadline-s", type=float, default=240.0,
                    help="start no configuration after this many seconds")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for cfg in (c for c in args.configs.split(",") if c):
        parts = cfg.rsplit(":", 4)
        if len(parts) != 5:
            print(f"idle_gaps: --configs item {cfg!r} must be model:batch:optimizer:impl:amp",
                  file=sys.stderr)
            return 2
        if time.perf_counter() - t0 > args.deadline_s:
            print(f"idle_gaps: deadline: {cfg} not run", file=sys.stderr)
            continue
        text, batch, opt, impl, amp = parts
        s, rows = profile_gaps(text, int(batch), opt, impl, amp, steps=args.steps,
                               device=args.device, min_gap_us=args.min_gap_us)
        _append(out / "idle_summary.csv", [s])
        _append(out / "idle_gaps.csv", rows)
        top = ", ".join(f"{r['kind']}/{r['phase']}/{r['op']} {r['idle_us_per_step']:.0f}"
                        for r in rows[:4])
        print(f"{s['config']}: step {s['step_s'] * 1e3:.2f} ms, busy {s['busy_us'] / 1e3:.2f}"
              f" ms, idle {s['idle_us'] / 1e3:.2f} ms (start {s['idle_start_us']:.0f}, launch "
              f"{s['idle_launch_us']:.0f}, wait {s['idle_wait_us']:.0f} us); {top}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
