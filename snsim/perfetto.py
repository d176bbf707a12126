"""Chrome Trace Event JSON of one simulated iteration, shaped like a Kineto trace (SPEC §13).

Open the file in https://ui.perfetto.dev (or ``chrome://tracing``). Layout::

    pid 0  "snsim: simulated GPU (<hardware>)"
      tid 1  compute  kernels, replays     ph "X", cat "kernel", name "<layer> <phase>"
                      stalls               ph "X", cat "stall"
      tid 2  H2D      prefetch, miss       ph "X", cat "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"
      tid 3  D2H      offload, eviction    ph "X", cat "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)"
      counter "memory"                     ph "C", args {allocated, reserved} in bytes
      counter "memory by category"         ph "C", args {<category>: bytes}
      flows  offload -> prefetch           ph "s" / "f", cat "offload", one per D2H/H2D pair

``ts`` and ``dur`` are microseconds. Times are rounded to whole nanoseconds first and slices
on one thread are clamped so that none starts before the previous one ends (the engine's
streams are FIFO, so only float rounding can make them touch); Perfetto nests overlapping
slices, which would misdraw a stream.

The ``memory`` counter is the allocator model's own ``allocated`` and ``reserved`` bytes after
every change (``Result.allocator_trace``: static footprint included, CUDA context excluded), so
it shows the ``pool``/``pytorch`` rounding and segments exactly. A result without that trace
(an older pickle) falls back to the running sum of ``Result.memory_events`` with ``reserved`` as
its high-water mark. ``memory by category`` always sums the memory events' exact tensor sizes.
"""
from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path

from .trace import open_text

GPU_PID = 0
TID_COMPUTE, TID_H2D, TID_D2H = 1, 2, 3
THREAD_NAMES = {TID_COMPUTE: "compute", TID_H2D: "H2D copy", TID_D2H: "D2H copy"}
PHASE_NAMES = {"F": "forward", "B": "backward", "R": "recompute", "U": "update"}


def _ns(t_s):
    return int(round(t_s * 1e9))


def _us(ns):
    return ns / 1000


