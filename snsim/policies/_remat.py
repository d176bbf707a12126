"""Rematerialisation (and paging) as a mixed-integer program over stages, after Checkmate.

The solver behind ``checkmate`` and ``joint``: Jain et al., *Checkmate: Breaking the Memory
Wall with Optimal Tensor Rematerialization* (MLSys 2020), on a :class:`~snsim.program.Program`,
with POET's paging (Patil et al., ICML 2022) as an option, charged in link time.

Stage ``t`` is program step ``t`` (every step with deps). Within a stage, the replays
``R[t, i]`` of earlier forward steps run in program order, then the step itself.
``S[t, x]`` says activation ``x`` is resident when stage ``t`` starts. ``Free[t, x, k]``
(continuous, bounded above by each of its binary factors, so it is exact at an integral point)
releases ``x`` right after op ``k`` of stage ``t`` once nothing later in the stage reads it and
the next stage does not keep it. ``U[t, k]`` is the managed memory while op ``k`` runs: the
fixed tensors (gradients, workspaces, activations that cannot be replayed: their liveness
lifetimes) plus the resident activations, minus the frees so far — the frees are what make the
peak right (SPEC §11's trap: Checkmate without ``DEBUG_SCHEDULER_RAM`` counts every tensor).
With ``algos``, each convolution op also picks its algorithms per cuDNN pass among the tiers
of :func:`conv_passes`, its workspace counted on top of ``U`` while it runs
(:func:`build_model`), and each conv step gets a knapsack row in binaries (:func:`_carry_row`)
that tightens the LP relaxation without moving the optimum.

:func:`to_instructions` turns a solution into the engine's plan (``Recompute``/``Drop``/
``Free``, and ``Offload``/``Prefetch`` when paging); the engine replays exactly the memory the
model counts (the ideal allocator's peak equals ``U``'s maximum at the solver's solution, less
what the translation frees earlier than the model must).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import product

# numpy is imported in the functions that use it: loading it costs a CLI command that never
# calls them (maxdepth, run) 0.16 s

from ..plan import Compute, Drop, Free, Offload, Prefetch, Recompute
from ..program import CONV_PASSES

_TOL = 1e-6   # share of a large budget kept free against HiGHS' feasibility tolerance


@dataclass
class RematProblem:
    """The structure of one program that the MILP needs (built once per plan)."""

    program: object
    size: list
    decision: list            # tensor ids the model may drop and replay (activations)
    is_decision: list
    prod: list                # forward step that writes each tensor (-1: none)
    last: list
    needdec: dict             # step -> decision tensors it reads (deps minus own outputs)
    outdec: dict              # F step -> its decision outputs
    rec: list                 # forward steps that can be replayed
    stages: list              # step indices that have deps
    fixed_before: dict        # stage -> fixed bytes resident before its step
    fixed_during: dict        # stage -> fixed bytes while its step runs
    cost_s: list = field(default_factory=list)   # seconds the engine charges a replay
    step_s: list = field(default_factory=list)   # ... a step, zero-workspace algorithms
    passes: dict = field(default_factory=dict)   # conv step -> [ConvPass] (algorithm tiers)
    ops: dict = field(default_factory=dict)   # stage -> replayable steps (program order)
    consumers: dict = field(default_factory=dict)


def remat_problem(program):
    """Classify the program's tensors and steps for the MILP.

    An activation is a *decision* tensor when a forward step writes it first, something later
    reads it, and its producer can be replayed: a forward step can be replayed when everything
    it reads (its deps that are not its outputs) is a decision tensor or static.
    Everything else has its liveness lifetime (first to last use).
    """
    import numpy as np
    steps, tensors = program.steps, program.tensors
    n = len(tensors)
    first, last = program.uses()
    # a convolution's workspace takes only what is free: cuDNN falls back to an algorithm
    # without it (the engine's workspace_fallbacks), so it never decides feasibility
    size = [0 if t.kind == "workspace" and t.producer_type == "CONV" else t.nbytes
            for t in tensors]
    prod = [-1] * n
    for s in steps:
        if s.phase == "F":
            for y in s.outputs:
                if prod[y] < 0:
                    prod[y] = s.index
    cand = {x for x in range(n) if tensors[x].kind == "activation" and prod[x] >= 0
            and first[x] == prod[x] and last[x] > prod[x]}
    fsteps = [s for s in steps if s.phase == "F"]
    while True:
        rec = {s.index for s in fsteps
               if any(y in cand for y in s.outputs)
               and all(x in cand for x in s.deps if x not in s.outputs)}
        keep = {x for x in cand if prod[x] in rec}
        if keep == cand:
            break
        cand = keep
    is_dec = [x in cand for x in range(n)]
    needdec, outdec, consumers = {}, {}, {}
    last = list(last)
    for s in steps:
        outs = set(s.outputs) if s.phase == "F" else set()
        needdec[s.index] = tuple(x for x in s.deps if is_dec[x] and x not in outs)
        if s.phase == "F":
            outdec[s.index] = tuple(y for y in s.outputs if is_dec[y])
    for i in rec:
        for x in needdec[i]:
            consumers.setdefault(prod[x], set()).add(i)
    # a decision tensor stays "alive" (dropped, not freed) while a replay may still read it:
    # the engine releases a freed tensor that a replay makes at once, as a by-product
    for i in sorted(rec, reverse=True):
        until = max(last[y] for y in outdec[i])
        for x in needdec[i]:
            last[x] = max(last[x], until)
    stages = [s.index for s in steps if s.deps]
    # fixed bytes: tensors that are not decision ones, live from first to last use
    delta = np.zeros(len(steps) + 1, dtype=np.int64)
    _, lastuse = program.uses()
    for x in range(n):
        if not is_dec[x] and first[x] >= 0:
            delta[first[x]] += size[x]
            delta[lastuse[x] + 1] -= size[x]
    during = np.cumsum(delta)
    fresh = np.zeros(len(steps), dtype=np.int64)
    for x in range(n):
        if not is_dec[x] and first[x] >= 0:
            fresh[first[x]] += size[x]
    fixed_during = {t: int(during[t]) for t in stages}
    fixed_before = {t: int(during[t] - fresh[t]) for t in stages}
    pb = RematProblem(program=program, size=size, decision=sorted(cand), is_decision=is_dec,
                      prod=prod, last=last, needdec=needdec, outdec=outdec,
                      rec=sorted(rec), stages=stages, fixed_before=fixed_before,
                      fixed_during=fixed_during, consumers=consumers)
    pb.ops = {t: _useful_replays(pb, t) for t in stages}
    pb.passes = conv_passes(program)
    pb.step_s = [sum(c.base[0] for c in pb.passes[s.index]) if s.index in pb.passes
                 else s.time_s for s in steps]
    pb.cost_s = list(pb.step_s)    # a replay runs the forward's passes
    return pb


@dataclass(frozen=True)
class ConvPass:
    """One cuDNN pass of a convolution step: ``base`` is the algorithm the engine runs with
    no workspace choice (``workspace="none"``: the fastest without workspace); ``tiers`` the
    faster algorithms that no other is both faster than and smaller than in workspace, fastest
    first — the only ones ``workspace="dynamic"`` can pick (the fastest that fits), so a choice
    among ``base`` and ``tiers`` contains every run-time choice. Rows are
    ``(time_s, ws_bytes, name)``."""

    name: str
    base: tuple
    tiers: tuple


def conv_passes(program):
    """``{step index: [ConvPass, ...]}`` for the forward and backward steps of convolutions
    with an algorithm table, passes in the engine's order (SPEC §6; a step whose passes the
    table lacks gets ``[]``: the engine runs it in no time, as it charges the passes only)."""
    table = program.conv_rows()
    out = {}
    for s in program.steps:
        rows = table.get(s.layer) if s.type == "CONV" else None
        if not rows or s.phase not in CONV_PASSES:
            continue
        passes = []
        for name in CONV_PASSES[s.phase]:
            r = rows.get(name)
            if r is None:
                continue
            base = min((x for x in r if x[1] == 0), default=r[-1])   # the engine's _choose
            tiers = []
            for x in r:          # fastest first: keep each that needs less than all faster
                if x[0] >= base[0]:
                    break
                if not tiers or x[1] < tiers[-1][1]:
                    tiers.append(x)
            passes.append(ConvPass(name, base, tuple(tiers)))
        out[s.index] = passes
    return out


def count_binaries(pb, budget_bytes, algos=False):
    """Binaries of :func:`build_model` (no paging): ``R``, ``S`` and, with ``algos``, the
    tiers that fit beside each conv op's floor."""
    n = sum(len(v) for v in pb.ops.values()) + sum(
        max(0, min(pb.last[x], pb.stages[-1]) - pb.prod[x]) for x in pb.decision)
    if algos:
        for t in pb.stages:
            for k in pb.ops[t] + [t]:
                cps = pb.passes.get(k, ())
                room = budget_bytes - op_floor_bytes(pb, t, k)
                base_ws = sum(c.base[1] for c in cps)
                n += sum(r[1] + base_ws - c.base[1] <= room for c in cps for r in c.tiers)
    return n


