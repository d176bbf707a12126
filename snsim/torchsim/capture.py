"""Capture a real training run on a CUDA device into a snsim trace (``snsim capture``).

One capture, in one process, on a clean allocator:

1. ``torch.cuda.memory._record_memory_history`` is switched on before the model moves to the
   GPU, so the allocator's own trace holds every alloc/free of the run.
2. Two warm-up iterations (lazy cuBLAS/cuDNN state, gradients and optimizer state appear).
3. One recorded iteration: the :class:`~snsim.torchsim.record.Recorder` sees every aten op and
   storage, saved-tensor hooks mark what autograd saves. Its storages are matched, by address
   and order, with the allocator trace of the same iteration; allocations no tensor owns
   (cuDNN/cuBLAS workspaces, reduction buffers) stay in the trace as *hidden* workspaces at
   their exact place. The allocator trace before the iteration becomes ``warmup_events``.
4. ``timing_iters`` iterations with a CUDA event at every step boundary (module calls, autograd
   nodes, optimizer): the median interval is each step's ``time_s``.
5. ``plain_iters`` iterations without any hook: the ground truth. Peaks after
   ``reset_peak_memory_stats()`` (``max_memory_allocated``, ``max_memory_reserved``,
   ``requested_bytes.all.peak``) and the median step time between CUDA events.
"""
from __future__ import annotations

import bisect
import datetime
import functools
import gc
import os
import platform
import statistics
import subprocess
import sys
import time

from ..errors import ConfigError, TraceError
from .hidden import event_positions, with_reads
from .models import resolve_model

#: Prefix of the metadata a capture's recorder stamps on the allocator's trace entries made
#: inside an aten call (``torch.cuda.memory._set_memory_metadata``, thread-local: autograd's
#: device thread stamps its own), then the call's number
#: (:attr:`~snsim.torchsim.record.Recorder.op_of_call`).
OP_TAG = "snsim-call:"

_WINDOW = 512


def require_cuda():
    """Import torch and check for a CUDA device; raise a one-line ConfigError otherwise."""
    try:
        import torch
    except ModuleNotFoundError:
        raise ConfigError("PyTorch is not installed; install snsim[torch] to capture or "
                          "execute on a GPU") from None
    if not torch.cuda.is_available():
        raise ConfigError("no CUDA device: torch.cuda.is_available() is False (capture and "
                          "execute need a GPU; use snsim predict on a CPU)")
    return torch


def _driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


#: model libraries whose installed version changes the program a model spec builds: a
#: Hugging Face model's code, attention and build dtype move with transformers (transformers 5
#: builds a model in its config's dtype: Pythia-410M b4 s1024 bf16 AdamW measured 9.56 GB on
#: 2026-11-30 built in fp16, 11.97 GB as snsim builds it since commit 95bbbd0, in fp32)
MODEL_LIBRARIES = ("torchvision", "transformers")


def library_versions():
    """``{library: installed version or ""}`` of :data:`MODEL_LIBRARIES`, read from the
    installed packages' metadata (nothing imported)."""
    from importlib import metadata
    out = {}
    for name in MODEL_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = ""
    return out


# the hardware preset (snsim/presets/hardware) of a CUDA device, by the words of its name
_PRESET_WORDS = (("H200", "h200"), ("H100", "h100"), ("A100", "a100-40gb"), ("V100", "v100"),
                 ("P100", "p100"), ("K40", "k40c"))


def device_preset(gpu_name):
    """``"h100"`` for ``"NVIDIA H100 80GB HBM3"``: the preset a run on that GPU is compared
    with, ``""`` for a GPU no preset describes (or none)."""
    return next((preset for word, preset in _PRESET_WORDS if word in gpu_name.upper()), "")


def run_preset(torch, cuda=None):
    """The preset a run is replayed and compared on: its CUDA device's
    (:func:`device_preset`), h200's for a CPU recording (``cuda`` False; default: whether
    CUDA is available)."""
    cuda = torch.cuda.is_available() if cuda is None else cuda
    return device_preset(torch.cuda.get_device_name()) if cuda else "h200"


