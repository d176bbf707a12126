"""Checkmate: optimal rematerialisation by a MILP (Jain et al., MLSys 2020; SPEC §11).

What: over stages (one per program step), binary ``R[t, i]`` replays forward step ``i`` in
stage ``t`` and ``S[t, x]`` keeps activation ``x`` into stage ``t``; continuous ``Free`` and
``U`` count the memory op by op, frees included (SPEC §11's trap). The objective is the
replay time, under the budget left after the static tensors. The solution is replayed by
the engine as ``Recompute``/``Drop``/``Free`` instructions (snsim/policies/_remat.py).

Options: ``solver=milp`` (HiGHS branch and bound through ``scipy.optimize.milp``, stopped at
``time_limit_s`` with the best solution and its optimality gap in the notes; a MILP so
stopped is compared with the LP relaxation's rounding below, given another ``time_limit_s``,
and the faster plan kept, ``incumbent="lp_rounding"`` in the notes when it is the rounding's:
HiGHS' own heuristics can find a much slower schedule, or none, in the time), ``solver=lp``
(Checkmate's LP relaxation with deterministic rounding: several thresholds on ``S``, the
replays each rounding needs, the cheapest that fits; for larger graphs), ``solver=auto``
(the MILP up to ``milp_max_binaries`` binaries, else the LP).

Convolution algorithms (``ws_policy``). As in Checkmate's paper, an op's workspace counts in
the memory while it runs. With ``ws_policy=planned`` (the default) the MILP also picks each
convolution op's algorithm per cuDNN pass — for every stage's step and every replay — among the
zero-workspace one (the base) and the *tiers*: the faster algorithms that no other is both
faster than and smaller than in workspace, the only ones the engine's ``dynamic`` policy can
ever pick (the fastest that fits), less those that cannot fit beside what the op itself holds.
A binary per (op, pass, tier); the tier's workspace (both backward passes' at once, as the
engine holds them) is added to the op's memory row; its time replaces the base's in the
objective. Each such step also gets a knapsack row in binaries only — its floor, what the next
stage keeps and the picked workspaces are resident together — which every integral solution
satisfies and which cuts off the LP relaxation's fractional room (half a tensor dropped making
room for half a workspace): it moves the bound, not the optimum (tested). The plan names the
picks (``Plan.algos``, ``workspace="planned"``) and the engine runs them, so its compute time
is the model's (``compute_time_s``; tests/test_remat_policies.py asserts the equality on
hand-checked and zoo graphs); the LP path picks, for its rounded schedule, the fastest
algorithms that fit each op (exact for a fixed schedule). The optimum is then over
recomputation and algorithm choice together: no plan that only drops, replays and frees
(liveness, ``workspace``, ``keep_all``, ``recompute``, ``chen_sqrt``, ``checkpoint``,
``sac_knapsack``, ``dtr``) is faster under ``ws_policy=none`` or ``dynamic`` (tested on AlexNet
and VGG-11) — a dynamic pick is one of the tiers and fits beside at least the memory the model
frees (``dtr`` decides at run time: held to it by those tests, not by construction). Outside
the model, able to beat it: the planners that copy tensors to the host (``superneurons``,
``vdnn``, ``offload``, ``capuchin``'s swaps, ``cpu_offload``, ``zero_offload``, ``joint``).
``ws_policy=none`` is the zero-workspace model (replay time only, as before tiers);
``dynamic``/``fastest`` plan as ``none`` and let the engine choose at run time.

Planning cost: O(n^2) binaries for n steps, plus up to a few per conv op with ``planned``
(VGG-16 batch 32 at 0.7x of liveness' peak: 3,010 binaries without tiers, 4,818 with), and a
knapsack row per conv step with tiers; the MILP is exponential in the worst case, the LP
polynomial. Where liveness already fits and no convolution needs more room for its fastest
algorithms, nothing is replayed (provably optimal: no step can run faster) and no solver runs;
where one step's own working set exceeds the budget the plan is infeasible without a solver;
otherwise infeasible only where HiGHS proves it. Plan notes: ``status``, ``objective_s`` (what
the MILP minimises: replay seconds, plus with ``planned`` the seconds the steps' algorithms
take above the fastest that fit beside each step's floor), ``bound_s`` (its lower bound) and
``gap`` (relative to it), ``compute_time_s`` (every step and replay with the picked algorithms:
the engine's compute time), ``replay_time_s``, ``model_peak_bytes`` (the MILP's managed peak,
workspaces not counted) and ``plan_peak_bytes`` (the same plan replayed without a clock),
``reason`` when infeasible. The count is the ideal allocator's: a real allocator's rounding and
fragmentation may not fit a plan that fills the budget (the model has no allocator, as
Checkmate's); where a planned workspace does not fit, the engine falls back to the fastest
algorithm that does, as cuDNN does (``workspace_fallbacks``). A captured program has no
algorithm tables: its convolutions' workspaces count as 0 B (cuDNN runs without them when they
do not fit).

Measured (K40c costs, this 2-core machine, shared; a CONV layer's update step charged no
convolution): VGG-16 batch 32 (96 steps) at 0.7x of liveness' peak, ``ws_policy=none``: 3,010
binaries, proven optimal (gap 0) in 4-10 s; ``planned``: 4,818 binaries, proven optimal in
7-10 s (objective 0.0911 s, step 1.171 s; LP bound 0.057 s with the knapsack rows, 0.041 s
without them, when HiGHS stopped at a 27% gap at 60 s); at static + 0.5x of liveness'
managed peak proven in 20-45 s (1.216 s; 40% gap at 60 s without the rows), at 0.9x in 4 s
(1.015 s). It is the fastest recompute-only plan (1.171 s at 0.7x, against 1.635 s for
``dtr``, 1.646-1.662 s for ``recompute``, 1.790 s for ``sac_knapsack``, all with
``ws_policy=dynamic``; ``capuchin``, which swaps, 1.554 s). With algorithm choice AlexNet
batch 4 is proven optimal in 0.5-1.5 s at 0.6-0.9x of liveness' managed peak, VGG-11 batch 2
in 2-17 s at 0.6-0.9x (7-19 s and 7 s to a 12% gap at 90 s without the rows).
"""
from ..plan import WORKSPACE_MODES, Plan
from ._remat import (compute_time_s, count_binaries, fastest_that_fit, floor_bytes,
                     instruction_algos, liveness_peak_bytes, remat_problem, replay_time_s, solve,
                     to_instructions)
