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
from ._groups import module_map, select_modules, steps_in
from ._schedule import build_instructions
from .base import Policy, flag, names, register


@register
class CpuOffload(Policy):
    name = "cpu_offload"
    description = ("torch save_on_cpu: every saved activation to host in forward, back in "
                   "backward, copies serialised with compute (pin_memory=true|false, modules=)")
    OPTIONS = {"pin_memory": flag(True), "modules": names()}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        if o["modules"]:
            inside = {k for p in select_modules(program, self.name, o["modules"])
                      for k in steps_in(program, p)}
            chosen = {t for k in inside for t in program.steps[k].outputs}
        else:
            chosen = {t.tensor_id for t in program.tensors if t.kind == "activation"}
        ins = unpack_at_node_start(program, build_instructions(
            program, offload=True, offload_tensors=chosen, prefetch_depth=0,
            offload_at_last_forward_use=True))
        within = (select_modules(program, self.name, o["modules"]) if o["modules"] else None)
        return Plan(policy=self.name, instructions=ins, free_after_offload=True,
                    sync_copies=True, pinned_host=o["pin_memory"], notes=dict(o),
                    unpacked=saved_parameter_copies(program, within))


def unpack_at_node_start(program, instructions):
    """Copy each offloaded tensor back when the first backward step that reads it begins its
    autograd node, not at the op inside the node that reads it.

    An autograd node unpacks all its saved tensors when its ``apply`` begins, so the device copy
    ``save_on_cpu``'s unpack makes is there for the whole node; a captured node is split into
    op-granular steps (the same layer, in a row), and the read is recorded at one of them.
    """
    steps = program.steps
    start = {}
    for s in steps:
        if s.phase == "B":
            prev = steps[s.index - 1] if s.index else None
            same = prev is not None and prev.phase == "B" and prev.layer == s.layer
            start[s.index] = start[prev.index] if same else s.index
    offloaded = {i.tensor for i in instructions if type(i) is Offload}
    fetch = {}
    seen = set()
    for s in steps:
        if s.phase == "B":
            for t in s.deps:
                if t in offloaded and t not in seen:
                    seen.add(t)
                    if start[s.index] != s.index:
                        fetch.setdefault(start[s.index], []).append(t)
    if not fetch:
        return instructions
    out = []
    for i in instructions:
        if type(i) is Compute and i.step in fetch:
            out.extend(Prefetch(t) for t in fetch[i.step])
        out.append(i)
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


def saved_parameter_copies(program, within=None):
    """``(first F step, first B step, last B step, bytes, label)`` per parameter that a
    module's op saves, for every module called in forward and backward (only those under the
    ``within`` paths, if given).

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
    span, packed = {}, {}
    for s in program.steps:
        if s.phase == "F" and s.name in mods:
            packed.setdefault(s.name, s.index)
        elif s.phase == "B" and s.name in mods:
            first, _ = span.get(s.name, (s.index, s.index))
            span[s.name] = (first, s.index)
    out = []
    for path, (first, last) in span.items():
        if path not in packed:
            continue
        if within is not None and not any(path == w or path.startswith(w + ".")
                                          for w in within):
            continue
        for leaf in SAVED_PARAMETERS.get(mods[path], ()):
            name = f"{path}.{leaf}"
            if size.get(name):
                out.append((packed[path], first, last, size[name], f"unpacked {name}"))
    return tuple(sorted(out))
