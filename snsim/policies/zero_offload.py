"""ZeRO-Offload / ZeRO-Infinity: parameters, gradients and optimizer state on the host (SPEC §16).

The policy rewrites the program, then lets a base policy plan the activations on it:

- fp32 master parameters, their gradient buffers (both pinned) and the optimizer state
  (pageable) live in host memory: the ``parameter``, ``parameter_grad`` and ``optimizer_state``
  static allocations leave the GPU (buffers and the input stay).
- Each parameter becomes a managed tensor that starts every iteration on the host
  (``Plan.host_resident``). A step of the module that owns it needs it, so the engine copies it
  in (H2D) before the module's forward (the nearest enclosing module's, for a parameter its
  owner never runs with: :func:`_user_of`), and again before its backward; ``Evict`` releases the
  GPU copy after the module's forward (a forward replayed in backward keeps it for the
  backward) and after its gradient is produced (ZeRO-Infinity's per-layer fetch; no prefetch
  ahead, as the executor of :mod:`snsim.torchsim.zero`).
- Each gradient is copied D2H (``Offload``) as soon as it is produced and then freed.
- The update steps become one host step, the CPU optimizer (:mod:`.host_step`): the bytes
  PyTorch's single-tensor CPU kernels stream at ``host_mem_bytes_per_s``, the fresh pages of
  their temporaries (glibc's mmap and trim rules over the parameter sizes) at
  ``host_page_fault_s``, and one ``host_op_overhead_s`` per op. The GPU waits for the step
  (no delayed update).
- If the pinned host buffers (masters + gradients) exceed the preset's ``host_pinned_bytes``,
  they are pageable: every copy runs at the pageable bandwidth.
- Host memory: the masters, gradient buffers and optimizer state are the plan's
  ``host_static_bytes``; with the tensors the base policy offloads they must fit the preset's
  ``host_dram_bytes``, else the engine fails the run with a reason naming host memory.

``base=`` names the policy that plans the activations on the rewritten program (default
``liveness``). ``superneurons+zero_offload`` is ``zero_offload`` with ``base=superneurons``: a
name ``A+B`` means policy ``B`` with ``base=A`` for every policy that takes a ``base`` option
(:func:`~snsim.policies.base.get_policy`).
"""
from __future__ import annotations

import dataclasses

from ..errors import ConfigError
from ..plan import Compute, Drop, Evict, Free, Offload, Prefetch, Recompute
from ..program import CUBLAS_MAP_KEYS, ROOT_MODULE, Tensor
from .base import Policy, choice, register
from .host_step import host_step_parts_s

#: How a capture names the steps of a forward replayed in backward (torchsim.record).
RECOMPUTE_PREFIX = "recompute:"
_OFF_GPU = ("parameter", "parameter_grad", "optimizer_state")
BASE_POLICIES = ("liveness", "superneurons", "offload", "recompute", "vdnn")


def _module_of(param_name):
    return param_name.rsplit(".", 1)[0] if "." in param_name else param_name


def _user_of(param_name, step_names):
    """The step name of the module whose forward uses ``param_name``: its owner's, else the
    nearest enclosing module's that runs (``nn.MultiheadAttention`` reads its ``out_proj``'s
    weight itself and never calls ``out_proj``; torchvision's Swin attention reads
    ``qkv.weight`` the same way; the root module's own parameters, ViT's ``class_token``, are
    its step :data:`~snsim.program.ROOT_MODULE`'s), as the executor fetches it
    (:class:`snsim.torchsim.zero.ZeroOffload`); None if no enclosing module is a step."""
    name = _module_of(param_name) if "." in param_name else ROOT_MODULE
    while name not in step_names:
        if name == ROOT_MODULE:
            return None
        name = name.rsplit(".", 1)[0] if "." in name else ROOT_MODULE
    return name


