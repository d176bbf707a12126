"""What a saved-tensor hook changes in backward: the tensor its unpack returns dies with the node.

Without hooks an autograd node holds what it saved until the engine releases the node's
variables, after the node has returned *and* the engine has reduced its gradients to the shapes
of the inputs they feed (``validate_outputs``: ``at::sum_to`` of a broadcast gradient, a
bias's). With a hook — ``torch.utils.checkpoint``'s recomputed tensors, ``save_on_cpu``'s
device copies — the tensor ``unpack`` returns is held only by the node's ``apply`` and is freed
when ``apply`` returns, before that reduction (and before the reduction's temporaries).

A program records the plain run, where a saved tensor dies after the reduction, so the two
are one step. :func:`split_after_apply` makes the reduction a step of its own wherever it
follows the reading of a hooked tensor and moves the hooked reads to the step before it, so
that a plan's liveness frees the hook's tensor where ``apply`` returns.
"""
from __future__ import annotations

import dataclasses

#: tensor names (the aten op that made them) of autograd's own reduction after a node returns
ENGINE_REDUCTIONS = frozenset({"sum"})
#: what may follow it in the same step: further reductions and their kernels' buffers
_REDUCTION_TAIL = ENGINE_REDUCTIONS | {"hidden"}


def split_after_apply(program, hooked, modules=()):
    """``(program, after)``: ``program`` with every backward step that reads a ``hooked``
    tensor (or belongs to one of ``modules``) and ends with autograd's gradient reduction
    split in two — the node's ``apply`` (the step's earlier allocations, every read, the
    hooked tensors) and the reduction (its allocations and the tensors that die in the step,
    hooked ones excepted) — and the set of the reduction steps' indices. The step's time stays
    with ``apply``. Where the reduction is a step of its own already (the next part of the
    node's step, in a program whose steps follow its ops' reads), the hooked tensors it would
    release move to the step before it, and it counts among the reduction steps. A program
    without such a step comes back unchanged (the same object) with an empty set.

    ``hooked``: tensor ids that a saved-tensor hook hands to backward; ``modules``: module
    paths whose nodes unpack something the program does not manage (``save_on_cpu``'s copy of
    a saved weight).
    """
    hooked, modules = frozenset(hooked), frozenset(modules)
    first, last = program.uses()
    names = [t.name for t in program.tensors]
    steps = program.steps
    cut = {}   # step index -> (apply deps, reduction deps)
    moved = {}  # reduction step of its own -> hooked tensors its node's apply step releases
    for s in steps:
        if s.phase != "B" or not (s.name in modules or any(
                t in hooked and first[t] < s.index for t in s.deps)):
            continue
        made = [t for t in s.deps if first[t] == s.index]
        k = len(made)
        while k and names[made[k - 1]] in _REDUCTION_TAIL:
            k -= 1
        while k < len(made) and names[made[k]] not in ENGINE_REDUCTIONS:
            k += 1   # buffers before the first reduction belong to apply
        if k == 0 and made and s.index and _same_node(steps[s.index - 1], s):
            # a step of the reduction alone (a program whose steps follow its ops' reads):
            # the hooked tensors it releases go with the node's step before it
            moved[s.index] = tuple(t for t in s.deps if t in hooked and first[t] < s.index
                                   and last[t] == s.index)
            continue
        if k == len(made) or k == 0:
            continue
        tail = made[k:]
        dying = [t for t in s.deps if last[t] == s.index and t not in hooked and t not in tail]
        head = [t for t in s.deps if t not in tail]
        cut[s.index] = (tuple(head), tuple(dict.fromkeys(tail + dying)))
    if not cut and not any(moved.values()):
        return program, frozenset(moved)   # the reductions are steps of their own already
    alone = set(moved)
    moved = {k: ts for k, ts in moved.items() if ts}
    back = {k - 1: ts for k, ts in moved.items()}
    steps, after = [], set()
    for s in program.steps:
        if s.index in alone:
            after.add(len(steps))
        if s.index in moved or s.index in back:
            deps = s.deps
            if s.index in moved:
                deps = tuple(t for t in deps if t not in moved[s.index])
            if s.index in back:
                deps = deps + back[s.index]
            s = dataclasses.replace(s, deps=deps)
        if s.index not in cut:
            steps.append(dataclasses.replace(s, index=len(steps)))
            continue
        head, tail = cut[s.index]
        steps.append(dataclasses.replace(s, index=len(steps), deps=head))
        after.add(len(steps))
        steps.append(dataclasses.replace(s, index=len(steps), deps=tail, time_s=0.0,
                                         gpu_s=None if s.gpu_s is None else 0.0,
                                         host_s=None if s.host_s is None else 0.0))
    return program.derive(steps=steps, _uses=None), frozenset(after)


def _same_node(a, b):
    """Whether backward steps ``a`` then ``b`` are parts of one autograd node's step."""
    return a.phase == b.phase == "B" and a.layer == b.layer and a.name == b.name
