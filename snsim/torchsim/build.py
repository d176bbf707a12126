"""Turn a recording into a snsim trace ``program`` (the step/tensor table of SPEC §2.1).

The input is an ordered *event stream* — ``(mark, "a" | "f", key)`` entries, where a key is a
recorder storage id (an int) or a hidden allocation (``("h", n)``: memory the allocator handed
out that no tensor owns, such as a cuDNN workspace) — plus the recorder's marks and ops. The
output is a plain dict in the trace format of :mod:`snsim.trace`:

* ``steps`` — one per mark of the steady iteration that did something (ran an op or changed
  memory); marks that did nothing fold into the step before. F steps are module calls (or the
  functional code between them), B steps are autograd nodes, U steps the optimizer.
* ``tensors`` — every storage allocated during the steady iteration: ``activation`` (F),
  ``activation_grad`` (B, parameter gradients included: PyTorch creates them in backward and
  ``zero_grad(set_to_none=True)`` frees them), ``workspace`` (U temporaries, hidden memory).
* ``static_tensors`` / ``static_bytes`` — what is allocated when the iteration starts:
  parameters, buffers, optimizer state, the input batch and persistent hidden memory.
* ``events`` — the steady iteration's exact alloc/free order; ``warmup_events`` — everything
  before it (model setup and earlier iterations), so an allocator replay starts from the same
  cached segments as the real run.
"""
from __future__ import annotations

from collections import OrderedDict

from ..errors import TraceError
from ..program import CUBLAS_MAP_KEYS

_MODULE_TYPES = (("Conv", "CONV"), ("Linear", "FC"), ("BatchNorm", "BN"), ("ReLU", "ACT"),
                 ("SiLU", "ACT"), ("GELU", "ACT"), ("Hardswish", "ACT"), ("Sigmoid", "ACT"),
                 ("MaxPool", "POOL"), ("AvgPool", "POOL"), ("AdaptiveAvgPool", "POOL"),
                 ("AdaptiveMaxPool", "POOL"), ("Dropout", "DROPOUT"),
                 ("LocalResponseNorm", "LRN"))
_OP_TYPES = (("convolution", "CONV"), ("addmm", "FC"), ("mm", "FC"), ("batch_norm", "BN"),
             ("relu", "ACT"), ("threshold", "ACT"), ("max_pool", "POOL"), ("avg_pool", "POOL"),
             ("native_dropout", "DROPOUT"), ("cat", "CONCAT"), ("add", "JOIN"),
             ("log_softmax", "SOFTMAX"), ("nll_loss", "SOFTMAX"))


#: ATen ops that run a cuBLAS or cuBLASLt GEMM on CUDA (a leading "_" stripped)
CUBLAS_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "addmm_activation",
                        "addmv", "mv", "dot", "vdot", "scaled_mm", "int_mm"})


def _step_type(phase, kind, op_names):
    if phase == "U":
        return "OPTIMIZER"
    if phase == "B":
        from .record import node_type
        return node_type(kind.split("@")[0])
    for key, typ in _MODULE_TYPES:
        if kind.startswith(key):
            return typ
    for key, typ in _OP_TYPES:
        if any(n.startswith(key) or n.startswith("_" + key) for n in op_names):
            return typ
    return "OP"


def step_marks(marks, ops, stream, m0, m1):
    """Which raw marks in ``[m0, m1)`` start a step: those that ran an op or changed memory.

    Returns
    -------
    (kept, step_of_mark, ops_of)
        Raw mark offsets that start a step; the step of every raw mark (a mark that did
        nothing folds into the step before); the op indices of every raw mark.
    """
    ops_of = [[] for _ in range(m1 - m0)]
    for k, op in enumerate(ops):
        if m0 <= op[0] < m1:
            ops_of[op[0] - m0].append(k)
    busy = [bool(o) for o in ops_of]
    for m, kind, key, *_ in stream:
        if m0 <= m < m1 and kind in ("a", "f"):   # reads and drops change no memory
            busy[m - m0] = True
    step_of_mark = []
    kept = []
    for r in range(m1 - m0):
        if busy[r] or not kept:
            kept.append(r)
        step_of_mark.append(len(kept) - 1)
    return kept, step_of_mark, ops_of


