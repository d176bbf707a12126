"""The answer a person came for: does it fit, and what holds the memory at the peak.

Pure functions of a :class:`~snsim.result.Result` (and its program and hardware), shared by
``snsim run`` and ``snsim predict``; they print nothing.
"""
from __future__ import annotations

from itertools import accumulate

PHASE_WORDS = {"F": "forward", "B": "backward", "U": "update", "R": "recompute", "-": "setup"}

# Result.memory_events categories -> breakdown keys, in the order a reader expects
_CATEGORIES = (
    ("parameter_bytes", ("parameter",)),
    ("gradient_bytes", ("parameter_grad",)),
    ("optimizer_state_bytes", ("optimizer_state",)),
    ("input_and_buffer_bytes", ("input", "buffer")),
    ("activation_bytes", ("activation",)),
    ("activation_grad_bytes", ("activation_grad",)),
    ("workspace_bytes", ("workspace",)),
)
#: how people read the breakdown's keys
LABELS = {"parameter_bytes": "parameters", "gradient_bytes": "gradients",
          "optimizer_state_bytes": "optimizer state", "input_and_buffer_bytes": "input and buffers",
          "activation_bytes": "activations", "activation_grad_bytes": "activation gradients",
          "workspace_bytes": "workspaces", "activation_and_workspace_bytes":
          "activations and workspaces", "allocator_slack_bytes": "allocator slack",
          "context_bytes": "CUDA context", "device_total_bytes": "device total"}


def time_source(program):
    """``"measured"`` when the step times come from a capture or a trace of measured times,
    ``"modelled"`` when they come from the roofline model, ``"mixed"`` when both.

    >>> from snsim.api import make_program
    >>> time_source(make_program("lenet", batch=2))
    'modelled'
    """
    if program.source == "capture":
        return "measured"
    G = program.graph
    if G is None:
        return "measured" if program.source not in ("zoo", "trace") else "modelled"
    kinds = set()
    for _, a in G.nodes(data=True):
        src = str(a.get("time_source", "") or "")
        if "fwd_time_s" not in a or src.startswith("model"):
            kinds.add("modelled")
        else:
            kinds.add("measured")
    if len(kinds) == 1:
        return kinds.pop()
    return "mixed" if kinds else "modelled"


def capture_step_note(program):
    """What a capture's step times are, for a reader of ``snsim run --trace``, beside the
    plain step the capture measured without hooks: each step's kernel time streamed with the
    launching thread's modelled issue time, where the capture recorded its kernels
    (:attr:`snsim.program.Step.gpu_s`); else each step as the capture timed it between the
    marks its module and autograd hooks set, intervals the hooks' own host time stretches on
    a host-bound run (RegNetY-1.6GF b64 on the H200: 87.6 ms of intervals, a 62.8 ms step).
    None for other programs, or a capture without a measured step.

    >>> from types import SimpleNamespace as NS
    >>> steps = [NS(time_s=0.05, gpu_s=None), NS(time_s=0.0376, gpu_s=None)]
    >>> capture_step_note(NS(source="capture", steps=steps, extra={"measured": {
    ...     "step_time_s": 0.0628}}))
    'step times as captured between the hooks that mark each step, 87.6 ms for the plain plan; the capture measured a plain step of 62.8 ms without hooks'
    >>> steps = [NS(time_s=0.05, gpu_s=0.04), NS(time_s=0.0376, gpu_s=0.01)]
    >>> capture_step_note(NS(source="capture", steps=steps, extra={"measured": {
    ...     "step_time_s": 0.0628}}))
    "step times: each step's kernel time as captured, launched as the host model issues it; the capture measured a plain step of 62.8 ms without hooks"
    """
    measured = (program.extra or {}).get("measured") or {}
    if program.source != "capture" or not measured.get("step_time_s"):
        return None
    plain = f"the capture measured a plain step of {format_ms(measured['step_time_s'])} " \
            "without hooks"
    if program.steps and all(s.gpu_s is not None for s in program.steps):
        return ("step times: each step's kernel time as captured, launched as the host model "
                f"issues it; {plain}")
    hooked = sum(s.time_s for s in program.steps)
    return (f"step times as captured between the hooks that mark each step, "
            f"{format_ms(hooked)} for the plain plan; {plain}")


