"""Replay a captured program's exact alloc/free events through an allocator model (no torch).

A captured or predicted trace carries, besides its step/tensor table, the exact order of every
allocation and free (``events``), the static storages alive when the iteration starts
(``static_tensors``) and everything that happened before it (``warmup_events``: model setup and
the earlier iterations). :func:`replay_events` feeds them, in order, through
``snsim.engine.allocators.make_allocator("pytorch", capacity)``, resets the peaks before the
last repetition of the steady iteration (as a capture calls ``reset_peak_memory_stats()``
before the measured one) and returns the peaks. :func:`engine_run` runs the same program
through the ordinary engine (:func:`snsim.engine.core.run_plan` with a ``liveness`` plan), which
is what ``snsim run --trace`` does.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.allocators import make_allocator
from ..errors import TraceError


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayResult:
    """Peaks of one steady iteration replayed through an allocator model.

    Attributes
    ----------
    peak_requested_bytes, peak_allocated_bytes, peak_reserved_bytes : int
        As ``requested_bytes.all.peak``, ``max_memory_allocated()`` and
        ``max_memory_reserved()`` after ``reset_peak_memory_stats()``.
    static_bytes : int
        Bytes allocated when the steady iteration starts.
    num_allocs, num_frees : int
        Allocations and frees in one steady iteration (0-byte ones excluded).
    num_segments : int
        Segments held at the end (``pytorch`` model only, else 0).
    """

    peak_requested_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    static_bytes: int
    num_allocs: int
    num_frees: int
    num_segments: int


def _program_parts(program):
    """``(sizes, static_tensors, events, warmup_events, segment_addresses)`` of a program."""
    if isinstance(program, dict):
        d = program
        sizes = [int(row[3]) for row in d.get("tensors", [])]
    else:
        d = program.extra
        sizes = [t.nbytes for t in program.tensors]
    static = d.get("static_tensors")
    events = d.get("events")
    if static is None or events is None:
        raise TraceError("program has no static_tensors/events: it was not captured with "
                         "exact event order (re-capture with snsim capture)")
    return sizes, static, events, d.get("warmup_events"), d.get("segment_addresses")


def replay_events(program, *, allocator="pytorch", capacity_bytes=None, repeat=2,
                  allocator_options=None):
    """Replay the exact alloc/free order of a captured program.

    Parameters
    ----------
    program : dict or Program
        A trace's ``program`` section, or a Program read from one (its ``extra`` holds the
        events).
    allocator : str
        Allocator model (``pytorch``, ``ideal``, ``pool``); ``pytorch`` places segments as the
        CUDA driver does (``segment_placement="driver"``, SPEC §10).
    capacity_bytes : int, optional
        Device bytes for the model; None is unlimited.
    repeat : int
        Times the steady iteration is replayed; peaks are those of the last one.
    allocator_options : dict, optional
        Passed to :func:`~snsim.engine.allocators.make_allocator`.

    Returns
    -------
    ReplayResult

    Raises
    ------
    TraceError
        Events that free what is not allocated, or a program without events.

    Examples
    --------
    >>> prog = {"tensors": [[0, "y", "activation", 3 << 20, 1, "CONV"]],
    ...         "static_tensors": [["w", "parameter", 1000]],
    ...         "events": [[0, "alloc", 0], [1, "free", 0]]}
    >>> r = replay_events(prog)
    >>> r.peak_allocated_bytes, r.peak_reserved_bytes
    (3146752, 23068672)
    """
    if repeat < 1:
        raise TraceError(f"repeat (={repeat}) must be >= 1")
    sizes, static, events, warmup, seg_addrs = _program_parts(program)
    if allocator == "pytorch":
        a = make_allocator("pytorch", capacity_bytes, segment_placement="driver",
                           segment_addresses=seg_addrs, **(allocator_options or {}))
    else:
        a = make_allocator(allocator, capacity_bytes, **(allocator_options or {}))
    handles = [None] * len(static)
    if warmup:
        temps = {}
        for i, ev in enumerate(warmup):
            if ev[0] == "alloc":
                key, nbytes = int(ev[1]), int(ev[2])
                stream = int(ev[3]) if len(ev) > 3 else 0
                if key >= 0:
                    if key >= len(static) or handles[key] is not None:
                        raise TraceError(f"warmup_events[{i}] allocates static tensor {key} "
                                         f"twice or out of range")
                    handles[key] = a.alloc(nbytes, stream)
                else:
                    temps[key] = a.alloc(nbytes, stream)
            else:
                h = temps.pop(int(ev[1]), None)
                if h is None:
                    raise TraceError(f"warmup_events[{i}] frees {ev[1]}, which is not allocated")
                a.free(h)
        if temps:
            raise TraceError(f"warmup_events leave {len(temps)} temporaries allocated")
        missing = [i for i, h in enumerate(handles) if h is None]
        if missing:
            raise TraceError(f"warmup_events never allocate static tensor {missing[0]} "
                             f"({static[missing[0]][0]})")
    else:
        for i, row in enumerate(static):
            handles[i] = a.alloc(int(row[2]))
    static_bytes = sum(int(row[2]) for row in static)
    n_alloc = n_free = 0
    for rep in range(repeat):
        if rep == repeat - 1:
            a.reset_peaks()
        live = {}
        for i, ev in enumerate(events):
            tid = int(ev[2])
            if ev[1] == "alloc":
                if tid in live:
                    raise TraceError(f"events[{i}] allocates tensor {tid} twice")
                live[tid] = a.alloc(sizes[tid], int(ev[3]) if len(ev) > 3 else 0)
                n_alloc += rep == repeat - 1 and sizes[tid] > 0
            else:
                h = live.pop(tid, None)
                if h is None:
                    raise TraceError(f"events[{i}] frees tensor {tid}, which is not allocated")
                a.free(h)
                n_free += rep == repeat - 1 and sizes[tid] > 0
        if live:
            raise TraceError(f"events leave {len(live)} tensors allocated at the end of the "
                             f"iteration")
    return ReplayResult(peak_requested_bytes=a.peak_requested_bytes,
                        peak_allocated_bytes=a.peak_allocated_bytes,
                        peak_reserved_bytes=a.peak_reserved_bytes, static_bytes=static_bytes,
                        num_allocs=int(n_alloc), num_frees=int(n_free),
                        num_segments=int(getattr(a, "num_segments", 0)))


def engine_run(program, hardware, *, allocator="pytorch", policy="liveness", budget_bytes=None):
    """Run a captured :class:`~snsim.program.Program` through the ordinary engine.

    Returns
    -------
    Result
        Its step time is the sum of the captured step times (one compute stream).
    """
    from ..engine.core import run_plan
    from ..policies import get_policy
    budget = hardware.budget_bytes if budget_bytes is None else budget_bytes
    plan = get_policy(policy).plan(program, hardware, budget)
    return run_plan(program, plan, hardware, budget_bytes=budget, allocator=allocator,
                    record=False)
