"""The largest mini-batch of a PyTorch model each memory plan trains within a budget
(``snsim maxbatch --model``).

Every probe is one ``snsim predict`` of the model at a batch under a plan
(:func:`snsim.torchsim.execute.predict_plan`: a FakeTensor recording on the CPU, the engine's
replay with the caching-allocator model under the budget), so the answer is the one
``snsim predict`` and ``snsim execute`` give at that batch. A recording costs about the same
at any batch (fake tensors hold no data), so the search is steered by the peak allocated bytes
of the batches already probed (:func:`edge_search`: where the line through them reaches the
budget, less the reserved overhead) and certifies the edge: the answer ``b`` fits and
``b + 1`` does not, both probed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..gcpause import without_gc
from .search import DEFAULT_MAX_BATCH

#: what ``--policy all`` searches for a PyTorch model: every plan that runs in PyTorch
ALL_PLANS = ("plain", "checkpoint", "cpu_offload", "recompute", "offload", "superneurons")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelMaxBatch:
    """One plan's answer: the largest batch that fits and what the next one needs."""

    plan: str                         # the plan's label, e.g. checkpoint(modules=Bottleneck)
    max_batch: int | None             # None: not even the smallest batch fits
    next_batch: int                   # the smallest batch probed that does not fit, or beyond
    step_time_s: float | None         # predicted step at max_batch
    peak_allocated_bytes: int | None  # at max_batch, under the budget
    peak_reserved_bytes: int | None
    next_failure: str                 # why next_batch does not fit ("" when not probed)
    next_reserved_bytes: int | None   # what next_batch would reserve with no limit
    probes: int


@dataclass(slots=True, kw_only=True)
class ModelSearchReport:
    """Every plan's :class:`ModelMaxBatch` and every probe the search made."""

    model: str
    network: str
    hardware: str
    setup: dict                        # optimizer, optimizer_impl, amp
    budget_bytes: int
    min_batch: int
    limit: int
    rows: list
    probes: list = field(default_factory=list)
    wall_s: float = 0.0
    provenance: dict = field(default_factory=dict)

    def frame(self):
        """One row per plan (bytes and seconds in SI units)."""
        import pandas as pd
        cols = ["model", "network", "plan", "max_batch", "step_time_s", "samples_per_s",
                "peak_allocated_bytes", "peak_reserved_bytes", "next_batch",
                "next_reserved_bytes", "next_failure", "probes", "budget_bytes", "hardware",
                "optimizer", "optimizer_impl", "amp", "param_dtype"]
        out = []
        for r in self.rows:
            out.append({"model": self.model, "network": self.network, "plan": r.plan,
                        "max_batch": r.max_batch, "step_time_s": r.step_time_s,
                        "samples_per_s": (r.max_batch / r.step_time_s if r.step_time_s
                                          else None),
                        "peak_allocated_bytes": r.peak_allocated_bytes,
                        "peak_reserved_bytes": r.peak_reserved_bytes,
                        "next_batch": r.next_batch,
                        "next_reserved_bytes": r.next_reserved_bytes,
                        "next_failure": r.next_failure, "probes": r.probes,
                        "budget_bytes": self.budget_bytes, "hardware": self.hardware,
                        "param_dtype": "fp32", **self.setup})
        return pd.DataFrame(out, columns=cols)

    def best(self, plan):
        """The row of ``plan`` (its label, e.g. ``checkpoint`` or ``cpu_offload(pin_memory=
        true)``)."""
        for r in self.rows:
            if r.plan == plan:
                return r
        raise KeyError(f"no plan {plan!r} was searched; searched: "
                       f"{', '.join(r.plan for r in self.rows)}")


def _plans(policies, options):
    """The :class:`~snsim.torchsim.plans.PlanSpec` of each plan searched: ``policies`` is a
    policy name, a comma-separated list or ``all``; ``options`` (``KEY=VALUE`` strings) go to
    a single policy only, since two plans' options of one name mean different things
    (``modules`` of checkpoint and of cpu_offload)."""
    from ..torchsim.plans import PlanSpec
    if policies is None or str(policies).strip().lower() == "all":
        names = list(ALL_PLANS)
    else:
        names = [n.strip() for n in str(policies).split(",") if n.strip()]
        if not names:
            raise ConfigError("--policy must name at least one plan (or 'all')")
    if options and len(names) != 1:
        raise ConfigError(f"--option applies to one plan; --policy names {len(names)} "
                          f"({', '.join(names)}): search them one at a time")
    plans = [PlanSpec.parse(n, options or []) for n in names]
    seen = set()
    for p in plans:
        if p.label in seen:
            raise ConfigError(f"--policy names {p.label} twice")
        seen.add(p.label)
    return plans


