"""``torch.autograd.graph.save_on_cpu`` as a plan (SPEC §15).

Every activation that backward reads is copied to host memory after its last forward use and
its GPU copy released; in backward each one is copied back when the step that needs it runs.
There is no side stream and no prefetch: the copies run on the compute stream's critical path,
pinned (``pin_memory=true``) or pageable. ``modules=CLASS[,…]`` limits the context to those
blocks (as wrapping only their forward in ``save_on_cpu``).

The pack hook sees every tensor autograd saves, parameters included: a convolution or a linear
layer saves its weight, a norm layer its affine parameters (and batch norm its running
statistics). ``save_on_cpu`` copies each to the host like an activation, and in backward its
unpack makes a fresh device copy of it for the autograd node, freed when the node returns —
while the parameter itself stays where it is. The plan carries these copies as
:attr:`~snsim.plan.Plan.unpacked`, from the first to the last backward step of the module.
"""
from ..plan import Compute, Offload, Plan, Prefetch
from ._groups import module_map, select_modules, steps_in, steps_in_groups
from ._host import hook_events
from ._schedule import build_instructions
from ._unpack import split_after_apply
from .base import Policy, flag, names, register


@register
class CpuOffload(Policy):
    name = "cpu_offload"
    description = ("torch save_on_cpu: every saved activation to host in forward, back in "
                   "backward, copies serialised with compute (pin_memory=true|false, modules=)")
    reference = "PyTorch's torch.autograd.graph.save_on_cpu"
    planning_cost = "one pass over the steps"
    OPTIONS = {"pin_memory": flag(True), "modules": names()}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        if o["modules"]:
            inside = {k for p in select_modules(program, self.name, o["modules"])
                      for k in steps_in(program, p)}
            chosen = {t for k in inside for t in program.steps[k].outputs}
        else:
            chosen = {t.tensor_id for t in program.tensors if t.kind == "activation"}
            chosen |= saved_buffers(program)
        within = (select_modules(program, self.name, o["modules"]) if o["modules"] else None)
        given = program
        program, after = split_after_apply(program, chosen,
                                           {c[4].split()[1].rsplit(".", 1)[0] for c in
                                            saved_parameter_copies(program, within)})
        ins = unpack_at_node_start(program, build_instructions(
            program, offload=True, offload_tensors=chosen, prefetch_depth=0,
            offload_at_last_forward_use=True,
            dropped_after=dict(program.extra.get("saved_released") or ())), after)
        copies = saved_parameter_copies(program, within, after)
        # save_on_cpu's pack per saved tensor in forward, unpack per read in backward
        events = hook_events(program, ins, "saved_tensors_hook",
                             steps=steps_in_groups(program, within) if within else None)
        if o["pin_memory"]:     # each pinned pack allocates the host tensor it copies into
            events += [(i, "pinned_pack", ph, n) for i, _, ph, n in events if ph == "F"]
        return Plan(policy=self.name, instructions=ins, free_after_offload=True,
                    sync_copies=True, pinned_host=o["pin_memory"],
                    blocking_packs=o["pin_memory"] and packs_block(program), notes=dict(o),
                    unpacked=copies, staged_packs=staged_packs(program, copies),
                    extra_packs=packs_per_node(program, ins), host_events=tuple(events),
                    program=program if program is not given else None)


def packs_block(program):
    """Whether ``save_on_cpu(pin_memory=True)`` waits for each pack's copy in the torch that
    runs ``program``: a capture's own torch (its provenance), before 2.12 (the blocking
    ``copy_``: :data:`snsim.torchsim.plans.SAVE_ON_CPU_NON_BLOCKING_FROM`); a program with no
    recorded torch (the zoo's) is taken to run on a current one, whose pack does not wait.

    >>> from types import SimpleNamespace as NS
    >>> packs_block(NS(extra={"provenance": {"torch": "2.11.0+cu130"}}))
    True
    >>> packs_block(NS(extra={"provenance": {"torch": "2.14.1"}})), packs_block(NS(extra={}))
    (False, False)
    """
    from ..torchsim.plans import SAVE_ON_CPU_NON_BLOCKING_FROM, torch_release
    version = ((program.extra or {}).get("provenance") or {}).get("torch")
    if not version:
        return False
    try:
        return torch_release(version) < SAVE_ON_CPU_NON_BLOCKING_FROM
    except ValueError:      # an unreadable version string: the current behaviour
        return False


