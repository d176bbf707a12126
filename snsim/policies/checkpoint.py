"""``torch.utils.checkpoint`` as a plan (SPEC §15): wrapped blocks keep only their inputs.

Every instance of the named module classes (``modules=Bottleneck``; default: the repeated
block class) — or every N-th of them (``every=N``) — is run as
``checkpoint(block, x, use_reentrant=False)``: the activations made inside it that nothing
outside it reads are dropped after forward, and when backward first needs one, the block's
forward is replayed once and all of them come back together. ``selective=true`` keeps the
outputs of convolutions, matmuls and fused attention (SPEC §12.3's selective checkpointing:
the ops :data:`SELECTIVE_SAVE_OPS`, which ``snsim execute`` saves with
``create_selective_checkpoint_contexts``).
"""
import dataclasses

from ..errors import ConfigError
from ..plan import Plan
from ._groups import group_of, internal_tensors, member_groups, select_modules, step_owners
from ._host import checkpoint_events
from ._schedule import build_instructions
from ._unpack import split_after_apply
from .base import Policy, flag, integer, names, register


# aten ops whose outputs selective checkpointing saves (the torch side's policy_fn saves these)
SELECTIVE_SAVE_OPS = ("convolution", "mm", "addmm", "bmm", "baddbmm",
                      "_scaled_dot_product_efficient_attention",
                      "_scaled_dot_product_flash_attention",
                      "_scaled_dot_product_cudnn_attention")


@register
class Checkpoint(Policy):
    name = "checkpoint"
    description = ("torch.utils.checkpoint around every block of a class (modules=CLASS[,…], "
                   "every=N, selective=true): block internals replayed in backward")
    reference = "PyTorch's torch.utils.checkpoint (non-reentrant), as users wrap blocks"
    planning_cost = "one pass over the blocks' steps"
    OPTIONS = {"modules": names(), "every": integer(None, minimum=1, optional=True),
               "selective": flag(False)}

    def unsupported(self, program):
        try:
            select_modules(program, self.name, self.options["modules"], self.options["every"],
                           segments_without_block=True)
        except ConfigError as e:
            return str(e).split(": ", 1)[-1]
        return None

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        paths = select_modules(program, self.name, o["modules"], o["every"],
                               segments_without_block=True)
        given = program
        program, ins, remade, dropped = checkpoint_instructions(program, paths, o["selective"])
        return Plan(policy=self.name, instructions=ins,
                    notes={**o, "wrapped": len(paths), "dropped_tensors": len(dropped)},
                    program=program if program is not given else None, remade=remade,
                    host_events=tuple(checkpoint_events(program, ins,
                                                        step_owners(program, paths), dropped)))


def checkpoint_instructions(program, paths, selective=False):
    """``(program, instructions, remade, dropped)``: every group of ``paths`` (module paths,
    or ``{group: member paths}``) run under ``torch.utils.checkpoint``; ``program`` is the
    one the instructions run (the given one, or one derived from it: the reads a hook's
    unpack moves, :func:`split_after_apply` and :func:`remade_outputs`), ``dropped`` the
    tensors dropped after forward, ``{tensor: group}``."""
    keep = ("CONV", "FC") if selective else ()
    ops = SELECTIVE_SAVE_OPS if selective else ()
    groups = internal_tensors(program, paths, keep_types=keep, keep_ops=ops)
    # selective checkpointing caches the kept outputs from forward until the block's replay
    # takes them back, whether backward reads them or not
    cached = {t: g for t, g in internal_tensors(program, paths).items() if t not in groups}
    # what the replay (or the selective cache) hands to a backward node dies with it
    program, _ = split_after_apply(program, set(groups) | set(cached))
    replay_when = first_unpacks(program, paths)
    program, remade = remade_outputs(program, paths, set(groups) | set(cached))
    # what a group keeps for the steps after it, its replay makes again
    outputs = {t: g for t, g in _made_in(program, paths).items()
               if t not in groups and t not in cached and program.tensors[t].kind == "activation"}
    # a tensor the block saved dies where forward drops its last reference to it (a
    # DenseNet layer's concatenated input lives until the layer's bn_function returns)
    ins = build_instructions(program, recompute="speed", drop_groups=groups,
                             cached=cached, replay_when=replay_when,
                             dropped_after=dict(program.extra.get("saved_released") or ()),
                             group_outputs=outputs)
    return program, ins, remade, groups


def _made_in(program, paths):
    """``{tensor: path}``: what each module's forward steps make."""
    steps = program.steps
    return {t: p for k, p in step_owners(program, paths).items() for t in steps[k].outputs}


def _own_reads(program, paths):
    """``(step, tensor, group)`` for every read by a wrapped group's backward step of a tensor
    the group's forward made, in step order."""
    made = _made_in(program, paths)
    member = member_groups(paths)
    for s in program.steps:
        if s.phase == "B":
            for t in s.deps:
                p = made.get(t)
                if p is not None and group_of(s.name, member) == p:
                    yield s.index, t, p


def remade_outputs(program, paths, internal):
    """``(program, remade)`` for the tensors a wrapped module makes, keeps for the steps
    outside it (not ``internal``) and saves for its own backward nodes (a Bottleneck's output,
    saved by its last ReLU). Its nodes hold the replay's copy, not the tensor forward made:
    ``remade`` is ``(first, last, tensor, label)`` per such tensor (:attr:`Plan.remade`), new
    storage held from the replay to the last of the module's backward steps that read it,
    and ``program`` is the program without those reads, so that the tensor forward made dies after its last reader
    outside the module (ResNet-50's last Bottleneck's output after the average pool's
    forward, as nothing outside saves it). ``program`` comes back unchanged (the same
    object) when no module saves such a tensor; once per program, paths and ``internal``
    (the program's plans share its instructions: :func:`_schedule._instruction_table`)."""
    memo = program.plan_memo()
    key = ("remade_outputs", tuple(sorted(member_groups(paths).items())), frozenset(internal))
    if key not in memo:
        memo[key] = _remade_outputs(program, paths, internal)
    return memo[key]


def _remade_outputs(program, paths, internal):
    span, own = {}, {}
    for k, t, p in _own_reads(program, paths):
        if t not in internal:
            first, _, _ = span.get(t, (k, k, p))
            span[t] = (first, k, p)
            own.setdefault(k, set()).add(t)
    remade = tuple(sorted((first, last, t, f"replayed {program.tensors[t].name} of {p}")
                          for t, (first, last, p) in span.items()))
    if not own:
        return program, remade
    steps = [dataclasses.replace(s, deps=tuple(t for t in s.deps if t not in own[s.index]))
             if s.index in own else s for s in program.steps]
    return program.derive(steps=steps, _uses=None), remade


def first_unpacks(program, paths):
    """``{backward step: {path}}``: the steps of each wrapped module's nodes that read what an
    op of the module saved — its own output included (a block's last ReLU saves its result,
    which the next block reads too). ``torch.utils.checkpoint`` saves everything through its
    pack hook, so the first such node replays the block, before it computes anything."""
    out = {}
    for k, _, p in _own_reads(program, paths):
        out.setdefault(k, set()).add(p)
    return out