#: the most a probe multiplies the largest fitting size by before a size has failed
GROWTH = 16


def _crossing(p, q, target):
    """Where the line through points ``p`` and ``q`` (size, bytes) reaches ``target``, or
    None when it does not rise."""
    (x1, y1), (x2, y2) = p, q
    if x2 == x1 or (y2 - y1) / (x2 - x1) <= 0:
        return None
    return x1 + (target - y1) * (x2 - x1) / (y2 - y1)


def edge_search(fits, used, lo, limit, budget, base=0):
    """``(b, b + 1)``: a size ``b`` in ``[lo, limit]`` that fits and the next one, which does
    not (``limit + 1`` when ``limit`` fits), given ``fits(lo)``. ``used(n)`` is
    ``(allocated, reserved)``, the peak bytes of a probed size (a size that does not fit: of
    its run without a limit), ``base`` what size 0 allocates (weights, optimizer state).

    The allocated peak grows about linearly with the size. Until a size fails, each probe is
    where the line through the largest fitting size and one of at most half its size (at
    first ``(0, base)``) reaches the budget less the reserved overhead (caching,
    fragmentation) of the last fitting size whose reserved peak stayed under 90 % of the
    budget; where that is no further than the next size, where the line reaches the budget
    itself (beyond the edge: the allocator's overhead only adds); never more than
    :data:`GROWTH` times the largest fitting size (small sizes' peaks are mostly workspaces
    and overhead, so their line can be far too flat). Then it bisects the bracket.
    Feasibility is taken to be monotone in the size; where it is not (the allocator's
    fragmentation), ``b`` is one of the edges.

    >>> used = lambda n: (3 * n + 10, 3 * n + 12)
    >>> edge_search(lambda n: 3 * n + 12 <= 100, used, 1, 1000, 100, 10)
    (29, 30)
    >>> edge_search(lambda n: True, used, 1, 40, 100, 10)
    (40, 41)
    """
    ok, bad = lo, limit + 1
    known = {lo: used(lo)}
    level = budget * known[lo][0] / max(known[lo][1], 1)
    fitting = [(0, base), (lo, known[lo][0])]
    while bad - ok > 1:
        if bad > limit:
            p2 = fitting[-1]
            p1 = max((p for p in fitting if 2 * p[0] <= p2[0]), key=lambda p: p[0])
            g = _crossing(p1, p2, level)
            if g is None or g < ok + 1:
                g = _crossing(p1, p2, budget)
                g = 2 * ok if g is None else max(g, ok) + 1
            cand = min(max(int(g), ok + 1), GROWTH * ok, limit)
        else:
            cand = (ok + bad) // 2
        good = fits(cand)
        known[cand] = used(cand)
        if good:
            ok = cand
            fitting.append((cand, known[cand][0]))
            if known[cand][1] < 0.9 * budget:     # the overhead of a run the limit left alone
                level = budget * known[cand][0] / known[cand][1]
        else:
            bad = cand
    return ok, bad


def _search_plan(plan, *, model, input_shape, setup, gpu, budget, lo, limit, host_gauge_s,
                 torch_version, on_probe=None):
    """One plan's search: ``(ModelMaxBatch, probes, provenance)``."""
    from ..torchsim.execute import predict_plan
    from ..torchsim.models import resolve_model
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    runs, probes = {}, []

    def probe(n):
        r, _ = predict_plan(spec, n, plan, optimizer=setup, gpu=gpu, budget_bytes=budget,
                            host_gauge_s=host_gauge_s, torch_version=torch_version)
        runs[n] = r
        probes.append({"plan": plan.label, "batch": n, "feasible": r["feasible"],
                       "peak_allocated_bytes": r["peak_allocated_bytes"],
                       "peak_reserved_bytes": r["peak_reserved_bytes"],
                       "step_time_s": r["step_time_s"], "record_wall_s": r["record_wall_s"]})
        if on_probe is not None:
            on_probe(plan.label, n, r["feasible"])
        return r["feasible"]

    if not probe(lo):
        best, nxt = None, lo
    else:
        best, nxt = edge_search(probe, lambda n: (runs[n]["peak_allocated_bytes"],
                                                  runs[n]["peak_reserved_bytes"]),
                                lo, limit, budget, runs[lo]["static_bytes"])
    at, after = runs.get(best), runs.get(nxt)
    row = ModelMaxBatch(
        plan=plan.label, max_batch=best, next_batch=nxt,
        step_time_s=at["step_time_s"] if at else None,
        peak_allocated_bytes=at["peak_allocated_bytes"] if at else None,
        peak_reserved_bytes=at["peak_reserved_bytes"] if at else None,
        next_failure=(after["failure"] or "the peak is above the budget") if after else "",
        next_reserved_bytes=after["peak_reserved_bytes"] if after else None,
        probes=len(runs))
    first = runs[lo]
    return row, probes, {k: first[k] for k in ("torch_version", "torch_modelled", "libraries")}


