"""Run a memory plan in PyTorch on the GPU and compare with its prediction (``snsim execute``).

The plan (:mod:`~snsim.torchsim.plans`) runs twice: for real on the GPU, captured like any run
(:func:`~snsim.torchsim.capture.capture`: its program, per-step times and measured ground
truth), and on the CPU under ``FakeTensorMode`` with a shadow offloader — the simulator's
prediction of the same plan, made without the GPU. Predicted step time: the plain capture's
measured per-step times (matched by step) for every step the plan runs, recomputed segments at
their forward time, plus the offload copies that cannot hide behind compute at the preset's
pinned bandwidths; modelled op times where no plain capture exists.
"""
from __future__ import annotations

import collections
import os

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
    suffix = "" if optimizer == "sgd-momentum" else f"_{optimizer}"
    path = os.path.join(root, f"{name}_b{batch}{suffix}.json.gz")
    return path if os.path.exists(path) else None


def predict_plan(model, batch, policy, *, optimizer="sgd-momentum", gpu="h200",
                 input_shape=None, plain_trace=None, budget_bytes=None):
    """CPU-only prediction of ``policy``'s plan for ``model`` (no GPU needed).

    Returns
    -------
    dict
        Predicted peaks, step time and the predicted program.
    """
    from ..hardware import load_hardware
    from ..trace import load_trace_doc
    from .plans import make_transform
    from .predict import predict
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    hw = load_hardware(gpu)
    shadow = make_transform(policy, shadow=True)
    models = []

    def transform(m):
        m = shadow(m)
        models.append(m)
        return m
    r = predict(spec, batch, optimizer=optimizer, gpu=gpu, transform=transform)
    off = getattr(models[0], "_snsim_offloader", None) if models else None
    offloaded = (off.offloaded_bytes // max(1, off.iterations)) if off is not None else 0
    plain = plain_trace or default_plain_trace(spec.name, batch, optimizer)
    if plain:
        step = plan_step_time_s(r["program"], load_trace_doc(plain)["program"], hw, offloaded)
        source = os.path.basename(plain)
    else:
        step = r["step_time_s"]
        source = "modelled op times"
    out = {k: r[k] for k in ("peak_allocated_bytes", "peak_reserved_bytes",
                             "peak_requested_bytes", "static_bytes")}
    out.update(step_time_s=step, step_time_source=source, offloaded_bytes=int(offloaded),
               policy=policy, segments=list(getattr(models[0], "_snsim_segments", []))
               if models else [])
    if budget_bytes is not None:
        out["fits_budget"] = out["peak_reserved_bytes"] <= budget_bytes
    return out, r["program"]


def execute(model, batch, policy, *, optimizer="sgd-momentum", budget_bytes=None,
            input_shape=None, plain_trace=None, timing_iters=5, plain_iters=10):
    """Execute ``policy``'s plan on the GPU; return a trace document with its prediction.

    Raises
    ------
    ConfigError
        No CUDA device, an unknown model, or a budget below what the run needs.
    """
    from .capture import capture, require_cuda
    from .plans import make_transform
    torch = require_cuda()
    spec = resolve_model(model, input_shape=input_shape)
    pred, _ = predict_plan(spec, batch, policy, optimizer=optimizer, plain_trace=plain_trace,
                           budget_bytes=budget_bytes)
    if budget_bytes is not None:
        total = torch.cuda.get_device_properties(0).total_memory
        if budget_bytes <= 0 or budget_bytes > total:
            raise ConfigError(f"--budget (={budget_bytes} B) must be in (0, {total}] B")
        torch.cuda.set_per_process_memory_fraction(budget_bytes / total)
    try:
        doc = capture(spec.text, batch, optimizer=optimizer, input_shape=input_shape,
                      transform=make_transform(policy), timing_iters=timing_iters,
                      plain_iters=plain_iters,
                      extra_provenance={"policy": policy, "budget_bytes": budget_bytes})
    except torch.OutOfMemoryError:
        raise ConfigError(f"{spec.name} batch {batch} under {policy} does not fit the budget "
                          f"of {budget_bytes} B (CUDA out of memory)") from None
    finally:
        if budget_bytes is not None:
            torch.cuda.set_per_process_memory_fraction(1.0)
    doc["predictions"] = {"snsim_predict_plan": pred}
    return doc