def op_floor_bytes(pb, t, k):
    """Managed bytes op ``k`` of stage ``t`` holds at least while it runs (what is fixed then
    and what the op reads and writes): no workspace above ``budget - this`` ever fits."""
    base = pb.fixed_during[t] if k == t else pb.fixed_before[t]
    return base + sum(pb.size[x] for x in pb.needdec[k]) + \
        sum(pb.size[y] for y in pb.outdec.get(k, ()))


def best_combination(passes, free_bytes):
    """The fastest algorithms for one conv step whose workspaces fit ``free_bytes`` together
    (they are held at once: the engine keeps ``bwd_data``'s while ``bwd_filter`` runs).
    Returns ``(time_s, {pass: name} of the non-base picks)``."""
    best = (sum(c.base[0] for c in passes), {})
    if free_bytes < sum(c.base[1] for c in passes):
        return best
    for combo in product(*[(c.base,) + c.tiers for c in passes]):
        ws = sum(r[1] for r in combo)
        time_s = sum(r[0] for r in combo)
        if ws <= free_bytes and time_s < best[0]:
            best = (time_s, {c.name: r[2] for c, r in zip(passes, combo) if r is not c.base})
    return best


def _useful_replays(pb, t):
    """Forward steps before ``t`` whose replay in stage ``t`` can serve something: an output
    still read at ``t`` or later, or a replay in the same stage that needs it."""
    useful = set()
    for i in reversed(pb.rec):
        if i >= t:
            continue
        if any(pb.last[y] >= t for y in pb.outdec[i]) or \
                any(j in useful for j in pb.consumers.get(i, ())):
            useful.add(i)
    return sorted(useful)


