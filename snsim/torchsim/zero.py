"""A small ZeRO-Offload / ZeRO-Infinity-style training step, run for real (``snsim execute
--policy zero_offload``; SPEC §16).

The scheme, as the engine's ``zero_offload`` policy models it:

- fp32 master parameters live in pinned host memory, with their pinned fp32 gradient buffers;
  the optimizer (``torch.optim`` Adam/SGD, on the CPU) keeps its state on the host too.
- On the GPU a parameter is a tensor whose storage is empty (``resize_(0)``) except while a
  module that owns it runs (or, for a parameter whose owner is never called, the nearest
  enclosing module that runs: ``ZeroOffload._discover``): a forward pre-hook copies it in
  (H2D), a forward hook frees it;
  before the module's backward (a pre-hook on its output's autograd node) it is copied in
  again, and when its gradient is accumulated (``register_post_accumulate_grad_hook``) the
  gradient is copied to its host buffer (D2H) and both GPU tensors are freed. Saved views of
  a parameter (``mm`` saves ``weight.t()``) share its storage, so they see the refetched data.
- After backward the host waits for the copies and runs the optimizer step on the host master
  parameters; the next forward fetches the updated values (no separate H2D of the whole model).

All copies run on the compute stream, in order (no prefetch ahead: ``prefetch_depth=0``), so
step time is compute + H2D (twice the parameter bytes) + D2H (the gradient bytes) + the CPU
step. Buffers (batch-norm statistics) and the input stay on the GPU.

``superneurons+zero_offload`` first applies the ``superneurons`` plan (recompute + activation
offload, :func:`~snsim.torchsim.plans.make_transform`), then this scheme: a forward replayed
inside backward (recomputation) fetches what it needs and leaves it for the backward.
"""
from __future__ import annotations

import statistics
import time

from ..errors import ConfigError

ZERO_POLICIES = ("zero_offload", "superneurons+zero_offload")


def _minor_faults():
    """The process's minor page faults so far (``getrusage``; 0 where there is none)."""
    try:
        import resource
    except ImportError:         # not a POSIX system
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def zero_setup(policy, optimizer):
    """The :class:`~snsim.torchsim.amp.TrainSetup` a ZeRO run trains with, from a setup or an
    optimizer name.

    Raises
    ------
    ConfigError
        The setup asks for autocast, fused kernels, TF32 matmuls or low-precision parameters:
        the scheme steps fp32
        master weights with ``torch.optim`` on the CPU and runs forward and backward in fp32
        at torch's default matmul precision, so such a prediction would describe a run that
        ``snsim execute`` does not make.
    """
    from .amp import as_setup
    setup = as_setup(optimizer)
    if setup.amp:
        raise ConfigError(f"--policy {policy} runs fp32 (fp32 master weights stepped on the "
                          f"CPU): drop --amp {setup.amp}")
    if setup.optimizer_impl != "foreach":
        raise ConfigError(f"--policy {policy} steps the optimizer on the CPU with torch.optim's "
                          f"default kernels: drop --optimizer-impl {setup.optimizer_impl}")
    if setup.tf32_matmuls:
        raise ConfigError(f"--policy {policy}'s executor runs torch's default matmul precision: "
                          f"drop --matmul-precision {setup.matmul_precision}")
    if setup.param_dtype != "fp32":
        raise ConfigError(f"--policy {policy} keeps fp32 master weights on the CPU: drop "
                          f"--param-dtype {setup.param_dtype}")
    return setup


class ZeroPlan:
    """A ZeRO policy as a plan: the attributes of a :class:`~snsim.torchsim.plans.PlanSpec`
    that name and record it (``policy``, ``slug``, ``label``, ``to_dict``)."""

    def __init__(self, policy):
        self.policy = policy
        self.slug = self.label = policy.replace("+", "-")

    def to_dict(self):
        return {"policy": self.policy}


