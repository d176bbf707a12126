"""SuperNeurons' plans placed on module boundaries: what ``snsim execute`` runs (SPEC §15).

On a PyTorch program (a capture or a prediction, which carry the module tree) ``recompute``,
``offload`` and ``superneurons`` are the plans :mod:`snsim.torchsim.plans` applies to the model:

``recompute``
    Every segment of :func:`~snsim.policies._groups.recompute_segments` (the blocks, and the
    runs of a plain conv stack up to a pooling layer) under ``torch.utils.checkpoint``: the
    engine's ``checkpoint`` on those groups.
``offload``
    The ``Offloader``: a tensor whose storage a convolution made, that an op outside every
    segment saves for backward (floating point, at least :data:`OFFLOADER`'s ``min_bytes``),
    is copied to a pinned host buffer on a side stream when the op packs it. Its GPU copy is
    released once ``keep_inflight`` later offloads have been packed (the host waits for its
    copy to end) or when the model's forward returns, and not before forward drops its last
    reference to it. In backward, the first node that unpacks it brings it back, with the
    ``prefetch_depth`` offloaded tensors packed before it that are not back yet.
``superneurons``
    Both: the segments are checkpointed; what ops outside them save is offloaded.

A tensor a segment takes as its input is left on the GPU: ``torch.utils.checkpoint`` keeps a
reference to it for the replay, so releasing the offloader's would free nothing.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..plan import Compute, Evict, Offload, Plan, Prefetch
from ._groups import (CONV_CLASSES, group_of, member_groups, module_map, recompute_segments,
                      step_owners, steps_in_groups)
from ._host import checkpoint_events, conv_hook_events, hook_events, offload_copy_events
from ._schedule import _step_tables, build_instructions
from .checkpoint import checkpoint_instructions
from .cpu_offload import nodes_reading

#: the ``Offloader``'s settings that ``snsim execute`` and ``snsim predict`` use
OFFLOADER = {"keep_inflight": 2, "prefetch_depth": 2, "min_bytes": 1 << 20}


def boundary_plan(policy, program, *, recompute, offload):
    """The :class:`Plan` of ``policy`` (``recompute``, ``offload`` or ``superneurons``) placed on
    the module boundaries of ``program``.

    Raises
    ------
    ConfigError
        No module tree, or (``recompute``) no segment to checkpoint.
    """
    segments = recompute_segments(program)
    if recompute and not segments:
        raise ConfigError(f"policy {policy}: {program.name!r} has no block or conv stack to "
                          f"recompute")
    given = program
    remade, dropped = (), {}
    if recompute:
        program, ins, remade, dropped = checkpoint_instructions(program, segments)
    else:
        segments = {}
        ins = build_instructions(program)
    entries = ()
    if offload:
        ins, entries = offloader_instructions(program, ins, segments, **OFFLOADER)
    # the host's share: checkpoint's calls and recomputations; the Offloader's pack and
    # unpack of every tensor saved outside the segments, its hook on every convolution and
    # its Python around each copy
    events = (checkpoint_events(program, ins, step_owners(program, segments), dropped)
              if recompute else [])
    if offload:
        inside = steps_in_groups(program, segments)
        events += hook_events(program, ins, "offloader_hook",
                              steps={s.index for s in program.steps} - inside)
        events += conv_hook_events(program, ins)
        events += offload_copy_events(ins)
    notes = {"placement": "modules", "segments": len(segments) if recompute else 0,
             "dropped_tensors": len(dropped), "offloaded_tensors": len(entries),
             "offloaded_bytes": sum(program.tensors[t].nbytes for t in entries), **OFFLOADER}
    return Plan(policy=policy, instructions=ins, notes=notes, remade=remade,
                program=program if program is not given else None,
                host_events=tuple(sorted(events)))


def offloaded_tensors(program, segments, min_bytes):
    """``[(pack step, tensor)]`` in pack order: the tensors the ``Offloader`` offloads.

    A tensor a convolution's module call made (its output, whose storage the conv's forward
    hook marks), that backward reads from a node outside every segment, of ``min_bytes`` or
    more, packed by the first forward step outside the segments that reads it; none that a
    segment's forward reads, and none that autograd saved as a part or a non-contiguous view
    of it (``Program.extra["saved_views"]``, recorded since 2026-12-03 17:30 UTC: the
    ``Offloader`` packs only whole contiguous storages)."""
    mods = module_map(program) or {}
    member = member_groups(segments)
    steps = program.steps
    # a tensor packed as a view (a permuted conv output a LayerNorm saves) is not offloaded,
    # and autograd holds its GPU storage all the same
    views = {int(t) for t in program.extra.get("saved_views") or ()}
    conv_made = {t for s in steps if s.phase == "F" and mods.get(s.name) in CONV_CLASSES
                 for t in s.outputs if program.tensors[t].kind == "activation"
                 and program.tensors[t].nbytes >= min_bytes and t not in views}
    if not conv_made:
        return []
    pack, segment_input = {}, set()
    for s in steps:
        if s.phase != "F":
            continue
        inside = bool(member) and group_of(s.name, member) is not None
        for t in s.deps:
            if t in conv_made and t not in s.outputs:
                if inside:
                    segment_input.add(t)
                else:
                    pack.setdefault(t, s.index)
    saved_outside = {t for s in steps if s.phase == "B" for t in s.deps
                     if t in pack and (not member or group_of(s.name, member) is None)}
    return sorted((k, t) for t, k in pack.items()
                  if t in saved_outside and t not in segment_input)


def offloader_instructions(program, instructions, segments, *, keep_inflight, prefetch_depth,
                           min_bytes):
    """``(instructions, offloaded)``: ``instructions`` with the ``Offloader``'s copies.

    ``Offload`` after the step that packs a tensor; ``Evict`` of its GPU copy before the step
    that packs the ``keep_inflight``-th offload after it (the host waits for its copy there),
    or after the model's last forward step, and in either case not before forward's last
    reference to it; ``Prefetch`` of it, and of the next ``prefetch_depth`` earlier ones not
    back yet, when the first backward node that reads it begins (each node reading an
    offloaded tensor asks again, as each unpack does)."""
    entries = offloaded_tensors(program, segments, min_bytes)
    if not entries:
        return instructions, ()
    order = [t for _, t in entries]
    pack_at = {t: k for k, t in entries}
    _, last_f_use, _ = _step_tables(program)
    last_ref = {t: last_f_use[t] for t in order if t in last_f_use}
    for t, k in dict(program.extra.get("saved_released") or ()).items():
        if t in pack_at:
            last_ref[t] = max(last_ref.get(t, k), k)
    model_end = _model_forward_end(program)
    evict_before, evict_after = {}, {}
    for i, t in enumerate(order):
        ref = last_ref.get(t, pack_at[t])
        if i + keep_inflight < len(order) and pack_at[order[i + keep_inflight]] > ref:
            evict_before.setdefault(pack_at[order[i + keep_inflight]], []).append(t)
        else:
            evict_after.setdefault(max(ref, model_end), []).append(t)
    nodes, _ = nodes_reading(program, set(order))
    readers = {}
    for t, starts in nodes.items():
        for k in starts:
            readers.setdefault(k, []).append(t)
    rank = {t: i for i, t in enumerate(order)}
    fetch, issued = {}, set()
    for k in sorted(readers):
        got = fetch.setdefault(k, [])
        for t in sorted(readers[k], key=rank.get):
            if t not in issued:
                issued.add(t)
                got.append(t)
            n, j = 0, rank[t] - 1
            while j >= 0 and n < prefetch_depth:
                if order[j] not in issued:
                    issued.add(order[j])
                    got.append(order[j])
                    n += 1
                j -= 1
    packed_after = {}
    for t, k in pack_at.items():
        packed_after.setdefault(k, []).append(t)
    out = []
    for ins in instructions:
        k = ins.step if type(ins) is Compute else None
        if k is not None:
            out.extend(Evict(t) for t in evict_before.get(k, ()))
            out.extend(Prefetch(t) for t in fetch.get(k, ()))
        out.append(ins)
        if k is not None:
            out.extend(Offload(t) for t in packed_after.get(k, ()))
            out.extend(Evict(t) for t in evict_after.get(k, ()))
    return out, tuple(order)


def _model_forward_end(program):
    """The model's last forward step: the forward hook on the root runs after it, before the
    loss (the steps named ``loss``)."""
    end = -1
    for s in program.steps:
        if s.phase == "F":
            if s.name == "loss":
                break
            end = s.index
    return end


#: ``placement``: where SuperNeurons' plans act; ``auto`` places them on module boundaries in
#: a program that records its module tree (a capture or a prediction: the plan ``snsim
#: execute`` runs), on the layer graph otherwise (the zoo: SuperNeurons' own algorithm)
PLACEMENTS = ("auto", "layers", "modules")


def on_modules(program, placement, policy):
    """Whether a SuperNeurons plan with option ``placement`` acts on module boundaries.

    Raises
    ------
    ConfigError
        ``placement=modules`` on a program that does not record its module tree (a zoo
        network's holds only its blocks, no convolution or pooling layer to place a plan on).
    """
    recorded = program.extra.get("modules") is not None
    if placement == "modules" and not recorded:
        raise ConfigError(f"policy {policy}: option placement=modules needs a program that "
                          f"records its module tree (a capture or a prediction), and "
                          f"{program.name!r} does not; use placement=layers or auto")
    return recorded if placement == "auto" else placement == "modules"