def liveness_peak_bytes(pb):
    """Managed peak with nothing replayed (every decision tensor kept to its last use)."""
    import numpy as np
    live = np.zeros(len(pb.program.steps) + 1, dtype=np.int64)
    first, lastuse = pb.program.uses()
    for x in pb.decision:
        live[first[x]] += pb.size[x]
        live[lastuse[x] + 1] -= pb.size[x]
    during = np.cumsum(live)
    return max((pb.fixed_during[t] + int(during[t]) for t in pb.stages), default=0)


def floor_bytes(pb):
    """No schedule that runs each step with its deps resident can need less: per stage, the
    fixed bytes plus what the step itself reads and writes. Returns ``(bytes, stage)``."""
    best, at = 0, -1
    for t in pb.stages:
        need = pb.fixed_during[t] + sum(pb.size[x] for x in pb.needdec[t]) + \
            sum(pb.size[y] for y in pb.outdec.get(t, ()))
        if need > best:
            best, at = need, t
    return best, at


@dataclass
class Solution:
    """Replays per stage, residency per stage, and how the solver got there."""

    replays: dict           # stage -> [forward steps replayed in it, program order]
    stored: dict            # stage -> set of decision tensors resident at its start
    status: str             # "optimal", "time_limit", "infeasible", "rounded", "trivial", ...
    objective_s: float = 0.0     # what the MILP minimises: compute_time_s - a constant
    compute_time_s: float = 0.0  # every step and replay with their algorithms (no stalls)
    bound_s: float = 0.0
    gap: float = 0.0
    solve_s: float = 0.0
    model_peak_bytes: int = 0
    variables: int = 0
    binaries: int = 0
    message: str = ""
    offloaded: set = field(default_factory=set)   # tensors copied to the host (joint)
    algos: dict = field(default_factory=dict)   # (stage, op) -> {pass: name}, non-base picks
    prefetch_at: dict = field(default_factory=dict)   # stage -> tensors copied back before it
    incumbent: str = "milp"   # or "lp_rounding": the LP's rounding beat a time-limited MILP


class _Model:
    """Variables and sparse rows for scipy.optimize.milp."""

    def __init__(self):
        self.lb, self.ub, self.cost, self.integer = [], [], [], []
        self.rows, self.cols, self.vals, self.rlo, self.rhi = [], [], [], [], []

    def var(self, lo=0.0, hi=1.0, cost=0.0, integer=True):
        self.lb.append(lo)
        self.ub.append(hi)
        self.cost.append(cost)
        self.integer.append(1 if integer else 0)
        return len(self.lb) - 1

    def row(self, terms, lo, hi):
        r = len(self.rlo)
        for v, c in terms:
            self.rows.append(r)
            self.cols.append(v)
            self.vals.append(c)
        self.rlo.append(lo)
        self.rhi.append(hi)