def parse_plan(policy, options=None, setup="sgd-momentum"):
    """The plan of ``policy`` with ``options``: a :class:`~snsim.torchsim.plans.PlanSpec`, or
    for a ZeRO policy (:data:`ZERO_POLICIES`: no options, fp32, :func:`zero_setup` on
    ``setup``) a :class:`ZeroPlan`. Bad input raises one line."""
    from .plans import PlanSpec
    if policy not in ZERO_POLICIES:
        return PlanSpec.parse(policy, options)
    if options:
        given = ([f"{k}={v}" for k, v in options.items()] if isinstance(options, dict)
                 else list(options))
        raise ConfigError(f"--policy {policy} takes no --option (got {', '.join(given)})")
    zero_setup(policy, setup)
    return ZeroPlan(policy)


def predict_policy(model, batch, plan, **kw):
    """The CPU prediction of ``plan`` (:func:`parse_plan`'s): :func:`predict_zero` for a
    :class:`ZeroPlan`, else :func:`~snsim.torchsim.execute.predict_plan`; ``(summary,
    program)``."""
    if isinstance(plan, ZeroPlan):
        return predict_zero(model, batch, plan.policy, **kw)
    from .execute import predict_plan
    return predict_plan(model, batch, plan, **kw)


def _host_optimizer(torch, name, params):
    """The optimizer over the host master parameters (as record.make_optimizer, on the CPU)."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01, weight_decay=1e-4)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4)
    if name == "nesterov":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    raise ConfigError(f"optimizer {name!r} is unknown; known: sgd, sgd-momentum, nesterov, "
                      f"adam, adamw")


class ZeroOffload:
    """Parameters and optimizer on the host, streamed per module (see the module docstring).

    Parameters
    ----------
    model : nn.Module
        Built on the CPU (fp32); its buffers go to ``device``, its parameters stay on the host.
    optimizer : str
        A snsim optimizer name; the step runs on the CPU.
    device : str
        ``"cuda"``, or ``"cpu"`` (tests: the same hooks, host and "device" both in RAM).
    """

    def __init__(self, model, optimizer="sgd-momentum", *, device="cuda"):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        pin = self.device.type == "cuda"
        self.model = model
        self.params = []                     # unique parameters, in registration order
        self.master = {}                     # id(p) -> pinned fp32 host tensor
        self.host_grad = {}                  # id(p) -> pinned fp32 host gradient buffer
        self.h2d_bytes = 0                   # per iteration, counted as they are issued
        self.d2h_bytes = 0
        seen = set()
        for p in model.parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            self.params.append(p)
            host = p.detach().to("cpu", torch.float32).contiguous()
            self.master[id(p)] = host.pin_memory() if pin else host.clone()
            g = torch.zeros_like(host)
            self.host_grad[id(p)] = g.pin_memory() if pin else g
        for name, b in list(model.named_buffers()):
            mod, _, leaf = name.rpartition(".")
            owner = model.get_submodule(mod) if mod else model
            owner._buffers[leaf] = b.to(self.device)
        # the GPU parameter: same dtype and shape, storage empty until fetched
        with torch.no_grad():
            for p in self.params:
                p.data = torch.empty(p.shape, dtype=p.dtype, device=self.device)
                p.data.untyped_storage().resize_(0)
        self.masters = [self.master[id(p)] for p in self.params]
        for m, h in zip(self.masters, (self.host_grad[id(p)] for p in self.params)):
            m.grad = h
        self.opt = _host_optimizer(torch, optimizer, self.masters)
        self.host_state_bytes = 0
        self._uses = None      # module -> the parameters its forward fetches (_discover)
        self._called = None    # the modules whose forward ran, while _discover looks
        self._handles = []
        for m in model.modules():
            self._handles.append(m.register_forward_pre_hook(self._pre_forward))
            self._handles.append(m.register_forward_hook(self._post_forward))
        for p in self.params:
            self._handles.append(p.register_post_accumulate_grad_hook(self._grad_ready))

    # -- residency ---------------------------------------------------------------------------
    def _resident(self, p):
        return p.untyped_storage().size() > 0

    def _fetch(self, p):
        if self._resident(p):
            return
        nbytes = p.numel() * p.element_size()
        p.untyped_storage().resize_(nbytes)
        with self.torch.no_grad():
            # .data: a copy that autograd does not see (no version bump of the saved views)
            p.data.copy_(self.master[id(p)], non_blocking=True)
        self.h2d_bytes += nbytes

    def _release(self, p):
        p.untyped_storage().resize_(0)

    def _discover(self, x):
        """Which module's forward fetches each parameter: its owner's, else the nearest
        enclosing module's whose forward runs (``nn.MultiheadAttention`` reads its
        ``out_proj``'s weight itself and never calls ``out_proj``), found by one forward of the
        first two samples with every parameter resident before the first step, its graph
        dropped and the memory it cached given back. The rule is the engine's own
        (:func:`snsim.policies.zero_offload._user_of`), on the names of the modules that ran.
        Autograd stays on: without it
        ``nn.TransformerEncoderLayer`` takes its fused inference path, which calls none of its
        children."""
        for p in self.params:
            self._fetch(p)
        self._called = set()
        try:
            with self.torch.enable_grad():
                self.model(x[:2])
            called = self._called
        finally:
            self._called = None
        from ..policies.zero_offload import _user_of
        from ..program import ROOT_MODULE
        modules = {n or ROOT_MODULE: m
                   for n, m in self.model.named_modules(remove_duplicate=False)}
        ran = {n for n, m in modules.items() if id(m) in called}
        uses = {}
        # every (owner, parameter) pair, a tied parameter once per module that holds it
        for name, p in self.model.named_parameters(remove_duplicate=False):
            fetched = uses.setdefault(modules[_user_of(name, ran) or ROOT_MODULE], [])
            if not any(p is q for q in fetched):
                fetched.append(p)
        self._uses = uses
        for p in self.params:
            self._release(p)
        if self.device.type == "cuda":
            # what the look cached (every parameter at once, a forward's activations) goes
            # back: the steps' reserved memory is the scheme's, not this forward's (held-out
            # set 35's histories: GPT-2-medium 9.05 GB reserved with it, 7.78 without). The
            # cuBLAS workspace its first GEMM made goes too: left, it pins the segment it was
            # split from (VGG-16's 411 MB fc6 block, set 35 run again: +9.65 % reserved),
            # where a run without the look makes it at its first step's first GEMM
            from .execute import _clean_cuda
            _clean_cuda(self.torch)

    def _own(self, module):
        return self._uses.get(module, ()) if self._uses is not None else ()

    # -- hooks -------------------------------------------------------------------------------
    def _pre_forward(self, module, args):
        if self._called is not None:
            self._called.add(id(module))
        for p in self._own(module):
            self._fetch(p)

    def _post_forward(self, module, args, out):
        own = self._own(module)
        if not own:
            return
        if self.torch._C._current_graph_task_id() != -1:
            return      # a forward replayed in backward: the backward about to run needs them
        outs = out if isinstance(out, (tuple, list)) else (out,)
        nodes = {id(o.grad_fn): o.grad_fn for o in outs
                 if isinstance(o, self.torch.Tensor) and o.grad_fn is not None}
        for node in nodes.values():
            node.register_prehook(lambda grad_outputs, own=own: self._before_backward(own))
        for p in own:
            self._release(p)

    def _before_backward(self, own):
        for p in own:
            self._fetch(p)

    def _grad_ready(self, p):
        g = p.grad
        self.host_grad[id(p)].copy_(g, non_blocking=True)
        self.d2h_bytes += g.numel() * g.element_size()
        p.grad = None
        self._release(p)

    # -- the iteration -----------------------------------------------------------------------
    def step(self, x, y, *, aux_loss_weight=0.4):
        """One training iteration: forward and backward on the device, optimizer on the host.

        Returns
        -------
        dict
            ``gpu_s`` (forward + backward + copies, to the last copy), ``cpu_step_s``,
            ``cpu_step_faults`` (the process's minor page faults during the CPU step: the
            fresh pages of its temporaries, :func:`snsim.policies.host_step.fresh_pages`).
        """
        from .record import compute_loss
        torch = self.torch
        if self._uses is None:
            self._discover(x)
        self.h2d_bytes = self.d2h_bytes = 0
        t0 = time.perf_counter()
        out = self.model(x)
        loss = compute_loss(out, y, aux_loss_weight)
        del out
        loss.backward()
        del loss
        if self.device.type == "cuda":
            torch.cuda.synchronize()     # the D2H gradient copies have landed
        faults = _minor_faults()
        t1 = time.perf_counter()
        self.opt.step()
        t2 = time.perf_counter()
        faults = _minor_faults() - faults
        if not self.host_state_bytes:
            self.host_state_bytes = sum(v.numel() * v.element_size()
                                        for s in self.opt.state.values() for v in s.values()
                                        if isinstance(v, torch.Tensor))
        return {"gpu_s": t1 - t0, "cpu_step_s": t2 - t1, "cpu_step_faults": faults}

    def host_bytes(self):
        """Host memory the scheme holds: pinned master parameters and gradients, and the
        optimizer state (pageable)."""
        master = sum(m.numel() * m.element_size() for m in self.masters)
        return {"host_pinned_bytes": 2 * master, "host_master_bytes": master,
                "host_grad_bytes": master, "host_optimizer_state_bytes": self.host_state_bytes}

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def measure_zero(model, batch, policy="zero_offload", *, optimizer="sgd-momentum",
                 input_shape=None, warmup_iters=2, iters=5, device="cuda"):
    """Run ``policy`` (one of :data:`ZERO_POLICIES`) for real: peaks and step time.
    ``optimizer``: a snsim optimizer name or an fp32 foreach
    :class:`~snsim.torchsim.amp.TrainSetup` (:func:`zero_setup`).

    ``warmup_iters`` iterations, ``reset_peak_memory_stats()``, then ``iters`` iterations
    (wall time with the device synchronised at the end of each: the CPU step is part of it).

    Returns
    -------
    dict
        ``peak_allocated_bytes``, ``peak_reserved_bytes`` (cuda), ``step_time_s`` (median),
        ``gpu_s`` and ``cpu_step_s`` (medians), ``h2d_bytes``/``d2h_bytes`` per iteration,
        the host byte counts of :meth:`ZeroOffload.host_bytes`, ``base_allocated_bytes``.
    """
    from .models import resolve_model
    from .plans import make_transform
    from .predict import infer_target_of
    if policy not in ZERO_POLICIES:
        raise ConfigError(f"policy {policy!r} is not a ZeRO policy; known: "
                          f"{', '.join(ZERO_POLICIES)}")
    if batch <= 0:
        raise ConfigError(f"--batch (={batch}) must be a positive integer")
    optimizer = zero_setup(policy, optimizer).optimizer
    cuda = device == "cuda"
    if cuda:
        from .capture import measured_peaks, require_cuda
        from .execute import _clean_cuda
        torch = require_cuda()
        _clean_cuda(torch)
    else:
        import torch
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    wall0 = time.perf_counter()
    base = torch.cuda.memory_allocated() if cuda else 0
    net = zero = x = y = None
    try:
        net = spec.build()          # on the CPU: its parameters become the host masters
        net.train()
        x = spec.make_input(batch, device)
        y = infer_target_of(net, x.cpu()).make(batch, device)
        if policy == "superneurons+zero_offload":
            net = make_transform("superneurons")(net)
        zero = ZeroOffload(net, optimizer, device=device)
        for _ in range(warmup_iters):
            zero.step(x, y, aux_loss_weight=spec.aux_loss_weight)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        rows = []
        for _ in range(iters):
            t0 = time.perf_counter()
            r = zero.step(x, y, aux_loss_weight=spec.aux_loss_weight)
            if cuda:
                torch.cuda.synchronize()
            r["step_s"] = time.perf_counter() - t0
            rows.append(r)
        out = measured_peaks(torch, base) if cuda else {"device": "cpu"}
        # the launching thread's pace after the timed steps, outside the peaks, as
        # execute.measure records it: a lease's host sets the CPU step too (held-out set 35 ran
        # the same optimizer 1.5-50x apart on three leases)
        from .hostpace import gauge_add_s
        out["host_gauge_add_s_after"] = gauge_add_s(device)
        med = {k: float(statistics.median(r[k] for r in rows)) for k in rows[0]}
        out.update(policy=policy, model=spec.text, batch=batch, optimizer=optimizer,
                   step_time_s=med["step_s"], gpu_s=med["gpu_s"], cpu_step_s=med["cpu_step_s"],
                   cpu_step_faults=int(med["cpu_step_faults"]),
                   step_times_s=[round(r["step_s"], 6) for r in rows],
                   h2d_bytes=zero.h2d_bytes, d2h_bytes=zero.d2h_bytes,
                   parameter_bytes=sum(p.numel() * p.element_size() for p in zero.params),
                   warmup_iters=warmup_iters, iters=iters, **zero.host_bytes())
    finally:
        if zero is not None:
            zero.remove()
        del net, zero, x, y
        if cuda:
            _clean_cuda(torch)
    out["wall_s"] = round(time.perf_counter() - wall0, 3)
    return out


def simulate_zero(program, hardware, policy="zero_offload", *, budget_bytes=None,
                  allocator_options=None):
    """The engine's ZeRO policy on a captured or predicted program (PyTorch allocator).

    ``program`` is the program of the torch plan the executor runs *under* the ZeRO scheme: the
    plain step for ``zero_offload``, the ``superneurons`` plan's (a capture or ``snsim predict
    --policy superneurons``) for ``superneurons+zero_offload`` — :func:`measure_zero` applies
    that torch plan before its hooks, so the engine plans no activations again (``base=
    liveness``: PyTorch's own frees on that program).

    Returns
    -------
    (Result, Plan)
    """
    from ..engine.core import run_plan
    from ..hardware import load_hardware
    from ..policies import get_policy
    from ..trace import program_from_dict
    if policy not in ZERO_POLICIES:
        raise ConfigError(f"policy {policy!r} is not a ZeRO policy; known: "
                          f"{', '.join(ZERO_POLICIES)}")
    hw = load_hardware(hardware) if isinstance(hardware, str) else hardware
    if isinstance(program, dict):
        program = program_from_dict(program, source="program")
    budget = hw.budget_bytes if budget_bytes is None else int(budget_bytes)
    plan = get_policy("zero_offload").plan(program, hw, budget)
    return run_plan(program, plan, hw, budget_bytes=budget, allocator="pytorch",
                    allocator_options=allocator_options), plan


def torch_base_plan(policy):
    """The torch plan the executor applies under ``policy``'s ZeRO hooks (:func:`measure_zero`)."""
    return "superneurons" if policy == "superneurons+zero_offload" else "plain"


def predict_zero(model, batch, policy="zero_offload", *, optimizer="sgd-momentum", gpu="h200",
                 input_shape=None, budget_bytes=None, host_gauge_s=None, torch_version=None):
    """CPU-only prediction of a ZeRO run (``snsim predict --policy zero_offload``): the program
    ``snsim predict`` records for :func:`torch_base_plan` (FakeTensorMode, modelled op times),
    then :func:`simulate_zero` on it.

    Returns
    -------
    (dict, dict)
        The summary (:func:`~snsim.torchsim.execute.predict_plan`'s keys, the peaks, step time
        and feasibility of the ZeRO run; ``cpu_step_s``, ``h2d_bytes``, ``d2h_bytes``,
        ``host_pinned_bytes``, ``host_total_bytes``) and the predicted program of the base plan.
    """
    from ..hardware import load_hardware
    from .execute import predict_plan
    if policy not in ZERO_POLICIES:
        raise ConfigError(f"policy {policy!r} is not a ZeRO policy; known: "
                          f"{', '.join(ZERO_POLICIES)}")
    optimizer = zero_setup(policy, optimizer)
    hw = load_hardware(gpu)
    r, prog = predict_plan(model, batch, torch_base_plan(policy), optimizer=optimizer, gpu=gpu,
                           input_shape=input_shape, budget_bytes=budget_bytes,
                           host_gauge_s=host_gauge_s, torch_version=torch_version,
                           host_range=False)   # the engine's step below, not the base plan's
    res, plan = simulate_zero(prog, hw, policy, budget_bytes=budget_bytes)
    n = plan.notes
    out = dict(r)
    from .predict import lazy_window_modelled
    if lazy_window_modelled(hw):
        warm, _ = simulate_zero(prog, hw, policy, budget_bytes=budget_bytes,
                                allocator_options={"module_loading": "eager"})
        out["peak_reserved_warm_process_bytes"] = warm.peak_reserved_bytes
    else:
        out["peak_reserved_warm_process_bytes"] = res.peak_reserved_bytes
    out.update(policy=policy, plan=policy, feasible=bool(res.feasible),
               failure=str(res.failure) if res.failure else "",
               peak_allocated_bytes=res.peak_allocated_bytes,
               peak_reserved_bytes=res.peak_reserved_bytes,
               peak_requested_bytes=res.peak_ideal_bytes, static_bytes=res.static_bytes,
               step_time_s=res.step_time_s,
               step_time_source=f"{r['step_time_source']}; engine zero_offload (copies on the "
                                f"PCIe streams, CPU optimizer at host_mem_bytes_per_s)",
               cpu_step_s=n["cpu_step_s"], h2d_bytes=res.h2d_bytes, d2h_bytes=res.d2h_bytes,
               host_pinned_bytes=n["host_pinned_bytes"], host_total_bytes=n["host_total_bytes"])
    return out, prog


#: The executed ZeRO runs (scripts/device_zero.sh) and where their programs are.
ZERO_RUNS = "traces/h200/zero/zero_runs.json"


def run_program_path(run, traces_root="traces/h200"):
    """The program the engine simulates an executed ZeRO run on (:func:`simulate_zero`): the
    plain capture ``<root>/<name>_b<batch>[_s<seq>][_<optimizer>].json.gz`` for
    ``zero_offload``; for ``superneurons+zero_offload`` the same stem with
    ``_superneurons_predicted`` under ``<root>/zero/`` (``snsim predict --policy superneurons
    --out``: no capture of that torch plan was taken)."""
    import os
    prov = run["provenance"]
    model, batch, opt = prov["model"], prov["batch"], prov["optimizer"]
    name = model.split(":", 1)[1].split("/")[-1]
    seq = f"_s{prov['input_shape'][0]}" if model.startswith("hf:") else ""
    suffix = "" if opt == "sgd-momentum" else f"_{opt}"
    stem = f"{name}_b{batch}{seq}{suffix}"
    if run["policy"] == "superneurons+zero_offload":
        return os.path.join(traces_root, "zero", f"{stem}_superneurons_predicted.json.gz")
    return os.path.join(traces_root, f"{stem}.json.gz")


def zero_rows(runs_path=ZERO_RUNS, traces_root="traces/h200", hardware="h200"):
    """Every executed ZeRO run against :func:`simulate_zero` on its program.

    Returns
    -------
    (DataFrame, list)
        One row per simulated run (predicted and measured peak allocated and reserved bytes,
        step time, CPU step time, H2D bytes, errors in percent) and ``(run file, why)`` for
        runs skipped.
    """
    import json
    import os
    import pandas as pd
    from ..hardware import load_hardware
    from ..trace import read_trace
    with open(runs_path) as f:
        doc = json.load(f)
    hw = load_hardware(hardware)
    rows, skipped = [], []
    for run in doc["runs"]:
        path = run_program_path(run, traces_root)
        if not os.path.exists(path):
            skipped.append((run["file"], f"no program {path}"))
            continue
        res, plan = simulate_zero(read_trace(path), hw, run["policy"])
        pa, ma = res.peak_allocated_bytes, run["peak_allocated_bytes"]
        pr, mr = res.peak_reserved_bytes, run["peak_reserved_bytes"]
        ps, ms = res.step_time_s, run["step_time_s"]
        rows.append({
            "run": run["file"].removesuffix(".json"), "policy": run["policy"],
            "program": os.path.basename(path),
            "pred_allocated_bytes": pa, "meas_allocated_bytes": ma,
            "err_allocated_pct": 100 * (pa - ma) / ma,
            "pred_reserved_bytes": pr, "meas_reserved_bytes": mr,
            "err_reserved_pct": 100 * (pr - mr) / mr,
            "pred_step_time_s": ps, "meas_step_time_s": ms,
            "err_step_time_pct": 100 * (ps - ms) / ms,
            "pred_cpu_step_s": plan.notes["cpu_step_s"], "meas_cpu_step_s": run["cpu_step_s"],
            "pred_h2d_bytes": res.h2d_bytes, "meas_h2d_bytes": run["h2d_bytes"],
            "torch": run["provenance"].get("torch", ""), "gpu": run["provenance"].get("gpu", "")})
    return pd.DataFrame(rows), skipped