from ._schedule import build_instructions, managed_peak
from .base import Policy, choice, integer, register


def solve_remat(program, budget_bytes, *, solver="auto", time_limit_s=60,
                milp_max_binaries=20000, link=None, algos=False):
    """Plan ``program`` under ``budget_bytes`` (whole device budget, static included);
    ``algos``: choose each convolution's algorithms too.

    Returns ``(instructions or None, notes, plan algos)``; ``None`` when no schedule fits,
    with the reason in ``notes["reason"]``. The plan algos (``Plan.algos``) are empty unless
    ``algos``.
    """
    pb = remat_problem(program)
    managed = budget_bytes - program.static_total_bytes
    notes = {"budget_managed_bytes": int(managed), "decision_tensors": len(pb.decision),
             "replayable_steps": len(pb.rec)}
    live = liveness_peak_bytes(pb)
    floor, at = floor_bytes(pb)
    if live <= managed:
        ins = build_instructions(program)
        picks, fastest, time_s = fastest_that_fit(pb, ins, managed if algos else 0)
        if fastest or not algos:   # nothing to replay, every convolution at its fastest
            notes.update(status="optimal", reason="liveness fits: nothing to replay",
                         replay_time_s=0.0, objective_s=0.0, bound_s=0.0, gap=0.0,
                         model_peak_bytes=live,
                         compute_time_s=time_s if algos else sum(pb.step_s))
            return ins, notes, picks if algos else {}
    if floor > managed:
        s = program.steps[at]
        notes.update(status="infeasible",
                     reason=f"step {at} ({s.name} {s.phase}) alone needs {floor} B of managed "
                     f"memory; the budget leaves {int(managed)} B after "
                     f"{program.static_total_bytes} B of static tensors")
        return None, notes, {}
    n_bin = count_binaries(pb, managed, algos)
    relax = solver == "lp" or (solver == "auto" and n_bin > milp_max_binaries)
    sol = solve(pb, managed, relax=relax, time_limit_s=time_limit_s, link=link, algos=algos)
    # no wall-clock figure in the notes: they make the run's id (benchmarks time the plan)
    notes.update(solver="lp" if relax else "milp", status=sol.status,
                 variables=sol.variables, binaries=sol.binaries)
    if sol.status in ("infeasible", "no_solution", "no_feasible_rounding"):
        why = {"infeasible": "HiGHS proves that no schedule of replays fits the budget",
               "no_solution": f"no feasible schedule found within {time_limit_s} s, nor "
                              f"by rounding the LP relaxation (not proven infeasible: "
                              f"{sol.message})",
               "no_feasible_rounding": "the LP relaxation's roundings do not fit the budget "
                                       "(not proven infeasible; try solver=milp)"}
        notes["reason"] = why[sol.status]
        return None, notes, {}
    ins = to_instructions(pb, sol)
    peak, _ = managed_peak(program, ins, pb.size)
    notes.update(replay_time_s=replay_time_s(pb, sol), objective_s=sol.objective_s,
                 compute_time_s=compute_time_s(pb, sol), bound_s=sol.bound_s, gap=sol.gap,
                 model_peak_bytes=sol.model_peak_bytes, plan_peak_bytes=int(peak),
                 replays=sum(len(v) for v in sol.replays.values()))
    if sol.incumbent != "milp":
        notes["incumbent"] = sol.incumbent
    if sol.offloaded:
        notes["offloaded"] = len(sol.offloaded)
    return ins, notes, instruction_algos(pb, sol, ins)


@register
class Checkmate(Policy):
    name = "checkmate"
    in_all = False   # a solver run per probe or row: runs only when named
    description = ("Checkmate MILP (R, S, U, Free over stages; HiGHS): least compute time "
                   "under the budget, replays and conv algorithms chosen together "
                   "(solver=auto|milp|lp, time_limit_s=, ws_policy=planned|none|...)")
    OPTIONS = {"solver": choice("auto", ("auto", "milp", "lp")),
               "time_limit_s": integer(60, minimum=1),
               "milp_max_binaries": integer(20000, minimum=0),
               "ws_policy": choice("planned", ("planned",) + WORKSPACE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        planned = o["ws_policy"] == "planned"
        ins, notes, algos = solve_remat(program, budget_bytes, solver=o["solver"],
                                        time_limit_s=o["time_limit_s"],
                                        milp_max_binaries=o["milp_max_binaries"],
                                        algos=planned)
        notes = {**o, **notes}
        if ins is None:   # nothing fits: liveness' plan, which the engine finds out of memory
            return Plan(policy=self.name, instructions=build_instructions(program),
                        workspace="none" if planned else o["ws_policy"], notes=notes)
        return Plan(policy=self.name, instructions=ins, workspace=o["ws_policy"],
                    algos=algos, notes=notes)