def build_model(pb, budget_bytes, *, count_frees=True, link=None, algos=False, tighten=True):
    """The MILP for managed budget ``budget_bytes``; memory is scaled by the budget.

    ``algos=True`` lets each convolution op (a stage's step, or a replay) run a faster
    algorithm of its passes' tiers (:func:`conv_passes`) instead of the zero-workspace one:
    a binary per (op, pass, tier) that fits beside the op's floor, at most one per pass (none
    unless the op runs), its workspace counted on top of ``U`` while the op runs, its time
    (less the base's) in the objective. A constant term makes the objective the seconds
    above the fastest feasible algorithms of the stages' steps (``>= 0``, so HiGHS' relative
    gap is relative to what the plan adds). With ``tighten`` (the default), each stage step
    that has tiers also gets :func:`_carry_row`, a knapsack in binaries that every integral
    solution satisfies and that makes the LP bound strong enough to prove optimality (VGG-16
    batch 32 at 0.7x of liveness' peak: LP bound 0.041 -> 0.057 s of the 0.091 s optimum,
    proven in 7 s instead of a 27% gap at 60 s); ``tighten=False`` is the same model without
    it, for tests that the optimum does not move.

    ``count_frees=False`` is the mutant of SPEC §11's trap (no frees inside a stage: every
    activation a stage touches counts to its end). ``link`` = ``(h2d_s, d2h_s)`` per tensor
    adds paging (joint): each decision tensor may be copied to the host once, when the model
    lets it go (``P[x]``, charged to its producer's stage), and back once for stage ``t``
    (``In[t, x]``, issued at the start of the stage before, resident from then on); a stage's
    copies share the link (one budget of seconds) and what exceeds the stage's compute is a
    stall charged to the objective.
    """
    import numpy as np
    m = _Model()
    steps = pb.program.steps
    size, prod, last = pb.size, pb.prod, pb.last
    scale = 1.0 / max(budget_bytes, 1)
    # integer byte sums: below 1e7 B HiGHS' 1e-7 tolerance is under a byte, so the budget is
    # exact; above, the rows lose _TOL of it (more than the tolerance, at most 0.5 B less)
    cap = 1.0 - max(0.0, _TOL - 0.5 * scale)
    stages = pb.stages
    nxt = {t: (stages[k + 1] if k + 1 < len(stages) else None) for k, t in enumerate(stages)}
    R, S, IN, P = {}, {}, {}, {}
    for t in stages:
        for i in pb.ops[t]:
            R[t, i] = m.var(cost=pb.cost_s[i])
    for x in pb.decision:
        for t in stages:
            if prod[x] < t <= last[x]:
                S[t, x] = m.var()
    if link is not None:
        h2d_s, d2h_s = link
        for x in pb.decision:
            if steps[last[x]].phase != "B":
                continue     # only what backward reads is worth a copy
            P[x] = m.var()
            ins = []
            for k, t in enumerate(stages):
                # issued at the start of the stage before (to land in time), after x's stage
                if k and prod[x] < stages[k - 1] and t <= last[x] and steps[t].phase == "B":
                    IN[t, x] = m.var()
                    ins.append((IN[t, x], 1.0))
            m.row(ins + [(P[x], -1.0)], -np.inf, 0.0)   # one copy back, only if copied out

    def present(t, x):
        """Terms that make x resident for an op of stage t."""
        terms = []
        if (t, x) in S:
            terms.append((S[t, x], 1.0))
        if (t, prod[x]) in R:
            terms.append((R[t, prod[x]], 1.0))
        if (t, x) in IN:
            terms.append((IN[t, x], 1.0))
        return terms

    U_all = []
    A = m.algo_vars = {}     # (stage, op, pass, algorithm) -> variable
    offset = 0.0
    for t in stages:
        ops = pb.ops[t]
        step_needs = set(pb.needdec[t])
        # dependencies
        for i in ops:
            for x in pb.needdec[i]:
                m.row(present(t, x) + [(R[t, i], -1.0)], 0.0, np.inf)
        for x in step_needs:
            m.row(present(t, x), 1.0, np.inf)
        # residency carried to the next stage
        nt = nxt[t]
        if nt is not None:
            for x in pb.decision:
                if (nt, x) in S and prod[x] != t:
                    m.row(present(t, x) + [(S[nt, x], -1.0)], 0.0, np.inf)
        # memory, op by op: U[k] = U[k-1] - (frees and by-products after k-1) + allocs of k
        readers = {}   # decision tensor -> ops of this stage (in order) that read it
        for k in ops + [t]:
            for x in pb.needdec[k]:
                readers.setdefault(x, []).append(k)
        base = pb.fixed_before[t]
        prev_u = None
        prev_release = []
        stored_terms = [(S[t, x], size[x] * scale) for x in pb.decision if (t, x) in S]
        # copies back for this stage and for the next one (issued now) are resident
        in_terms = [(IN[u, x], size[x] * scale) for x in pb.decision for u in (t, nt)
                    if (u, x) in IN]
        for k in ops + [t]:
            is_step = k == t
            alive = [y for y in pb.outdec.get(k, ()) if last[y] >= t]
            dead = sum(size[y] for y in steps[k].outputs if not (pb.is_decision[y]
                                                                 and last[y] >= t)
                       and (pb.is_decision[y] or last[y] < t)) if not is_step else 0
            u = m.var(0.0, cap, integer=False)
            U_all.append(u)
            if algos and k in pb.passes:
                offset += _algo_vars(m, pb, t, k, u, None if is_step else R[t, k],
                                     budget_bytes, scale, cap, A)
                if is_step and tighten:
                    _carry_row(m, pb, t, nt, S, A, scale, cap)
            terms = [(u, 1.0)]
            if is_step:
                const = pb.fixed_during[t] * scale + sum(size[y] for y in alive) * scale
            else:
                const = 0.0
                terms.append((R[t, k], -(sum(size[y] for y in alive) + dead) * scale))
            if prev_u is None:
                const += base * scale
                terms += [(v, -c) for v, c in stored_terms + in_terms]
                if is_step:
                    const -= base * scale   # fixed_during already holds the base
            else:
                terms.append((prev_u, -1.0))
                terms += prev_release
                if is_step:
                    const -= base * scale
            m.row(terms, const, const)
            # what this op releases before the next one
            prev_release = []
            if not is_step and dead:
                prev_release.append((R[t, k], dead * scale))
            candidates = list(dict.fromkeys(list(pb.needdec[k]) + alive))
            for x in candidates:
                if not is_step and x in step_needs:
                    continue            # the stage's step still reads it
                if not count_frees:
                    continue     # the mutant: nothing is released inside a stage
                f = m.var(0.0, 1.0, integer=False)
                if not is_step:
                    m.row([(f, 1.0), (R[t, k], -1.0)], -np.inf, 0.0)
                if nt is not None and (nt, x) in S:
                    m.row([(f, 1.0), (S[nt, x], 1.0)], -np.inf, 1.0)
                for j in readers.get(x, ()):
                    if j > k and j != t:
                        m.row([(f, 1.0), (R[t, j], 1.0)], -np.inf, 1.0)
                prev_release.append((f, size[x] * scale))
            prev_u = u
    if offset > 0:
        m.var(1.0, 1.0, cost=offset, integer=False)
    # compute seconds = objective + floor_s (every step at its base algorithms, less offset)
    m.floor_s = sum(pb.step_s) - offset
    return m, R, S, IN, P, U_all


