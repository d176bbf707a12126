"""The launching thread's work a plan adds beyond its ops (:attr:`snsim.plan.Plan.host_events`).

A plan run in PyTorch costs the host more than the ops it issues: ``torch.utils.checkpoint``'s
Python around each wrapped call and its recomputation, a saved-tensor hook's pack and unpack
per saved tensor (``save_on_cpu``, SuperNeurons' ``Offloader``), the ``Offloader``'s forward
hook on every convolution. A prediction records these where its fake run of the plan meets
them (:meth:`snsim.torchsim.record.Recorder.host_event`); a capture's program under the
engine's own plan gets them here, from the plan's instructions, with the same mechanisms and
counts, so that :func:`snsim.torchsim.opcost.plan_host_s` prices both alike. The engine
charges them only on a program whose steps carry host times (a capture that recorded its
kernels, :attr:`snsim.program.Step.host_s`).
"""
from __future__ import annotations

import collections

from ..plan import Compute, Offload, Prefetch, Recompute


def checkpoint_events(program, instructions, owner, dropped):
    """A ``checkpoint`` event (forward: F) before the first step of each wrapped group's call,
    and one (B) before the first step of each of its recomputations, counting the tensors the
    call saves: what it drops after forward (``dropped``: ``{tensor: group}``, as
    :func:`snsim.policies._groups.internal_tensors` gives it) and its input. ``owner``:
    ``{step: group}`` (:func:`snsim.policies._groups.step_owners`).

    >>> from types import SimpleNamespace as NS
    >>> prog = NS(steps=[NS(phase="F"), NS(phase="F"), NS(phase="F"), NS(phase="B")])
    >>> ins = [Compute(0), Compute(1), Compute(2), Recompute(0), Recompute(1), Compute(3)]
    >>> checkpoint_events(prog, ins, {0: "b0", 1: "b0", 2: "b1"}, {7: "b0", 8: "b0", 9: "b1"})
    [(0, 'checkpoint', 'F', 3), (2, 'checkpoint', 'F', 2), (3, 'checkpoint', 'B', 3)]
    """
    saves = collections.Counter(dropped.values())
    out = []
    last_forward = last_replay = None
    for i, ins in enumerate(instructions):
        kind = type(ins)
        if kind is Compute:
            last_replay = None
            if program.steps[ins.step].phase != "F":
                continue
            g = owner.get(ins.step)
            if g is not None and g != last_forward:
                out.append((i, "checkpoint", "F", saves[g] + 1))
            last_forward = g
        elif kind is Recompute:
            g = owner.get(ins.step)
            if g is not None and g != last_replay:
                out.append((i, "checkpoint", "B", saves[g] + 1))
            last_replay = g
    return out


def hook_events(program, instructions, mechanism, steps=None):
    """A saved-tensor hook's calls (``mechanism``): before each forward step, one pack (F)
    per tensor it makes or reads that a backward step reads; before each backward step, one
    unpack (B) per such tensor it reads. ``steps``: the steps whose saves go through this hook
    (None: all); a checkpointed group's ops save through checkpoint's own hooks, the
    innermost.

    >>> from types import SimpleNamespace as NS
    >>> prog = NS(steps=[NS(index=0, phase="F", deps=(0, 1), outputs=(1,)),
    ...                  NS(index=1, phase="B", deps=(1, 2), outputs=())])
    >>> hook_events(prog, [Compute(0), Compute(1)], "saved_tensors_hook")
    [(0, 'saved_tensors_hook', 'F', 1), (1, 'saved_tensors_hook', 'B', 1)]
    """
    made = {t for s in program.steps if s.phase == "F" for t in s.outputs}
    reads = {s.index: [t for t in s.deps if t in made]
             for s in program.steps if s.phase == "B"}
    saved = {t for ts in reads.values() for t in ts}
    out = []
    for i, ins in enumerate(instructions):
        if type(ins) is not Compute or (steps is not None and ins.step not in steps):
            continue
        s = program.steps[ins.step]
        if s.phase == "F":
            n, phase = sum(1 for t in set(s.deps) if t in saved), "F"
        elif s.phase == "B":
            n, phase = len(reads[ins.step]), "B"
        else:
            continue
        if n:
            out.append((i, mechanism, phase, n))
    return out


def conv_hook_events(program, instructions):
    """The ``Offloader``'s forward hook on each convolution: once per convolution step in
    forward, and again in each recomputation."""
    return [(i, "conv_hook", "F", 1) for i, ins in enumerate(instructions)
            if type(ins) in (Compute, Recompute) and program.steps[ins.step].type == "CONV"
            and (type(ins) is Recompute or program.steps[ins.step].phase == "F")]


def offload_copy_events(instructions):
    """The ``Offloader``'s Python path around each copy: one ``offload_copy`` (F) per
    ``Offload`` (the copy's issue on its stream, its event, the retiring wait) and one (B) per
    ``Prefetch`` (the device buffer, the H2D stream and event, the compute stream's wait).

    >>> offload_copy_events([Compute(0), Offload(3), Compute(1), Prefetch(3), Compute(2)])
    [(1, 'offload_copy', 'F', 1), (3, 'offload_copy', 'B', 1)]
    """
    return [(i, "offload_copy", "F" if type(ins) is Offload else "B", 1)
            for i, ins in enumerate(instructions) if type(ins) in (Offload, Prefetch)]