def peak_breakdown(result):
    """What is allocated at the run's ideal peak, by category, then what the device holds.

    Returns a dict of byte counts: the tensor categories at the moment of the peak
    (``parameter_bytes`` ... ``workspace_bytes``, those that are not zero; they sum to
    ``peak_ideal_bytes``), ``allocator_slack_bytes`` (reserved peak minus ideal peak:
    rounding, cached and fragmented segments), ``context_bytes`` (the CUDA context, an
    estimate from the preset) and ``device_total_bytes`` (reserved peak + context: what
    ``nvidia-smi`` would show). Without memory records (``record=False``) the static
    categories come from ``static_breakdown`` and the rest is one
    ``activation_and_workspace_bytes`` entry. :data:`LABELS` names the keys for people.

    >>> from snsim.api import simulate
    >>> r = simulate("lenet", batch=2, policy="liveness")
    >>> b = peak_breakdown(r)
    >>> sum(v for k, v in b.items() if k not in ("allocator_slack_bytes", "context_bytes",
    ...     "device_total_bytes")) == r.peak_ideal_bytes
    True
    """
    events = result.memory_events
    rows = {}
    if events:
        totals = list(accumulate(d for _, _, d in events))
        i = max(range(len(totals)), key=totals.__getitem__)   # first index of the maximum
        by_cat = {}
        for _, cat, d in events[:i + 1]:
            by_cat[cat] = by_cat.get(cat, 0) + d
        for label, cats in _CATEGORIES:
            rows[label] = sum(by_cat.pop(c, 0) for c in cats)
        for cat, v in sorted(by_cat.items()):   # a category this table does not name
            rows[f"{cat}_bytes"] = v
    else:
        sb = dict(result.static_breakdown)
        for label, cats in _CATEGORIES[:4]:
            rows[label] = sum(sb.get(c, 0) for c in cats)
        rows["activation_and_workspace_bytes"] = max(0, result.peak_ideal_bytes
                                                     - result.static_bytes)
    rows = {k: v for k, v in rows.items() if v}
    rows["allocator_slack_bytes"] = max(0, result.peak_reserved_bytes - result.peak_ideal_bytes)
    rows["context_bytes"] = result.context_bytes
    rows["device_total_bytes"] = result.peak_reserved_bytes + result.context_bytes
    return rows


def _gib(nbytes):
    return f"{nbytes / 2**30:.2f} GiB"


def format_ms(seconds):
    """``418 ms``, ``5.51 ms``: a step time for people."""
    return f"{seconds * 1e3:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1e3:.3g} ms"


def where(failure):
    """``"layer4.1.conv2 backward"``: the step where memory ran out, in words."""
    if failure.step < 0:
        return "setup (static tensors and preallocated buffers)"
    return f"{failure.layer} {PHASE_WORDS.get(failure.phase, failure.phase)}"


def verdict(result, program=None, hardware=None):
    """One line beginning ``fits:`` or ``does not fit:``.

    ``fits: peak 3.50 GiB of 10.96 GiB (32%), step 418 ms (modelled) on k40c``: the peak the
    allocator reserves against the budget, and the step time with where it comes from
    (:func:`time_source`; "modelled" without a program). ``does not fit: needs at least
    9.9 GiB, budget 8.00 GiB — short 1.9 GiB at layer4.1.conv2 backward``: the run stopped at
    the first allocation that did not fit, so what it needs is a lower bound.

    >>> from snsim.api import simulate
    >>> verdict(simulate("lenet", batch=2, policy="liveness")).startswith("fits: peak ")
    True
    """
    hw_name = getattr(hardware, "name", None) or result.hardware
    budget = result.budget_bytes
    if result.feasible:
        src = time_source(program) if program is not None else "modelled"
        peak = result.peak_reserved_bytes
        return (f"fits: peak {_gib(peak)} of {_gib(budget)} ({100 * peak / budget:.0f}%), "
                f"step {format_ms(result.step_time_s)} ({src}) on {hw_name}")
    f = result.failure
    need = budget + f.short_bytes
    short = (_gib(f.short_bytes) if f.short_bytes >= 2**30
             else f"{f.short_bytes / 2**20:,.1f} MiB")
    return (f"does not fit: needs at least {_gib(need)}, budget {_gib(budget)} — short {short} "
            f"at {where(f)}")