def iteration_marks(marks, iteration):
    """``(m0, m1)``: the mark range of ``iteration``."""
    ids = [m for m, row in enumerate(marks) if row[3] == iteration]
    if not ids:
        raise TraceError(f"recording has no marks for iteration {iteration}")
    return ids[0], ids[-1] + 1


def build_program(*, marks, ops, stream, info, iteration, static_names, times_s=None,
                  op_times_s=None, name="model", batch=1, optimizer="sgd-momentum",
                  hardware="", source="capture", saved=(), step_times_s=None, containers=(),
                  released=None, saved_views=()):
    """Build the trace ``program`` dict of iteration ``iteration``.

    Parameters
    ----------
    marks : list of (label, phase, kind, iteration)
        Every mark of the recording (:attr:`Recorder.marks`).
    ops : list of (mark, name, reads, news, flops, bytes)
        Every op (:attr:`Recorder.ops`).
    stream : list of (mark, "a" | "f", key[, stream id])
        Every alloc/free, in order (allocations may name a CUDA stream, 0 = default); marks below the steady iteration's first mark (and -1,
        setup) form the warm-up.
    info : dict
        ``key -> (nbytes, name)`` for every key of ``stream``.
    iteration : int
        The steady iteration to tabulate.
    static_names : dict
        ``key -> (name, kind)`` for parameters, buffers, optimizer state and inputs; other
        storages alive when the iteration starts become ``buffer`` ``leftover`` entries.
    times_s : list of float, optional
        Measured time of each mark of the steady iteration (in mark order).
    step_times_s : list of float, optional
        Measured time of each step (the marks :func:`step_marks` keeps), instead of
        ``times_s``.
    op_times_s : list of float, optional
        Modelled time of each op (used where ``times_s`` is None).
    saved : iterable
        Keys autograd saved for backward (the recorder's pack hook); listed as ``saved``.
    containers : iterable of str
        Module paths that are containers (``Sequential`` and the like), kept with the module
        tree so the engine's ``checkpoint`` picks the block class as the torch side does.
    released : dict, optional
        ``{key: (mark, ops before)}``: where forward dropped the last tensor object it saved
        of a storage (:attr:`Recorder.released`); listed as ``saved_released``,
        ``[tensor, step]``: the tensor is dropped once ``step`` ends.

    Returns
    -------
    dict
        The ``program`` section of a trace (see :mod:`snsim.trace`) plus ``warmup_events``,
        ``saved`` and ``ops`` extras.
    """
    m0, m1 = iteration_marks(marks, iteration)
    if times_s is not None and len(times_s) != m1 - m0:
        raise TraceError(f"timing run has {len(times_s)} steps but the recorded iteration has "
                         f"{m1 - m0}: the two runs did not take the same path")

    # -- which raw marks become steps -------------------------------------------------------
    kept, step_of_mark, ops_of = step_marks(marks, ops, stream, m0, m1)
    if step_times_s is not None and len(step_times_s) != len(kept):
        raise TraceError(f"timing run has {len(step_times_s)} step times but the recorded "
                         f"iteration has {len(kept)} steps")

    # forward ordinal -> step (B steps point at the F step whose module created their node)
    fwd_step = []
    for r in range(m1 - m0):
        label, phase, kind, _ = marks[m0 + r]
        if phase == "F":
            fwd_step.append(step_of_mark[r])

    n_steps = len(kept)
    step_ops = [[] for _ in range(n_steps)]
    for r in range(m1 - m0):
        step_ops[step_of_mark[r]].extend(ops_of[r])
    step_time = [0.0] * n_steps
    for r in range(m1 - m0):
        if step_times_s is not None:
            t = step_times_s[step_of_mark[r]] if kept[step_of_mark[r]] == r else 0.0
        elif times_s is not None:
            t = times_s[r]
        elif op_times_s is not None:
            t = sum(op_times_s[k] for k in ops_of[r])
        else:
            t = 0.0
        step_time[step_of_mark[r]] += t

    meta = []   # (label, phase, type, layer)
    layer_of_step = [0] * n_steps
    next_layer = 1
    for s, r in enumerate(kept):
        label, phase, kind, _ = marks[m0 + r]
        if phase == "F":
            layer_of_step[s] = next_layer
            next_layer += 1
    for s, r in enumerate(kept):
        label, phase, kind, _ = marks[m0 + r]
        layer = layer_of_step[s]
        if phase == "B":
            fwd = int(kind.rsplit("@", 1)[1]) if "@" in kind else -1
            layer = layer_of_step[fwd_step[fwd]] if 0 <= fwd < len(fwd_step) else 0
        typ = _step_type(phase, kind, [ops[k][1] for k in step_ops[s]])
        meta.append((label, phase, typ, layer))

    # -- storages ----------------------------------------------------------------------------
    live = OrderedDict()          # key -> None, alive before the steady iteration
    warm = []
    warm_iteration = []           # the iteration of each warm-up event (-1: model setup)
    warm_mark = []
    for m, kind, key, *rest in stream:
        if m >= m0:
            break
        if kind in ("r", "d"):
            continue
        if kind == "a":
            live[key] = None
        else:
            live.pop(key, None)
        warm.append((kind, key, rest[0] if rest else 0))
        warm_mark.append(m)
        # the iteration of a warm-up event: its mark's; a GPU capture marks the allocator
        # trace's warm-up iteration k as -2 - k (model setup: -1)
        warm_iteration.append(marks[m][3] if m >= 0 else -2 - m)
    static_keys = list(live)
    static_index = {k: i for i, k in enumerate(static_keys)}
    static_tensors = []
    static_bytes = {}
    for k in static_keys:
        nbytes = info[k][0]
        nm, kd = static_names.get(k, (None, None))
        if nm is None:
            nm, kd = (info[k][1] or f"leftover#{len(static_tensors)}"), "buffer"
        static_tensors.append([nm, kd, nbytes])
        static_bytes[kd] = static_bytes.get(kd, 0) + nbytes
    temp_ids = {}
    n_temps = 0
    warmup_events = []
    iteration_starts = {}    # iteration -> index of its first warm-up event
    # the recording's first cuBLAS GEMM: the driver maps cuBLAS's memory once the GEMM's
    # output exists, as cuBLAS starts (before its workspace): the warm-up event after that
    # output's allocation, else the first event of the GEMM's mark or a later one. ConvNeXt-S
    # b48 bf16 superneurons' H100 history (traces/h100/plans_history) replays to its
    # measured reserved peak with the mapping after the first Linear's output, +9.11 % with
    # it before the output and the autocast casts ahead of it
    # cuBLAS's handles are per thread, and the autograd engine runs backward on a thread of
    # its own: its first GEMM there maps cuBLAS's memory again (the driver's free memory over
    # the first step, scripts/window_mappings.py on the H100: +64 MiB at the first forward
    # addmm and +64 MiB at the first backward mm in ConvNeXt-T b20 plain and superneurons,
    # ConvNeXt-S b32 fp16 cpu_offload and ResNet-50 b64 superneurons; ConvNeXt-T b20 sgd
    # superneurons' H100 history replays to its measured reserved peak only with both)
    backward = next((m for m in range(m0) if marks[m][1] == "B"), m0)
    gemms = [next((op for op in ops if lo <= op[0] < hi and op[1].lstrip("_") in CUBLAS_OPS),
                  None) for lo, hi in ((0, backward), (backward, m0))]
    gemm_at = [None, None]      # warm-up event index of each mapping
    gemm_marks = [g[0] if g is not None else None for g in gemms]
    gemm_outs = [g[3][0] if g is not None and g[3] else None for g in gemms]
    for (kind, key, sidx), it, m in zip(warm, warm_iteration, warm_mark):
        for j in (0, 1):
            if gemm_at[j] is None and gemm_marks[j] is not None and m > gemm_marks[j]:
                gemm_at[j] = len(warmup_events)
        if it >= 0:
            iteration_starts.setdefault(it, len(warmup_events))
        if kind == "a":
            if key in static_index:
                ev = ["alloc", static_index[key], info[key][0]]
            else:
                n_temps += 1
                ev = ["alloc", -n_temps, info[key][0]]
                temp_ids[key] = -n_temps
            if sidx:
                ev.append(sidx)
            warmup_events.append(ev)
            for j in (0, 1):
                if gemm_at[j] is None and gemm_outs[j] is not None and key == gemm_outs[j]:
                    gemm_at[j] = len(warmup_events)
        elif key in temp_ids:
            warmup_events.append(["free", temp_ids.pop(key)])
        elif key in static_index:
            raise TraceError(f"static storage {static_tensors[static_index[key]][0]} is freed "
                             f"before the steady iteration")

    tensors = []
    release_events = set()   # saved storages whose drop by forward is an event of its own
    tid_of = {}          # key -> tensor id, for every storage born in the iteration
    alive = set()
    events = []
    deps = [[] for _ in range(n_steps)]
    static_freed = 0
    for m, kind, key, *rest in stream:
        if m < m0 or m >= m1:
            continue
        s = step_of_mark[m - m0]
        if kind == "a":
            if key in tid_of:
                raise TraceError(f"storage {key!r} allocated twice")
            phase, typ, layer = meta[s][1], meta[s][2], meta[s][3]
            hidden = isinstance(key, tuple)
            tkind = "workspace" if hidden or phase == "U" else (
                "activation" if phase == "F" else "activation_grad")
            tid = len(tensors)
            tid_of[key] = tid
            alive.add(tid)
            nm = info[key][1] or f"{meta[s][0]}#{tid}"
            tensors.append([tid, nm, tkind, info[key][0], layer, typ])
            events.append([s, "alloc", tid] + ([rest[0]] if rest and rest[0] else []))
            deps[s].append(tid)
        elif kind in ("r", "d"):   # an op's read; forward's drop of what autograd saved
            if key in tid_of and tid_of[key] in alive:
                events.append([s, "read" if kind == "r" else "release", tid_of[key]])
                if kind == "d" and meta[s][1] == "F":
                    release_events.add(key)
        elif key in tid_of:
            tid = tid_of[key]
            alive.discard(tid)
            events.append([s, "free", tid])
            deps[s].append(tid)
        elif key in static_index:
            static_freed += 1
    # storages born in the iteration and never freed in it: free them at its end
    survivors = sorted(alive)
    for tid in survivors:
        events.append([n_steps - 1, "free", tid])
        deps[n_steps - 1].append(tid)
    # reads: the storages each op touches
    for s in range(n_steps):
        for k in step_ops[s]:
            for sid in ops[k][2]:
                tid = tid_of.get(sid)
                if tid is not None:
                    deps[s].append(tid)
    steps = []
    for s in range(n_steps):
        label, phase, typ, layer = meta[s]
        steps.append([layer, label, typ, phase, float(step_time[s]),
                      list(dict.fromkeys(deps[s]))])

    op_rows = []
    for s in range(n_steps):
        for k in step_ops[s]:
            # with the call's signature and layout where the recorder kept them: the shapes
            # a host model prices an aten call's issue by (kernel_table.KernelTable.issue_s)
            op_rows.append([s, ops[k][1], int(ops[k][4]), int(ops[k][5]),
                            *(ops[k][6:8] if len(ops[k]) > 7 else ())])
    return {
        "name": name, "batch": int(batch), "optimizer": optimizer, "source": source,
        "hardware": hardware, "static_bytes": static_bytes, "steps": steps,
        "tensors": tensors, "static_tensors": static_tensors, "events": events,
        "warmup_events": warmup_events,
        "warmup_iteration_starts": [iteration_starts[k] for k in sorted(iteration_starts)],
        **{k: at for k, at in zip(CUBLAS_MAP_KEYS, gemm_at) if at is not None},
        "notes": {"survivors_freed_at_end": len(survivors), "static_freed": static_freed,
                  "raw_marks": m1 - m0},
        "ops": op_rows,
        "saved": sorted(tid_of[k] for k in saved if k in tid_of),
        # saved at least once as a part or a non-contiguous view of the storage
        "saved_views": sorted(tid_of[k] for k in saved_views if k in tid_of),
        "saved_released": sorted(
            # dropped before any op of its step ran: once the step before ends
            [tid_of[k], step_of_mark[m - m0]
             - all(j >= at for j in step_ops[step_of_mark[m - m0]])]
            for k, (m, at) in (released or {}).items()
            if k in tid_of and m0 <= m < m1 and marks[m][1] == "F"
            and k not in release_events),
        # the module tree: every module path called in forward and its class (the groups a
        # plan can name, e.g. every Bottleneck)
        "modules": {label: kind for label, phase, kind, it in marks[m0:m1]
                    if phase == "F" and kind and not label.startswith("<")},
        "containers": sorted(containers),
    }