def saved_buffers(program):
    """Buffers no tensor owns (a capture's ``hidden`` blocks) that forward makes and backward
    reads: what an autograd node saved without the capture seeing the tensor (the contiguous
    copy a linear layer makes of a transposed input, for one). ``save_on_cpu`` packs them like
    any saved tensor."""
    made_in_forward = {t for s in program.steps if s.phase == "F" for t in s.outputs}
    return {t for s in program.steps if s.phase == "B" for t in s.deps
            if t in made_in_forward and program.tensors[t].kind == "workspace"}


def nodes_reading(program, offloaded, after=frozenset()):
    """``({tensor: [first step of each backward node reading it]}, {first step: last step})``.

    A captured autograd node is split into op-granular steps (the same layer, in a row); its
    last step is the last of its ``apply`` (``after``: the steps of autograd's reduction after
    a node returns, :func:`~snsim.policies._unpack.split_after_apply`)."""
    steps = program.steps
    start, end = {}, {}
    for s in steps:
        if s.phase == "B":
            prev = steps[s.index - 1] if s.index else None
            same = prev is not None and prev.phase == "B" and prev.layer == s.layer
            start[s.index] = start[prev.index] if same else s.index
            if s.index not in after:
                end[start[s.index]] = s.index
    nodes = {}
    for s in steps:
        if s.phase == "B":
            for t in s.deps:
                if t in offloaded:
                    lst = nodes.setdefault(t, [])
                    if not lst or lst[-1] != start[s.index]:
                        lst.append(start[s.index])
    return nodes, end


def packs_per_node(program, instructions):
    """``(step, bytes)`` of the packs beyond the first of every tensor that several backward
    nodes read (``save_on_cpu`` packs it once per op that saves it), placed after its last
    forward use, where its ``Offload`` is."""
    offloaded = {i.tensor for i in instructions if type(i) is Offload}
    last_f = {}
    for s in program.steps:
        if s.phase == "F":
            for t in s.deps:
                last_f[t] = s.index
    nodes, _ = nodes_reading(program, offloaded)
    size = [t.nbytes for t in program.tensors]
    return tuple((last_f[t], size[t] * (len(lst) - 1))
                 for t, lst in sorted(nodes.items()) if len(lst) > 1 and t in last_f)


def unpack_at_node_start(program, instructions, after=frozenset()):
    """Copy an offloaded tensor back for each autograd node that reads it, when the node
    begins, and release that device copy when the node ends.

    An autograd node unpacks all its saved tensors when its ``apply`` begins, and
    ``save_on_cpu``'s unpack makes a fresh device copy that dies when the node returns; a tensor
    saved by two nodes (a ReLU's output, saved by the ReLU and by the next convolution) comes
    back twice. ``after``: the program's steps that run after their node returned.
    """
    offloaded = {i.tensor for i in instructions if type(i) is Offload}
    nodes, end = nodes_reading(program, offloaded, after)
    fetch, drop = {}, {}
    for t, lst in nodes.items():
        for k in lst:
            fetch.setdefault(k, []).append(t)
        for k in lst[:-1]:   # the last node's copy is freed where the tensor dies
            drop.setdefault(end[k], []).append(t)
    # a node unpacks its saved variables in the order its function declares them: inputs
    # before outputs, i.e. in the order forward made them
    born, _ = program.uses()
    for k in fetch:
        fetch[k].sort(key=lambda t: (born[t], t))
    out = []
    for i in instructions:
        if type(i) is Compute and i.step in fetch:
            out.extend(Prefetch(t) for t in fetch[i.step])
        out.append(i)
        if type(i) is Compute and i.step in drop:
            out.extend(Offload(t) for t in drop[i.step])
    return out


