"""Run a memory plan in PyTorch on the GPU and compare with its prediction (``snsim execute``).

The plan (:mod:`~snsim.torchsim.plans`, a :class:`~snsim.torchsim.plans.PlanSpec`) runs twice:
first on the CPU under ``FakeTensorMode`` with shadow offloading — :func:`predict_plan`, the
same code as ``snsim predict --policy``, made before the run — then for real on the GPU,
either captured like any run (:func:`execute`: program, per-step times and measured ground
truth) or only measured (:func:`measure`: peaks and step time of hook-free iterations, what
the device suite runs). Predicted step time: modelled op times (host copies of ``cpu_offload``
included, serialised with compute); with a plain capture of the same model, its measured
per-step times for every step the plan runs, recomputed segments at their forward time, the
``offload`` copies that cannot hide behind compute and the ``cpu_offload`` copies.
"""
from __future__ import annotations

import collections
import gc
import os
import sys

from ..errors import ConfigError
from .models import resolve_model


def _times_by_step(prog):
    d = collections.defaultdict(list)
    for layer, label, typ, phase, time_s, deps in prog["steps"]:
        d[(label, phase)].append(time_s)
    return d


def plan_step_time_s(pred_prog, plain_prog, hw, offloaded_bytes=0):
    """Step time of a plan from the plain run's measured step times (see module docstring)."""
    times = _times_by_step(plain_prog)
    used = collections.Counter()
    fwd = bwd = 0.0
    for layer, label, typ, phase, time_s, deps in pred_prog["steps"]:
        key = (label, phase)
        if label.startswith("recompute:"):
            key = (label[len("recompute:"):], "F")
        lst = times.get(key)
        if lst:
            t = lst[used[key] % len(lst)]
            used[key] += 1
        else:
            t = time_s
        if phase == "F":
            fwd += t
        else:
            bwd += t
    d2h = offloaded_bytes / hw.bandwidth_bytes_per_s("d2h", True)
    h2d = offloaded_bytes / hw.bandwidth_bytes_per_s("h2d", True)
    return fwd + bwd + max(0.0, d2h - fwd) + max(0.0, h2d - bwd)


def default_plain_trace(name, batch, optimizer, root="traces/h200"):
    from .amp import as_setup
    suffix = as_setup(optimizer).slug
    path = os.path.join(root, f"{name}_b{batch}{suffix}.json.gz")
    return path if os.path.exists(path) else None


def cuda_modelled(notes=None, torch_version=None):
    """What the CPU prediction models as CUDA does it (provenance of a prediction), for the
    torch release ``torch_version`` that will run the step (None: the installed one)."""
    from .plans import pack_blocks_of
    notes = notes or {}
    save_on_cpu_blocks = pack_blocks_of(torch_version)
    return {
        "device": "fake CPU tensors (FakeTensorMode); CUDA dispatch modelled per op",
        "dropout": "native_dropout (1-byte mask), as CUDA",
        "attention": "scaled_dot_product_attention's CUDA kernel as the H200 chose it "
                     "(traces/h200/sdpa_choice): cuDNN for fp16/bf16, memory-efficient for "
                     "fp32; CUDA's math composite with grouped-query heads in fp32 or a mask "
                     "that requires grad (traces/h200/t5); a mask handed as the kernel's bias",
        "workspaces": f"{notes.get('hidden_model', 'none')} "
                      f"({notes.get('hidden_sources', 0)} captures)",
        "optimizer": "foreach or fused kernels (--optimizer-impl), state made at the first "
                     "step as on CUDA (fused: step counters on the GPU)",
        "autocast": "--amp: CUDA's autocast policy (the installed torch's autocast_mode.h "
                    "lists) on the Autocast key of CPU fake tensors, weight casts cached per "
                    "forward; fp16: GradScaler, steps without overflow",
        "host_copies": "save_on_cpu copies on the compute stream, timed by the kernel "
                       "table's pinned/pageable copy rows; the pinned pack "
                       + ("waits for its copy (save_on_cpu copies without non_blocking "
                          "before torch 2.12)" if save_on_cpu_blocks else
                          "does not wait for its copy (non_blocking)"),
        "torch": f"{torch_version or 'installed'} (its runtime behaviour modelled: "
                 f"save_on_cpu's pack)",
    }


