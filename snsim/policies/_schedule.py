"""The one schedule builder every SuperNeurons-family policy configures.

Liveness (SPEC §3), the tensor pool's offload and prefetch (§4) and cost-aware recomputation
(§5) compose: each is a switch on :func:`build_instructions`, so the policies that combine
them (``superneurons``) share the code of the ones that do not.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..graph import CHECKPOINT_TYPES, RECOMPUTABLE_TYPES, adjacency
from ..plan import Compute, Drop, Free, Offload, Prefetch, Recompute
from ..gcpause import without_gc

RECOMPUTE_MODES = ("speed", "memory", "cost-aware")


def _segments(program, checkpoint_types):
    """Map each recomputable layer to its segment ``(checkpoint, branch port)`` (SPEC §5)."""
    types = program.layer_types()
    nxt, prv = program.adjacency or adjacency(program.graph)
    seg = {}
    for n in types:
        if types[n] in checkpoint_types:
            continue
        cur = n
        while True:
            prevs = prv[cur]
            if not prevs:
                break
            p = prevs[0]
            if types[p] in checkpoint_types:
                seg[n] = (p, nxt[p].index(cur))
                break
            cur = p
    return seg


def _cost_aware_modes(program, seg, mode):
    """Per segment: speed-centric if ``seg_mem(S) <= l_peak`` else memory-centric."""
    if mode in ("speed", "memory"):
        return {s: mode for s in set(seg.values())}
    size = [t.nbytes for t in program.tensors]
    l_peak = max((sum(size[t] for t in s.deps) for s in program.steps if s.phase == "B"),
                 default=0)
    deps = {}
    for s in program.steps:
        if s.phase == "F" and s.layer in seg:
            deps.setdefault(seg[s.layer], []).extend(s.deps)
    return {key: ("speed" if sum(size[t] for t in set(d)) <= l_peak else "memory")
            for key, d in deps.items()}


def _segment_modes(program, checkpoint_types, mode):
    """``(segments, modes)`` of :func:`_segments` and :func:`_cost_aware_modes`: derived from
    the program alone, so computed once per program (every recomputing plan and each of its
    keep rounds asks), and read, never changed, by the callers."""
    key = ("segment_modes", frozenset(checkpoint_types), mode)
    memo = program.plan_memo()
    hit = memo.get(key)
    if hit is None:
        seg = _segments(program, checkpoint_types)
        hit = memo[key] = (seg, _cost_aware_modes(program, seg, mode))
    return hit


class _Made(dict):
    """``{argument: instruction}`` of one kind: made on first use, then the same instance."""

    __slots__ = ("kind",)

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def __missing__(self, arg):
        # NamedTuple's __new__ runs Python code; tuple.__new__ makes the same instruction at
        # half the cost
        ins = self[arg] = tuple.__new__(self.kind, (arg,))
        return ins


def _instruction_table(program):
    """``{kind: instructions by argument}``: the instructions of a program's plans, one
    instance of each, shared by every plan of the program (they are immutable values). A plan
    holds ~10^5 of them (ResNet-2500: 70,012); re-planning a program (the keep rounds, the
    policies of a search, a sweep) makes none again, and the collector has no new objects to
    scan. Every plan computes each step and frees each tensor once: those are made at once;
    the others as plans ask for them."""
    memo = program.plan_memo()
    hit = memo.get("instructions")
    if hit is None and "indices_of" in memo:   # a derived program with the same indices
        hit = memo["instructions"] = _instruction_table(memo["indices_of"])
    if hit is None:
        new = tuple.__new__
        hit = memo["instructions"] = {k: _Made(k) for k in (Recompute, Drop, Offload, Prefetch)}
        hit[Compute] = [new(Compute, (k,)) for k in range(len(program.steps))]
        hit[Free] = [new(Free, (t,)) for t in range(len(program.tensors))]
    return hit


def _step_tables(program):
    """``(producer_step, last_f_use, conv_b)``: the forward step that writes each tensor, the
    last forward step that reads each, and the backward CONV steps; once per program (every
    plan of it asks), read and never changed by the callers."""
    memo = program.plan_memo()
    hit = memo.get("step_tables")
    if hit is None:
        steps = program.steps
        producer_step = [-1] * len(program.tensors)
        last_f_use = {}
        for s in steps:
            if s.phase == "F":
                for t in s.outputs:
                    if producer_step[t] < 0:
                        producer_step[t] = s.index
                for t in s.deps:
                    last_f_use[t] = s.index
        conv_b = [s.index for s in steps if s.phase == "B" and s.type == "CONV"]
        hit = memo["step_tables"] = (producer_step, last_f_use, conv_b)
    return hit


def managed_peak(program, instructions, size=None, on_op=None):
    """Peak of the managed bytes the instructions keep on the GPU, with no budget and no cache.

    A replay of the plan as the engine does it with the ideal allocator and an unlimited budget
    (offload copies are ignored: the engine keeps them resident as clean cache entries), with
    no clock. Returns ``(peak_bytes, layers)``: ``layers`` are the producers of the replayed
    tensors resident at the first moment of the peak. ``size`` overrides the tensors' bytes
    (the solver planners count a convolution's optional workspace as 0). ``on_op(j, live)``
    is called for each ``Compute``/``Recompute`` (instruction ``j``) with the bytes resident
    while it runs.
    """
    steps = program.steps
    size = [t.nbytes for t in program.tensors] if size is None else size
    producer = [t.producer for t in program.tensors]
    resident = [False] * len(size)
    freed = [False] * len(size)
    replayed = set()
    live = peak = 0
    at_peak = ()
    for j, ins in enumerate(instructions):
        kind = type(ins)
        if kind is Compute or kind is Recompute:
            s = steps[ins.step]
            byproducts = ()
            if kind is Recompute:
                byproducts = [y for y in s.outputs if freed[y]]
                replayed.update(y for y in s.outputs if not resident[y])
            for t in s.deps:
                if not resident[t]:
                    resident[t] = True
                    freed[t] = False
                    live += size[t]
            if on_op is not None:
                on_op(j, live)
            if live > peak:
                peak = live
                at_peak = tuple(replayed)
            for y in byproducts:   # produced again and released at once
                resident[y] = False
                freed[y] = True
                live -= size[y]
                replayed.discard(y)
        elif kind is Free or kind is Drop:
            t = ins.tensor
            if resident[t]:
                resident[t] = False
                live -= size[t]
            freed[t] = kind is Free
            replayed.discard(t)
    return peak, {producer[t] for t in at_peak}


def liveness_peak(program):
    """:func:`managed_peak` of plain liveness (no recomputation): the same for every offload
    option, since offload copies do not count; computed once per program.

    Liveness keeps each tensor from its first use to its last (``Program.uses``) and frees it
    right after the step of its last use, so its managed peak is a sweep over the steps, with
    no instruction list: each step adds the bytes first used there and, once it has run,
    releases the bytes last used there (``tests/test_policies.py`` checks it against
    ``managed_peak`` of the liveness instructions)."""
    if program._liveness_peak is None:
        first, last = program.uses()
        added, released = [0] * len(program.steps), [0] * len(program.steps)
        for t, f, ll in zip(program.tensors, first, last):
            if f >= 0:
                added[f] += t.nbytes
                released[ll] += t.nbytes
        live = peak = 0
        for a, r in zip(added, released):
            live += a
            if live > peak:
                peak = live
            live -= r
        program._liveness_peak = peak
    return program._liveness_peak


@without_gc
def build_instructions(program, *, recompute=None, offload=False, offload_types=("CONV",),
                       prefetch_depth=1, checkpoint_types=CHECKPOINT_TYPES,
                       checkpoint_layers=None, offload_inputs_of=None, drop_groups=None,
                       offload_tensors=None, offload_at_last_forward_use=False, cached=None,
                       replay_when=None, dropped_after=None, group_outputs=None):
    """Instructions for liveness, optionally with offload/prefetch and recomputation.

    Recomputation never needs more memory than liveness (issue 9, D11): when the plan's
    :func:`managed_peak` is above liveness', the layers whose replayed outputs are resident at
    the peak keep their outputs instead, and the plan is rebuilt (a few rounds); if that does
    not bring it down, there is no recomputation at all.

    Parameters
    ----------
    recompute : None or {"speed", "memory", "cost-aware"}
        Drop the outputs of recomputable layers in forward and replay them in backward.
    offload : bool
        Copy outputs of ``offload_types`` layers to the host after their forward, and
        prefetch, when a CONV's backward starts, every tensor needed up to and including the
        next ``prefetch_depth`` CONV backward steps.
    checkpoint_layers : set of layer ids, optional
        Recompute everything else instead of the cheap layer types (Chen et al.'s checkpoints);
        replays are speed-centric.
    offload_inputs_of : tuple of layer types, optional
        Offload the *inputs* of these layers instead of the outputs of ``offload_types``
        (vDNN).
    offload_tensors : set of tensor ids, optional
        Offload exactly these (those that backward reads) instead of choosing by layer type.
    offload_at_last_forward_use : bool
        Copy a tensor out after its last forward use (``save_on_cpu``: the GPU copy lives as
        long as forward references it) instead of right after the step that makes it.
    drop_groups : dict, optional
        ``{tensor_id: group}``: drop exactly these activations after forward and, as
        ``torch.utils.checkpoint`` does, replay the whole group's forward (every step of it
        that made a dropped tensor, in order) when backward first needs one of them; replays
        are speed-centric (``recompute`` must be ``"speed"``).
    cached : dict, optional
        ``{tensor_id: group}``: kept tensors of a ``drop_groups`` group (selective
        checkpointing's saved op outputs) that stay until the group's replay, the first
        backward step that reads a dropped tensor of the group, even when nothing reads them.
    dropped_after : dict, optional
        ``{tensor: step}``: forward still references the tensor until that step ends (a
        module's local or argument outlives its last reader): with
        ``offload_at_last_forward_use`` the copy out and the release come then, and a
        ``drop_groups`` tensor is dropped then, not before (in forward at the latest).
    replay_when : dict, optional
        ``{backward step: groups}``: a ``drop_groups`` group is replayed at the first of its
        steps here, if no dropped tensor asked for it earlier (``torch.utils.checkpoint``
        replays a block when one of its nodes first unpacks anything the block's ops saved,
        the block's own output included).
    group_outputs : dict, optional
        ``{tensor_id: group}``: what a ``drop_groups`` group makes and keeps for the steps
        outside it (its output). Its replay makes them again from the group's inputs: one
        that a replayed step reads is not kept for the replay but released at its last use
        (``Drop``), made again by the replay and released once the replayed forward returns.
    """
    if recompute is not None and recompute not in RECOMPUTE_MODES:
        raise ConfigError(f"recompute mode {recompute!r} must be one of {RECOMPUTE_MODES}")
    if prefetch_depth < 0:
        raise ConfigError(f"prefetch_depth (={prefetch_depth}) must be >= 0")
    kw = dict(offload=offload, offload_types=offload_types, prefetch_depth=prefetch_depth,
              checkpoint_types=checkpoint_types, checkpoint_layers=checkpoint_layers,
              offload_inputs_of=offload_inputs_of, drop_groups=drop_groups,
              offload_tensors=offload_tensors,
              offload_at_last_forward_use=offload_at_last_forward_use, cached=cached,
              replay_when=replay_when, dropped_after=dropped_after, group_outputs=group_outputs)
    out = _instructions(program, recompute=recompute, **kw)
    if recompute is None or drop_groups is not None:
        return out   # a user's plan (torch.utils.checkpoint) is simulated as written
    live_peak = liveness_peak(program)
    kept = set()
    for _ in range(_KEEP_ROUNDS):
        peak, at_peak = managed_peak(program, out)
        if peak <= live_peak:
            return out
        if not at_peak - kept:
            break
        kept |= at_peak
        out = _instructions(program, recompute=recompute, kept_layers=kept, **kw)
    return _instructions(program, recompute=None, **kw)


_KEEP_ROUNDS = 8   # rounds of keeping the layers replayed at the peak before giving up


def _instructions(program, *, recompute, offload=False, offload_types=("CONV",),
                  prefetch_depth=1, checkpoint_types=CHECKPOINT_TYPES, checkpoint_layers=None,
                  offload_inputs_of=None, kept_layers=(), drop_groups=None, offload_tensors=None,
                  offload_at_last_forward_use=False, cached=None, replay_when=None,
                  dropped_after=None, group_outputs=None):
    steps = program.steps
    tensors = program.tensors
    _, last = program.uses()
    producer_step, last_f_use, conv_b = _step_tables(program)

    droppable = [False] * len(tensors)
    seg_mode = {}
    seg = {}
    if recompute is not None:
        if program.layer_types() is None:
            raise ConfigError(f"recomputation needs the layer graph, and program "
                              f"{program.name!r} has none (a captured trace); use a zoo network "
                              f"or a modelled trace, or `snsim execute` on a GPU")
        if drop_groups is not None:
            for t in drop_groups:
                droppable[t] = tensors[t].kind in ("activation", "workspace")
        elif checkpoint_layers is not None:
            for t in tensors:
                droppable[t.tensor_id] = (t.kind == "activation" and t.producer_type != "DATA"
                                          and t.producer not in checkpoint_layers
                                          and t.producer not in kept_layers)
        else:
            seg, seg_mode = _segment_modes(program, checkpoint_types, recompute)
            for t in tensors:
                if t.kind == "activation" and t.producer_type in RECOMPUTABLE_TYPES \
                        and t.producer in seg and t.producer not in kept_layers:
                    droppable[t.tensor_id] = True
    # a tensor must outlive its last use while a dropped tensor made from it may be replayed:
    # need_until[x] = max(last[x], need_until[y]) for every droppable output y of x's consumers
    need_until = list(last)
    if recompute is not None:
        # torch.utils.checkpoint replays a group from the group's inputs: a tensor made inside
        # the group is made again by the replay, so only what comes from outside it must be
        # kept; carry[x] is how long a replay may need the producer of group-internal x
        carry = [-1] * len(tensors)
        outputs = group_outputs or {}
        for s in reversed(steps):
            if s.phase == "F":
                for y in s.outputs:
                    # a group's output that a replay reads is made again by it, from inputs
                    # the replay needs in turn
                    if droppable[y] or (y in outputs and carry[y] > need_until[y]):
                        req = max(need_until[y], carry[y])
                        for x in s.inputs:
                            if drop_groups is not None and (
                                    drop_groups[y] if droppable[y] else outputs[y]) == (
                                    drop_groups.get(x) if droppable[x]
                                    else (cached or {}).get(x, outputs.get(x))):
                                carry[x] = max(carry[x], req)
                            else:
                                need_until[x] = max(need_until[x], req)
    if cached:
        replay_at = {}    # group -> the first backward step that reads a dropped tensor of it
        for s in steps:
            if s.phase == "B":
                for g in (replay_when or {}).get(s.index, ()):
                    replay_at.setdefault(g, s.index)
                for t in s.deps:
                    if droppable[t]:
                        replay_at.setdefault(drop_groups[t], s.index)
        for t, g in cached.items():
            if g in replay_at:
                need_until[t] = max(need_until[t], replay_at[g])
    free_after = [[] for _ in steps]
    for t, k in enumerate(need_until):
        if k >= 0:
            free_after[k].append(t)
    # group outputs a later replay makes again: dropped at their last use, not freed
    regrow = (frozenset(t for t in group_outputs if carry[t] > need_until[t])
              if group_outputs and recompute is not None else frozenset())
    offloaded = [False] * len(tensors)
    if offload:
        ot = frozenset(offload_types)
        if offload_tensors is not None:
            chosen = set(offload_tensors)
        elif offload_inputs_of is not None:
            consumers = frozenset(offload_inputs_of)
            chosen = {t for s in steps if s.phase == "F" and s.type in consumers for t in s.inputs}
        else:
            chosen = {t.tensor_id for t in tensors if t.producer_type in ot}
        for t in tensors:
            # worth copying only if something in backward needs it
            # an explicit choice may name buffers no tensor owns that backward reads
            offloaded[t.tensor_id] = ((t.kind == "activation" or offload_tensors is not None)
                                      and t.tensor_id in chosen
                                      and not droppable[t.tensor_id]
                                      and steps[last[t.tensor_id]].phase == "B")

    last_f = max((x.index for x in steps if x.phase == "F"), default=-1)
    later = dropped_after or {}
    drop_late = {}   # forward step -> group tensors dropped once it ends, after their last reader
    if drop_groups is not None and later:
        for t, k in later.items():
            if droppable[t] and t in last_f_use and min(k, last_f) > last_f_use[t]:
                drop_late.setdefault(min(k, last_f), []).append(t)
    late = {t for ts in drop_late.values() for t in ts}
    offload_after = {}   # forward step -> tensors copied out once it ends
    if offload and offload_at_last_forward_use:
        for x in steps:
            if x.phase == "F":
                for t in x.deps:
                    if offloaded[t] and last_f_use.get(t) == x.index:
                        k = max(x.index, min(later.get(t, -1), last_f))
                        offload_after.setdefault(k, []).append(t)
    node_steps = {}   # first step of a backward node (a captured step's parts) -> its steps
    members = {}      # group -> its tensors (a scan of every dropped tensor per step is O(n^2))
    if drop_groups is not None:
        for t, g in drop_groups.items():
            members.setdefault(g, []).append(t)
        first = None
        for s in steps:
            if s.phase == "B":
                prev = steps[s.index - 1] if s.index else None
                if prev is None or prev.phase != "B" or prev.layer != s.layer:
                    first = s.index
                node_steps.setdefault(first, []).append(s.index)

    # one instance per instruction and program, shared by its plans (_instruction_table)
    made = _instruction_table(program)
    computes, recomputes, frees, drops, offloads, prefetches = (
        made[c] for c in (Compute, Recompute, Free, Drop, Offload, Prefetch))
    out = []
    dropped = set()
    replayed = set()        # recomputed and resident
    b_started = False
    conv_rank = {k: i for i, k in enumerate(conv_b)}

    def prefetch_window(lo, hi):
        for k in range(lo, hi + 1):
            if steps[k].phase != "B":
                continue
            for t in steps[k].deps:
                if not droppable[t]:   # offloaded, or possibly evicted by the LRU cache
                    out.append(prefetches[t])

    transient = []          # by-products of this step's replays that nothing needs
    forward_temps = {}      # replayed group tensors backward never reads -> last forward reader
    now = [0]               # index of the step being scheduled
    any_memory = "memory" in seg_mode.values()

    def ensure(t, keep):
        """Emit the replays that rematerialise dropped tensor t (inputs first).

        A depth-first walk up the dropped producers with an explicit stack (a chain of
        thousands of recomputable layers must not hit Python's recursion limit); an input is
        looked at only after the inputs before it were replayed, since a replay may revive it.
        """
        stack = [[t, 0]]
        while stack:
            frame = stack[-1]
            inputs = steps[producer_step[frame[0]]].inputs
            i = frame[1]
            while i < len(inputs) and inputs[i] not in dropped:
                i += 1
            if i < len(inputs):
                frame[1] = i + 1
                stack.append([inputs[i], 0])
                continue
            stack.pop()
            replay(producer_step[frame[0]], keep)

    def drop_forward_temporaries(before, keep):
        """Drop the replayed group temporaries that only forward reads and whose last reader
        comes before step ``before`` (``None``: all of them; the replayed forward returned):
        the replay of a step that made nothing dropped (an in-place add) is not emitted, so
        its reads free nothing on their own."""
        for x, j in list(forward_temps.items()):
            if before is None or j < before:
                del forward_temps[x]
                if x in replayed and x not in keep:
                    out.append(drops[x])
                    replayed.discard(x)
                    dropped.add(x)

    def replay(k, keep):
        s = steps[k]
        if forward_temps:
            drop_forward_temporaries(k, keep)
        out.append(recomputes[k])
        for y in s.outputs:
            if y in dropped:    # a freed by-product (e.g. another fork copy) stays freed
                dropped.discard(y)
                replayed.add(y)
                if need_until[y] <= now[0]:
                    transient.append(y)   # revived only as a by-product: free after the step
                if drop_groups is not None and (steps[last[y]].phase == "F" or y in regrow):
                    forward_temps[y] = last_f_use.get(y, k)
        if seg_mode.get(seg.get(s.layer)) == "memory":
            for x in s.inputs:
                if x in replayed and x not in keep:
                    out.append(drops[x])
                    replayed.discard(x)
                    dropped.add(x)
        if drop_groups is not None:   # a group temporary past its last forward reader
            for x in s.deps:
                if x in replayed and last_f_use.get(x) == k and need_until[x] < now[0] \
                        and x not in keep:
                    out.append(drops[x])
                    replayed.discard(x)
                    dropped.add(x)

    emit = out.append
    any_droppable = any(droppable)
    for s in steps:
        phase, k = s.phase, s.index
        if phase == "B":
            if not b_started:
                b_started = True
                if offload and conv_b and prefetch_depth:
                    prefetch_window(k, conv_b[min(prefetch_depth, len(conv_b)) - 1])
            if offload and prefetch_depth and k in conv_rank:
                r = conv_rank[k]
                nxt = conv_b[r + prefetch_depth] if r + prefetch_depth < len(conv_b) else \
                    next((x.index for x in reversed(steps) if x.phase == "B"), k)
                prefetch_window(k + 1, nxt)
            now[0] = k
            need = [t for t in s.deps if t in dropped] if dropped else ()
            if drop_groups is not None:
                # an autograd node unpacks its saved tensors when it begins: the replay comes
                # before the first op-granular step of the node that reads a dropped tensor
                need = [t for j in node_steps.get(k, ()) for t in steps[j].deps
                        if t in dropped]
            asked = ({g for j in node_steps.get(k, ()) for g in replay_when.get(j, ())}
                     if replay_when and drop_groups is not None else ())
            if drop_groups is not None and (need or asked):
                # the whole group comes back at once: every tensor of it that backward still
                # reads, with the group's temporaries made again on the way and released
                # after their last reader, as the replayed forward releases them
                groups = {drop_groups[t] for t in need} | set(asked)
                need = sorted((t for g in groups for t in members[g]
                               if t in dropped and need_until[t] >= k),
                              key=lambda t: (producer_step[t], t))
            if need:
                keep = set(s.deps)
                for t in need:
                    if t in dropped:
                        ensure(t, keep)
                if forward_temps:   # the replayed forward has returned
                    drop_forward_temporaries(None, keep)
        emit(computes[k])
        if phase == "F":
            if offload_at_last_forward_use:
                for t in offload_after.get(k, ()):
                    emit(offloads[t])
            elif offload:
                for t in s.outputs:
                    if offloaded[t]:
                        emit(offloads[t])
            if any_droppable:
                for t in s.deps:
                    # checkpoint also drops what a step makes and uses itself (a captured
                    # step's op-level temporaries that backward reads): torch keeps none
                    if droppable[t] and last_f_use.get(t) == k \
                            and (t not in s.outputs or drop_groups is not None) \
                            and (need_until[t] > k or drop_groups is not None) \
                            and t not in late:
                        emit(drops[t])       # replayed in backward where needed
                        dropped.add(t)
                for t in drop_late.get(k, ()):
                    emit(drops[t])
                    dropped.add(t)
            for t in free_after[k]:     # need_until may point at a step not reading t
                if t in regrow:
                    emit(drops[t])
                    dropped.add(t)
                    continue
                if dropped:
                    if t in dropped and drop_groups is not None:
                        continue   # a group temporary: a replay makes it again
                    dropped.discard(t)
                emit(frees[t])
        elif phase == "B":
            if dropped or replayed or regrow:
                for t in free_after[k]:
                    if t in regrow and t not in replayed and t not in dropped:
                        emit(drops[t])
                        dropped.add(t)
                        continue
                    emit(frees[t])
                    dropped.discard(t)
                    replayed.discard(t)
            else:
                for t in free_after[k]:
                    emit(frees[t])
            for t in transient:
                if t in replayed:
                    emit(frees[t])
                    replayed.discard(t)
            transient.clear()
            # speed-centric replays stay until liveness frees them (at need_until, above);
            # memory-centric ones are dropped again right after the step that needed them
            if any_memory and replayed:
                for t in sorted(replayed):
                    if seg_mode.get(seg.get(tensors[t].producer)) == "memory":
                        emit(drops[t])
                        replayed.discard(t)
                        dropped.add(t)
        else:
            for t in free_after[k]:
                emit(frees[t])
    for t in sorted(dropped):
        out.append(frees[t])
    return out
