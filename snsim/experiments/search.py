"""Capacity searches: the deepest network, or the largest batch, each policy can train.

``max_depth`` grows one stage of a network family; ``max_batch`` grows the mini-batch of one
zoo network. For every policy the search reports the largest feasible size, the step time
there, and why the next size fails (its :class:`~snsim.result.Failure`, or the static bound).

**Monotonicity assumption.** Feasibility is assumed monotone in the searched size: if size
``n`` fits the budget, every smaller size of the same family (or batch) fits too. Each step up
only adds layers, parameters or bytes per tensor, so this holds for the zoo's families in
practice; the search does not check it, and in a non-monotone case it reports *a* feasible
size with an infeasible successor, not necessarily the largest.

How the search stays fast (``snsim maxdepth --policy all`` in a few seconds):

- one :class:`~snsim.program.Program` per size, shared by every policy (a small LRU cache);
- runs with ``record=False`` (no step, transfer or memory-event records);
- the static bound: a size whose ``static + largest working set`` (``lower_bound_bytes``)
  exceeds the budget is infeasible for every policy without simulating. The largest size
  within the bound (the *cap*) is found first, by secant steps on the bound (exact when the
  bound grows linearly, as it does for these families);
- galloping from a good start, then bisection: policies with an LRU tensor cache start at the
  cap (they can swap almost everything out); the others start where the secant through their
  peaks at the two smallest sizes meets the budget.
"""
from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ..api import resolve_hardware
from ..engine.core import run_plan
from ..errors import ConfigError, UnknownNameError
from ..graph import GraphBuilder
from ..policies import get_policy, list_policies
from ..program import build_program
from ..units import parse_bytes
from ..zoo import build_network, resnet

DEFAULT_MAX_DEPTH = 10_000
DEFAULT_MAX_BATCH = 1 << 20


# -- network families -------------------------------------------------------------------------
def _vgg_graph(k, *, batch, input_size=None, variant="torchvision"):
    """VGG with conv stages (2, 2, k, k, k): k=3 is VGG-16, k=4 is VGG-19 (as :func:`snsim.zoo.vgg`)."""
    size = input_size or (227 if variant == "release" else 224)
    b = GraphBuilder(f"vgg{3 * k + 7}", batch=batch, input_shape=(3, size, size))
    x = b.data()
    for stage, (n, width) in enumerate(zip((2, 2, k, k, k), (64, 128, 256, 512, 512)), 1):
        for i in range(1, n + 1):
            x = b.relu(b.conv(x, width, 3, 1, 1, name=f"conv{stage}_{i}"), name=f"relu{stage}_{i}")
        x = b.pool(x, 2, 2, name=f"pool{stage}")
    for i in (6, 7):
        x = b.dropout(b.relu(b.fc(x, 4096, name=f"fc{i}"), name=f"relu{i}"), 0.5, name=f"drop{i}")
    return b.finish(b.softmax(b.fc(x, 1000, name="fc8")))