def _carry_row(m, pb, t, nt, S, A, scale, cap):
    """A knapsack in binaries only, implied by the memory rows at an integral point: while
    stage ``t``'s step runs, its floor (:func:`op_floor_bytes`), every activation kept into
    the next stage (it exists by then: replays run before the step, so it is held through
    it) and the picked algorithms' workspaces are resident together.

    It cuts off what the chain of ``U`` rows allows in the LP relaxation: there ``Free`` and
    ``S`` at fractions let half of a tensor make room for half of a workspace, paid with
    half of a replay; here the room a workspace needs is bought only by whole ``S[t+1, x]``,
    which HiGHS' knapsack cuts see. Tightening, not a restriction: every integral solution
    of the model satisfies it."""
    import numpy as np
    cps = pb.passes[t]
    base_ws = sum(c.base[1] for c in cps)
    terms = [(a, (r[1] - c.base[1]) * scale) for c in cps for r in c.tiers
             if (a := A.get((t, t, c.name, r[2]))) is not None]
    if not terms:
        return
    reads = set(pb.needdec[t]) | set(pb.outdec.get(t, ()))
    if nt is not None:
        terms += [(S[nt, x], pb.size[x] * scale) for x in pb.decision
                  if (nt, x) in S and pb.prod[x] != t and x not in reads and pb.size[x]]
    m.row(terms, -np.inf, cap - (op_floor_bytes(pb, t, t) + base_ws) * scale)


def _algo_vars(m, pb, t, k, u, run, budget_bytes, scale, cap, A):
    """Tier binaries and the workspace row of conv op ``k`` in stage ``t`` (``run``: the
    replay's ``R``, ``None`` for the stage's step). Returns the objective's constant share."""
    import numpy as np
    cps = pb.passes[k]
    base_ws = sum(c.base[1] for c in cps)
    room = budget_bytes - op_floor_bytes(pb, t, k)
    mem = [(u, 1.0)] + ([(run, base_ws * scale)] if run is not None else [])
    offset = 0.0
    for c in cps:
        picks = []
        for r in c.tiers:
            if r[1] + base_ws - c.base[1] > room:
                continue        # never fits beside what the op itself holds
            a = A[t, k, c.name, r[2]] = m.var(cost=r[0] - c.base[0])
            picks.append((a, 1.0))
            mem.append((a, (r[1] - c.base[1]) * scale))
        if not picks:
            continue
        if run is None:
            m.row(picks, -np.inf, 1.0)
            offset += c.base[0] - min(r[0] for r in c.tiers if (t, k, c.name, r[2]) in A)
        else:
            m.row(picks + [(run, -1.0)], -np.inf, 0.0)
    if len(mem) > 1 or base_ws:
        m.row(mem, -np.inf, cap - (base_ws * scale if run is None else 0.0))
    return offset