# the parameters (and buffers) a module's forward op saves for backward, by module class, from
# torch's derivatives.yaml: convolution saves (input, weight), addmm/matmul the weight (as
# mat2), cudnn/native batch norm (input, weight, running_mean, running_var, ...), layer norm
# (input, weight, bias, mean, rstd), group norm (input, weight, mean, rstd); embedding saves
# only its indices. MultiheadAttention runs its projections as linear ops.
SAVED_PARAMETERS = {
    **{c: ("weight",) for c in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                 "ConvTranspose2d", "ConvTranspose3d", "Linear",
                                 "NonDynamicallyQuantizableLinear", "GroupNorm")},
    **{c: ("weight", "running_mean", "running_var")
       for c in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")},
    "LayerNorm": ("weight", "bias"),
    "MultiheadAttention": ("in_proj_weight", "q_proj_weight", "k_proj_weight",
                           "v_proj_weight", "out_proj.weight"),
}


#: module classes whose weight one autograd node saves (linear layers: ``addmm``/``mm``)
ONE_NODE_SAVERS = frozenset({"Linear", "NonDynamicallyQuantizableLinear"})
#: module classes whose ops save their weights transposed (``F.linear``: ``weight.t()``)
TRANSPOSED_SAVERS = ONE_NODE_SAVERS | {"MultiheadAttention"}


def saved_parameter_copies(program, within=None, after=frozenset()):
    """``(first F step, first B step, last B step, bytes, label)`` per parameter that a
    module's op saves, for every module called in forward and backward (only those under the
    ``within`` paths, if given); the last B step is the module's last, or for a module whose
    one node saves the weight (:data:`ONE_NODE_SAVERS`), the end of that node's ``apply``
    where ``after`` (steps that run once their node returned) says where it is.

    Modules and parameters are matched by path (``layer1.0.conv1`` saves
    ``layer1.0.conv1.weight``); a program without a module tree has none.
    """
    mods = module_map(program)
    if not mods:
        return ()
    size = {}
    for st in program.static_tensors:
        if st.kind in ("parameter", "buffer"):
            size[st.name] = size.get(st.name, 0) + st.nbytes
    span, packed, returned = {}, {}, set()
    for s in program.steps:
        if s.phase == "F" and s.name in mods:
            packed.setdefault(s.name, s.index)
        elif s.phase == "B" and s.name in mods and s.name not in returned:
            if s.index in after:
                # the weight's node returned: a layer that saves its weight in one node
                # (linear: addmm) releases the copy there, before autograd's reduction
                if mods[s.name] in ONE_NODE_SAVERS:
                    returned.add(s.name)
                continue
            first, _ = span.get(s.name, (s.index, s.index))
            span[s.name] = (first, s.index)
    aliases = program.extra.get("param_aliases") or {}   # tied weights: lm_head.weight
    out = []
    for path, (first, last) in span.items():
        if path not in packed:
            continue
        if within is not None and not any(path == w or path.startswith(w + ".")
                                          for w in within):
            continue
        for leaf in SAVED_PARAMETERS.get(mods[path], ()):
            name = f"{path}.{leaf}"
            nbytes = size.get(name) or size.get(aliases.get(name), 0)
            if nbytes:
                out.append((packed[path], first, last, nbytes, f"unpacked {name}"))
    return tuple(sorted(out))


def staged_packs(program, copies):
    """``(step, bytes)``: the device copy ``save_on_cpu``'s pack makes of a saved weight that
    is a transposed view (a linear layer's ``addmm``/``mm`` saves ``weight.t()``):
    ``packed.copy_(tensor)`` into a contiguous host buffer first makes the source contiguous
    on the device. It lives for the copy, before the op's outputs (autograd saves an op's
    inputs before it runs the op)."""
    mods = module_map(program) or {}
    return tuple((pack, nbytes) for pack, _, _, nbytes, label in copies
                 if mods.get(label.split()[1].rsplit(".", 1)[0]) in TRANSPOSED_SAVERS)