def _search_plan_quietly(plan, task):
    """:func:`_search_plan` in a worker process (no progress callback, the collector off as
    in the search)."""
    import gc
    gc.disable()
    return _search_plan(plan, **task)


def _run_plans(plans, task, jobs, on_probe):
    """Every plan's :func:`_search_plan`, in the plans' order. With ``jobs`` > 1 (None: one
    per CPU) and more than one plan, in up to ``jobs`` worker processes, started afresh
    (``spawn``: the parent has run torch, whose thread pools a fork does not carry); the
    progress callback then hears of a plan's probes when it ends. The answers do not depend on
    ``jobs``: each plan's probes are its own, and a prediction is a function of its inputs."""
    from .search import _check_jobs, default_jobs, in_workers
    _check_jobs(jobs)
    jobs = min(default_jobs() if jobs is None else jobs, len(plans))
    if jobs <= 1:
        return [_search_plan(p, **task, on_probe=on_probe) for p in plans]
    import functools
    import multiprocessing
    out = []

    def keep(answer):
        out.append(answer)
        for q in answer[1] if on_probe is not None else ():
            on_probe(q["plan"], q["batch"], q["feasible"])
    in_workers(functools.partial(_search_plan_quietly, task=task), plans, keep, jobs=jobs,
               context=multiprocessing.get_context("spawn"))
    return out


@without_gc
def max_batch_model(model, *, gpu="h200", policies="plain", options=None,
                    optimizer="sgd-momentum", input_shape=None, budget_bytes=None,
                    min_batch=1, max_batch=None, host_gauge_s=None, torch_version=None,
                    on_probe=None, jobs=1):
    """The largest batch of PyTorch ``model`` each plan trains within the budget, as
    ``snsim predict`` sees it.

    Parameters
    ----------
    model : str
        A model spec of ``snsim predict`` (``torchvision:resnet50``, ``hf:gpt2``, ...).
    gpu : str
        Hardware preset (its kernel table and workspace tables; default h200).
    policies : str
        A plan, a comma-separated list, or ``all`` (:data:`ALL_PLANS`).
    options : list of str, optional
        ``KEY=VALUE`` plan options (one plan only).
    optimizer : str or TrainSetup
        The training setup (optimizer, its kernels, autocast).
    budget_bytes : int, optional
        What the caching allocator may reserve; default the preset's memory less the context.
    min_batch, max_batch : int
        The batches searched: ``[min_batch, max_batch]`` (default up to 2**20).
    host_gauge_s, torch_version
        As :func:`snsim.torchsim.execute.predict_plan` (step time and save_on_cpu's behaviour).
    on_probe : callable, optional
        ``on_probe(plan_label, batch, feasible)`` after each probe (a progress bar).
    jobs : int or None
        Worker processes searching the plans at once (None: one per CPU, at most one per
        plan; 1: in this process). The report is the same for every value.

    Returns
    -------
    ModelSearchReport
    """
    from ..hardware import load_hardware
    from ..torchsim.amp import as_setup
    from ..torchsim.models import resolve_model
    wall0 = time.perf_counter()
    setup = as_setup(optimizer)
    lo = int(min_batch)
    if lo <= 0:
        raise ConfigError(f"--min-batch (={min_batch}) must be a positive integer")
    limit = DEFAULT_MAX_BATCH if max_batch is None else int(max_batch)
    if limit < lo:
        raise ConfigError(f"--max-batch (={max_batch}) must be at least --min-batch (={lo})")
    plans = _plans(policies, options)
    hw = load_hardware(gpu)
    budget = hw.budget_bytes if budget_bytes is None else int(budget_bytes)
    if budget <= 0:
        raise ConfigError(f"--budget (={budget} B) must be > 0")
    spec = resolve_model(model, input_shape=input_shape)
    report = ModelSearchReport(model=spec.text, network=spec.name, hardware=hw.name,
                               setup=setup.to_dict(), budget_bytes=budget, min_batch=lo,
                               limit=limit, rows=[])
    task = dict(model=model, input_shape=input_shape, setup=setup, gpu=hw.name,
                budget=budget, lo=lo, limit=limit, host_gauge_s=host_gauge_s,
                torch_version=torch_version)
    for row, probes, prov in _run_plans(plans, task, jobs, on_probe):
        report.rows.append(row)
        report.probes.extend(probes)
        report.provenance = report.provenance or prov
    report.wall_s = time.perf_counter() - wall0
    return report