def provenance(torch, *, tool, **extra):
    """Versions, GPU and settings of this run (SPEC §12: pin and record them). ``hardware`` is
    :func:`run_preset`."""
    cuda = torch.cuda.is_available()
    prov = {"kind": "measured", "hardware": run_preset(torch), "tool": tool,
            "gpu": torch.cuda.get_device_name() if cuda else "",
            "torch": torch.__version__, "cuda": torch.version.cuda or "",
            "cudnn": torch.backends.cudnn.version() if cuda else None,
            "driver": _driver_version() if cuda else "",
            "python": platform.python_version(), "libraries": library_versions(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    prov.update(extra)
    return prov


def _history(torch, on):
    from torch.cuda import memory
    if on:
        try:
            memory._record_memory_history(enabled="all", context=None, stacks="python",
                                          max_entries=10_000_000, clear_history=True)
        except TypeError:   # older torch: no clear_history
            memory._record_memory_history(enabled=None)
            memory._record_memory_history(enabled="all", context=None, stacks="python",
                                          max_entries=10_000_000)
    else:
        memory._record_memory_history(enabled=None)


def _trace_entries(torch):
    snap = torch.cuda.memory._snapshot()
    dev = torch.cuda.current_device()
    traces = snap.get("device_traces", [])
    return snap, (traces[dev] if dev < len(traces) else [])


def _size(e):
    return int(e.get("requested_size") or e.get("size") or 0)


def align(rec, entries, s0, m_first, warm_starts=()):
    """Merge the allocator trace with the recorder's storages.

    Parameters
    ----------
    rec : Recorder
        With ``track_pointers=True``; its events with mark >= ``m_first`` are the recorded
        iteration.
    entries : list of dict
        The allocator trace (``device_traces``) from the start of history.
    s0 : int
        Index of the first entry of the recorded iteration.
    warm_starts : sequence of int
        Index of the first entry of each warm-up iteration; their entries carry the mark
        ``-2 - k`` for warm-up iteration ``k`` (model setup: -1), so that the iteration
        boundaries survive into the trace (``warmup_iteration_starts``).

    Returns
    -------
    (stream, info, stats, hidden_ops)
        ``stream`` of ``(mark, "a" | "f" | "r" | "d", key)`` — warm-up entries carry mark -1;
        the recorded iteration's reads and drops of saved storages
        (:func:`~snsim.torchsim.hidden.event_positions`) among its allocations — ``info``
        (``key -> (nbytes, name)``), alignment counts and each hidden key's ops.
    """
    info = {}
    for sid, (nbytes, ptr, name) in enumerate(rec.storages):
        info[sid] = (nbytes, name)
    streams = {0: 0}    # CUDA stream handle -> small id (0: the default stream)

    def stream_of(e):
        s = e.get("stream", 0) or 0
        if s not in streams:
            streams[s] = len(streams)
        return streams[s]
    # static storages alive at s0 (registered by the recorder) keyed by address
    static_ptr = {}
    for m, kind, sid, op in rec.events:
        if m < 0 and kind == "a":
            static_ptr[rec.storages[sid][1]] = sid
    stream = []
    live = {}
    n_hidden = 0
    n_temp = 0
    # warm-up: the last allocation at a static address is that static storage
    last_alloc_at = {}
    for i, e in enumerate(entries[:s0]):
        if e["action"] == "alloc":
            last_alloc_at[e["addr"]] = i
        elif e["action"] == "free_completed":
            last_alloc_at.pop(e["addr"], None)
    static_at = {i: static_ptr[a] for a, i in last_alloc_at.items() if a in static_ptr}
    persistent = {i for a, i in last_alloc_at.items() if a not in static_ptr}
    warm_starts = sorted(warm_starts)
    k = -1
    for i, e in enumerate(entries[:s0]):
        while k + 1 < len(warm_starts) and i >= warm_starts[k + 1]:
            k += 1
        wmark = -2 - k if k >= 0 else -1
        act, addr = e["action"], e["addr"]
        if act == "alloc":
            if i in static_at:
                key = static_at[i]
            elif i in persistent:
                key = ("h", n_hidden)
                n_hidden += 1
                info[key] = (_size(e), "hidden:persistent")
            else:
                key = ("t", n_temp)
                n_temp += 1
                info[key] = (_size(e), "")
            live[addr] = key
            stream.append((wmark, "a", key, stream_of(e)))
        elif act == "free_completed":
            key = live.pop(addr, None)
            if key is not None:
                stream.append((wmark, "f", key))
    # statics never seen allocated in the history (allocated before it began)
    missing = [sid for p, sid in static_ptr.items() if sid not in static_at.values()]
    for sid in missing:
        stream.insert(0, (-1, "a", sid))

    R = [(m, k, sid, op) for m, k, sid, op in rec.events if m >= m_first]

    def op_running(e):
        """The op whose aten call made trace entry ``e`` (its :data:`OP_TAG`), or None: an
        allocation no recorded event matches (a kernel's workspace) belongs to the op that
        was running, not to the last op whose outputs were matched before it."""
        tag = e.get("user_metadata") or ""
        if not tag.startswith(OP_TAG):
            return None
        call = int(tag[len(OP_TAG):])
        op = rec.op_of_call[call] if call < len(rec.op_of_call) else None
        return op if op is not None and rec.ops[op][0] >= m_first else None
    ahead = _next_alloc_at(entries[s0:])
    where = {}           # stream index -> position of its recorded event (event_positions)
    used = [False] * len(R)
    j = 0
    head_age = 0
    last_mark = m_first
    last_op = -1
    hidden_ops = {}      # hidden key -> [op at alloc, op at free]
    unmatched_R = 0
    n_matched = 0
    for n, e in enumerate(entries[s0:]):
        act = e["action"]
        if act not in ("alloc", "free_completed"):
            continue
        addr = e["addr"]
        hit = None
        if act == "alloc":
            size = _size(e)
            # the op whose call made the entry, where the allocator stamped it: an entry of
            # another op's call is not R[i]'s output, whatever its address and size (a
            # composite's scratch block at the address the next op's output will take)
            made_by = op_running(e)
            for i in range(j, min(j + _WINDOW, len(R))):
                if not used[i] and R[i][1] == "a" and rec.storages[R[i][2]][1] == addr \
                        and rec.storages[R[i][2]][0] == size:
                    if (made_by is None or made_by == R[i][3]) \
                            and not _overtakes(i, n, R, used, j, last_op, rec.storages, ahead):
                        hit = i
                    break
            if hit is None:
                key = ("h", n_hidden)
                n_hidden += 1
                info[key] = (size, "hidden")
                hidden_ops[key] = [last_op if made_by is None else made_by, None]
                mark = last_mark if made_by is None else rec.ops[made_by][0]
            else:
                key = R[hit][2]
                mark = R[hit][0]
            live[addr] = key
            if hit is not None:
                where[len(stream)] = (R[hit][3], 1, 0, 0)
            stream.append((mark, "a", key, stream_of(e)))
        else:
            key = live.pop(addr, None)
            if key is None:
                continue
            mark = last_mark
            if key in hidden_ops:
                op = op_running(e)
                hidden_ops[key][1] = last_op if op is None else op
                if op is not None:
                    mark = rec.ops[op][0]
            if not isinstance(key, tuple):
                for i in range(j, min(j + _WINDOW, len(R))):
                    if not used[i] and R[i][1] == "f" and R[i][2] == key:
                        hit = i
                        break
                if hit is not None:
                    mark = R[hit][0]
                    where[len(stream)] = (R[hit][3], 0, 0, 0)
            stream.append((mark, "f", key))
        if hit is not None:
            used[hit] = True
            n_matched += 1
            last_mark = max(last_mark, R[hit][0])
            last_op = max(last_op, R[hit][3])
        head_age += 1
        while j < len(R) and (used[j] or head_age > _WINDOW):
            if not used[j]:
                unmatched_R += 1
            j += 1
            head_age = 0
    unmatched_R += sum(1 for i in range(j, len(R)) if not used[i])
    stats = {"matched_events": n_matched, "unmatched_recorder_events": unmatched_R,
             "hidden_allocations": n_hidden, "warmup_temporaries": n_temp,
             "statics_before_history": len(missing), "streams": len(streams)}
    stream = _temporaries_into_their_step(stream)
    # each op's reads and forward's drops of saved storages, where the recorder saw them
    pos, _ = event_positions(rec)
    stream = with_reads([(where.get(i), e) for i, e in enumerate(stream)],
                        [p for p in pos if p[1][1] in "rd" and p[1][0] >= m_first])
    return stream, info, stats, hidden_ops


def _temporaries_into_their_step(stream):
    """The allocator's record with each buffer no tensor owns that is still held when the
    next op's first output is allocated moved into that op's step (its mark), with what
    follows it up to that output.

    Such a block comes after the last output the recorder matched and before the next one,
    and nothing marks where the next step began in between; one still held when that step's
    first output is made is the step's own (a LayerNorm kernel copies a non-contiguous input
    before it allocates Y, mean and rstd, and frees the copy when it returns), not a buffer
    the previous step left. Kept in the previous step, a block wrapped by ``checkpoint``
    would seem to hold it across the block boundary.

    >>> h0, h1 = ("h", 0), ("h", 1)
    >>> _temporaries_into_their_step([(1, "a", 7), (1, "a", h0), (1, "f", h0), (1, "a", h1),
    ...                               (2, "a", 8), (2, "f", h1)])
    [(1, 'a', 7), (1, 'a', ('h', 0)), (1, 'f', ('h', 0)), (2, 'a', ('h', 1)), (2, 'a', 8), (2, 'f', ('h', 1))]
    """
    out = list(stream)
    i, n = 0, len(out)
    while i < n:
        if not isinstance(out[i][2], tuple) or out[i][0] < 0:
            i += 1
            continue
        k = i
        while k < n and isinstance(out[k][2], tuple):
            k += 1
        if k < n and out[k][1] == "a":   # out[i:k]: no tensor owns them; out[k]: an output
            freed = {e[2] for e in out[i:k] if e[1] == "f"}
            first = next((q for q in range(i, k)
                          if out[q][1] == "a" and out[q][2] not in freed), None)
            if first is not None and out[k][0] > out[first][0]:
                for q in range(first, k):
                    out[q] = (out[k][0], *out[q][1:])
        i = k
    return out


def _next_alloc_at(entries):
    """``next(addr, size, n)``: index of the next allocation of ``size`` bytes at ``addr``
    after entry ``n`` of ``entries`` and within ``_WINDOW`` entries of it, or None."""
    at = {}
    for n, e in enumerate(entries):
        if e["action"] == "alloc":
            at.setdefault((e["addr"], _size(e)), []).append(n)

    def nxt(addr, size, n):
        seq = at.get((addr, size), ())
        k = bisect.bisect_right(seq, n)
        return seq[k] if k < len(seq) and seq[k] <= n + _WINDOW else None
    return nxt


def _overtakes(i, n, R, used, j, last_op, storages, ahead):
    """Whether matching allocator entry ``n`` to recorder event ``R[i]`` (same address and
    size) would put ``R[i]``'s op before an earlier op's allocation still to come.

    The caching allocator hands a freed block's address to the next request of its size, so a
    buffer no tensor owns (a LayerNorm kernel's contiguous copy of its input, say) can sit at
    the address and size a later op's output will take. Taken for that output, it moves the
    output ahead of the ops between and the alignment drifts from there on (ViT-B/16's
    attention output, transposed, is copied by every ``ln_2``). An allocation of an op after
    the last matched one, earlier than ``R[i]``'s, whose own address and size come next in the
    trace before ``R[i]``'s do again, has not happened yet: entry ``n`` is not ``R[i]``.
    """
    storage = storages[R[i][2]]
    again = ahead(storage[1], storage[0], n)
    if again is None:
        return False
    op = R[i][3]
    for k in range(j, i):
        if not used[k] and R[k][1] == "a" and last_op <= R[k][3] < op:
            other = storages[R[k][2]]
            due = ahead(other[1], other[0], n)
            if due is not None and due < again:
                return True
    return False


def sums_in_place(stream, rename):
    """The allocator's record of the recorded iteration with the gradient sums a run without
    the recorder's dispatch mode makes in place (:func:`~snsim.torchsim.record.
    inplace_accumulation`'s ``rename``: sum's storage -> the storage it reuses): no allocation
    of the sum, and the reused storage freed once, where the last sum made in it is freed.
    While the recorder records, every sum is made out of place on the GPU too (a
    ``TorchDispatchMode`` makes every tensor "subclass-like"): ResNet-50's residual sums at
    each Bottleneck's first conv, 196 MiB at b128, which no plain or planned run makes.

    >>> sums_in_place([(0, "a", 1), (0, "a", 2), (1, "a", 3), (1, "f", 1), (1, "f", 2),
    ...                (2, "f", 3)], {3: 1})
    [(0, 'a', 1), (0, 'a', 2), (1, 'f', 2), (2, 'f', 1)]
    """
    if not rename:
        return stream
    last_free = {}    # root storage -> index in stream of the last free of its group
    for i, (m, kind, key, *rest) in enumerate(stream):
        if kind == "f" and not isinstance(key, tuple):
            root = rename.get(key, key)
            if key in rename or root in rename.values():
                last_free[root] = i
    out = []
    for i, (m, kind, key, *rest) in enumerate(stream):
        if isinstance(key, tuple):
            out.append((m, kind, key, *rest))
        elif kind == "a":
            if key not in rename:
                out.append((m, kind, key, *rest))
        elif kind == "f":
            root = rename.get(key, key)
            if root in last_free and last_free[root] != i:
                continue
            out.append((m, kind, root, *rest))
        else:   # a read or a drop of the sum is one of the storage it reuses
            out.append((m, kind, rename.get(key, key), *rest))
    return out


def step_kernel_times(events, kept, n_marks):
    """Each step's GPU seconds from one profiled iteration, and the seconds no step took.

    Parameters
    ----------
    events : iterable of (kind, start_ns, duration_ns, correlation_id, linked_id)
        The profiler's events: ``"mark"`` (a :class:`~snsim.torchsim.record.KernelMarker`
        mark, in order), ``"cpu"`` (an op on the host: its correlation id) and ``"gpu"`` (a
        kernel, copy or memset on the device: the id of the op that launched it).
    kept : list of int
        The raw marks that start a step (:func:`snsim.torchsim.build.step_marks`).
    n_marks : int
        The raw marks of the iteration; a profile with another count is not this iteration.

    Returns
    -------
    (list of float, float) or None
        Per step the summed time of the device work its ops launched (a launch belongs to the
        last mark before its op began), and the seconds whose op is unknown or began before
        the first mark; None when the marks do not match.

    >>> ev = [("mark", 0, 0, 0, 0), ("cpu", 5, 1, 7, 0), ("gpu", 9, 3000, 0, 7),
    ...       ("mark", 10, 0, 0, 0), ("mark", 20, 0, 0, 0), ("cpu", 25, 1, 8, 0),
    ...       ("gpu", 30, 2000, 0, 8), ("gpu", 40, 500, 0, 99)]
    >>> step_kernel_times(ev, [0, 2], 3)     # raw mark 1 did nothing: it folds into step 0
    ([3e-06, 2e-06], 5e-07)
    """
    marks, cpu, gpu = [], {}, []
    for kind, start, dur, corr, linked in events:
        if kind == "mark":
            marks.append(start)
        elif kind == "cpu":
            cpu[corr] = start
        else:
            gpu.append((linked, dur))
    if len(marks) != n_marks:
        return None
    marks.sort()
    out_ns = [0] * len(kept)
    lost_ns = 0
    for linked, dur in gpu:
        t = cpu.get(linked)
        r = bisect.bisect_right(marks, t) - 1 if t is not None else -1
        if r < 0:
            lost_ns += dur
            continue
        out_ns[bisect.bisect_right(kept, r) - 1] += dur
    return [t / 1e9 for t in out_ns], lost_ns / 1e9


def _instrumented_step(inst, net, opt, x, y, **kw):
    """One training step with ``inst``'s hooks on."""
    from .record import train_step
    with inst:
        train_step(net, opt, x, y, inst=inst, **kw)


def _profiled_kernel_times(torch, run, kept, n_marks):
    """:func:`step_kernel_times` of one iteration ``run()`` under ``torch.profiler`` (CPU and
    CUDA activity), its marks made by the :class:`~snsim.torchsim.record.KernelMarker` of an
    :class:`~snsim.torchsim.record.Instrument` that ``run`` enters."""
    from torch._C._autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    from .record import KERNEL_MARK
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    events = []
    for e in prof.profiler.kineto_results.events():
        name, dev = e.name(), e.device_type()
        if name == KERNEL_MARK:
            if dev == DeviceType.CPU:
                events.append(("mark", e.start_ns(), 0, 0, 0))
            continue        # its range on the device timeline is no kernel
        kind = "gpu" if dev == DeviceType.CUDA else "cpu" if dev == DeviceType.CPU else None
        if kind is not None:
            events.append((kind, e.start_ns(), e.end_ns() - e.start_ns(), e.correlation_id(),
                           e.linked_correlation_id()))
    return step_kernel_times(events, kept, n_marks)


def segment_addresses(entries):
    """Base addresses of the allocator's segments in creation order, relative to the lowest
    (the replay places its model's segments there; see the pytorch allocator's ``segment_placement="driver"``)."""
    segs = [int(e["addr"]) for e in entries if e.get("action") == "segment_alloc"]
    if not segs or any(e.get("action") == "segment_free" for e in entries):
        return []   # a released segment's address can come back: keep the rule instead
    base = min(segs)
    return [s - base for s in segs]


def hidden_table(rec, hidden_ops, info):
    """``[[op name, signature, nbytes, transient, op index], ...]``: each hidden allocation
    of the recorded iteration with the op it happened in (transient: freed within that op)."""
    rows = []
    for key, (op_a, op_f) in hidden_ops.items():
        if 0 <= op_a < len(rec.ops):
            op = rec.ops[op_a]
            rows.append([op[1], op[6], info[key][0], op_f == op_a, op_a])
        else:
            rows.append(["", "", info[key][0], False, op_a])
    return rows


def measured_peaks(torch, base_allocated_bytes):
    """The allocator's ground truth since the last ``reset_peak_memory_stats()``: peaks,
    retries and OOMs, and what the device shows (the CUDA context = used - reserved)."""
    stats = torch.cuda.memory_stats()
    free_b, total_b = torch.cuda.mem_get_info()
    return {"peak_allocated_bytes": int(torch.cuda.max_memory_allocated()),
            "peak_reserved_bytes": int(torch.cuda.max_memory_reserved()),
            "peak_requested_bytes": int(stats.get("requested_bytes.all.peak", 0)),
            "num_alloc_retries": int(stats.get("num_alloc_retries", 0)),
            "num_ooms": int(stats.get("num_ooms", 0)),
            "device_used_bytes": int(total_b - free_b),
            "context_bytes": int(total_b - free_b - torch.cuda.memory_reserved()),
            "base_allocated_bytes": int(base_allocated_bytes)}


def _median(xs):
    return float(statistics.median(xs)) if xs else 0.0


class WallTimer:
    """A marker timing steps with ``time.perf_counter`` (CPU test runs of :func:`capture`)."""

    def __init__(self, keep=None):
        self.keep = keep
        self.reset()

    def reset(self):
        self._t = []
        self._i = 0

    def mark(self, label, phase, kind=""):
        if self.keep is None or self._i in self.keep:
            self._t.append(time.perf_counter())
        self._i += 1

    @property
    def num_marks(self):
        return self._i

    def close(self):
        self._t.append(time.perf_counter())

    def intervals_s(self):
        return [b - a for a, b in zip(self._t, self._t[1:])]


def param_aliases(model):
    """``{name: static name}`` of a parameter registered under a second name (a tied weight:
    GPT-2's ``lm_head.weight`` is ``wte.weight``), so a plan that streams parameters per module
    (``zero_offload``) fetches it for every module that uses it."""
    from .record import apply_order
    canonical = {id(t): n for n, kind, t in apply_order(model) if kind == "parameter"}
    return {n: canonical[id(p)] for n, p in model.named_parameters(remove_duplicate=False)
            if canonical.get(id(p), n) != n}


def capture(model, batch, *, optimizer="sgd-momentum", input_shape=None, timing_iters=5,
            plain_iters=10, warmup_iters=2, transform=None, extra_provenance=None,
            device="cuda"):
    """Capture one training configuration on the current CUDA device.

    Parameters
    ----------
    model : str
        A model spec (see :func:`~snsim.torchsim.models.resolve_model`).
    batch : int
    optimizer : str
    timing_iters, plain_iters, warmup_iters : int
        Iterations with step-boundary events, without hooks (ground truth), and before
        recording.
    transform : callable, optional
        ``transform(model) -> model`` applied on the GPU before training (an execution plan).
    device : {"cuda", "cpu"}
        ``"cpu"`` runs the same code path on the CPU for tests: no allocator trace (warm-up
        and hidden memory come from the recorder alone), wall-clock step times, and
        ``measured`` peaks that are the recording's own replay.

    Returns
    -------
    dict
        A trace document: ``program``, ``measured``, ``provenance``.
    """
    cuda = device == "cuda"
    if cuda:
        torch = require_cuda()
    else:
        import torch
    from .build import build_program, iteration_marks, step_marks
    from .plans import container_paths
    from .predict import _streams, infer_target_of, plain_run_adds
    from .amp import as_setup, warm_up
    from .record import (EventTimer, Instrument, Recorder, inplace_accumulation,
                         register_static, optimizer_state, train_step)
    setup = as_setup(optimizer)
    amp_kw = {"autocast": setup.autocast(device), "scaler": setup.grad_scaler(device),
              "step_scope": setup.step_scope(device)}
    spec = resolve_model(model, input_shape=input_shape)
    if batch <= 0:
        raise ConfigError(f"--batch (={batch}) must be a positive integer")
    wall0 = time.perf_counter()
    dev = torch.device(device)
    gc.collect()
    base_allocated = 0
    if cuda:
        torch.cuda.synchronize()
        if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
            torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        base_allocated = torch.cuda.memory_allocated()
        _history(torch, True)
    try:
        try:
            net = spec.build()
        except Exception as e:
            raise ConfigError(f"model {spec.text!r} cannot be built: {e}") from None
        net.train()
        try:
            target = infer_target_of(net, spec.make_input(2))   # on the CPU: see there
        except Exception as e:
            raise ConfigError(f"model {spec.text!r} cannot be traced: "
                              f"{str(e).strip().splitlines()[0] if str(e).strip() else e!r}") \
                from None
    except ConfigError:
        if cuda:
            _history(torch, False)
        raise
    setup.cast_model(net).to(dev)
    x = setup.make_input(spec, batch, dev)
    y = target.make(batch, dev)
    if transform is not None:
        net = transform(net)
    opt = setup.make_optimizer(net.parameters())
    aux = spec.aux_loss_weight

    rec = Recorder(device_type=device, track_pointers=cuda)
    static_names = register_static(rec, net, x, y)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    # warm-up: on CUDA the allocator trace records it; on the CPU the recorder does
    warm_starts = []
    skipped_warmup = 0

    def warm_step(run=functools.partial(train_step, net, opt, x, y, aux_loss_weight=aux,
                                        **amp_kw)):
        sync()
        warm_starts.append(len(_trace_entries(torch)[1]))
        run()
    if cuda:   # on until an fp16 step is not skipped: the recorded one is the steady step
        skipped_warmup = warm_up(warm_step, amp_kw["scaler"], warmup_iters)
    for _ in range(0 if cuda else warmup_iters):
        rec.begin_iteration()
        winst = Instrument(net, rec)
        with rec.active(), winst, plain_run_adds():
            train_step(net, opt, x, y, inst=winst, aux_loss_weight=aux, **amp_kw)
    param_names = {id(p): n for n, p in net.named_parameters()}
    for name, key, t in optimizer_state(opt, param_names):
        sid = rec.sid_of(t) if not cuda else None
        if sid is None:
            sid = rec.register(t, name)
        if sid is not None:
            static_names[sid] = (name, "optimizer_state")
    entries, s0 = [], 0
    if cuda:
        sync()
        _, entries = _trace_entries(torch)
        s0 = len(entries)

    # -- the recorded iteration -----------------------------------------------------------
    inst = Instrument(net, rec)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    rec.begin_iteration()
    m_first = len(rec.marks)
    with rec.active(), inst, plain_run_adds():   # as the plain run adds
        train_step(net, opt, x, y, inst=inst, aux_loss_weight=aux, **amp_kw)
    sync()
    counts = {}
    recorded_peaks = {}
    hidden_ops = {}
    sample_entry = {}
    seg_addrs = []
    if cuda:
        recorded_peaks = {"peak_allocated_bytes": torch.cuda.max_memory_allocated(),
                          "peak_reserved_bytes": torch.cuda.max_memory_reserved()}
        snap, entries = _trace_entries(torch)
        _history(torch, False)
        for e in entries[s0:]:
            counts[e["action"]] = counts.get(e["action"], 0) + 1
        stream, info, align_stats, hidden_ops = align(rec, entries, s0, m_first, warm_starts)
        for m, kind, sid, op in rec.events:
            if kind == "a" and 0 <= op < len(rec.ops):
                info[sid] = (info[sid][0], rec.ops[op][1])
        # gradient sums in place, as a run without the recorder makes them
        stream = sums_in_place(stream, inplace_accumulation(rec))
        seg_addrs = segment_addresses(entries)
        sample_entry = next(({k: v for k, v in e.items() if k != "frames"}
                             for e in entries[s0:] if e.get("action") == "alloc"), {})
        del entries, snap
    else:
        inplace_accumulation(rec)
        r = _streams(rec, static_names, 0)
        stream, info = r["stream"], r["info"]
        align_stats = {"hidden_allocations": 0}

    # -- step times: one event where each step starts --------------------------------------
    m0, m1 = iteration_marks(rec.marks, rec.iteration)
    kept, _, ops_of = step_marks(rec.marks, rec.ops, stream, m0, m1)
    timer = EventTimer(keep=set(kept)) if cuda else WallTimer(keep=set(kept))
    tinst = Instrument(net, timer)
    runs = []
    bad = 0
    for _ in range(timing_iters + 3):
        timer.reset()
        with tinst:
            train_step(net, opt, x, y, inst=tinst, aux_loss_weight=aux, **amp_kw)
        timer.close()
        iv = timer.intervals_s()
        if timer.num_marks == m1 - m0 and len(iv) == len(kept):
            runs.append(iv)
        else:
            bad += 1
        if len(runs) == timing_iters:
            break
    if not runs:
        raise TraceError(f"every timing run took another path than the recorded iteration "
                         f"({timer.num_marks} marks, recorded {m1 - m0}): the model's path is "
                         f"not deterministic")
    step_times = [_median([r[i] for r in runs]) for i in range(len(kept))]
    hooked = [sum(r) for r in runs]
    # each step's kernel time, which the marks' hooks do not stretch as they stretch the
    # intervals of a host-bound step: one iteration under the profiler
    kernel_times = None
    if cuda:
        from .record import KernelMarker
        kinst = Instrument(net, KernelMarker())
        try:
            kernel_times = _profiled_kernel_times(
                torch, functools.partial(_instrumented_step, kinst, net, opt, x, y,
                                         aux_loss_weight=aux, **amp_kw), kept, m1 - m0)
        except Exception as e:    # a profiler that cannot run here: the intervals alone
            kernel_times = None
            print(f"snsim capture: no kernel times ({type(e).__name__}: {e}); steps keep "
                  f"their hooked intervals", file=sys.stderr, flush=True)

    # -- ground truth ---------------------------------------------------------------------
    st = []
    measured = {}
    if cuda:
        sync()
        torch.cuda.reset_peak_memory_stats()
        train_step(net, opt, x, y, aux_loss_weight=aux, **amp_kw)
        sync()
        measured = {**measured_peaks(torch, base_allocated), "snapshot_counts": counts,
                    "recorded_iteration": recorded_peaks}
        for _ in range(plain_iters):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            train_step(net, opt, x, y, aux_loss_weight=aux, **amp_kw)
            e1.record()
            torch.cuda.synchronize()
            st.append(e0.elapsed_time(e1) * 1e-3)
    else:
        for _ in range(plain_iters):
            t0 = time.perf_counter()
            train_step(net, opt, x, y, aux_loss_weight=aux, **amp_kw)
            st.append(time.perf_counter() - t0)

    prog = build_program(marks=rec.marks, ops=rec.ops, stream=stream, info=info,
                         iteration=rec.iteration, static_names=static_names,
                         step_times_s=step_times,
                         name=spec.name, batch=batch, optimizer=setup.optimizer,
                         hardware=run_preset(torch, cuda),
                         source="capture", saved=rec.saved, saved_views=rec.saved_views, released=rec.released,
                         containers=container_paths(net))
    prog["param_aliases"] = param_aliases(net)
    prog["notes"].update(align_stats)
    if kernel_times is not None:
        # each step's device time from the profiled iteration (step_kernel_times)
        prog["gpu_times_s"] = [round(t, 9) for t in kernel_times[0]]
        prog["notes"]["gpu_time_unattributed_s"] = round(kernel_times[1], 9)
    prog["notes"]["timing_runs"] = len(runs)
    prog["notes"]["timing_runs_discarded"] = bad
    if sample_entry:
        prog["notes"]["allocator_trace_sample"] = sample_entry
    prog["hidden"] = hidden_table(rec, hidden_ops, info)
    if seg_addrs:
        prog["segment_addresses"] = seg_addrs
    if not cuda:   # no allocator on the CPU: the recording's own replay stands in
        from ..captured import replay_capture
        rr = replay_capture(prog, "h200", budget_bytes=10**15)
        measured = {"peak_allocated_bytes": rr.peak_allocated_bytes,
                    "peak_reserved_bytes": rr.peak_reserved_bytes,
                    "peak_requested_bytes": rr.peak_ideal_bytes, "device": "cpu"}
    measured["step_time_s"] = _median(st)
    measured["step_times_s"] = [round(v, 6) for v in st]
    measured["hooked_step_time_s"] = _median(hooked)
    if amp_kw["scaler"] is not None:
        # below the initial 2**16: some step overflowed and was skipped (predict models none)
        measured["grad_scale"] = float(amp_kw["scaler"].get_scale())
        measured["skipped_warmup_steps"] = skipped_warmup
    prov = provenance(torch, tool="snsim capture", model=spec.text, batch=batch,
                      **setup.to_dict(), matmul_allow_tf32=setup.tf32_matmuls,
                      input_shape=list(spec.input_shape),
                      parameters=sum(p.numel() for p in net.parameters()),
                      timing_iters=timing_iters, plain_iters=plain_iters,
                      warmup_iters=warmup_iters, capture_wall_s=0.0, device=device,
                      **(extra_provenance or {}))
    prov["capture_wall_s"] = round(time.perf_counter() - wall0, 2)
    del net, opt, x, y, rec, inst, tinst, timer
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return {"program": prog, "measured": measured, "provenance": prov}


def write_capture(doc, path):
    """Write a capture (or execution) document as a snsim trace (``.json`` or ``.json.gz``).

    The document keeps the trace format of :mod:`snsim.trace` (``provenance``, ``program``,
    ``measured``) and may add ``predictions`` (the CPU-only prediction of the same run).
    """
    import json
    from pathlib import Path
    from ..trace import TRACE_VERSION, open_text
    out = {"snsim_trace_version": TRACE_VERSION, "provenance": doc["provenance"],
           "program": doc["program"], "measured": doc["measured"]}
    if doc.get("predictions"):
        out["predictions"] = doc["predictions"]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_text(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    return path