def stream_parameters(program, hardware):
    """The program rewritten for parameter streaming (see the module docstring).

    Returns
    -------
    (Program, dict)
        The new program, and ``info``: ``params`` (tensor ids of the streamed parameters),
        ``grad_release`` (step index -> gradient tensor ids to copy D2H and free after it),
        ``param_release`` (step index -> parameter ids whose GPU copy goes after it, in B),
        host byte counts and the CPU step time.

    Raises
    ------
    ConfigError
        The program has no parameters, or a parameter owned by no step.
    """
    steps = list(program.steps)
    tensors = list(program.tensors)
    by_name = {}
    for s in steps:
        # a capture's forward replayed in backward (torch.utils.checkpoint) is marked
        # ``recompute:NAME``: it needs NAME's parameters like NAME's forward
        by_name.setdefault(s.name.removeprefix(RECOMPUTE_PREFIX), []).append(s.index)
    grad_step = {s.name[len("grad:"):]: s.index for s in steps if s.name.startswith("grad:")}
    params = [st for st in program.static_tensors if st.kind == "parameter"]
    if not params:
        raise ConfigError(f"policy 'zero_offload': program {program.name!r} has no per-tensor "
                          f"parameters (static_tensors) to stream")
    last_use, update_reads = {}, set()   # tensor -> last step before the update; read by it
    for s in steps:
        if s.phase == "U":
            update_reads.update(s.deps)
        else:
            for t in s.deps:
                last_use[t] = s.index
    extra_deps = {}           # step index -> added tensor ids
    info = {"params": [], "grad_release": {}, "param_release": {}}
    param_bytes = 0
    param_sizes = []          # in registration order: the CPU step's loop
    # a tied parameter is fetched by every module that uses it (a capture's param_aliases)
    users = {}
    for alias, name in (program.extra.get("param_aliases") or {}).items():
        users.setdefault(name, []).append(_user_of(alias, by_name))
    for st in params:
        owned = by_name.get(_user_of(st.name, by_name), [])
        if not owned:
            raise ConfigError(f"policy 'zero_offload': parameter {st.name!r} of program "
                              f"{program.name!r} is used by no step (no step is named "
                              f"{_module_of(st.name)!r} or a module around it)")
        t = len(tensors)
        tensors.append(Tensor(t, st.name, "parameter", st.nbytes, steps[owned[0]].layer,
                              steps[owned[0]].type))
        info["params"].append(t)
        param_bytes += st.nbytes
        param_sizes.append(st.nbytes)
        if st.name in grad_step:          # a capture: the gradient is a managed tensor
            k = grad_step[st.name]
            # the tensors the accumulation leaves for the optimizer: read by an update step,
            # and by no step before it after this one (the op window of ``grad:NAME`` may
            # also read another parameter's gradient, still needed later)
            grads = [t for t in steps[k].deps if last_use.get(t) == k and t in update_reads]
        else:                             # a zoo program: the gradient was static
            k = max(i for i in owned if steps[i].phase == "B")
            g = len(tensors)
            tensors.append(Tensor(g, st.name + ".grad", "parameter_grad", st.nbytes,
                                  steps[k].layer, steps[k].type))
            extra_deps.setdefault(k, []).append(g)
            grads = [g]
        # the module's forward steps, and its backward steps until the gradient is done
        # (a capture's later op-granular steps of the module compute other gradients)
        tied = [j for m in users.get(st.name, ()) for j in by_name.get(m, ())]
        for i in sorted({*owned, *tied}):
            if steps[i].phase == "F" or (steps[i].phase == "B" and i <= k):
                extra_deps.setdefault(i, []).append(t)
        info["grad_release"].setdefault(k, []).extend(grads)
        info["param_release"].setdefault(k, []).append(t)
    update = [s.index for s in steps if s.phase == "U"]
    # the host's copy of the input batch, made and freed before the step, sets glibc's mmap
    # threshold for the optimizer's temporaries (host_step.fresh_pages)
    cpu_parts = host_step_parts_s(param_sizes, program.optimizer, hardware,
                                  freed_before=[program.static_bytes.get("input", 0)])
    cpu_s = sum(cpu_parts.values())
    new_steps = []
    for s in steps:
        deps = s.deps + tuple(extra_deps.get(s.index, ()))
        if s.phase == "U":
            # the update runs on the host: its reads of the gradients are the D2H copies,
            # and it makes no GPU temporaries (a capture's foreach kernels did)
            deps = ()
        new_steps.append(dataclasses.replace(s, deps=deps))
    if update:   # one host step carries the CPU optimizer; the others do no GPU work
        first = update[0]
        for i in update:
            new_steps[i] = dataclasses.replace(new_steps[i], type="HOST",
                                               time_s=cpu_s if i == first else 0.0)
    else:
        raise ConfigError(f"policy 'zero_offload': program {program.name!r} has no update step")
    keep = [st for st in program.static_tensors if st.kind not in _OFF_GPU]
    static_bytes = {k: v for k, v in program.static_bytes.items() if k not in _OFF_GPU}
    extra = dict(program.extra)
    if extra.get("warmup_events") is not None:
        _drop_host_statics(extra, program.static_tensors)
    factor_bytes = sum(st.nbytes for st in program.static_tensors
                       if st.kind == "optimizer_state")
    if not factor_bytes:
        from ..program import OPTIMIZER_STATE_FACTOR
        factor_bytes = OPTIMIZER_STATE_FACTOR.get(program.optimizer, 0) * param_bytes
    info.update(parameter_bytes=param_bytes, host_pinned_bytes=2 * param_bytes,
                host_optimizer_state_bytes=factor_bytes,
                host_total_bytes=2 * param_bytes + factor_bytes, cpu_step_s=cpu_s,
                cpu_step_parts_s=cpu_parts)
    new = dataclasses.replace(program, steps=new_steps, tensors=tensors, static_tensors=keep,
                              static_bytes=static_bytes, extra=extra, _uses=None)
    return new, info