def _densenet_graph(k, *, batch, input_size=None, variant="torchvision", growth=32, bn_size=4):
    """DenseNet with blocks (6, 12, k, 16): k=24 is DenseNet-121 (as :func:`snsim.zoo.densenet`)."""
    size = input_size or 224
    b = GraphBuilder(f"densenet{2 * k + 73}", batch=batch, input_shape=(3, size, size))
    x = b.conv(b.data(), 64, 7, 2, 3, bias=False, name="features.0.conv")
    x = b.relu(b.bn(x, name="features.0.bn"), name="features.0.relu")
    x = b.pool(x, 3, 2, 1, name="features.pool0")
    blocks = (6, 12, k, 16)
    for bi, n in enumerate(blocks, 1):
        feats = [x]
        for li in range(1, n + 1):
            b.scope(f"denseblock{bi}.layer{li}.")
            inp = feats[0] if len(feats) == 1 else b.concat(feats, name="cat")
            y = b.relu(b.bn(inp, name="norm1"), name="relu1")
            y = b.conv(y, bn_size * growth, 1, bias=False, name="conv1")
            y = b.relu(b.bn(y, name="norm2"), name="relu2")
            feats.append(b.conv(y, growth, 3, 1, 1, bias=False, name="conv2"))
        b.scope(f"denseblock{bi}.")
        x = b.concat(feats, name="out")
        if bi < len(blocks):
            b.scope(f"transition{bi}.")
            c = b.shape(x)[1]
            x = b.relu(b.bn(x, name="norm"), name="relu")
            x = b.pool(b.conv(x, c // 2, 1, bias=False, name="conv"), 2, 2, mode="avg", name="pool")
    b.scope("")
    x = b.global_pool(b.relu(b.bn(x, name="norm5"), name="relu5"), name="avgpool")
    return b.finish(b.softmax(b.fc(x, 1000, name="classifier")))


def _resnet_graph(k, *, batch, input_size=None, variant="torchvision"):
    return resnet((3, 4, k, 3), batch=batch, input_size=input_size, variant=variant)


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """A network family grown along one integer ``k``: ``depth = depth_offset + depth_step * k``."""

    name: str
    description: str
    parameter: str
    min_size: int
    depth_offset: int
    depth_step: int
    build: Callable = field(repr=False)
    label_format: str = "{k}"

    def depth(self, k):
        return self.depth_offset + self.depth_step * k

    def size_for_depth(self, depth, *, round_up=False):
        """The ``k`` of the deepest member not deeper than ``depth`` (or the shallowest not shallower)."""
        num = depth - self.depth_offset
        return -(-num // self.depth_step) if round_up else num // self.depth_step

    def label(self, k):
        return self.label_format.format(k=k, depth=self.depth(k))


FAMILIES = {
    "resnet": Family(
        name="resnet", parameter="blocks in stage 3", min_size=1, depth_offset=32, depth_step=3,
        description="bottleneck ResNet with blocks (3, 4, k, 3), depth 3*(10+k)+2, as the "
                    "SuperNeurons release grows its deep ResNets (k=6: ResNet-50, k=23: ResNet-101)",
        build=_resnet_graph, label_format="resnet:3,4,{k},3"),
    "vgg": Family(
        name="vgg", parameter="3x3 convs in stages 3-5", min_size=1, depth_offset=7, depth_step=3,
        description="VGG with conv stages (2, 2, k, k, k) and FC 4096-4096-1000, depth 3k+7 "
                    "(k=3: VGG-16, k=4: VGG-19)",
        build=_vgg_graph, label_format="vgg(2,2,{k},{k},{k})"),
    "densenet": Family(
        name="densenet", parameter="layers in dense block 3", min_size=1, depth_offset=73,
        depth_step=2,
        description="DenseNet-BC (growth 32, naive concatenation) with blocks (6, 12, k, 16), "
                    "depth 2k+73 (k=24: DenseNet-121)",
        build=_densenet_graph, label_format="densenet(6,12,{k},16)"),
}


def list_families():
    return sorted(FAMILIES)


def get_family(name):
    """The :class:`Family` called ``name``.

    >>> get_family("resnet").depth(6)
    50
    """
    if isinstance(name, Family):
        return name
    key = str(name).lower().strip()
    if key not in FAMILIES:
        raise UnknownNameError(f"network family {name!r} is unknown; known: "
                               f"{', '.join(list_families())}")
    return FAMILIES[key]


def family_network(family, k, *, batch, input_size=None, variant="torchvision"):
    """The layer DAG of member ``k`` of ``family``.

    >>> G = family_network("resnet", 6, batch=2)
    >>> sum(d["params"] for _, d in G.nodes(data=True))   # ResNet-50
    25557032
    """
    fam = get_family(family)
    if int(k) < fam.min_size:
        raise ConfigError(f"family {fam.name}: k (={k}) must be >= {fam.min_size}")
    return fam.build(int(k), batch=batch, input_size=input_size, variant=variant)


# -- search spaces ------------------------------------------------------------------------------
class _DepthSpace:
    axis = "depth"

    def __init__(self, family, *, batch, input_size, variant):
        self.family, self.batch = family, batch
        self.input_size, self.variant = input_size, variant

    def graph(self, k):
        return self.family.build(k, batch=self.batch, input_size=self.input_size,
                                 variant=self.variant)

    def depth(self, k):
        return self.family.depth(k)

    def label(self, k):
        return self.family.label(k)


class _BatchSpace:
    axis = "batch"

    def __init__(self, network, *, input_size, variant):
        self.network, self.input_size, self.variant = network, input_size, variant

    def graph(self, n):
        return build_network(self.network, batch=n, input_size=self.input_size,
                             variant=self.variant)

    def depth(self, n):
        return None

    def label(self, n):
        return self.network


class _Prober:
    """Programs per size (shared by all policies), the static bound, and cached runs."""

    def __init__(self, space, hardware, budget_bytes, *, allocator, optimizer, policy_options,
                 on_probe, keep_programs=6):
        self.space = space
        self.hw = hardware
        self.budget = budget_bytes
        self.allocator = allocator
        self.optimizer = optimizer
        self.policy_options = policy_options or {}
        self.on_probe = on_probe
        self.keep = keep_programs
        self._programs = OrderedDict()
        self.bounds = {}        # size -> (lower_bound_bytes, static_bytes)
        self.results = {}       # (policy, size) -> Result
        self.lru = {}           # policy -> does its plan use the LRU tensor cache
        self.simulations = {}   # policy -> number of simulations run

    def program(self, size):
        p = self._programs.get(size)
        if p is not None:
            self._programs.move_to_end(size)
            return p
        p = build_program(self.space.graph(size), hardware=self.hw, optimizer=self.optimizer)
        self._programs[size] = p
        self.bounds[size] = (p.lower_bound_bytes(), p.static_total_bytes)
        while len(self._programs) > self.keep:
            self._programs.popitem(last=False)
        return p

    def bound(self, size):
        if size not in self.bounds:
            self.program(size)
        return self.bounds[size][0]

    def within_bound(self, size):
        return self.bound(size) <= self.budget

    def bound_reason(self, size):
        lb, static = self.bounds[size]
        return (f"lower bound {lb:,} B (static {static:,} B + largest working set "
                f"{lb - static:,} B) exceeds the budget {self.budget:,} B; not simulated")

    def run(self, policy, size):
        key = (policy, size)
        r = self.results.get(key)
        if r is not None:
            return r
        program = self.program(size)
        plan = get_policy(policy, **self.policy_options.get(policy, {})).plan(
            program, self.hw, self.budget)
        self.lru[policy] = plan.lru
        r = run_plan(program, plan, self.hw, budget_bytes=self.budget,
                     allocator=self.allocator, record=False)
        self.results[key] = r
        self.simulations[policy] = self.simulations.get(policy, 0) + 1
        if self.on_probe is not None:
            self.on_probe(policy, size, r)
        return r

    def feasible(self, policy, size):
        return self.within_bound(size) and self.run(policy, size).feasible

    def predict(self, policy):
        """Largest size whose peak the secant through the two largest unsaturated runs keeps
        within the budget; None without two such runs."""
        pts = sorted((s, r.peak_ideal_bytes) for (p, s), r in self.results.items()
                     if p == policy and r.feasible and r.evictions == 0
                     and r.peak_ideal_bytes < self.budget)
        return _secant(pts, self.budget)

    def predict_bound(self):
        pts = sorted((s, lb) for s, (lb, _) in self.bounds.items() if lb <= self.budget)
        return _secant(pts, self.budget)


def _secant(points, budget):
    if len(points) < 2:
        return None
    (s1, v1), (s2, v2) = points[-2], points[-1]
    slope = (v2 - v1) / (s2 - s1)
    if slope <= 0:
        return None
    return s2 + int(math.floor((budget - v2) / slope))


def _largest_true(test, lo, hi, start, predict=None):
    """Largest ``n`` in ``[lo, hi)`` with ``test(n)``, given ``test(lo)`` holds and sizes at or
    above ``hi`` are excluded. Gallops from ``start`` (jumping to ``predict(lo)`` when it is
    further), then bisects. Returns ``(largest true, smallest false or hi)``."""
    if hi - lo <= 1:
        return lo, hi
    cand = min(max(start, lo + 1), hi - 1)
    if test(cand):
        lo, step = cand, 1
        while hi - lo > 1:
            guess = predict(lo) if predict else None
            cand = min(max(lo + step, guess if guess is not None else lo), hi - 1)
            if not test(cand):
                hi = cand
                break
            lo, step = cand, step * 2
    else:
        hi, step = cand, 1
        while hi - lo > 1:
            cand = max(hi - step, lo + 1)
            if test(cand):
                lo = cand
                break
            hi, step = cand, step * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if test(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


# -- results ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class MaxSize:
    """One policy's answer: the largest feasible size and why the next one fails."""

    policy: str
    axis: str                 # "depth" or "batch"
    max_size: int | None      # the family's k, or the batch; None if even the smallest fails
    max_depth: int | None     # depth of the family member (depth searches)
    network: str              # the network at the maximum
    batch: int | None
    step_time_s: float | None
    peak_ideal_bytes: int | None
    next_size: int
    next_depth: int | None
    next_failure: str
    simulations: int
    result: object = field(default=None, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class SearchReport:
    """Every policy's :class:`MaxSize` plus every simulation the search ran."""

    axis: str
    subject: str              # family or network name
    parameter: str            # what the searched integer counts
    hardware: str
    budget_bytes: int
    batch: int | None
    min_size: int
    limit: int
    bound_cap: int            # largest size with lower_bound_bytes <= budget (within the limit)
    rows: list
    probes: list
    wall_s: float

    def frame(self):
        """One row per policy (a tidy table; bytes and seconds in SI units)."""
        import pandas as pd
        cols = (["policy", "family", "batch", "max_depth", "k", "network"] if self.axis == "depth"
                else ["policy", "network", "max_batch"])
        cols += ["step_time_s", "images_per_s", "peak_ideal_bytes", "next_size"
                 if self.axis == "batch" else "next_depth", "next_failure", "simulations"]
        out = []
        for r in self.rows:
            row = {"policy": r.policy, "network": r.network, "step_time_s": r.step_time_s,
                   "images_per_s": (r.result.images_per_s if r.result is not None else None),
                   "peak_ideal_bytes": r.peak_ideal_bytes, "next_failure": r.next_failure,
                   "simulations": r.simulations}
            if self.axis == "depth":
                row.update(family=self.subject, batch=self.batch, max_depth=r.max_depth,
                           k=r.max_size, next_depth=r.next_depth)
            else:
                row.update(max_batch=r.max_size, next_size=r.next_size)
            out.append(row)
        return pd.DataFrame(out, columns=cols)

    def probes_frame(self):
        """One row per simulation (policy, size, feasible, peak, step time, bound)."""
        import pandas as pd
        return pd.DataFrame(self.probes)

    def best(self, policy):
        return next(r for r in self.rows if r.policy == policy)


# -- the searches -------------------------------------------------------------------------------
def _resolve(hardware, budget_bytes, policies):
    hw = resolve_hardware(hardware)
    budget = hw.budget_bytes if budget_bytes is None else parse_bytes(budget_bytes, field="budget")
    if budget <= 0:
        raise ConfigError(f"budget (={budget} B) must be > 0")
    if policies is None or policies == "all":
        names = list_policies()
    else:
        names = [policies] if isinstance(policies, str) else list(policies)
        names = [n.strip() for item in names for n in str(item).split(",") if n.strip()]
        if not names:
            raise ConfigError("policies must name at least one policy (or 'all')")
        for n in names:
            get_policy(n)   # unknown names fail before any simulation
    return hw, budget, names


def _search(space, prober, names, lo, limit, *, subject, parameter, batch, wall0):
    what = "depth" if space.axis == "depth" else "batch"
    if limit < lo:
        raise ConfigError(f"the largest {what} to try ({_show(space, limit)}) is below the smallest "
                          f"({_show(space, lo)})")
    if not prober.within_bound(lo):
        raise ConfigError(f"even the smallest {what} ({_show(space, lo)}, {space.label(lo)}) "
                          f"is infeasible on {prober.hw.name}: "
                          + prober.bound_reason(lo).replace("; not simulated", ""))
    first = {n: prober.run(n, lo) for n in names}
    if not any(r.feasible for r in first.values()):
        n, r = next(iter(first.items()))
        raise ConfigError(f"even the smallest {what} ({_show(space, lo)}, {space.label(lo)}) is "
                          f"infeasible under {', '.join(first)} on {prober.hw.name} "
                          f"(budget {prober.budget:,} B); {n}: {r.failure}")
    # the cap: the largest size within the static bound
    if lo < limit:
        prober.bound(lo + 1)
    cap, _ = _largest_true(prober.within_bound, lo, limit + 1,
                           prober.predict_bound() or lo + 1, lambda _: prober.predict_bound())
    order = sorted(names, key=lambda n: not prober.lru.get(n, False))  # LRU policies near the cap first
    best = {}
    for n in order:
        if not first[n].feasible:
            best[n] = (None, lo)
            continue
        if prober.lru.get(n):
            start = cap
        else:
            if lo + 1 <= cap:
                prober.feasible(n, lo + 1)
            start = prober.predict(n) or lo + 1
        best[n] = _largest_true(lambda s, n=n: prober.feasible(n, s), lo, cap + 1, start,
                                lambda _, n=n: prober.predict(n))
    rows = []
    for n in names:
        top, nxt = best[n]
        r = prober.results.get((n, top)) if top is not None else None
        if nxt > limit:
            why = f"not tested: above the {what} limit {_show(space, limit)}"
        elif (n, nxt) in prober.results:
            why = str(prober.results[(n, nxt)].failure)
        else:
            why = prober.bound_reason(nxt)
        rows.append(MaxSize(
            policy=n, axis=space.axis, max_size=top,
            max_depth=space.depth(top) if top is not None else None,
            network=space.label(top if top is not None else lo),
            batch=batch if space.axis == "depth" else top,
            step_time_s=r.step_time_s if r is not None else None,
            peak_ideal_bytes=r.peak_ideal_bytes if r is not None else None,
            next_size=nxt, next_depth=space.depth(nxt), next_failure=why,
            simulations=prober.simulations.get(n, 0), result=r))
    probes = [{"policy": p, space.axis if space.axis == "batch" else "k": s,
               **({"depth": space.depth(s)} if space.axis == "depth" else {}),
               "feasible": r.feasible, "peak_ideal_bytes": r.peak_ideal_bytes,
               "step_time_s": r.step_time_s, "lower_bound_bytes": prober.bounds[s][0],
               "static_bytes": prober.bounds[s][1], "budget_bytes": prober.budget,
               "failure": str(r.failure or "")}
              for (p, s), r in prober.results.items()]
    return SearchReport(axis=space.axis, subject=subject, parameter=parameter,
                        hardware=prober.hw.name, budget_bytes=prober.budget, batch=batch,
                        min_size=lo, limit=limit, bound_cap=cap, rows=rows, probes=probes,
                        wall_s=time.perf_counter() - wall0)


def _show(space, size):
    return f"{space.depth(size)} (k={size})" if space.axis == "depth" else str(size)


def max_depth(family="resnet", *, batch=16, hardware="k40c", policies=None, min_depth=None,
              max_depth=None, budget_bytes=None, allocator="ideal", optimizer="sgd-momentum",
              input_size=None, variant="torchvision", policy_options=None, on_probe=None):
    """The deepest member of ``family`` each policy trains within the budget.

    Parameters
    ----------
    family : {"resnet", "vgg", "densenet"} or Family
        ``resnet``: blocks (3, 4, k, 3), depth 3(10+k)+2; ``vgg``: conv stages (2, 2, k, k, k),
        depth 3k+7; ``densenet``: blocks (6, 12, k, 16), depth 2k+73.
    batch : int
    hardware : str or HardwareSpec
    policies : None, "all", str or list of str
        Policy names (default: all registered policies).
    min_depth, max_depth : int, optional
        Depth range to search (default: the family's smallest member, and 10,000).
    budget_bytes : int or str, optional
        Default: the preset's budget.
    policy_options : dict, optional
        ``{policy name: {option: value}}``.
    on_probe : callable, optional
        Called as ``on_probe(policy, k, result)`` after every simulation (progress bars).

    Returns
    -------
    SearchReport

    Raises
    ------
    UnknownNameError
        For an unknown family or policy.
    ConfigError
        For an empty depth range, or when even the smallest depth is infeasible for every
        policy.

    Examples
    --------
    >>> rep = max_depth("resnet", batch=8, policies=["liveness"], budget_bytes="2GiB")
    >>> row = rep.best("liveness")
    >>> row.max_depth == 3 * (10 + row.max_size) + 2, row.next_depth == row.max_depth + 3
    (True, True)
    """
    wall0 = time.perf_counter()
    fam = get_family(family)
    if int(batch) <= 0:
        raise ConfigError(f"batch (={batch}) must be a positive integer")
    hw, budget, names = _resolve(hardware, budget_bytes, policies)
    lo = fam.min_size if min_depth is None else max(fam.min_size,
                                                    fam.size_for_depth(int(min_depth), round_up=True))
    top = DEFAULT_MAX_DEPTH if max_depth is None else int(max_depth)
    if top < fam.depth(fam.min_size):
        raise ConfigError(f"max depth (={top}) is below the smallest {fam.name} depth "
                          f"{fam.depth(fam.min_size)}")
    if min_depth is not None and max_depth is not None and int(max_depth) < int(min_depth):
        raise ConfigError(f"max depth (={max_depth}) must be >= min depth (={min_depth})")
    limit = fam.size_for_depth(top)
    space = _DepthSpace(fam, batch=int(batch), input_size=input_size, variant=variant)
    prober = _Prober(space, hw, budget, allocator=allocator, optimizer=optimizer,
                     policy_options=policy_options, on_probe=on_probe)
    return _search(space, prober, names, lo, limit, subject=fam.name, parameter=fam.parameter,
                   batch=int(batch), wall0=wall0)


def max_batch(network="resnet50", *, hardware="k40c", policies=None, min_batch=1,
              max_batch=None, budget_bytes=None, allocator="ideal", optimizer="sgd-momentum",
              input_size=None, variant="torchvision", policy_options=None, on_probe=None):
    """The largest mini-batch of zoo ``network`` each policy trains within the budget.

    Parameters are those of :func:`max_depth`, with ``network`` (a zoo name) and a batch range
    (default 1 .. 2**20) instead of a family and a depth range.

    Examples
    --------
    >>> rep = max_batch("lenet", policies="keep_all", budget_bytes="64MiB")
    >>> row = rep.best("keep_all")
    >>> row.next_size == row.max_size + 1
    True
    """
    wall0 = time.perf_counter()
    hw, budget, names = _resolve(hardware, budget_bytes, policies)
    lo = int(min_batch)
    if lo <= 0:
        raise ConfigError(f"min batch (={min_batch}) must be a positive integer")
    limit = DEFAULT_MAX_BATCH if max_batch is None else int(max_batch)
    build_network(network, batch=1, input_size=input_size, variant=variant)  # unknown names fail here
    space = _BatchSpace(network, input_size=input_size, variant=variant)
    prober = _Prober(space, hw, budget, allocator=allocator, optimizer=optimizer,
                     policy_options=policy_options, on_probe=on_probe)
    return _search(space, prober, names, lo, limit, subject=network, parameter="batch",
                   batch=None, wall0=wall0)


def sweep_depth(family="resnet", ks=(1, 2, 4, 8), *, batch=16, hardware="k40c", policies=None,
                budget_bytes=None, allocator="ideal", optimizer="sgd-momentum", input_size=None,
                variant="torchvision", policy_options=None, on_probe=None):
    """Simulate every policy at every ``k`` of ``family``: a tidy frame for :func:`snsim.plots.sweep_curve`.

    Sizes beyond the static bound are reported infeasible without simulating (``pruned``).

    Examples
    --------
    >>> df = sweep_depth("resnet", [1, 2], batch=2, policies=["liveness"])
    >>> list(df["depth"]), bool(df["feasible"].all())
    ([35, 38], True)
    """
    fam = get_family(family)
    hw, budget, names = _resolve(hardware, budget_bytes, policies)
    space = _DepthSpace(fam, batch=int(batch), input_size=input_size, variant=variant)
    prober = _Prober(space, hw, budget, allocator=allocator, optimizer=optimizer,
                     policy_options=policy_options, on_probe=on_probe, keep_programs=1)
    rows = []
    import pandas as pd
    for k in ks:
        k = int(k)
        if k < fam.min_size:
            raise ConfigError(f"family {fam.name}: k (={k}) must be >= {fam.min_size}")
        for n in names:
            base = {"family": fam.name, "policy": n, "k": k, "depth": fam.depth(k),
                    "batch": int(batch), "hardware": hw.name, "budget_bytes": budget}
            if not prober.within_bound(k):
                rows.append({**base, "feasible": False, "pruned": True, "peak_ideal_bytes": None,
                             "step_time_s": None, "lower_bound_bytes": prober.bounds[k][0],
                             "static_bytes": prober.bounds[k][1], "failure": prober.bound_reason(k)})
                continue
            r = prober.run(n, k)
            rows.append({**base, "feasible": r.feasible, "pruned": False,
                         "peak_ideal_bytes": r.peak_ideal_bytes if r.feasible else None,
                         "step_time_s": r.step_time_s if r.feasible else None,
                         "lower_bound_bytes": r.lower_bound_bytes, "static_bytes": r.static_bytes,
                         "failure": str(r.failure or "")})
    return pd.DataFrame(rows)
