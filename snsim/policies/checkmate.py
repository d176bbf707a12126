"""Checkmate: optimal rematerialisation by a MILP (Jain et al., MLSys 2020; SPEC §11).

What: over stages (one per program step), binary ``R[t, i]`` replays forward step ``i`` in
stage ``t`` and ``S[t, x]`` keeps activation ``x`` into stage ``t``; continuous ``Free`` and
``U`` count the memory op by op, frees included (SPEC §11's trap). The objective is the
replay time, under the budget left after the static tensors. The solution is replayed by
the engine as ``Recompute``/``Drop``/``Free`` instructions (snsim/policies/_remat.py).

Options: ``solver=milp`` (HiGHS branch and bound through ``scipy.optimize.milp``, stopped at
``time_limit_s`` with the best solution and its optimality gap in the notes), ``solver=lp``
(Checkmate's LP relaxation with deterministic rounding: several thresholds on ``S``, the
replays each rounding needs, the cheapest that fits; for larger graphs), ``solver=auto``
(the MILP up to ``milp_max_binaries`` binaries, else the LP).

Planning cost: O(n^2) binaries for n steps (VGG-16: 96 steps, ~3,000 binaries); the MILP is
exponential in the worst case, the LP polynomial. Where liveness already fits, nothing is
replayed (provably optimal: the objective is zero) and no solver runs; where one step's own
working set exceeds the budget the plan is infeasible without a solver; otherwise infeasible
only where HiGHS proves it. Plan notes: ``status``, ``objective_s`` and ``replay_time_s``
(equal here; ``joint`` adds stalls), ``bound_s`` (the solver's lower bound), ``gap``,
``model_peak_bytes`` (the MILP's managed peak) and
``plan_peak_bytes`` (the same plan replayed without a clock), ``reason`` when infeasible.
The count is the ideal allocator's: a real allocator's rounding and fragmentation may not fit
a plan that fills the budget (the model has no allocator, as Checkmate's). A convolution's
workspace counts as 0 B: it takes only free memory, or cuDNN falls back without it. Convolutions
take the fastest algorithm whose workspace fits the free memory (``ws_policy=dynamic``, as
``superneurons``); the objective charges replays the zero-workspace algorithm's time. So
the optimum is the least replay time, and under ``ws_policy=none`` the least step time of
every drop-and-replay plan (tests/test_remat_policies.py); under ``dynamic`` a plan that
leaves more memory free for workspaces can run faster (VGG-16 batch 32 at 0.7x of liveness'
peak: ``sac_knapsack`` 0.755 s, checkmate 0.791 s), and offloading planners are outside the
model.

Measured (K40c costs, this 2-core machine, shared): VGG-16 batch 32 (96 steps, 3,010
binaries) proven optimal (gap 0) in 5-17 s at 0.7x of liveness' peak; AlexNet batch 8 in
9-17 s (866 binaries: a weaker LP bound); the captured VGG-16 batch 32 (147 steps) stops at
the 60 s limit with a 5.4% gap.
"""
from ..plan import WORKSPACE_MODES, Plan
from ._remat import (compute_time_s, count_binaries, floor_bytes, instruction_algos,
                     liveness_peak_bytes, remat_problem, replay_time_s, solve, to_instructions)
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
    if live <= managed and not (algos and pb.passes):
        notes.update(status="optimal", reason="liveness fits: nothing to replay",
                     replay_time_s=0.0, gap=0.0, model_peak_bytes=live)
        return build_instructions(program), notes, {}
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
               "no_solution": f"no feasible schedule found within {time_limit_s} s "
                              f"(not proven infeasible: {sol.message})",
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
    if sol.offloaded:
        notes["offloaded"] = len(sol.offloaded)
    return ins, notes, instruction_algos(pb, sol, ins)


@register
class Checkmate(Policy):
    name = "checkmate"
    in_all = False   # a solver run per probe or row: runs only when named
    description = ("Checkmate MILP (R, S, U, Free over stages; HiGHS): least replay time under "
                   "the budget (solver=auto|milp|lp, time_limit_s=)")
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