def predict_plan(model, batch, plan=None, *, options=None, optimizer="sgd-momentum",
                 gpu="h200", input_shape=None, plain_trace=None, budget_bytes=None,
                 hidden=True, hidden_exclude=(), torch_version=None, host_gauge_s=None,
                 host_range=True):
    """CPU-only prediction of a plan (``snsim predict --policy``; what ``snsim execute``
    stores before it runs the same plan). No GPU needed.

    Parameters
    ----------
    model : str or ModelSpec
    batch : int
    plan : PlanSpec or str
        The plan, or a policy name with ``options``.
    plain_trace : str, optional
        A capture of the model without a plan: its measured step times replace the modelled
        op times (recomputed blocks at their forward time, plus the host copies).
    budget_bytes : int, optional
        Memory the run may reserve; default the preset's budget (memory minus the context).
    torch_version : str, optional
        The torch release that will run the plan, for its runtime behaviour (whether
        ``save_on_cpu`` waits for each pinned pack: :func:`snsim.torchsim.plans.
        pack_blocks_of`); None: the installed torch (the one ``snsim execute`` runs the plan
        with).
    host_gauge_s : float, optional
        The gauge of the machine the plan will run on (:func:`snsim.torchsim.hostpace.
        gauge_add_s`, ``snsim gauge``): the modelled host seconds are scaled by its ratio to
        the kernel table's (the summary's ``host_pace_factor``); None: the table's pace.
    host_range : bool
        Also the step at the two host-pace groups' paces (``step_time_host_range_s``,
        :func:`snsim.torchsim.predict.predict`); never with ``plain_trace``, whose measured
        layer times are at no table's pace.

    Returns
    -------
    (dict, dict)
        The summary (``peak_allocated_bytes``, ``peak_reserved_bytes``, ``step_time_s``,
        ``feasible``, ``budget_bytes``, provenance keys) and the predicted program.
    """
    from ..hardware import load_hardware
    from ..trace import load_trace_doc
    from .opcost import host_copy_time_s
    from .plans import (as_plan, is_installed_torch, make_transform, modelled_torch,
                        pack_blocks_of)
    from .hidden import workspace_sources
    from .predict import mha_qkv_kept_to_return, predict
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    plan = as_plan(plan, options)
    hw = load_hardware(gpu)
    shadow = make_transform(plan, shadow=True,
                            save_on_cpu_blocks=pack_blocks_of(torch_version))
    models = []

    def transform(m):
        m = shadow(m)
        models.append(m)
        return m
    with modelled_torch(torch_version), mha_qkv_kept_to_return():
        r = predict(spec, batch, optimizer=optimizer, gpu=gpu, transform=transform,
                    hidden=hidden, hidden_exclude=hidden_exclude, budget_bytes=budget_bytes,
                    host_gauge_s=host_gauge_s, host_range=host_range and not plain_trace)
    prog = r["program"]
    m0 = models[0] if models else None
    off = getattr(m0, "_snsim_offloader", None)
    offloaded = (off.offloaded_bytes // max(1, off.iterations)) if off is not None else 0
    copy_s = host_copy_time_s(prog.get("ops", []), hw)
    copied = sum(int(row[3]) for row in prog.get("ops", []) if str(row[1]).startswith("d2h_"))
    if plain_trace:
        step = plan_step_time_s(prog, load_trace_doc(plain_trace)["program"], hw, offloaded)
        step += copy_s
        source = os.path.basename(plain_trace)
    else:
        step = r["step_time_s"]
        source = "modelled op times"
    budget = hw.budget_bytes if budget_bytes is None else int(budget_bytes)
    from .predict import prov_setup
    out = {"network": spec.name, "model": spec.text, "batch": batch,
           **prov_setup(r["provenance"]), "hardware": hw.name, "policy": plan.policy,
           "plan": plan.label}
    out.update({k: r[k] for k in ("peak_allocated_bytes", "peak_reserved_bytes",
                                  "peak_reserved_warm_process_bytes",
                                  "peak_requested_bytes", "static_bytes")})
    out.update(step_time_s=step, step_time_host_range_s=r["step_time_host_range_s"],
               feasible=bool(r["feasible"]), failure=r["failure"],
               budget_bytes=budget, step_time_source=source, host_copy_time_s=copy_s,
               offloaded_bytes=int(offloaded),
               host_copied_bytes=copied,
               segments=list(getattr(m0, "_snsim_segments", [])) if m0 is not None else [],
               torch_version=r["provenance"].get("torch", ""),
               libraries=r["provenance"].get("libraries", {}),
               torch_modelled=(r["provenance"].get("torch", "")
                               if is_installed_torch(torch_version) else torch_version),
               cuda_modelled=cuda_modelled(prog.get("notes"), torch_version),
               workspace_sources=workspace_sources(prog.get("notes") or {}),
               data_dependent_ops=r["provenance"].get("data_dependent_ops", []),
               cpu_only_ops=r["provenance"].get("cpu_only_ops", []),
               value_branches=bool(r["provenance"].get("value_branches")),
               time_sources=r["provenance"].get("time_sources"),
               host_issue_s=(r["provenance"].get("time_sources") or {}).get("host_s"),
               record_wall_s=r["provenance"].get("record_wall_s"),
               host_pace_factor=r["provenance"]["host_pace_factor"])
    if host_gauge_s is not None:
        out["host_gauge_add_s"] = float(host_gauge_s)
    return out, prog


def _fits(torch, budget_bytes):
    if budget_bytes is None:
        return
    total = torch.cuda.get_device_properties(0).total_memory
    if budget_bytes <= 0 or budget_bytes > total:
        raise ConfigError(f"--budget (={budget_bytes} B) must be in (0, {total}] B")
    torch.cuda.set_per_process_memory_fraction(budget_bytes / total)


def execute_preset(torch):
    """The preset a run on this CUDA device is predicted with: its own
    (:func:`snsim.torchsim.capture.run_preset`); h200's, said in one line, for a GPU no preset
    describes."""
    from .capture import run_preset
    gpu = run_preset(torch)
    if not gpu:
        print(f"snsim execute: no hardware preset describes {torch.cuda.get_device_name()}; "
              f"the prediction beside the run is the h200 preset's", file=sys.stderr)
    return gpu or "h200"


class RunDoesNotFit(ConfigError):
    """The executed run ran out of GPU memory: a measurement (``feasible`` false), which
    ``snsim execute`` sets beside the prediction instead of stopping."""


def _oom_message(torch, spec, batch, plan, budget_bytes):
    where = (f"the budget of {budget_bytes} B" if budget_bytes is not None else
             f"the GPU ({torch.cuda.get_device_properties(0).total_memory} B)")
    return f"{spec.name} batch {batch} under {plan.label} does not fit {where}: CUDA out of memory"


def execute(model, batch, plan=None, *, options=None, optimizer="sgd-momentum",
            budget_bytes=None, input_shape=None, plain_trace=None, timing_iters=5,
            plain_iters=10, prediction=None):
    """Execute a plan on the GPU, captured like any run; return a trace document with the
    before-run prediction (:func:`predict_plan`, same code as ``snsim predict --policy``).

    Raises
    ------
    ConfigError
        No CUDA device, an unknown model, a bad plan.
    RunDoesNotFit
        The run ran out of GPU memory (or of ``budget_bytes``).
    """
    from .capture import capture, require_cuda
    from .plans import as_plan, make_transform
    torch = require_cuda()
    spec = resolve_model(model, input_shape=input_shape)
    plan = as_plan(plan, options)
    if prediction is None:
        prediction, _ = predict_plan(spec, batch, plan, optimizer=optimizer,
                                     gpu=execute_preset(torch), plain_trace=plain_trace,
                                     budget_bytes=budget_bytes)
    _fits(torch, budget_bytes)
    try:
        doc = capture(spec.text, batch, optimizer=optimizer, input_shape=input_shape,
                      transform=make_transform(plan), timing_iters=timing_iters,
                      plain_iters=plain_iters,
                      extra_provenance={"policy": plan.policy, "plan": plan.to_dict(),
                                        "budget_bytes": budget_bytes})
    except torch.OutOfMemoryError:
        raise RunDoesNotFit(_oom_message(torch, spec, batch, plan, budget_bytes)) from None
    finally:
        if budget_bytes is not None:
            torch.cuda.set_per_process_memory_fraction(1.0)
    doc["predictions"] = {"snsim_predict_plan": prediction}
    return doc


def _clean_cuda(torch):
    gc.collect()
    torch.cuda.synchronize()
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()
    if hasattr(torch._C, "_host_emptyCache"):
        torch._C._host_emptyCache()     # pinned host buffers of an earlier save_on_cpu run


def measure(model, batch, plan=None, *, options=None, optimizer="sgd-momentum",
            input_shape=None, warmup_iters=2, iters=5, budget_bytes=None, device="cuda"):
    """Run a plan without any hook: peaks and step time of plain training iterations.

    The cheap ground truth of the device suite: ``warmup_iters`` iterations (more while an
    fp16 GradScaler skips the step: :func:`snsim.torchsim.amp.warm_up`), then
    ``reset_peak_memory_stats()`` and ``iters`` iterations timed between CUDA events
    (median). ``device="cpu"`` runs the same code on the CPU (tests; no peaks).

    ``host_issue_s``: the launching thread's wall time from a timed step's start until
    ``train_step`` returned (median; the GPU was synchronised before the step, so the thread
    issues as far ahead as the launch queue and the step's own synchronisations - an fp16
    GradScaler's inf check, a host read - let it): the host's pace during the steps themselves,
    where the gauge after them (``host_gauge_add_s_after``) can miss a slow process (held-out set
    55 on the H100, VALIDATION 1az).

    The launching thread's pace is gauged (:func:`snsim.torchsim.hostpace.gauge_add_s`) after
    the timed iterations, outside the peaks: ``host_gauge_add_s_after``. Not before them: the
    gauge's own CUDA work (its kernel's module loaded lazily, a small segment made and given
    back) moves where the driver places the run's later segments, and so its reserved peak
    (RegNetY-1.6GF b64 under recompute: 1984 MiB measured after the gauge, where the capture,
    which runs none, places segments as a user's process does).

    Returns
    -------
    dict
        ``peak_allocated_bytes``, ``peak_reserved_bytes``, ``peak_requested_bytes``,
        ``step_time_s`` (median), ``step_times_s``, ``host_issue_s``, ``host_issue_times_s``,
        allocator counters, the two gauges,
        ``wall_s``.
    """
    import functools
    import statistics
    import time
    from .hostpace import gauge_add_s
    cuda = device == "cuda"
    if cuda:
        from .capture import measured_peaks, require_cuda
        torch = require_cuda()
    else:
        import torch
    from .plans import as_plan, make_transform
    from .predict import infer_target_of
    from .amp import as_setup, skipped_since, warm_up
    from .record import train_step
    setup = as_setup(optimizer)
    amp_kw = {"autocast": setup.autocast(device), "scaler": setup.grad_scaler(device),
              "step_scope": setup.step_scope(device)}
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    plan = as_plan(plan, options)
    if batch <= 0:
        raise ConfigError(f"--batch (={batch}) must be a positive integer")
    wall0 = time.perf_counter()
    if cuda:
        _clean_cuda(torch)
        _fits(torch, budget_bytes)
    base = torch.cuda.memory_allocated() if cuda else 0
    net = opt = x = y = None
    try:
        net = spec.build()
        net.train()
        target = infer_target_of(net, spec.make_input(2))   # on the CPU: see there
        setup.cast_model(net).to(device)
        x = setup.make_input(spec, batch, device)
        y = target.make(batch, device)
        net = make_transform(plan)(net)
        opt = setup.make_optimizer(net.parameters())
        aux = spec.aux_loss_weight
        scaler = amp_kw["scaler"] if cuda else None
        skipped_warmup = warm_up(
            functools.partial(train_step, net, opt, x, y, aux_loss_weight=aux, **amp_kw),
            scaler, warmup_iters)
        scale0 = scaler.get_scale() if scaler is not None else 0.0
        times, issue = [], []
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            for _ in range(iters):
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                t0 = time.perf_counter()
                train_step(net, opt, x, y, aux_loss_weight=aux, **amp_kw)
                issue.append(time.perf_counter() - t0)
                e1.record()
                torch.cuda.synchronize()
                times.append(e0.elapsed_time(e1) * 1e-3)
            out = measured_peaks(torch, base)
            if scaler is not None:
                out.update(grad_scale=float(scaler.get_scale()),
                           skipped_warmup_steps=skipped_warmup,
                           skipped_steps=skipped_since(scaler, scale0))
        else:
            for _ in range(iters):
                t0 = time.perf_counter()
                train_step(net, opt, x, y, aux_loss_weight=aux, **amp_kw)
                times.append(time.perf_counter() - t0)
            issue = times
            out = {"device": "cpu"}
        out.update(**setup.to_dict(), step_time_s=float(statistics.median(times)),
                   step_times_s=[round(t, 6) for t in times],
                   host_issue_s=float(statistics.median(issue)),
                   host_issue_times_s=[round(t, 6) for t in issue], warmup_iters=warmup_iters,
                   iters=iters, segments=list(getattr(net, "_snsim_segments", [])),
                   host_gauge_add_s_after=gauge_add_s(device))
    except torch.OutOfMemoryError:
        raise RunDoesNotFit(_oom_message(torch, spec, batch, plan, budget_bytes)) from None
    finally:
        del net, opt, x, y
        if cuda:
            if budget_bytes is not None:
                torch.cuda.set_per_process_memory_fraction(1.0)
            _clean_cuda(torch)
    out["wall_s"] = round(time.perf_counter() - wall0, 3)
    return out
