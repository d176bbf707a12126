"""PyTorch's activation-memory budget: a 0-1 knapsack over saved activations (SPEC §11).

What: ``torch._functorch.config.activation_memory_budget`` (``torch/_functorch/
partitioners.py``, ``choose_saved_values_set``): the min-cut partitioner's candidates for
recomputation are weighed by a knapsack that keeps the activations with the most runtime
saved, with their bytes at most ``activation_memory_budget`` of the candidates' bytes (the
budget is a fraction of *saved activation bytes*, normalised between saving nothing and saving
what the runtime-optimal cut saves). Solvers as torch's ``dp_knapsack`` (memory quantised to
1/10,000 of the range, a dynamic programme over capacity), ``greedy_knapsack`` (runtime per
byte, descending) and ``ilp_knapsack`` (``scipy.optimize.milp``). Activations not kept are
dropped after their last forward use and replayed just in time in backward, recursively from
the kept ones, and held until their last backward use (AOTAutograd's partitioned backward).

Runtimes here are the steps' modelled or measured seconds (torch estimates FLOPs). Candidates
are the activations backward reads whose producer can be replayed (``_remat``); the rest are
always saved, as torch's inputs are.

The budget is a proxy, not a peak (pytorch#197838): the knapsack counts bytes saved, not
which of them are alive together nor the replays' transients. Plan notes report both:
``knapsack_budget_bytes`` (what the knapsack targeted), ``saved_bytes`` (what it kept) and
``physical_peak_bytes`` (static + the plan's managed peak replayed without a clock, the
engine's ideal peak, a convolution's optional workspace counted as 0 B), next to
``liveness_peak_bytes``. ``activation_memory_budget=auto``
(default) starts from the fraction a user trusting the proxy would set (unsaved bytes =
liveness' excess over the device budget; ``proxy_fraction`` and its
``proxy_physical_peak_bytes`` in the notes) and, when that does not fit, takes the largest
fraction on a 1/20 grid whose physical peak fits, as a user tuning it would.

Planning cost: O(n) candidates; dp O(n × 10^4), greedy O(n log n), ilp a small MILP; auto
rebuilds the plan up to 22 times.
"""
# numpy is imported in the functions that use it: loading it costs a CLI command that never
# calls them (maxdepth, run) 0.16 s

from ..plan import WORKSPACE_MODES, Plan
from ._remat import liveness_peak_bytes, remat_problem
from ._schedule import build_instructions, managed_peak
from .base import Policy, choice, number, register

SOLVERS = ("dp", "greedy", "ilp")
_QUANT = 10000   # torch's dp_knapsack scaling factor
_GRID = 20       # auto: fractions tried, k / _GRID


def knapsack(memory, runtime, capacity, solver):
    """Indices to save: maximise the runtime kept with ``sum(memory) <= capacity``.

    ``memory`` is normalised (torch: bytes over the candidates' range), ``capacity`` in the
    same unit. Deterministic: ties keep the earlier item (dp backtracks from the last).

    >>> knapsack([0.5, 0.3, 0.2], [1.0, 2.0, 1.5], 0.5, "dp")
    [1, 2]
    """
    import numpy as np
    n = len(memory)
    if solver == "greedy":
        order = sorted(range(n), key=lambda i: (-(runtime[i] / memory[i]) if memory[i] > 0
                                                else -np.inf, i))
        used, out = 0.0, []
        for i in order:
            if used + memory[i] <= capacity:
                used += memory[i]
                out.append(i)
        return sorted(out)
    if solver == "ilp":
        if n == 0:
            return []
        from scipy.optimize import Bounds, LinearConstraint, milp   # slow import: solver only
        res = milp(-np.asarray(runtime, dtype=float),
                   constraints=LinearConstraint(np.asarray([memory], dtype=float), -np.inf,
                                                capacity),
                   bounds=Bounds(0, 1), integrality=np.ones(n))
        return [i for i in range(n) if res.x is not None and res.x[i] > 0.5]
    q = [int(round(m * _QUANT)) for m in memory]
    cap = int(round(capacity * _QUANT))
    dp = np.zeros((n + 1, cap + 1))
    for i in range(1, n + 1):
        w, v = q[i - 1], runtime[i - 1]
        dp[i] = dp[i - 1]
        if w == 0:
            dp[i] = dp[i - 1] + v
        elif w <= cap:
            dp[i, w:] = np.maximum(dp[i - 1, w:], dp[i - 1, :-w] + v)
    out, j = [], cap
    for i in range(n, 0, -1):
        if dp[i, j] != dp[i - 1, j]:
            out.append(i - 1)
            j -= q[i - 1]
    return sorted(out)


@register
class SacKnapsack(Policy):
    name = "sac_knapsack"
    in_all = False   # a solver run per probe or row: runs only when named
    description = ("PyTorch activation_memory_budget: knapsack of saved activations "
                   "(solver=dp|greedy|ilp, activation_memory_budget=0..1|auto), rest replayed")
    OPTIONS = {"activation_memory_budget": number(None, minimum=0.0, maximum=1.0,
                                                  optional=True),
               "solver": choice("dp", SOLVERS),
               "ws_policy": choice("dynamic", WORKSPACE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        pb = remat_problem(program)
        steps = program.steps
        _, lastuse = program.uses()
        cands = [x for x in pb.decision if steps[lastuse[x]].phase == "B"]
        total = sum(pb.size[x] for x in cands)
        live = liveness_peak_bytes(pb)
        managed = budget_bytes - program.static_total_bytes
        memory = [pb.size[x] / total for x in cands] if total else []
        runtime = [pb.cost_s[pb.prod[x]] for x in cands]

        def at(frac):
            # torch short-circuits a budget of 1 to the runtime-optimal set (everything):
            # the quantised knapsack could drop an item to rounding there
            keep = range(len(cands)) if frac >= 1.0 else knapsack(memory, runtime, frac,
                                                                  o["solver"])
            saved = {cands[i] for i in keep}
            dropped = {x: x for x in cands if x not in saved}
            ins = build_instructions(program, recompute="speed", drop_groups=dropped) \
                if dropped else build_instructions(program)
            return ins, saved, dropped, managed_peak(program, ins, pb.size)[0]

        # what a user trusting the proxy would set: unsaved bytes = liveness' excess
        proxy = min(1.0, max(0.0, 1.0 - (live - managed) / total)) if total else 1.0
        notes = {**o}
        if o["activation_memory_budget"] is not None:
            frac = o["activation_memory_budget"]
            ins, saved, dropped, peak = at(frac)
        else:
            # the largest fraction on a 1/20 grid whose physical peak fits (the peak is not
            # monotone in the fraction: pytorch#197838), as a user tuning it would find
            ins, saved, dropped, peak = at(proxy)
            notes.update(proxy_fraction=round(proxy, 6),
                         proxy_physical_peak_bytes=program.static_total_bytes + int(peak))
            frac = proxy
            if peak > managed:
                for k in range(_GRID, -1, -1):
                    trial = at(k / _GRID)
                    if trial[3] <= managed:
                        frac, (ins, saved, dropped, peak) = k / _GRID, trial
                        break
        notes.update(activation_memory_budget=round(frac, 6), candidates=len(cands),
                     candidates_bytes=total, knapsack_budget_bytes=int(frac * total),
                     saved_bytes=sum(pb.size[x] for x in saved), dropped_tensors=len(dropped),
                     physical_peak_bytes=program.static_total_bytes + int(peak),
                     liveness_peak_bytes=program.static_total_bytes + live)
        return Plan(policy=self.name, instructions=ins, workspace=o["ws_policy"], notes=notes)
