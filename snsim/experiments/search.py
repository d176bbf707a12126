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
  past k = 12, a depth family's programs are spliced from its repeated block, not built from
  the DAG (:mod:`snsim.experiments.splice`: learned from four small builds, certified equal to
  the build at k = 12; families that are not a repeated block are built);
- runs with ``record=False`` (no step, transfer or memory-event records);
- the static bound: a size whose ``static + largest working set`` (``lower_bound_bytes``)
  exceeds the budget is infeasible for every policy without simulating. The largest size
  within the bound (the *cap*) is found first, by secant steps on the bound (one step when
  the bound is exactly linear, as for ResNet and VGG; then the bound one past the cap is
  extrapolated, not built) or parabola steps (DenseNet's bound is quadratic);
- a good start, then galloping and bisection: policies with an LRU tensor cache start at the
  cap (they can swap almost everything out) and gallop down; the others run the three smallest
  sizes, start where the line or parabola through their peaks meets the budget, and keep
  re-predicting from their largest runs; a failed prediction is approached from below, where
  programs are cheap;
- certified extrapolation: the peaks (the reserved ones, which the budget limits) grow exactly
  linearly in depth and batch for most policies, so the prediction usually lands on the answer.
  A prediction far beyond the points run so far is first checked on a cheap size four times
  larger (checkpoint's peak is linear over k = 1..8 and steeper from k = 16), until the
  policy's peaks are exactly linear, to the byte, over a 64-fold span (cpu_offload's over
  k = 1..64 on ResNet: then it goes straight to the predicted size). Where the three largest
  points bend upwards, the parabola through them undershoots a peak that has turned linear
  (checkpoint's on ResNet, from k = 16): one cheap size between the two largest shows whether
  the peaks are exactly linear there, and the line then lands on the answer (ResNet batch 16
  on the K40c: k = 64, 40, then 419, not 212 first); when the model
  says the largest feasible size is one already run, a single run at the next size certifies
  it. Every answer is bracketed by simulations — feasible at n, infeasible at n + 1 (or beyond
  the static bound) — so extrapolation only chooses what to simulate, never the answer;
- the cyclic garbage collector is paused during a search (:mod:`snsim.gcpause`): its full
  passes over the cached programs took half the time.
"""
from __future__ import annotations

import dataclasses
import functools
import gc
import math
import os
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ..api import resolve_hardware
from ..engine.core import run_plan
from ..errors import ConfigError, PlanError, SnsimError, UnknownNameError
from ..gcpause import without_gc
from ..policies import all_policies, applicable_policies, get_policy
from ..policies.base import Policy
from ..program import build_program
from .splice import Splicer
from ..units import parse_bytes
from ..zoo import (TRANSFORMERS, build_network, canonical_name, check_sizes, densenet, resnet,
                   transformer, vgg, with_module_tree)

DEFAULT_MAX_DEPTH = 10_000
DEFAULT_MAX_BATCH = 1 << 20


# -- network families -------------------------------------------------------------------------
def _vgg_graph(k, *, batch, input_size=None, variant="torchvision", twin=False):
    """VGG with conv stages (2, 2, k, k, k): k=3 is VGG-16, k=4 VGG-19."""
    return vgg(convs=(2, 2, k, k, k), batch=batch, input_size=input_size, variant=variant,
               twin=twin)


def _densenet_graph(k, *, batch, input_size=None, variant="torchvision", twin=False):
    """DenseNet with blocks (6, 12, k, 16): k=24 is DenseNet-121."""
    return densenet(blocks=(6, 12, k, 16), batch=batch, input_size=input_size, variant=variant,
                    twin=twin)


def _resnet_graph(k, *, batch, input_size=None, variant="torchvision", twin=False):
    return resnet((3, 4, k, 3), batch=batch, input_size=input_size, variant=variant, twin=twin)


def _transformer_member(base, k, *, batch, input_size=None, variant="torchvision", twin=False):
    cfg = TRANSFORMERS[base].with_options(layers=k)
    return transformer(cfg, batch=batch, input_size=input_size, variant=variant, twin=twin,
                       name=f"{base}[{k} layers]")


def _transformer_family(base):
    """Members of a zoo transformer grown in layers at the base's width; ``input_size`` is the
    sequence length (default: the base's). A partial, not a closure: a search's started (not
    forked) workers receive the family pickled."""
    return functools.partial(_transformer_member, base)


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
        """``k`` of the deepest member not deeper than ``depth`` (or shallowest not shallower)."""
        num = depth - self.depth_offset
        return -(-num // self.depth_step) if round_up else num // self.depth_step

    def label(self, k):
        return self.label_format.format(k=k, depth=self.depth(k))


FAMILIES = {
    "resnet": Family(
        name="resnet", parameter="blocks in stage 3", min_size=1, depth_offset=32, depth_step=3,
        description="bottleneck ResNet with blocks (3, 4, k, 3), depth 3*(10+k)+2, as the "
                    "SuperNeurons release grows its deep ResNets (k=6: ResNet-50, "
                    "k=23: ResNet-101)",
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
    # two blocks at least: the checkpoint plan's default block class is a repeated one
    "gpt": Family(
        name="gpt", parameter="transformer blocks", min_size=2, depth_offset=0, depth_step=1,
        description="GPT-2 small's decoder (width 768, 12 heads, vocab 50257, tied LM head) "
                    "with k blocks (k=12: GPT-2 small); --seq sets the sequence (1024)",
        build=_transformer_family("gpt2"), label_format="gpt:layers={k}"),
    "llama": Family(
        name="llama", parameter="decoder layers", min_size=2, depth_offset=0, depth_step=1,
        description="TinyLlama-1.1B's decoder (width 2048, 32 heads, 4 kv heads, SwiGLU 5632, "
                    "vocab 32000) with k layers (k=22: TinyLlama); --seq sets the sequence "
                    "(2048)",
        build=_transformer_family("tinyllama-1.1b"), label_format="llama:layers={k}"),
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


def family_network(family, k, *, batch, input_size=None, variant="torchvision", twin=False):
    """The layer DAG of member ``k`` of ``family``.

    >>> G = family_network("resnet", 6, batch=2)
    >>> sum(d["params"] for _, d in G.nodes(data=True))   # ResNet-50
    25557032
    """
    fam = get_family(family)
    check_sizes(batch=batch, input_size=input_size)
    if int(k) < fam.min_size:
        raise ConfigError(f"family {fam.name}: k (={k}) must be >= {fam.min_size}")
    return fam.build(int(k), batch=batch, input_size=input_size, variant=variant, twin=twin)


# -- search spaces ------------------------------------------------------------------------------
class _DepthSpace:
    axis = "depth"

    def __init__(self, family, *, batch, input_size, variant, framework="superneurons",
                 precision=(None, "fp32")):
        check_sizes(batch=batch, input_size=input_size)
        self.family, self.batch = family, batch
        self.input_size, self.variant, self.framework = input_size, variant, framework
        self.precision = precision      # (amp, param_dtype) of every program

    def graph(self, k):
        G = self.family.build(k, batch=self.batch, input_size=self.input_size,
                              variant=self.variant, twin=self.framework == "pytorch")
        return with_module_tree(G)

    def depth(self, k):
        return self.family.depth(k)

    def label(self, k):
        return self.family.label(k)


class _BatchSpace:
    axis = "batch"

    def __init__(self, network, *, input_size, variant, framework="superneurons",
                 precision=(None, "fp32")):
        self.network, self.input_size, self.variant = network, input_size, variant
        self.framework = framework
        self.precision = precision      # (amp, param_dtype) of every program

    def graph(self, n):
        return build_network(self.network, batch=n, input_size=self.input_size,
                             variant=self.variant, twin=self.framework == "pytorch")

    def depth(self, n):
        return None

    def label(self, n):
        return canonical_name(self.network)


class _Prober:
    """Programs per size (shared by all policies), the static bound, and cached runs."""

    def __init__(self, space, hardware, budget_bytes, *, allocator, optimizer, policy_options,
                 on_probe, keep_steps=120_000, splicer=None):
        self.space = space
        self.hw = hardware
        self.budget = budget_bytes
        self.allocator = allocator
        self.optimizer = optimizer
        self.policy_options = policy_options or {}
        self.on_probe = on_probe
        self.keep_steps = keep_steps   # cache programs up to this many steps in all
        self._programs = OrderedDict()
        self.bounds = {}        # size -> (lower_bound_bytes, static_bytes), built programs only
        self.extrapolated = {}  # size -> the same, from an exactly linear bound
        self.linear = True      # False once an extrapolation proved wrong
        self.results = {}       # (policy, size) -> Result
        self.lru = {}           # policy -> does its plan use the LRU tensor cache
        self.simulations = {}   # policy -> number of simulations run
        self.policies = ()      # the searched policies: the bound is the lowest of their programs'
        # deep members of a depth family: spliced from a repeated block where certified,
        # learned from small members this prober keeps
        self.splicer = splicer or (Splicer(base=space.family.min_size + 1)
                                   if isinstance(space, _DepthSpace) else None)

    def __getstate__(self):
        """Pickled for a started (not forked) worker: without the program cache (rebuilt on
        demand) and the progress callback (reported by the searching process)."""
        return {**self.__dict__, "_programs": OrderedDict(), "on_probe": None}

    def _built(self, size):
        """The program built from the DAG (cached, no bound: the splicer's small sizes)."""
        p = self._programs.get(size)
        if p is None:
            amp, param_dtype = self.space.precision
            p = build_program(self.space.graph(size), hardware=self.hw,
                              optimizer=self.optimizer, framework=self.space.framework,
                              amp=amp, param_dtype=param_dtype)
            self._keep(size, p)
        return p

    def _keep(self, size, p):
        self._programs[size] = p
        while len(self._programs) > 1 and \
                sum(len(q.steps) for q in self._programs.values()) > self.keep_steps:
            self._programs.popitem(last=False)

    def program(self, size):
        p = self._programs.get(size)
        if p is not None:
            self._programs.move_to_end(size)
        else:
            p = self.splicer.splice(size, self._built) if self.splicer is not None else None
            if p is None:
                p = self._built(size)
            else:
                self._keep(size, p)
        if size not in self.bounds:
            self.bounds[size] = self._plan_bound(p)
        return p

    def fresh(self):
        """A new prober of the same space, hardware, budget and options (nothing cached)."""
        return _Prober(self.space, self.hw, self.budget, allocator=self.allocator,
                       optimizer=self.optimizer, policy_options=self.policy_options,
                       on_probe=self.on_probe, keep_steps=self.keep_steps, splicer=self.splicer)

    def _plan_bound(self, program):
        """``(lower_bound_bytes, static_bytes)`` of the lowest-bounded program the searched
        policies' plans run (:meth:`~snsim.policies.base.Policy.bound_program`): a size above
        it is infeasible for every one of them."""
        progs = [program]
        for n in self.policies:
            pol = get_policy(n, **self.policy_options.get(n, {}))
            # a policy that runs the program as it is adds nothing below the program's own
            # bound: only those that rewrite it are asked whether they can plan it
            if type(pol).bound_program is not Policy.bound_program \
                    and pol.unsupported(program) is None:
                progs.append(pol.bound_program(program, self.hw))
        return min((q.lower_bound_bytes(), q.static_total_bytes) for q in progs)

    def bound(self, size, *, extrapolate=False):
        """``lower_bound_bytes`` at ``size``. With ``extrapolate``, a size not built yet takes
        the value of the bound's line when the bound is *exactly* linear (to the byte) through
        at least three built sizes, the largest at or beyond the smallest built size's double
        (the families' bounds are: static bytes and the largest working set grow linearly)."""
        if size in self.bounds:
            return self.bounds[size][0]
        line = self._line() if extrapolate else None
        if line is None:
            self.program(size)
            return self.bounds[size][0]
        (s0, lb0, st0), (ds, dlb, dst) = line
        n = size - s0
        if n * dlb % ds or n * dst % ds:
            self.program(size)
            return self.bounds[size][0]
        self.extrapolated[size] = (lb0 + n * dlb // ds, st0 + n * dst // ds)
        return self.extrapolated[size][0]

    def _line(self):
        if not self.linear:
            return None
        pts = sorted((s, lb, st) for s, (lb, st) in self.bounds.items())
        if len(pts) < 3 or pts[-1][0] < 2 * max(pts[0][0], 1):
            return None
        (s0, lb0, st0), (s1, lb1, st1) = pts[0], pts[-1]
        ds, dlb, dst = s1 - s0, lb1 - lb0, st1 - st0
        for s, lb, st in pts[1:-1]:
            if (lb - lb0) * ds != dlb * (s - s0) or (st - st0) * ds != dst * (s - s0):
                return None
        return (s0, lb0, st0), (ds, dlb, dst)

    def within_bound(self, size, *, extrapolate=False):
        return self.bound(size, extrapolate=extrapolate) <= self.budget

    def bound_reason(self, size):
        if size in self.bounds:
            (lb, static), how = self.bounds[size], ""
        else:
            (lb, static), how = self.extrapolated[size], " (extrapolated: exactly linear)"
        return (f"lower bound {lb:,} B{how} (static {static:,} B + largest working set "
                f"{lb - static:,} B) exceeds the budget {self.budget:,} B; not simulated")

    def run(self, policy, size):
        key = (policy, size)
        r = self.results.get(key)
        if r is not None:
            return r
        program = self.program(size)
        try:
            plan = get_policy(policy, **self.policy_options.get(policy, {})).plan(
                program, self.hw, self.budget)
            r = run_plan(program, plan, self.hw, budget_bytes=self.budget,
                         allocator=self.allocator, record=False)
        except PlanError as e:   # a policy bug: say where, then fail loudly
            raise PlanError(f"policy {policy!r} on {self.space.label(size)} "
                            f"({self.space.axis} {_show(self.space, size)}): {e}") from e
        self.lru[policy] = plan.lru
        self.results[key] = r
        self.simulations[policy] = self.simulations.get(policy, 0) + 1
        if self.on_probe is not None:
            self.on_probe(policy, size, r)
        return r

    def feasible(self, policy, size):
        return self.within_bound(size) and self.run(policy, size).feasible

    def predict(self, policy, lo=None, hi=None):
        """Largest size whose peak stays within the budget, extrapolated (:func:`_predict`)
        from the policy's largest unsaturated runs (feasible, no evictions); None without two.
        The peak is the reserved one, which the budget limits (the ideal one under ``ideal``)."""
        pts = sorted((s, r.peak_reserved_bytes) for (p, s), r in self.results.items()
                     if p == policy and r.feasible and r.evictions == 0
                     and r.peak_reserved_bytes < self.budget)
        return _predict(pts, self.budget, lo, hi)

    def convex_midpoint(self, policy):
        """The size halfway between the two largest of the policy's unsaturated runs (those
        :meth:`predict` uses) when the three largest bend upwards (the slope grows) and no
        run lies between the two; else None."""
        pts = sorted((s, r.peak_reserved_bytes) for (p, s), r in self.results.items()
                     if p == policy and r.feasible and r.evictions == 0
                     and r.peak_reserved_bytes < self.budget)
        if len(pts) < 3:
            return None
        (s0, v0), (s1, v1), (s2, v2) = pts[-3:]
        if (v2 - v1) * (s1 - s0) <= (v1 - v0) * (s2 - s1) or s2 - s1 < 2:
            return None
        return (s1 + s2) // 2

    def exactly_linear(self, policy, span=64):
        """Whether the policy's unsaturated peaks (those :meth:`predict` uses), three at least,
        lie exactly (to the byte) on one line over sizes spanning a factor ``span`` or more."""
        pts = sorted((s, r.peak_reserved_bytes) for (p, s), r in self.results.items()
                     if p == policy and r.feasible and r.evictions == 0
                     and r.peak_reserved_bytes < self.budget)
        if len(pts) < 3 or pts[-1][0] < span * max(pts[0][0], 1):
            return False
        (s0, v0), (s1, v1) = pts[0], pts[-1]
        return all((v - v0) * (s1 - s0) == (v1 - v0) * (s - s0) for s, v in pts[1:-1])

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


def _largest_true(test, lo, hi, start, predict=None, *, from_above=False):
    """Largest ``n`` in ``[lo, hi)`` with ``test(n)``, given ``test(lo)`` holds and sizes at or
    above ``hi`` are excluded. Returns ``(largest true, smallest false or hi)``.

    Probes ``start`` first. Then it jumps to ``predict(lo, hi)`` when that lies strictly inside
    the bracket and is untried (not right after a prediction overshot), and gallops up (lo+1,
    lo+2, lo+4, ...) otherwise. If ``start``
    fails and ``from_above`` (a start known to be close, such as the static cap), it first
    gallops down (hi-1, hi-2, hi-4, ...); otherwise it approaches from below, since small sizes
    are cheap to simulate and a far-off prediction is not. A galloping step that would pass
    the bracket's middle bisects instead.
    """
    if hi - lo <= 1:
        return lo, hi
    tried = set()

    def probe(n):
        tried.add(n)
        return test(n)
    cand = min(max(start, lo + 1), hi - 1)
    if probe(cand):
        lo = cand
    else:
        hi = cand
        if from_above:
            step = 1
            while hi - lo > 1:
                cand = hi - step
                if cand <= (lo + hi) // 2:
                    break
                if probe(cand):
                    lo = cand
                    break
                hi, step = cand, step * 2
    step, trust = 1, True
    while hi - lo > 1:
        guess = predict(lo, hi) if predict and trust else None
        certify = False
        if guess is not None and lo < guess < hi and guess not in tried:
            cand = guess
        elif guess is not None and guess <= lo and lo + 1 not in tried:
            # the model says lo is the largest: lo + 1 failing certifies it in one probe
            cand, certify = lo + 1, True
        else:
            cand = lo + step
            step *= 2
            if cand > (lo + hi) // 2:
                cand = (lo + hi) // 2
        ok = probe(cand)
        # a prediction that overshot, or a certification that passed, sits out one step
        trust = (not ok) if certify else (ok or cand != guess)
        if ok:
            lo = cand
        else:
            hi = cand
    return lo, hi


def _predict(points, target, lo=None, hi=None):
    """Where the value through the last known ``(size, value)`` points reaches ``target``.

    The line through the last two and, when the last three bend, the parabola through them;
    the smaller of the two crossings (floored): exact for linear and quadratic growth, and an
    undershoot (a feasible, cheaper probe) for concave growth, where the parabola overshoots.
    None when nothing crosses, or not below ``hi``.
    """
    if len(points) < 2:
        return None
    above = points[-1][0] if lo is None else lo
    found = []
    (x1, y1), (x2, y2) = points[-2:]
    slope = (y2 - y1) / (x2 - x1)
    if slope > 0:
        found.append(x2 + (target - y2) / slope)
    if len(points) >= 3:
        g = _quadratic_root(points[-3:], target, above)
        if g is not None:
            found.append(g)
    if not found:
        return None
    g = int(math.floor(min(found)))
    return g if hi is None or g < hi else None


def _quadratic_root(points, target, above):
    """Smallest ``s > above`` where the parabola through three ``(s, value)`` points equals
    ``target``; None if there is none or the points (nearly) lie on a line."""
    (x0, y0), (x1, y1), (x2, y2) = points
    d0, d1, d2 = (x0 - x1) * (x0 - x2), (x1 - x0) * (x1 - x2), (x2 - x0) * (x2 - x1)
    a = y0 / d0 + y1 / d1 + y2 / d2
    b = -(y0 * (x1 + x2) / d0 + y1 * (x0 + x2) / d1 + y2 * (x0 + x1) / d2)
    c = y0 * x1 * x2 / d0 + y1 * x0 * x2 / d1 + y2 * x0 * x1 / d2 - target
    # nearly straight: the bend changes the value by under 0.1% across the points' span
    span = max(x0, x1, x2) - min(x0, x1, x2)
    if abs(a) * span * span <= 1e-3 * max(abs(y0), abs(y1), abs(y2), 1.0):
        return None
    disc = b * b - 4 * a * c
    if disc < 0:
        return None
    roots = sorted(((-b + disc ** 0.5) / (2 * a), (-b - disc ** 0.5) / (2 * a)))
    return next((r for r in roots if r > above), None)


def _bound_cap(prober, lo, limit):
    """The largest size in ``[lo, limit]`` whose lower bound fits the budget (``lo``'s does).

    Growing: the secant through the two largest fitting sizes while the bound is exactly
    linear (then one step lands on the cap), else the parabola through three (DenseNet's bound
    grows quadratically), each step at most quadrupling the size so that a bad guess cannot
    ask for a huge, slow-to-build network. Bracketed: the parabola through the bracket and the
    next fitting size, with a bisection whenever a step fails to halve the bracket. The cap's
    program is then built, so its bound is exact; if that contradicts a linear extrapolation,
    the search runs again without extrapolating.
    """
    budget = prober.budget

    def guess(pts, lo=None):
        """A size where the bound meets the budget, from known (size, bound) points."""
        if prober._line() is not None:
            return _secant(pts[-2:], budget)
        return _predict(pts, budget, lo)

    ok, bad = lo, limit + 1
    while bad == limit + 1 and ok < limit:          # grow until a size exceeds the bound
        pts = sorted((s, lb) for s, (lb, _) in prober.bounds.items() if lb <= budget)
        g = guess(pts)
        top = limit if prober._line() is not None else 4 * max(ok, 1)
        cand = min(max(g if g is not None else ok + 1, ok + 1), top, limit)
        if prober.within_bound(cand, extrapolate=True):
            ok = cand
        else:
            bad = cand
    width = None
    while bad - ok > 1:                              # bracketed: interpolate, else bisect
        if width is not None and 2 * (bad - ok) > width:
            cand = (ok + bad) // 2
        else:
            known = {**prober.extrapolated, **prober.bounds}
            pts = sorted((s, v[0]) for s, v in known.items() if s < ok) [-1:]
            pts += [(ok, prober.bound(ok, extrapolate=True)),
                    (bad, prober.bound(bad, extrapolate=True))]
            g = guess(pts, ok)
            cand = g if g is not None else (ok + bad) // 2
        width = bad - ok
        cand = min(max(cand, ok + 1), bad - 1)
        if prober.within_bound(cand, extrapolate=True):
            ok = cand
        else:
            bad = cand
    if ok in prober.extrapolated:                    # build the cap: is the line still exact?
        predicted = prober.extrapolated[ok]
        prober.program(ok)
        if prober.bounds[ok] != predicted:
            prober.extrapolated.clear()
            prober.linear = False
            return _bound_cap(prober, lo, limit)
    return ok


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
    framework: str = "superneurons"   # program semantics of every simulation

    def frame(self):
        """One row per policy (a tidy table; bytes and seconds in SI units)."""
        import pandas as pd
        cols = (["policy", "family", "batch", "max_depth", "k", "network"] if self.axis == "depth"
                else ["policy", "network", "max_batch"])
        cols += ["framework", "step_time_s", "images_per_s", "peak_ideal_bytes", "next_size"
                 if self.axis == "batch" else "next_depth", "next_failure", "simulations"]
        out = []
        for r in self.rows:
            row = {"policy": r.policy, "network": r.network, "framework": self.framework,
                   "step_time_s": r.step_time_s,
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
class _AllPolicies(list):
    """The policies ``all`` means (:func:`snsim.policies.all_policies`): those that cannot plan
    the searched programs are left out."""

    def applicable(self, program):
        return [n for n in applicable_policies(program) if n in self]


def _resolve(hardware, budget_bytes, policies):
    hw = resolve_hardware(hardware)
    budget = hw.budget_bytes if budget_bytes is None else parse_bytes(budget_bytes, field="budget")
    if budget <= 0:
        raise ConfigError(f"budget (={budget} B) must be > 0")
    if policies is None or policies == "all":
        names = _AllPolicies(all_policies())
    else:
        names = [policies] if isinstance(policies, str) else list(policies)
        names = [n.strip() for item in names for n in str(item).split(",") if n.strip()]
        if not names:
            raise ConfigError("policies must name at least one policy (or 'all')")
        for n in names:
            get_policy(n)   # unknown names fail before any simulation
    return hw, budget, names


def _framework(framework):
    from ..api import check_framework
    check_framework(framework)
    return framework


def _rewrites_program(name, policy_options):
    """Whether policy ``name``'s plans run a program of their own (a static bound of their own)."""
    pol = get_policy(name, **(policy_options or {}).get(name, {}))
    return type(pol).bound_program is not Policy.bound_program


def _search_policies(prober, policies, lo, cap):
    """``{policy: (largest feasible size, smallest infeasible or beyond)}`` of ``policies``
    (all feasible at ``lo``), searched one after the other in ``[lo, cap]``: an LRU policy
    starts where the LRU policy searched before it ended. The one search of every policy, run
    in the search's own process or in a worker (:func:`_run_tasks`)."""
    best = {}
    for n in policies:
        if prober.lru.get(n):
            # the cap, or the answer of the LRU policy searched before: LRU caches end close
            # together, on programs already built
            start = max((best[m][0] for m in best if prober.lru.get(m) and best[m][0]),
                        default=cap)
        else:
            for s in (lo + 1, lo + 3):   # three cheap points: a line, or a parabola
                if s > cap or not prober.feasible(n, s):
                    break
            start = prober.predict(n)
            probed = lo + 3
            # a prediction far beyond the points is checked first on a cheap size 4x larger
            # (a peak linear over k = 1..8 may grow faster from k = 16, as checkpoint's does),
            # until the peaks are exactly linear over a 64-fold span (cpu_offload's 1..64)
            while start is not None and start > 4 * probed and 4 * probed <= cap \
                    and not prober.exactly_linear(n):
                probed *= 4
                if not prober.feasible(n, probed):
                    break
                start = prober.predict(n)
            # growing faster and faster (convex), the parabola's crossing undershoots a peak
            # that has turned linear (checkpoint's, from k = 16): a cheap size between the two
            # largest points shows whether the peaks are exactly linear there, and if they
            # are, the line through them is the prediction
            mid = prober.convex_midpoint(n)
            if start is not None and start > 2 * probed and mid is not None \
                    and prober.feasible(n, mid):
                start = prober.predict(n)
            start = start or lo + 1
        best[n] = _largest_true(lambda s, n=n: prober.feasible(n, s), lo, cap + 1, start,
                                lambda a, b, n=n: prober.predict(n, a, b),
                                from_above=bool(prober.lru.get(n)))
    return best


def default_jobs():
    """Worker processes a search uses when not told: the CPUs this process may run on."""
    count = getattr(os, "process_cpu_count", None) or os.cpu_count   # Python 3.13+: affinity
    return count() or 1


def _check_jobs(jobs):
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs (={jobs!r}) must be a positive integer: the number of worker "
                          f"processes (1: search in this process)")


def _run_tasks(prober, tasks, lo, cap, jobs):
    """:func:`_search_policies` of every task (a list of policies) on ``prober``, merged into
    ``{policy: (largest feasible, smallest infeasible)}``.

    With ``jobs`` > 1 (None: :func:`default_jobs`) and more than one task, the tasks run in up
    to ``jobs`` worker processes, forked where the platform forks safely (they inherit the
    prober, its programs, bounds and learned splice records, copy-on-write) and started afresh
    with a pickled prober elsewhere. Each worker returns its policies' answers and runs, and the
    bounds of the programs it built; they are merged here in the tasks' order, so the prober
    ends as an in-process search leaves it (the tasks share no state that changes a result:
    runs are keyed by policy, programs and bounds are functions of the size). A worker's error
    is raised here, the first in the tasks' order.
    """
    jobs = min(default_jobs() if jobs is None else jobs, len(tasks))
    best = {}
    if jobs <= 1:
        for task in tasks:
            best.update(_search_policies(prober, task, lo, cap))
        return best
    import multiprocessing
    # fork where it is safe (not on macOS, whose system libraries may not survive it)
    fork = "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin"
    context = multiprocessing.get_context("fork" if fork else "spawn")
    on_probe, prober.on_probe = prober.on_probe, None   # progress is reported here

    def merge(answer):
        task_best, results, simulations, lru, bounds = answer
        best.update(task_best)
        prober.simulations.update(simulations)
        prober.lru.update(lru)
        prober.bounds.update(bounds)
        for key, r in results:
            prober.results[key] = r
            if on_probe is not None:
                on_probe(*key, r)
    try:
        in_workers(_worker_search, tasks, merge, jobs=jobs, context=context,
                   initializer=_worker_start, initargs=(prober, lo, cap))
    finally:
        prober.on_probe = on_probe
    return best


def in_workers(fn, items, on_result, *, jobs, context, initializer=None, initargs=()):
    """``on_result(fn(item))`` for every item, ``fn`` run in up to ``jobs`` worker processes
    started by multiprocessing ``context``, ``on_result`` here in the items' order. An error (a
    worker's, the first in the items' order, or ``on_result``'s) is raised here and the items
    still queued are cancelled; a worker that dies is one line (:class:`~snsim.errors.
    SnsimError`)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    try:
        with ProcessPoolExecutor(jobs, mp_context=context, initializer=initializer,
                                 initargs=initargs) as pool:
            futures = [pool.submit(fn, item) for item in items]
            try:
                for future in futures:
                    on_result(future.result())
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)   # not the items still queued
                raise
    except BrokenProcessPool as e:
        raise SnsimError(f"a search worker process ended abruptly ({e}); out of host memory? "
                         f"--jobs 1 searches in this process") from e


#: in a search's worker process: (prober, lo, cap, runs and bounds it started with)
_WORKER = None


def _worker_start(prober, lo, cap):
    global _WORKER
    gc.disable()    # as in the search (:mod:`snsim.gcpause`); a started (not forked) worker
    _WORKER = (prober, lo, cap, set(prober.results), set(prober.bounds))


def _worker_search(policies):
    """One task in a worker: the policies' answers, their runs (in the order run), simulation
    counts and LRU flags, and the bounds of the programs this worker built."""
    prober, lo, cap, known, known_bounds = _WORKER
    best = _search_policies(prober, policies, lo, cap)
    mine = set(policies)
    return (best, [(key, r) for key, r in prober.results.items()
                   if key[0] in mine and key not in known],
            {n: prober.simulations.get(n, 0) for n in policies},
            {n: prober.lru[n] for n in policies if n in prober.lru},
            {s: b for s, b in prober.bounds.items() if s not in known_bounds})


def _search(space, prober, names, lo, limit, *, subject, parameter, batch, wall0, jobs=1):
    what = "depth" if space.axis == "depth" else "batch"
    if limit < lo:
        raise ConfigError(f"the largest {what} to try ({_show(space, limit)}) is below the "
                          f"smallest ({_show(space, lo)})")
    if isinstance(names, _AllPolicies):
        names = names.applicable(prober.program(lo))
    # a policy that rewrites the program (zero_offload) has its own static bound: searched
    # on its own prober, so that its bound neither caps nor uncaps the others
    own = [n for n in names if _rewrites_program(n, prober.policy_options)]
    if own and len(own) < len(names):
        rest = [n for n in names if n not in own]
        main = _search(space, prober, rest, lo, limit, subject=subject, parameter=parameter,
                       batch=batch, wall0=wall0, jobs=jobs)
        subs = [_search(space, prober.fresh(), [n], lo, limit, subject=subject,
                        parameter=parameter, batch=batch, wall0=wall0) for n in own]
        rows = {r.policy: r for rep in (main, *subs) for r in rep.rows}
        return dataclasses.replace(
            main, rows=[rows[n] for n in names],
            probes=main.probes + [p for rep in subs for p in rep.probes],
            wall_s=time.perf_counter() - wall0)
    prober.policies = tuple(names)
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
    cap = _bound_cap(prober, lo, limit)
    # LRU policies first: they probe near the cap, whose program the bound search just built
    order = sorted(names, key=lambda n: not prober.lru.get(n, False))
    best = {n: (None, lo) for n in order if not first[n].feasible}
    # the LRU policies' searches form one chain (each starts where the one before ended); every
    # other policy's search is a task of its own
    lru = [n for n in order if n not in best and prober.lru.get(n)]
    tasks = ([lru] if lru else []) + [[n] for n in order if n not in best and n not in lru]
    best.update(_run_tasks(prober, tasks, lo, cap, jobs))
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
                        wall_s=time.perf_counter() - wall0, framework=space.framework)


def _show(space, size):
    return f"{space.depth(size)} (k={size})" if space.axis == "depth" else str(size)


@without_gc   # full collections rescan every cached program: half the search time
def max_depth(family="resnet", *, batch=16, hardware="k40c", policies=None, min_depth=None,
              max_depth=None, budget_bytes=None, allocator="ideal", optimizer="sgd-momentum",
              input_size=None, variant="torchvision", policy_options=None, on_probe=None,
              framework="superneurons", jobs=1, amp=None, param_dtype="fp32"):
    """The deepest member of ``family`` each policy trains within the budget.

    Parameters
    ----------
    family : {"resnet", "vgg", "densenet", "gpt", "llama"} or Family
        ``resnet``: blocks (3, 4, k, 3), depth 3(10+k)+2; ``vgg``: conv stages (2, 2, k, k, k),
        depth 3k+7; ``densenet``: blocks (6, 12, k, 16), depth 2k+73; ``gpt``, ``llama``: k
        transformer blocks at GPT-2 small's / TinyLlama's width (``input_size``: the sequence).
    batch : int
    hardware : str or HardwareSpec
    policies : None, "all", str or list of str
        Policy names (default ``all``: every registered policy but those that set
        ``in_all = False``, solvers that run only when named).
    min_depth, max_depth : int, optional
        Depth range to search (default: the family's smallest member, and 10,000).
    budget_bytes : int or str, optional
        Default: the preset's budget.
    policy_options : dict, optional
        ``{policy name: {option: value}}``.
    on_probe : callable, optional
        Called as ``on_probe(policy, k, result)`` after every simulation (progress bars).
    framework : {"superneurons", "pytorch"}
        Program semantics (:func:`snsim.api.make_program`).
    amp, param_dtype
        Autocast (``"bf16"``/``"fp16"``) or pure 16-bit training of every member (PyTorch
        semantics: :func:`snsim.program_torch.build_torch_program`).
    jobs : int or None
        Worker processes that search the policies concurrently (None: one per CPU, at most
        one per policy; 1, the default: in this process). The report is the same for every
        ``jobs`` but its ``wall_s``.

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
    _check_jobs(jobs)
    fam = get_family(family)
    if int(batch) <= 0:
        raise ConfigError(f"batch (={batch}) must be a positive integer")
    hw, budget, names = _resolve(hardware, budget_bytes, policies)
    lo = fam.min_size if min_depth is None else \
        max(fam.min_size, fam.size_for_depth(int(min_depth), round_up=True))
    top = DEFAULT_MAX_DEPTH if max_depth is None else int(max_depth)
    if top < fam.depth(fam.min_size):
        raise ConfigError(f"max depth (={top}) is below the smallest {fam.name} depth "
                          f"{fam.depth(fam.min_size)}")
    if min_depth is not None and max_depth is not None and int(max_depth) < int(min_depth):
        raise ConfigError(f"max depth (={max_depth}) must be >= min depth (={min_depth})")
    limit = fam.size_for_depth(top)
    space = _DepthSpace(fam, batch=int(batch), input_size=input_size, variant=variant,
                        framework=_framework(framework), precision=(amp, param_dtype))
    prober = _Prober(space, hw, budget, allocator=allocator, optimizer=optimizer,
                     policy_options=policy_options, on_probe=on_probe)
    return _search(space, prober, names, lo, limit, subject=fam.name, parameter=fam.parameter,
                   batch=int(batch), wall0=wall0, jobs=jobs)


@without_gc
def max_batch(network="resnet50", *, hardware="k40c", policies=None, min_batch=1,
              max_batch=None, budget_bytes=None, allocator="ideal", optimizer="sgd-momentum",
              input_size=None, variant="torchvision", policy_options=None, on_probe=None,
              framework="superneurons", jobs=1, amp=None, param_dtype="fp32"):
    """The largest mini-batch of zoo ``network`` each policy trains within the budget.

    Parameters are those of :func:`max_depth` (``jobs`` included), with ``network`` (a zoo name)
    and a batch range (default 1 .. 2**20) instead of a family and a depth range.

    Examples
    --------
    >>> rep = max_batch("lenet", policies="keep_all", budget_bytes="64MiB")
    >>> row = rep.best("keep_all")
    >>> row.next_size == row.max_size + 1
    True
    """
    wall0 = time.perf_counter()
    _check_jobs(jobs)
    hw, budget, names = _resolve(hardware, budget_bytes, policies)
    lo = int(min_batch)
    if lo <= 0:
        raise ConfigError(f"min batch (={min_batch}) must be a positive integer")
    limit = DEFAULT_MAX_BATCH if max_batch is None else int(max_batch)
    build_network(network, batch=1, input_size=input_size, variant=variant)  # unknown names fail
    space = _BatchSpace(network, input_size=input_size, variant=variant,
                        framework=_framework(framework), precision=(amp, param_dtype))
    prober = _Prober(space, hw, budget, allocator=allocator, optimizer=optimizer,
                     policy_options=policy_options, on_probe=on_probe)
    return _search(space, prober, names, lo, limit, subject=network, parameter="batch",
                   batch=None, wall0=wall0, jobs=jobs)


@without_gc
def min_budget(network, *, batch=None, hardware="k40c", policy="superneurons",
               policy_options=None, allocator="ideal", optimizer="sgd-momentum", input_size=None,
               variant="torchvision", tol_bytes=None, max_budget_bytes=None,
               framework="superneurons"):
    """The smallest budget under which ``policy`` trains ``network`` (bisection to ``tol_bytes``).

    With an LRU tensor cache the peak fills whatever budget it is given, so the smallest
    feasible budget is the honest capacity figure (SPEC §4). Feasibility is assumed monotone in
    the budget; the search starts from ``lower_bound_bytes`` (never feasible below it).
    ``tol_bytes`` defaults to 0.1% of the largest working set (at least 1 KiB).

    Returns
    -------
    (int, Result)
        The smallest feasible budget found (within ``tol_bytes``) and the run at it.

    Raises
    ------
    ConfigError
        When the run is infeasible even at ``max_budget_bytes`` (default: the preset's budget).

    Examples
    --------
    >>> b, r = min_budget("lenet", batch=8, policy="liveness", tol_bytes=1024)
    >>> r.feasible and r.lower_bound_bytes <= b <= r.peak_ideal_bytes + 1024
    True
    """
    from ..api import make_program
    hw = resolve_hardware(hardware)
    program = make_program(network, batch=batch, hardware=hw, input_size=input_size,
                           variant=variant, optimizer=optimizer, framework=framework)
    pol = get_policy(policy, **(policy_options or {}))
    hi = hw.budget_bytes if max_budget_bytes is None else parse_bytes(max_budget_bytes,
                                                                      field="max_budget")

    def run(budget):
        return run_plan(program, pol.plan(program, hw, budget), hw, budget_bytes=budget,
                        allocator=allocator, record=False)
    best = run(hi)
    if not best.feasible:
        raise ConfigError(f"{program.name} batch {program.batch} is infeasible under {policy} "
                          f"even with {hi:,} B: {best.failure}")
    lo = program.lower_bound_bytes() - 1
    if tol_bytes is None:
        tol_bytes = max(1024, (lo + 1 - program.static_total_bytes) // 1000)
    if lo < best.peak_ideal_bytes < hi:   # the peak it reached is usually enough
        r = run(best.peak_ideal_bytes)
        if r.feasible:
            hi, best = best.peak_ideal_bytes, r
    while hi - lo > tol_bytes:
        mid = (lo + hi) // 2
        r = run(mid)
        if r.feasible:
            hi, best = mid, r
        else:
            lo = mid
    return hi, best


@without_gc
def sweep_depth(family="resnet", ks=(1, 2, 4, 8), *, batch=16, hardware="k40c", policies=None,
                budget_bytes=None, allocator="ideal", optimizer="sgd-momentum", input_size=None,
                variant="torchvision", policy_options=None, on_probe=None,
                framework="superneurons"):
    """Every policy at every ``k`` of ``family``: a tidy frame for :func:`snsim.plots.sweep_curve`.

    Sizes beyond the static bound are reported infeasible without simulating (``pruned``).

    Examples
    --------
    >>> df = sweep_depth("resnet", [1, 2], batch=2, policies=["liveness"])
    >>> list(df["depth"]), bool(df["feasible"].all())
    ([35, 38], True)
    """
    fam = get_family(family)
    hw, budget, names = _resolve(hardware, budget_bytes, policies)
    space = _DepthSpace(fam, batch=int(batch), input_size=input_size, variant=variant,
                        framework=_framework(framework))
    prober = _Prober(space, hw, budget, allocator=allocator, optimizer=optimizer,
                     policy_options=policy_options, on_probe=on_probe, keep_steps=0)
    rows = []
    import pandas as pd
    if isinstance(names, _AllPolicies) and ks:
        names = names.applicable(prober.program(int(ks[0])))
    for k in ks:
        k = int(k)
        if k < fam.min_size:
            raise ConfigError(f"family {fam.name}: k (={k}) must be >= {fam.min_size}")
        for n in names:
            base = {"family": fam.name, "framework": space.framework, "policy": n, "k": k,
                    "depth": fam.depth(k),
                    "batch": int(batch), "hardware": hw.name, "budget_bytes": budget}
            if not prober.within_bound(k):
                rows.append({**base, "feasible": False, "pruned": True, "peak_ideal_bytes": None,
                             "step_time_s": None, "lower_bound_bytes": prober.bounds[k][0],
                             "static_bytes": prober.bounds[k][1],
                             "failure": prober.bound_reason(k)})
                continue
            r = prober.run(n, k)
            rows.append({**base, "feasible": r.feasible, "pruned": False,
                         "peak_ideal_bytes": r.peak_ideal_bytes if r.feasible else None,
                         "step_time_s": r.step_time_s if r.feasible else None,
                         "lower_bound_bytes": r.lower_bound_bytes, "static_bytes": r.static_bytes,
                         "failure": str(r.failure or "")})
    return pd.DataFrame(rows)