def _drop_host_statics(extra, static_tensors):
    """The recorded history (``warmup_events``) without the static allocations that moved to
    the host, the others renumbered; the first iteration's own allocations and frees stay,
    and the marks into the history (``warmup_iteration_starts``, the GEMMs') move
    with them."""
    index = {}
    for i, st in enumerate(static_tensors):
        if st.kind not in _OFF_GPU:
            index[i] = len(index)
    kept, at = [], []
    for ev in extra["warmup_events"]:
        at.append(len(kept))        # where the event, or the next kept one, now stands
        k = int(ev[1])
        if k < 0:
            kept.append(list(ev))
        elif k in index:
            kept.append([ev[0], index[k], *ev[2:]])
    at.append(len(kept))
    extra["warmup_events"] = kept
    if extra.get("warmup_iteration_starts"):
        extra["warmup_iteration_starts"] = [at[int(j)] for j in extra["warmup_iteration_starts"]]
    for key in CUBLAS_MAP_KEYS:
        if extra.get(key) is not None:
            extra[key] = at[int(extra[key])]


def weave(base_plan, program, info, *, name, notes):
    """The base plan's instructions plus the parameter evictions and gradient copies."""
    params = set(info["params"])
    grads = {g for gs in info["grad_release"].values() for g in gs}
    steps = program.steps
    body = [ins for ins in base_plan.instructions
            if not (type(ins) in (Free, Drop, Offload, Prefetch) and ins.tensor in params)]
    runs = [k for k, ins in enumerate(body) if type(ins) in (Compute, Recompute)]
    nxt = {runs[j]: runs[j + 1] for j in range(len(runs) - 1)}
    out = []
    for k, ins in enumerate(body):
        if type(ins) is Free and ins.tensor in grads:
            continue                        # freed after its D2H copy, below
        out.append(ins)
        if type(ins) is not Compute:
            continue
        s = steps[ins.step]
        for g in info["grad_release"].get(s.index, ()):
            out += [Offload(g), Free(g)]
        if s.phase == "F":
            # kept only while the module's forward goes on (its next op-granular step)
            after = body[nxt[k]] if k in nxt else None
            later = set(steps[after.step].deps) if type(after) is Compute and \
                steps[after.step].phase == "F" else set()
            out += [Evict(t) for t in s.deps if t in params and t not in later]
        elif s.phase == "B":
            out += [Evict(t) for t in info["param_release"].get(s.index, ())]
    # not the recorded plan: the engine starts from the program's static allocations and
    # makes those the recorded first iteration made (cuBLAS's workspaces) at their place in
    # this plan's first iteration, as under any other plan (engine.core.state_positions)
    return dataclasses.replace(base_plan, policy=name, instructions=out, as_captured=False,
                               host_resident=tuple(sorted(params)),
                               sync_copies=base_plan.sync_copies or name == "zero_offload",
                               program=program, notes=notes)


@register
class ZeroOffload(Policy):
    name = "zero_offload"
    description = ("ZeRO-Offload/Infinity: fp32 masters, gradients and optimizer state on the "
                   "host, CPU optimizer step, parameters fetched per layer before forward and "
                   "backward (base=POLICY plans the activations; A+zero_offload = base=A)")
    OPTIONS = {"base": choice("liveness", BASE_POLICIES)}
    # past the static wall its depth search runs to the search's limit (programs of ~10,000
    # layers): named, not part of 'all' (maxdepth --policy all went from 12 s to 28 s with it)
    in_all = False

    def unsupported(self, program):
        params = [st for st in program.static_tensors if st.kind == "parameter"]
        if not params:
            return "the program has no per-tensor parameters (static_tensors) to stream"
        names = {s.name.removeprefix(RECOMPUTE_PREFIX) for s in program.steps}
        lost = [st.name for st in params if _user_of(st.name, names) is None]
        if lost:
            return (f"parameter {lost[0]!r} is used by no step (no step is named "
                    f"{_module_of(lost[0])!r} or a module around it)")
        if not any(s.phase == "U" for s in program.steps):
            return "the program has no update step"
        return None

    def bound_program(self, program, hardware):
        return stream_parameters(program, hardware)[0]

    def plan(self, program, hardware, budget_bytes):
        from .base import get_policy
        new, info = stream_parameters(program, hardware)
        base = self.options["base"]
        base_plan = get_policy(base).plan(new, hardware, budget_bytes)
        label = self.name if base == "liveness" else f"{base}+{self.name}"
        pinned = info["host_pinned_bytes"] <= hardware.host_pinned_bytes
        notes = {"base": base, **{k: v for k, v in info.items()
                                  if k not in ("params", "grad_release", "param_release")},
                 "host_pinned": pinned, "base_notes": dict(base_plan.notes)}
        plan = weave(base_plan, new, info, name=label, notes=notes)
        grads = tuple(sorted({g for gs in info["grad_release"].values() for g in gs}))
        plan = dataclasses.replace(plan, host_static_bytes=info["host_total_bytes"],
                                   host_buffered=grads)
        if not pinned:
            plan = dataclasses.replace(plan, pinned_host=False)
        return plan