def solve(pb, budget_bytes, *, relax=False, time_limit_s=60.0, count_frees=True, link=None,
          mip_rel_gap=1e-4, algos=False, tighten=True):
    """Solve the MILP (or its LP relaxation, rounded) for managed budget ``budget_bytes``;
    ``algos``: choose the convolutions' algorithms too (:func:`build_model`)."""
    import numpy as np
    # imported here: scipy.optimize takes ~0.5 s to import, and every CLI command imports
    # this module (the policy registry) while only the solver policies need it
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array
    t0 = time.perf_counter()
    m, R, S, IN, P, U = build_model(pb, budget_bytes, count_frees=count_frees, link=link,
                                    algos=algos, tighten=tighten)
    if link is not None:
        _add_link_rows(m, pb, R, IN, P, link)
    n = len(m.lb)
    A = coo_array((m.vals, (m.rows, m.cols)), shape=(len(m.rlo), n)).tocsr()
    cons = LinearConstraint(A, np.array(m.rlo), np.array(m.rhi))
    bounds = Bounds(np.array(m.lb), np.array(m.ub))
    c = np.array(m.cost)
    unit_s = max(float(np.abs(c).max(initial=0.0)), 1e-30)
    c = c / unit_s          # O(1) objective coefficients: HiGHS' absolute gap is 1e-6
    nbin = int(sum(m.integer))
    if relax:
        res = milp(c, constraints=cons, bounds=bounds, integrality=np.zeros(n),
                   options={"time_limit": time_limit_s})
        solve_s = time.perf_counter() - t0
        if res.x is None:
            status = "infeasible" if res.status == 2 else "no_solution"
            return Solution({}, {}, status, solve_s=solve_s, variables=n, binaries=nbin,
                            message=res.message)
        sol = _round(pb, res.x, R, S, IN, P, budget_bytes, algos, m.floor_s)
        sol.compute_time_s = compute_time_s(pb, sol)
        sol.bound_s = float(res.fun) * unit_s
        sol.solve_s = time.perf_counter() - t0
        sol.variables, sol.binaries = n, nbin
        if sol.status == "rounded":
            sol.gap = (sol.objective_s - sol.bound_s) / max(sol.objective_s, 1e-30)
        return sol
    res = milp(c, constraints=cons, bounds=bounds, integrality=np.array(m.integer),
               options={"time_limit": time_limit_s, "mip_rel_gap": mip_rel_gap})
    # stopped by the limit (HiGHS status 1): the LP relaxation's rounding may beat HiGHS'
    # incumbent or be the only schedule found (scipy's milp takes no starting solution, so it
    # cannot be handed to HiGHS instead); paging has no rounding, so joint keeps HiGHS' own
    rounded = None
    if res.status == 1 and link is None:
        lp = milp(c, constraints=cons, bounds=bounds, integrality=np.zeros(n),
                  options={"time_limit": time_limit_s})
        if lp.status == 0:
            rounded = _round(pb, lp.x, R, S, IN, P, budget_bytes, algos, m.floor_s)
            rounded.bound_s = float(lp.fun) * unit_s
            if rounded.status != "rounded":
                rounded = None
    solve_s = time.perf_counter() - t0
    if res.x is None and rounded is None:
        status = "infeasible" if res.status == 2 else "no_solution"
        return Solution({}, {}, status, solve_s=solve_s, variables=n, binaries=nbin,
                        message=res.message)
    bound_s = getattr(res, "mip_dual_bound", None)
    bound_s = float(bound_s) * unit_s if bound_s is not None and np.isfinite(bound_s) else None
    if res.x is not None:
        x = np.round(res.x)
        sol = _extract(pb, x, R, S, IN, P, m.algo_vars)
        sol.status = "optimal" if res.status == 0 else "time_limit"
        sol.objective_s = float(res.fun) * unit_s
        sol.compute_time_s = compute_time_s(pb, sol)
        sol.bound_s = bound_s if bound_s is not None else sol.objective_s
        sol.gap = float(getattr(res, "mip_gap", 0.0) or 0.0)
        sol.model_peak_bytes = int(round(max((res.x[u] for u in U), default=0.0)
                                         * budget_bytes))
    if rounded is not None:
        rounded.compute_time_s = compute_time_s(pb, rounded)
        if res.x is None or rounded.compute_time_s < sol.compute_time_s:
            sol = rounded
            sol.status, sol.incumbent = "time_limit", "lp_rounding"
            sol.bound_s = max(sol.bound_s, bound_s if bound_s is not None else -np.inf)
            sol.gap = (sol.objective_s - sol.bound_s) / max(sol.objective_s, 1e-30)
    sol.solve_s = solve_s
    sol.variables, sol.binaries = n, nbin
    sol.message = res.message
    return sol


def _add_link_rows(m, pb, R, IN, P, link):
    """Per stage: copies on the link minus the stage's compute is a stall, charged in time."""
    import numpy as np
    h2d_s, d2h_s = link
    for k, t in enumerate(pb.stages):
        nt = pb.stages[k + 1] if k + 1 < len(pb.stages) else None
        terms = [(IN[nt, x], h2d_s[x]) for x in pb.decision if (nt, x) in IN]
        terms += [(P[x], d2h_s[x]) for x in pb.outdec.get(t, ()) if x in P]
        if not terms:
            continue
        stall = m.var(0.0, np.inf, cost=1.0, integer=False)
        terms += [(R[t, i], -pb.cost_s[i]) for i in pb.ops[t]]
        m.row(terms + [(stall, -1.0)], -np.inf, pb.cost_s[t])


def _extract(pb, x, R, S, IN, P, A):
    replays = {t: [] for t in pb.stages}
    stored = {t: set() for t in pb.stages}
    for (t, i), v in R.items():
        if x[v] > 0.5:
            replays[t].append(i)
    for (t, y), v in S.items():
        if x[v] > 0.5:
            stored[t].add(y)
    for t in replays:
        replays[t].sort()
    prefetch = {}
    for (t, y), v in IN.items():
        if x[v] > 0.5:
            prefetch.setdefault(t, set()).add(y)
    offloaded = {y for s in prefetch.values() for y in s}   # a copy out is only worth one back
    sol = Solution(replays, stored, "", offloaded=offloaded, prefetch_at=prefetch)
    for (t, k, pass_name, name), v in A.items():
        if x[v] > 0.5:
            sol.algos.setdefault((t, k), {})[pass_name] = name
    prune(pb, sol)
    return sol