def _jsonable(obj):
    """``obj`` with tuples as lists and anything exotic as a string (otherData must dump)."""
    return json.loads(json.dumps(obj, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def _memcpy_name(direction, pinned):
    host = "Pinned" if pinned else "Pageable"
    return f"Memcpy HtoD ({host} -> Device)" if direction == "h2d" else \
        f"Memcpy DtoH (Device -> {host})"


def _metadata(hardware):
    ev = [{"ph": "M", "pid": GPU_PID, "tid": 0, "name": "process_name",
           "args": {"name": f"snsim: simulated GPU ({hardware})"}},
          {"ph": "M", "pid": GPU_PID, "tid": 0, "name": "process_sort_index",
           "args": {"sort_index": GPU_PID}}]
    for tid, name in THREAD_NAMES.items():
        ev.append({"ph": "M", "pid": GPU_PID, "tid": tid, "name": "thread_name",
                   "args": {"name": name}})
        ev.append({"ph": "M", "pid": GPU_PID, "tid": tid, "name": "thread_sort_index",
                   "args": {"sort_index": tid}})
    return ev


def _slices(result, program):
    """(tid, start_ns, end_ns, seq, event-without-times) for every kernel, stall and copy."""
    out = []
    for rec in result.steps:
        step, layer, phase, start_s, end_s, highwater, ws, algo, stall_s = rec
        start, end = _ns(start_s), _ns(end_s)
        if stall_s > 0:
            out.append((TID_COMPUTE, start - _ns(stall_s), start, len(out),
                        {"ph": "X", "cat": "stall", "name": f"stall ({layer} {phase})",
                         "args": {"layer": layer, "phase": phase, "step": step,
                                  "stall_s": stall_s}}))
        args = {"layer": layer, "phase": phase, "step": step, "highwater_bytes": highwater}
        if algo:
            args.update(algo=algo, workspace_bytes=ws)
        if program is not None:
            args["tensor_ids"] = list(program.steps[step].deps)
        out.append((TID_COMPUTE, start, end, len(out),
                    {"ph": "X", "cat": "kernel", "name": f"{layer} {phase}", "args": args}))
    for tensor_id, direction, nbytes, issue_s, start_s, end_s, pinned in result.transfers:
        dur_s = end_s - start_s
        args = {"bytes": nbytes, "tensor_id": tensor_id, "pinned": bool(pinned),
                "issue_us": _us(_ns(issue_s)),
                "memory bandwidth (GB/s)": nbytes / dur_s / 1e9 if dur_s > 0 else 0.0}
        out.append((TID_H2D if direction == "h2d" else TID_D2H, _ns(start_s), _ns(end_s), len(out),
                    {"ph": "X", "cat": "gpu_memcpy", "name": _memcpy_name(direction, pinned),
                     "args": args}))
    return out


def _place(slices):
    """Sort per thread and clamp so no slice starts before the previous one on its thread ends."""
    placed = []
    for tid, group in groupby(sorted(slices, key=lambda s: (s[0], s[1], s[2], s[3])),
                              key=lambda s: s[0]):
        prev_end = None
        for _, start, end, _seq, ev in group:
            if prev_end is not None and start < prev_end:
                start = prev_end
            end = max(end, start)
            prev_end = end
            placed.append((tid, start, end, ev))
    return placed


def _flows(placed):
    """Offload -> later prefetch (or miss) arrows, one per D2H/H2D pair of a tensor."""
    last_d2h = {}
    pairs = []
    for tid, start, _end, ev in sorted(placed, key=lambda p: (p[1], p[0])):
        if ev["cat"] != "gpu_memcpy":
            continue
        t = ev["args"]["tensor_id"]
        if tid == TID_D2H:
            last_d2h[t] = start
        elif t in last_d2h:
            pairs.append((t, last_d2h.pop(t), start))
    flows = []
    for i, (t, s_ns, f_ns) in enumerate(pairs):
        common = {"cat": "offload", "name": f"tensor {t}", "id": i, "pid": GPU_PID}
        flows.append({"ph": "s", "tid": TID_D2H, "ts": _us(s_ns), **common})
        flows.append({"ph": "f", "bp": "e", "tid": TID_H2D, "ts": _us(f_ns), **common})
    return flows


def _allocator_counters(result):
    """``memory`` counter samples from the allocator model's own allocated/reserved bytes."""
    out = []
    last = None
    # the engine logs in processing order; a copy's end can be processed after a later step
    for t, allocated, reserved in sorted(result.allocator_trace, key=lambda e: e[0]):
        ts = _ns(t)
        if last is not None and last["ts"] == _us(ts):
            out.pop()    # several changes at one instant: keep the last state
        last = {"ph": "C", "pid": GPU_PID, "tid": 0, "name": "memory", "ts": _us(ts),
                "args": {"allocated": allocated, "reserved": reserved}}
        out.append(last)
    return out


def _counters(result):
    """``memory`` and ``memory by category`` counter samples from the memory events."""
    exact = _allocator_counters(result) if getattr(result, "allocator_trace", None) else None
    ideal = result.allocator == "ideal"
    events = sorted(((_ns(t), i, cat, d) for i, (t, cat, d) in enumerate(result.memory_events)))
    allocated = high = 0
    by_cat = {}
    out = []
    for ts, group in groupby(events, key=lambda e: e[0]):
        peak = None
        for _, _, cat, delta in group:
            allocated += delta
            by_cat[cat] = by_cat.get(cat, 0) + delta
            peak = allocated if peak is None else max(peak, allocated)
        # within one instant an allocation may precede a free: show the peak, then the level
        for value in ((peak, allocated) if peak != allocated and exact is None else (allocated,)):
            high = max(high, value)
            if exact is None:
                out.append({"ph": "C", "pid": GPU_PID, "tid": 0, "name": "memory",
                            "ts": _us(ts),
                            "args": {"allocated": value, "reserved": value if ideal else high}})
        out.append({"ph": "C", "pid": GPU_PID, "tid": 0, "name": "memory by category",
                    "ts": _us(ts), "args": dict(sorted(by_cat.items()))})
    return (exact or []) + out


def _other_data(result):
    row = result.summary()
    data = {k: row[k] for k in ("run_id", "network", "batch", "policy", "hardware", "allocator",
                                "budget_bytes", "feasible", "failure", "peak_ideal_bytes",
                                "peak_allocated_bytes", "peak_reserved_bytes",
                                "peak_device_bytes", "static_bytes", "step_time_s")}
    data["policy_options"] = result.options
    data["context_bytes"] = result.context_bytes
    data["memory_counter"] = ("allocated/reserved = the allocator model's bytes after each "
                              "change (static included, context excluded)")
    try:
        from importlib.metadata import version
        data["snsim_version"] = version("snsim")
    except Exception:  # pragma: no cover - not installed as a distribution
        data["snsim_version"] = "unknown"
    return _jsonable(data)


def chrome_trace(result, *, program=None):
    """The Chrome Trace Event document of a simulated iteration.

    Parameters
    ----------
    result : Result
        A run recorded with ``record=True`` (the default of :func:`snsim.api.simulate`).
    program : Program, optional
        The program that was run; when given, each kernel's args list its ``tensor_ids``.

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``, ready for
        :func:`json.dump`.

    Examples
    --------
    >>> from snsim.api import simulate
    >>> doc = chrome_trace(simulate("lenet", batch=8, policy="offload"))
    >>> sorted(doc), doc["displayTimeUnit"]
    (['displayTimeUnit', 'otherData', 'traceEvents'], 'ms')
    >>> sorted({e["cat"] for e in doc["traceEvents"] if e["ph"] == "X"})
    ['gpu_memcpy', 'kernel']
    """
    placed = _place(_slices(result, program))
    events = _metadata(result.hardware)
    for tid, start, end, ev in placed:
        events.append({**ev, "pid": GPU_PID, "tid": tid, "ts": _us(start),
                       "dur": _us(end - start)})
    events.extend(_flows(placed))
    events.extend(_counters(result))
    if result.failure is not None:
        f = result.failure
        events.append({"ph": "i", "s": "p", "pid": GPU_PID, "tid": TID_COMPUTE,
                       "ts": _us(_ns(f.time_s)), "cat": "oom", "name": "out of memory",
                       "args": {"failure": str(f), "requested_bytes": f.requested_bytes,
                                "short_bytes": f.short_bytes}})
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": _other_data(result)}


def write_chrome_trace(result, path, *, program=None):
    """Write :func:`chrome_trace` to ``path`` (gzip-compressed when it ends in ``.gz``).

    Returns
    -------
    pathlib.Path
        The path written.

    Examples
    --------
    >>> import tempfile, os
    >>> from snsim.api import simulate
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_chrome_trace(simulate("lenet", batch=8), os.path.join(d, "t.json.gz"))
    ...     p.stat().st_size > 0
    True
    """
    path = Path(path)
    doc = chrome_trace(result, program=program)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    with open_text(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
    return path