def prune(pb, sol):
    """Drop what a solution keeps or replays for nothing (a zero-cost replay, a tensor kept
    through a stage that neither reads it nor hands it on): it only costs memory or time."""
    stages = pb.stages
    keep = set()                       # what the next stage keeps (already pruned)
    for k in range(len(stages) - 1, -1, -1):
        t = stages[k]
        replays, reads = [], set(pb.needdec[t])
        for i in reversed(sol.replays[t]):
            if any(y in keep or y in reads for y in pb.outdec[i]):
                replays.append(i)
                reads |= set(pb.needdec[i])
        replays.reverse()
        sol.replays[t] = replays
        made = {y for i in replays for y in pb.outdec[i]}
        incoming = sol.prefetch_at.get(t, set())
        sol.stored[t] = {y for y in sol.stored[t]
                         if (y in reads or (y in keep and pb.prod[y] != t))
                         and y not in made and y not in incoming}
        keep = sol.stored[t]
    sol.algos = {(t, k): v for (t, k), v in sol.algos.items()
                 if k == t or k in sol.replays[t]}


def _reads_of(pb, ops):
    return {x for i in ops for x in pb.needdec[i]}


def _round(pb, xv, R, S, IN, P, budget_bytes, algos, floor_s):
    """Checkmate's deterministic rounding: keep ``S >= threshold``, then replay exactly what
    each stage needs; the cheapest rounding that fits (several thresholds, and liveness),
    each with the fastest algorithms its free memory allows (``algos``)."""
    from ._schedule import managed_peak
    best = None
    everything = {t: {x for x in pb.decision if pb.prod[x] < t <= pb.last[x]}
                  for t in pb.stages}
    roundings = [{t: set() for t in pb.stages} for _ in range(7)]
    for k, thr in enumerate((0.5, 0.25, 0.75, 0.1, 0.9, 0.01, 0.99)):
        for (t, y), v in S.items():
            if xv[v] >= thr:
                roundings[k][t].add(y)
    for stored in roundings + [everything]:
        if best is not None and stored is everything:
            break            # liveness' residency: only where no threshold fits
        sol = complete(pb, stored)
        peak, _ = managed_peak(pb.program, to_instructions(pb, sol), pb.size)
        if peak > budget_bytes:
            continue
        if algos:
            choose_algos(pb, sol, budget_bytes)
        cost = compute_time_s(pb, sol)
        if best is None or cost < best[0]:
            best = (cost, peak, sol)
    if best is None:
        return Solution({}, {}, "no_feasible_rounding")
    cost, peak, sol = best
    sol.status, sol.objective_s, sol.model_peak_bytes = "rounded", cost - floor_s, peak
    return sol


def complete(pb, stored):
    """Given what each stage keeps, the replays that make it consistent (fewest, per stage):
    everything a stage's step reads or the next stage keeps and is not resident is replayed,
    with what those replays read, recursively."""
    stages = pb.stages
    replays = {}
    stored = {t: set(v) for t, v in stored.items()}
    for k, t in enumerate(stages):
        have = set(stored[t])
        want = list(pb.needdec[t])
        if k + 1 < len(stages):
            nt = stages[k + 1]
            want += [x for x in stored[nt] if pb.prod[x] != t]
        ops = set()
        stack = [x for x in want if x not in have]
        while stack:
            x = stack.pop()
            i = pb.prod[x]
            if i in ops:
                continue
            ops.add(i)
            stack += [y for y in pb.needdec[i] if y not in have]
        replays[t] = sorted(ops)
        # a tensor stored into the next stage is then produced here: fine for the model
    sol = Solution(replays, stored, "")
    prune(pb, sol)
    return sol


def _picked_s(pb, k, picks):
    """Seconds op ``k``'s picks save against its base algorithms (<= 0)."""
    return sum(r[0] - c.base[0] for c in pb.passes.get(k, ()) for r in c.tiers
               if picks.get(c.name) == r[2])


def replay_time_s(pb, sol):
    """Seconds the solution's replays take, with their algorithms."""
    return sum(pb.cost_s[i] + _picked_s(pb, i, sol.algos.get((t, i), {}))
               for t, ops in sol.replays.items() for i in ops)


def compute_time_s(pb, sol):
    """Seconds of compute the engine runs for the solution: every step and every replay, with
    the algorithms it picks (no stalls)."""
    return sum(pb.step_s) + replay_time_s(pb, sol) + sum(
        _picked_s(pb, t, picks) for (t, k), picks in sol.algos.items() if k == t)


def _conv_ops(pb, instructions):
    """``(instruction index, stage, step, live managed bytes)`` of each conv Compute and
    Recompute of a remat plan, as :func:`~snsim.policies._schedule.managed_peak` counts them
    (a replay serves the next Compute's stage)."""
    from ._schedule import managed_peak
    stage, serves = None, {}
    for j in range(len(instructions) - 1, -1, -1):
        if type(instructions[j]) is Compute:
            stage = instructions[j].step
        serves[j] = stage
    out = []

    def on_op(j, live):
        k = instructions[j].step
        if k in pb.passes:
            out.append((j, serves[j], k, live))
    managed_peak(pb.program, instructions, pb.size, on_op=on_op)
    return out


def choose_algos(pb, sol, budget_bytes):
    """Give every conv op of ``sol`` the fastest algorithms that fit beside what its
    instructions hold then (exact for a fixed schedule: a workspace lives only while its op
    runs)."""
    sol.algos = {}
    for _, t, k, live in _conv_ops(pb, to_instructions(pb, sol)):
        _, picks = best_combination(pb.passes[k], budget_bytes - live)
        if picks:
            sol.algos[t, k] = picks


def fastest_that_fit(pb, instructions, budget_bytes):
    """``(Plan.algos, all fastest, compute seconds)`` for a plan's instructions (no replays):
    each conv op's fastest algorithms that fit beside what the instructions hold then; ``all
    fastest`` says whether every op got its fastest algorithms regardless of memory."""
    algos, fastest, saved_s = {}, True, 0.0
    for j, _, k, live in _conv_ops(pb, instructions):
        time_s, picks = best_combination(pb.passes[k], budget_bytes - live)
        fastest &= time_s <= best_combination(pb.passes[k], float("inf"))[0]
        saved_s += _picked_s(pb, k, picks)
        if picks:
            algos[j] = picks
    return algos, fastest, sum(pb.step_s) + saved_s


def instruction_algos(pb, sol, instructions):
    """``Plan.algos`` for ``sol``'s instructions: ``{instruction index: {pass: name}}``."""
    return {j: dict(sol.algos[t, k]) for j, t, k, _ in _conv_ops(pb, instructions)
            if (t, k) in sol.algos}


def to_instructions(pb, sol):
    """The engine's plan for a solution: replays, then the step; after each op, drop what
    the rest of the stage does not read and the next stage does not keep (free it when no
    later step reads it at all); copies to the host right after the producing step, back
    before the stage that needs them."""
    steps = pb.program.steps
    last, is_dec = pb.last, pb.is_decision
    stage_set = set(pb.stages)
    order = pb.stages
    nxt = {t: (order[k + 1] if k + 1 < len(order) else None) for k, t in enumerate(order)}
    state = {}     # decision tensor -> "live", "dropped", "freed", "host", "host_live"
    out = []
    _, lastuse = pb.program.uses()
    fixed_free_after = {}
    for x in range(len(pb.size)):
        if not is_dec[x] and lastuse[x] >= 0:
            fixed_free_after.setdefault(lastuse[x], []).append(x)

    def release(x, t, keep_next):
        if x in keep_next:
            return
        st = state.get(x)
        if last[x] > t:
            if st == "live" and x in sol.offloaded:
                out.append(Offload(x))       # the GPU copy goes when the copy ends
                state[x] = "host"
            elif st in ("live", "host_live"):
                out.append(Drop(x))          # replayed if read again
                state[x] = "dropped"
        else:
            if st in ("live", "host_live", "dropped", "host"):
                out.append(Free(x))
            state[x] = "freed"

    for s in steps:
        t = s.index
        if t not in stage_set:
            out.append(Compute(t))
            for x in fixed_free_after.get(t, ()):
                out.append(Free(x))
            continue
        nt = nxt[t]
        incoming = sol.prefetch_at.get(nt, set()) if nt is not None else set()
        keep_next = (sol.stored.get(nt, set()) | incoming) if nt is not None else set()
        for x in sorted(incoming):   # copied back during this stage for the next one
            if state.get(x) == "host":
                out.append(Prefetch(x))
                state[x] = "host_live"
        ops = sol.replays.get(t, [])
        later_reads = []
        acc = set(pb.needdec[t])
        for i in reversed(ops):
            later_reads.append(set(acc))
            acc |= set(pb.needdec[i])
        later_reads.reverse()
        for i, later in zip(ops, later_reads):
            out.append(Recompute(i))
            for y in pb.outdec[i]:
                if state.get(y) == "dropped":
                    state[y] = "live"
            for x in [x for x in list(pb.needdec[i]) + list(pb.outdec[i])]:
                if x not in later and state.get(x) in ("live", "host_live"):
                    release(x, t, keep_next)
        out.append(Compute(t))
        if s.phase == "F":
            for y in pb.outdec.get(t, ()):
                state[y] = "live"
        for x in fixed_free_after.get(t, ()):
            out.append(Free(x))
        for x in sorted(state):
            if state[x] in ("live", "host_live") and x not in keep_next:
                release(x, t, keep_next)
    for x in sorted(state):
        if state[x] in ("dropped", "host"):
            out.append(Free(x))
    return out
