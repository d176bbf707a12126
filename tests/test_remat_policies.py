"""Golden tests of the solver-based planners (issue 12): checkmate, sac_knapsack, joint.

The small programs are built by hand (a chain of forward steps, each writing one activation of
100 B; backward steps reading what the comments say), so every optimum below is derived in
the comments. Budgets are whole-device budgets: these programs have no static tensors, so the
budget is the managed budget.
"""
import dataclasses

import networkx as nx
import numpy as np
import pytest

from snsim.costs import ConvAlgo
from snsim.engine.core import run_plan
from snsim.errors import ConfigError, PlanError
from snsim.hardware import load_hardware
from snsim.plan import Compute, Drop, Offload, Plan, Prefetch, Recompute
from snsim.policies import get_policy, list_policies
from snsim.policies._remat import remat_problem, solve, to_instructions
from snsim.policies._schedule import managed_peak
from snsim.policies.sac_knapsack import knapsack
from snsim.program import Program, Step, Tensor
from snsim.zoo import build_network
from snsim.program import build_program

K40C = load_hardware("k40c")


def chain(f_times, *, b_reads, b_allocs=(), sizes=None):
    """F_1..F_n: F_i reads x_{i-1}, writes x_i (100 B unless ``sizes``); then B_n..B_1:
    B_i reads ``b_reads[i]`` (1-based layer numbers of the activations it reads) and
    allocates a fresh 100 B gradient when i is in ``b_allocs``. B steps take 1 s."""
    n = len(f_times)
    sizes = sizes or [100] * n
    tensors = [Tensor(i, f"x{i + 1}", "activation", sizes[i], i, "CONV") for i in range(n)]
    steps = []
    for i in range(n):
        ins = (i - 1,) if i else ()
        steps.append(Step(i, i, f"f{i + 1}", "CONV", "F", float(f_times[i]), ins + (i,), (i,),
                          ins))
    for i in range(n, 0, -1):
        deps = tuple(j - 1 for j in b_reads.get(i, ()))
        if i in b_allocs:
            tensors.append(Tensor(len(tensors), f"g{i}", "activation_grad", 100, i - 1, "CONV"))
            deps += (len(tensors) - 1,)
        steps.append(Step(len(steps), i - 1, f"f{i}", "CONV", "B", 1.0, deps))
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    return Program(name="chain", batch=1, steps=steps, tensors=tensors, static_bytes={},
                   graph=G)


# B_i reads x_i (as a ReLU's backward reads its output). Liveness keeps x_i from F_i to B_i:
# at F_4 and B_4 all four are resident, 400 B.
CHAIN4 = dict(f_times=[1, 2, 3, 4], b_reads={4: [4], 3: [3], 2: [2], 1: [1]})


def plan_and_run(program, policy, budget, **options):
    plan = get_policy(policy, **options).plan(program, K40C, budget)
    return plan, run_plan(program, plan, K40C, budget_bytes=budget)


@pytest.mark.parametrize("budget, replay_s, peak", [
    # 400 B: liveness fits, nothing replayed
    (400, 0.0, 400),
    # 300 B: F_4 needs x3 + x4, so one of x1, x2 goes. Dropping x1 costs a replay of F_1
    # (1 s, in B_1's stage, x1 alone); dropping x2 a replay of F_2 (2 s); optimum 1 s
    (300, 1.0, 300),
    # 200 B: F_4's x3 + x4 fill it, so x1 and x2 both go and each is replayed at least once:
    # F_1 then F_2 in B_2's stage (x1 + x2 = 200 B, x1 kept for B_1): 1 + 2 = 3 s
    (200, 3.0, 200),
])
def test_checkmate_golden_chain(budget, replay_s, peak):
    p = chain(**CHAIN4)
    plan, r = plan_and_run(p, "checkmate", budget, ws_policy="none")
    assert plan.notes["status"] == "optimal"
    assert plan.notes["replay_time_s"] == pytest.approx(replay_s)
    # the engine replays exactly the model's schedule: same replay seconds, same peak
    assert r.feasible and r.recompute_time_s == pytest.approx(replay_s)
    assert r.peak_ideal_bytes == peak
    assert r.step_time_s == pytest.approx(1 + 2 + 3 + 4 + 4 * 1.0 + replay_s)
    assert r.counters["evictions"] == 0


def conv_chain4():
    """CHAIN4 where F_4 is a convolution with two forward algorithms: ZERO (4 s, no
    workspace, the step's time) and FAST (1 s, 100 B of workspace); its backward runs one
    bwd_filter algorithm of 1 s (no bwd_data: the chain's graph has no edges, so layer 4 is
    fed by no layer and computes no input gradient, as a first convolution)."""
    def algo(name, pass_name, time_s, ws_bytes):
        return ConvAlgo(name=name, pass_name=pass_name, ws_bytes=ws_bytes, time_s=time_s,
                        supported=True)
    table = {3: {"fwd": (algo("ZERO", "fwd", 4.0, 0), algo("FAST", "fwd", 1.0, 100)),
                 "bwd_filter": (algo("ZERO", "bwd_filter", 1.0, 0),)}}
    return dataclasses.replace(chain(**CHAIN4), conv_algos=table)


@pytest.mark.parametrize("budget, replay_s, step_s, fast", [
    # 500 B: liveness' 400 B at F_4 + FAST's 100 B fit: nothing replayed, 1 + 2 + 3 + 1 + 4 s
    (500, 0.0, 11.0, True),
    # 400 B: FAST needs x3 + x4 + 100 B, so one of x1, x2 goes: drop x1 (replay F_1, 1 s, for
    # B_1) and save 3 s on F_4: 11 + 1 = 12 s, against 14 s keeping all with ZERO
    (400, 1.0, 12.0, True),
    # 300 B: FAST leaves room for x3 + x4 only: x1 and x2 go, B_2's stage replays F_1, F_2
    # (3 s): 11 + 3 = 14 s; ZERO needs only x1 dropped (1 s): 14 + 1 = 15 s
    (300, 3.0, 14.0, True),
    # 200 B: x3 + x4 fill it, FAST never fits; the ws_policy=none golden: 14 + 3 = 17 s
    (200, 3.0, 17.0, False),
])
def test_checkmate_chooses_the_algorithm_with_the_replays(budget, replay_s, step_s, fast):
    p = conv_chain4()
    plan, r = plan_and_run(p, "checkmate", budget)
    n = plan.notes
    assert plan.workspace == "planned" and n["status"] == "optimal"
    assert n["replay_time_s"] == pytest.approx(replay_s)
    assert n["compute_time_s"] == pytest.approx(step_s)
    f4 = [i for i, ins in enumerate(plan.instructions) if ins == Compute(3)]
    assert plan.algos == ({f4[0]: {"fwd": "FAST"}} if fast else {})
    # the engine runs the plan's algorithms: its time is the model's, to the bit's rounding
    assert r.feasible and r.counters["workspace_fallbacks"] == 0
    assert r.conv_algos["3:F"] == ("FAST" if fast else "ZERO")
    assert r.step_time_s == pytest.approx(step_s, rel=1e-12)
    assert r.compute_time_s + r.recompute_time_s == pytest.approx(n["compute_time_s"],
                                                                  rel=1e-12)
    assert r.peak_ideal_bytes <= budget
    # the LP relaxation's rounding picks the fastest algorithms its schedule leaves room for:
    # what the engine runs, and never faster than the optimum
    lp, rl = plan_and_run(p, "checkmate", budget, solver="lp")
    assert rl.feasible and rl.counters["workspace_fallbacks"] == 0
    assert rl.step_time_s == pytest.approx(lp.notes["compute_time_s"], rel=1e-12)
    assert lp.notes["bound_s"] <= n["objective_s"] + 1e-9 and rl.step_time_s >= step_s - 1e-9


def test_the_knapsack_row_closes_the_lp_bound_on_the_conv_chain():
    # 300 B, conv_chain4: at F_4 the floor is x3 + x4 (200 B), so FAST's 100 B (a), x1 kept
    # past F_4 (S1) and x2 kept past F_4 (S2) share 100 B: a + S1 + S2 <= 1 (the row).
    # Whatever is not kept is replayed: F_1 (1 s) at least 1 - S1 times, F_2 (2 s) at least
    # 1 - S2 times; ZERO costs 3 s more than FAST. Objective >= 3(1 - a) + (1 - S1) +
    # 2(1 - S2) >= 4 - a (S2 = 1 - a at best) >= 3 s at a = 1: the LP bound is the optimum
    # (x1, x2 dropped, FAST: 3 s of replays, test above).
    pb = remat_problem(conv_chain4())
    tight = solve(pb, 300, relax=True, algos=True)
    loose = solve(pb, 300, relax=True, algos=True, tighten=False)
    assert tight.bound_s == pytest.approx(3.0)
    # without the row the U chain's fractional frees buy part of FAST's room for less
    assert loose.bound_s < 3.0 - 0.1
    for t in (True, False):
        assert solve(pb, 300, algos=True, tighten=t).objective_s == pytest.approx(3.0)


@pytest.mark.parametrize("network, batch, fraction", [("alexnet", 4, 0.75), ("vgg11", 2, 0.9)])
def test_the_knapsack_row_moves_the_bound_not_the_optimum(network, batch, fraction):
    # the row holds at every integral solution of the model (it counts part of what U
    # counts while the step runs), so the optimum is the same with and without it; the LP
    # bound rises (the untightened model proves these in ~7 s, the tightened in ~1-2 s)
    p, (budget,) = zoo_budgets(network, batch, (fraction,))
    pb = remat_problem(p)
    managed = budget - p.static_total_bytes
    opt = {}
    for t in (True, False):
        lp = solve(pb, managed, relax=True, algos=True, tighten=t)
        sol = solve(pb, managed, algos=True, tighten=t, time_limit_s=600)
        assert sol.status == "optimal" and lp.bound_s <= sol.objective_s + 1e-9
        opt[t] = (lp.bound_s, sol.objective_s, sol.compute_time_s)
    assert opt[True][0] > opt[False][0] * 1.1
    # each within HiGHS' relative gap (1e-4) of the one optimum
    assert opt[True][1:] == pytest.approx(opt[False][1:], rel=2e-4, abs=1e-9)


def test_a_planned_algorithm_that_does_not_fit_falls_back_as_cudnn_does():
    # liveness' schedule at 400 B leaves no room at F_4 for FAST's 100 B: the engine falls
    # back to the fastest that fits (ZERO) and counts it: 1 + 2 + 3 + 4 + 4 x 1 s
    p = conv_chain4()
    plan = get_policy("liveness").plan(p, K40C, 400)
    f4 = plan.instructions.index(Compute(3))
    plan = dataclasses.replace(plan, workspace="planned", algos={f4: {"fwd": "FAST"}})
    r = run_plan(p, plan, K40C, budget_bytes=400)
    assert r.feasible and r.counters["workspace_fallbacks"] == 1
    assert r.conv_algos["3:F"] == "ZERO" and r.step_time_s == pytest.approx(14.0)
    # with room it runs FAST: 11 s
    r = run_plan(p, plan, K40C, budget_bytes=500)
    assert r.counters["workspace_fallbacks"] == 0 and r.step_time_s == pytest.approx(11.0)


def test_plan_algos_round_trip_and_bad_ones_are_one_line():
    p = conv_chain4()
    plan, r = plan_and_run(p, "checkmate", 400)
    back = Plan.from_dict(plan.to_dict())
    assert back.algos == plan.algos and back.workspace == "planned"
    assert run_plan(p, back, K40C, budget_bytes=400).step_time_s == r.step_time_s
    drop = next(i for i, ins in enumerate(plan.instructions) if type(ins) is Drop)
    with pytest.raises(PlanError, match=rf"plan.algos\[{drop}\] must belong to a Compute or "
                                        r"Recompute of a CONV step"):
        dataclasses.replace(plan, algos={drop: {"fwd": "FAST"}}).check(p)
    f4 = plan.instructions.index(Compute(3))
    with pytest.raises(PlanError, match="names fwd algorithm 'FFT', which layer f4 does not "
                                        "support; it has FAST, ZERO"):
        run_plan(p, dataclasses.replace(plan, algos={f4: {"fwd": "FFT"}}), K40C,
                 budget_bytes=400)


def test_checkmate_infeasible_below_a_steps_own_working_set():
    # F_2 reads x1 and writes x2: 200 B; at 199 B nothing runs, and no solver is needed
    plan, r = plan_and_run(chain(**CHAIN4), "checkmate", 199)
    assert plan.notes["status"] == "infeasible"
    assert "step 1 (f2 F) alone needs 200 B" in plan.notes["reason"]
    assert not r.feasible


def test_checkmate_infeasible_where_the_milp_proves_it():
    # Three layers; B_i reads x_i. At 250 B: B_3 holds x3 + g, so x1 and x2 cannot be kept
    # (300 B); x2 for B_2 must be replayed, which needs x1: replaying F_1
    # then F_2 holds x1 + x2 (+ x3 in B_3's stage, or g2 is fresh only at B_2: x1 + x2 = 200
    # B then x2 + g2) — feasible. At 150 B nothing with x_{i-1} + x_i fits: the floor says
    # so; so the proof case is 250 B with g kept across backward: use a gradient read by all
    # of B_3..B_1 (allocated at B_3), so B_2's replays hold g + x1 + x2 = 300 B > 250 B.
    p = chain([1, 1, 1], b_reads={3: [3], 2: [2], 1: [1]})
    g = Tensor(3, "g", "activation_grad", 100, 2, "CONV")
    steps = [s if s.phase == "F" else dataclasses.replace(s, deps=s.deps + (3,))
             for s in p.steps]
    p = dataclasses.replace(p, steps=steps, tensors=p.tensors + [g], _uses=None)
    plan, r = plan_and_run(p, "checkmate", 250, solver="milp")
    assert plan.notes["status"] == "infeasible"
    assert plan.notes["reason"].startswith("HiGHS proves")
    assert not r.feasible
    # and 300 B fits: keep x1 (x1 + g + x3 at B_3 = 300 B), replay F_2 in B_2's stage
    plan, r = plan_and_run(p, "checkmate", 300, solver="milp")
    assert plan.notes["status"] == "optimal" and r.feasible and r.peak_ideal_bytes == 300


def test_the_peak_counts_frees_inside_a_stage():
    # SPEC §11's trap. Three layers; B_3 and B_2 each make a 100 B gradient; B_1 reads
    # nothing. At 200 B: F_3 holds x2 + x3, B_3 holds x3 + g3, so x2 is dropped after F_3
    # and x1 too. B_2 needs x2: replay F_1 (x1: 100 B), F_2 (x1 + x2: 200 B), free x1, then
    # B_2 holds x2 + g2 = 200 B. Optimum 1 + 2 = 3 s. Without the frees inside a stage (the
    # mutant), B_2 would still count x1: 300 B, and nothing fits.
    p = chain([1, 2, 3], b_reads={3: [3], 2: [2]}, b_allocs=(3, 2))
    pb = remat_problem(p)
    sol = solve(pb, 200)
    assert sol.status == "optimal" and sol.objective_s == pytest.approx(3.0)
    assert sol.replays[p.steps[4].index] == [0, 1]           # F_1, F_2 in B_2's stage
    assert managed_peak(p, to_instructions(pb, sol))[0] == 200
    assert solve(pb, 200, count_frees=False).status == "infeasible"


def test_checkmate_lp_rounding_is_feasible_and_no_better_than_the_milp():
    p = chain(**CHAIN4)
    for budget in (200, 300):
        lp, rl = plan_and_run(p, "checkmate", budget, solver="lp", ws_policy="none")
        mi, rm = plan_and_run(p, "checkmate", budget, solver="milp", ws_policy="none")
        assert rl.feasible and rl.peak_ideal_bytes <= budget
        assert lp.notes["bound_s"] <= mi.notes["replay_time_s"] + 1e-12 <= \
            lp.notes["replay_time_s"] + 2e-12
        assert rm.step_time_s <= rl.step_time_s + 1e-12


def test_checkmate_time_limit_reports_the_gap():
    plan, _ = plan_and_run(chain(**CHAIN4), "checkmate", 200, solver="milp", time_limit_s=5)
    assert plan.notes["gap"] == pytest.approx(0.0, abs=1e-4)
    assert plan.notes["bound_s"] == pytest.approx(plan.notes["replay_time_s"], rel=1e-4)


def test_a_time_limited_milp_keeps_the_lp_rounding_when_it_is_faster(monkeypatch):
    # HiGHS stopped by its limit before any incumbent (status 1, no x), as on ResNet-18
    # batch 1: the LP relaxation's rounding is the plan, not "no solution". The MILP call
    # is stubbed (integrality set); the LP call runs HiGHS.
    import scipy.optimize
    from scipy.optimize import OptimizeResult
    real = scipy.optimize.milp

    def stopped(c, *, integrality=None, **kw):
        if integrality is not None and np.any(integrality):
            return OptimizeResult(status=1, x=None, fun=None, mip_dual_bound=None,
                                  message="Time limit reached. (stub)")
        return real(c, integrality=integrality, **kw)
    monkeypatch.setattr(scipy.optimize, "milp", stopped)
    # conv_chain4 at 300 B: the LP bound is the optimum, 3 s (test above), and the rounding
    # drops x1 and x2 with FAST: 14 s of compute, what the engine runs
    plan, r = plan_and_run(conv_chain4(), "checkmate", 300, solver="milp")
    n = plan.notes
    assert n["status"] == "time_limit" and n["incumbent"] == "lp_rounding"
    assert n["bound_s"] == pytest.approx(3.0)
    assert n["gap"] == pytest.approx((n["objective_s"] - n["bound_s"]) / n["objective_s"])
    assert r.feasible and r.peak_ideal_bytes <= 300
    assert r.step_time_s == pytest.approx(n["compute_time_s"], rel=1e-12)
    assert n["compute_time_s"] == pytest.approx(14.0)


@pytest.mark.parametrize("opt, value, rule", [
    ("solver", "cplex", "must be one of auto, milp, lp"),
    ("time_limit_s", "0", "must be an integer >= 1"),
])
def test_checkmate_bad_options_are_one_line(opt, value, rule):
    with pytest.raises(ConfigError, match=f"option {opt} .* {rule}"):
        get_policy("checkmate", **{opt: value})


# --- checkmate against every other planner on small zoo networks ------------------------
# Checkmate's model drops, replays and frees activations and (ws_policy=planned) picks each
# convolution's algorithm. The policies below only drop, replay and free (or keep), so none of
# them may beat its optimum, under either run-time workspace policy: a dynamic pick is one of
# the model's tiers (conv_passes) and fits beside the memory the other plan holds, which is no
# less than the model's for the same schedule. (dtr decides at run time; its evictions are
# schedules of the model where its recoverable tensors are the model's decision tensors: held
# to the optimum here by test, not by construction.) Outside the model, and able to beat it:
# the policies that copy tensors to the host (superneurons, vdnn, offload, capuchin's swaps,
# cpu_offload, zero_offload, joint).
RECOMPUTE_ONLY = ["liveness", "workspace", "keep_all", "recompute", "chen_sqrt", "sac_knapsack",
                  "checkpoint", "dtr"]


def recompute_only_plans(p, budget):
    """Every recompute-only policy's plan (each option that changes the schedule)."""
    for name in RECOMPUTE_ONLY:
        for opts in ([{"mode": m} for m in ("speed", "memory", "cost-aware")]
                     if name == "recompute" else
                     [{"solver": s} for s in ("dp", "greedy")] if name == "sac_knapsack"
                     else [{}]):
            pol = get_policy(name, **opts)
            if pol.unsupported(p) is None:
                yield name, opts, pol.plan(p, K40C, budget)


def zoo_budgets(network, batch, fractions):
    p = build_program(build_network(network, batch=batch), hardware=K40C)
    live = run_plan(p, get_policy("liveness").plan(p, K40C, 10**13), K40C,
                    budget_bytes=10**13)
    managed = live.peak_ideal_bytes - p.static_total_bytes
    return p, [p.static_total_bytes + int(managed * f) for f in fractions]


@pytest.mark.parametrize("network, batch", [("alexnet", 4), ("vgg11", 2)])
def test_checkmate_is_never_slower_than_another_recompute_planner(network, batch):
    # with the zero-workspace algorithms everywhere (ws_policy=none for all)
    # (LeNet's liveness peak is its lower bound: no smaller budget fits anything)
    p, budgets = zoo_budgets(network, batch, (0.6, 0.75, 0.9, 1.0))
    compared = 0
    for budget in budgets:
        plan, cm = plan_and_run(p, "checkmate", budget, ws_policy="none")
        for name, opts, other_plan in recompute_only_plans(p, budget):
            other = run_plan(p, dataclasses.replace(other_plan, workspace="none"), K40C,
                             budget_bytes=budget)
            if other.feasible:
                assert cm.feasible, (network, budget, name, opts, plan.notes)
                assert cm.step_time_s <= other.step_time_s * (1 + 1e-12), \
                    (network, budget, name, opts, cm.step_time_s, other.step_time_s)
                compared += plan.notes.get("replays", 0) > 0
    assert compared >= 3     # budgets where checkmate replays and another planner fits


@pytest.mark.parametrize("network, batch, fractions", [
    # HiGHS proves these in 0.5-17 s on a 2-core machine (with the knapsack rows)
    ("alexnet", 4, (0.6, 0.75, 0.9)), ("vgg11", 2, (0.75, 0.9))])
def test_checkmate_with_algorithms_is_never_slower_under_any_workspace_policy(
        network, batch, fractions):
    p, budgets = zoo_budgets(network, batch, fractions)
    compared = 0
    for budget in budgets:
        # no time limit may be reached (a loaded machine): the run must reach the optimum
        plan, cm = plan_and_run(p, "checkmate", budget, time_limit_s=600)
        n = plan.notes
        assert n["status"] == "optimal" and plan.workspace == "planned"
        # the engine runs the model's algorithms: its time is the model's, nothing falls back
        assert cm.feasible and cm.counters["workspace_fallbacks"] == 0
        assert cm.step_time_s == pytest.approx(n["compute_time_s"], rel=1e-9)
        for name, opts, other_plan in recompute_only_plans(p, budget):
            for ws in ("none", "dynamic"):
                other = run_plan(p, dataclasses.replace(other_plan, workspace=ws), K40C,
                                 budget_bytes=budget)
                if other.feasible:
                    assert cm.step_time_s <= other.step_time_s * (1 + 1e-12), \
                        (network, budget, name, opts, ws, cm.step_time_s, other.step_time_s)
                    compared += ws == "dynamic"
    assert compared >= 5


def test_checkmate_vgg16_batch32_solves_to_optimality_and_the_engine_agrees():
    # issue 12: VGG-16 batch 32 to proven optimality in <= 60 s on a 2-core machine (the
    # solve time is printed by benchmarks, not asserted here)
    p = build_program(build_network("vgg16", batch=32), hardware=K40C)
    live = run_plan(p, get_policy("liveness").plan(p, K40C, 10**13), K40C,
                    budget_bytes=10**13)
    budget = int(live.peak_ideal_bytes * 0.7)
    plan, r = plan_and_run(p, "checkmate", budget, ws_policy="none")
    n = plan.notes
    assert n["status"] == "optimal" and n["gap"] <= 1e-4
    assert r.feasible and r.counters["evictions"] == 0
    # the engine replays the model's schedule: its replay seconds are the objective, and
    # its peak is the model's less what the translation frees earlier than the model must
    assert r.recompute_time_s == pytest.approx(n["replay_time_s"], rel=1e-9)
    assert r.peak_ideal_bytes - p.static_total_bytes == n["plan_peak_bytes"] \
        <= n["model_peak_bytes"] <= n["budget_managed_bytes"]


def test_checkmate_vgg16_batch32_with_algorithms_solves_to_optimality():
    # issue 12's gate with the default ws_policy=planned (algorithms chosen in the MILP):
    # proven optimal (gap <= 1e-4) with the knapsack rows; the solve time (7-10 s on this
    # 2-core machine) is printed by benchmarks/bench_planners.py, not asserted
    p = build_program(build_network("vgg16", batch=32), hardware=K40C)
    live = run_plan(p, get_policy("liveness").plan(p, K40C, 10**13), K40C,
                    budget_bytes=10**13)
    budget = int(live.peak_ideal_bytes * 0.7)
    plan, r = plan_and_run(p, "checkmate", budget, time_limit_s=600)
    n = plan.notes
    assert plan.workspace == "planned" and n["status"] == "optimal" and n["gap"] <= 1e-4
    assert r.feasible and r.counters["workspace_fallbacks"] == 0
    assert r.step_time_s == pytest.approx(n["compute_time_s"], rel=1e-9)
    _, none = plan_and_run(p, "checkmate", budget, ws_policy="none")
    assert r.step_time_s < none.step_time_s


# --- sac_knapsack -----------------------------------------------------------------------
def test_knapsack_solvers_hand_checked():
    # items (memory, runtime): a (0.5, 1.0), b (0.3, 2.0), c (0.2, 1.5), capacity 0.5:
    # {b, c} keeps 3.5 s in 0.5; {a} keeps 1.0 s. Greedy by runtime/memory: c (7.5), b (6.7),
    # then a does not fit: {b, c} too.
    for solver in ("dp", "greedy", "ilp"):
        assert knapsack([0.5, 0.3, 0.2], [1.0, 2.0, 1.5], 0.5, solver) == [1, 2]
    # where greedy is not optimal: (0.6, 6), (0.5, 4.5), (0.5, 4.5), capacity 1.0: greedy
    # takes the best ratio (10) first and then nothing fits (6 s); dp and ilp take the two
    # halves (9 s)
    assert knapsack([0.6, 0.5, 0.5], [6.0, 4.5, 4.5], 1.0, "greedy") == [0]
    for solver in ("dp", "ilp"):
        assert knapsack([0.6, 0.5, 0.5], [6.0, 4.5, 4.5], 1.0, solver) == [1, 2]


@pytest.mark.parametrize("fraction, saved, physical", [
    # 1.0 saves all four (400 B of candidates): liveness, 400 B
    ("1", 400, 400),
    # 0.5 saves 200 B with the most runtime: x4 (4 s) and x3 (3 s). x1 and x2 are dropped
    # after their last forward use; B_2 replays F_1 then F_2, and both stay (x1 until B_1):
    # 200 B at F_4/B_4 (x3 + x4) and at B_2 (x1 + x2)
    ("0.5", 200, 200),
    # 0 saves nothing, yet B_4's replay of x4 rebuilds x1..x4 and keeps them until their
    # backward use: 400 B, liveness' peak — the budget is not a peak (pytorch#197838)
    ("0", 0, 400),
])
def test_sac_knapsack_physical_peak_next_to_its_budget(fraction, saved, physical):
    plan, r = plan_and_run(chain(**CHAIN4), "sac_knapsack", 10**6,
                           activation_memory_budget=fraction, ws_policy="none")
    n = plan.notes
    assert n["knapsack_budget_bytes"] == int(float(fraction) * 400)
    assert n["saved_bytes"] == saved
    assert n["physical_peak_bytes"] == physical == r.peak_ideal_bytes


def test_sac_knapsack_at_one_saves_every_candidate():
    # 100 + 400 + 1000 B quantise to 667 + 2667 + 6667 = 10,001 ten-thousandths: the dp alone
    # would drop one at capacity 1.0. torch returns the runtime-optimal set at a budget of 1
    # (choose_saved_values_set), and so does the policy: liveness' 1500 B, nothing replayed
    # (found by test_no_memory_policy_needs_more_than_liveness: auto at liveness' peak
    # planned 40 B over it)
    sizes = [100, 400, 1000]
    assert len(knapsack([s / 1500 for s in sizes], [1.0] * 3, 1.0, "dp")) == 2
    p = chain([1, 2, 3], b_reads={3: [3], 2: [2], 1: [1]}, sizes=sizes)
    plan, r = plan_and_run(p, "sac_knapsack", 10**6, activation_memory_budget="1",
                           ws_policy="none")
    assert plan.notes["saved_bytes"] == 1500 and plan.notes["dropped_tensors"] == 0
    _, auto = plan_and_run(p, "sac_knapsack", 1500, ws_policy="none")
    assert auto.feasible and auto.peak_ideal_bytes == 1500


@pytest.mark.parametrize("budget, fraction, saved, physical", [
    # auto sets the fraction a user trusting the proxy would: unsaved bytes = liveness' excess
    # (400 B - budget) over the 400 B of candidates. 300 B: 0.75, the knapsack keeps x2..x4
    # (300 B, the most runtime), x1 is replayed for B_1; F_4 holds x2 + x3 + x4 = 300 B
    (300, 0.75, 300, 300),
    # 250 B: 0.625 (250 B); x4 and x3 fit (200 B), x2 would not: B_2 replays F_1, F_2 and
    # holds x1 + x2 = 200 B, as F_4 holds x3 + x4
    (250, 0.625, 200, 200),
    (200, 0.5, 200, 200),
])
def test_sac_knapsack_auto_fraction(budget, fraction, saved, physical):
    plan, r = plan_and_run(chain(**CHAIN4), "sac_knapsack", budget)
    n = plan.notes
    assert n["proxy_fraction"] == n["activation_memory_budget"] == fraction
    assert n["saved_bytes"] == saved
    assert r.feasible and r.peak_ideal_bytes == n["physical_peak_bytes"] == physical


def test_sac_knapsack_bad_fraction_is_one_line():
    with pytest.raises(ConfigError, match=r"option activation_memory_budget \(='1.5'\) must be "
                                          r"a number in \[0.0, 1.0\] or auto"):
        get_policy("sac_knapsack", activation_memory_budget="1.5")


# --- joint --------------------------------------------------------------------------------
def test_joint_milp_offloads_what_is_dear_to_replay():
    # Three layers, x1 costs 5 s to replay; B_i reads x_i. At 200 B, F_3 holds x2 + x3, so x1
    # must leave the GPU by then. Checkmate replays F_1 for B_1 (5 s). The joint MILP copies
    # x1 out during F_1 (5 s of compute hide 100 B at 11 GB/s + 10 us) and back during B_2
    # (1 s): no replay, no stall. Step times: 5 + 1 + 1 + 3 x 1 = 10 s, and 15 s.
    p = chain([5, 1, 1], b_reads={3: [3], 2: [2], 1: [1]})
    plan, r = plan_and_run(p, "joint", 200, solver="milp")
    assert plan.notes["replay_time_s"] == pytest.approx(0.0, abs=1e-9)
    # x1 must be copied; copying x2 too (out after F_3, back for B_2) costs no time either,
    # and the solver may take either optimum
    kinds = [type(i) for i in plan.instructions]
    assert plan.notes["offloaded"] >= 1
    assert kinds.count(Offload) == kinds.count(Prefetch) == plan.notes["offloaded"]
    assert Offload(0) in plan.instructions
    assert not any(type(i) is Recompute for i in plan.instructions)
    assert r.feasible and r.peak_ideal_bytes == 200
    # the copy out is issued after x1's last forward use (F_2), so F_3 waits for its ~10 us
    assert r.step_time_s == pytest.approx(10.0, abs=1e-4)
    _, cm = plan_and_run(p, "checkmate", 200, ws_policy="none")
    assert cm.step_time_s == pytest.approx(15.0)


def test_joint_heuristic_keeps_the_tail_resident():
    # The chain with a 310 B budget; the estimate must fit 97% of it (300.7 B). A copy out is
    # issued after the tensor's last forward use, so the estimate holds it through the next
    # step. Tail 3 (x1 copied out after F_2, x2..x4 resident): F_3 holds x1 (copying) + x2 +
    # x3 = 300 B, F_4 and B_4 x2 + x3 + x4 = 300 B; x1 comes back during B_2 (issued as late
    # as its 10 us copy allows, at B_2's start) for B_1: x1 + x2 = 200 B. Fits. Tail 4 is
    # liveness: 400 B. So the tail is 3, one tensor is offloaded.
    plan, r = plan_and_run(chain(**CHAIN4), "joint", 310, solver="heuristic", mode="speed")
    assert plan.notes["resident_tail"] == 3 and plan.notes["offloaded"] == 1
    assert plan.notes["estimated_peak_bytes"] == 300
    assert [type(i) for i in plan.instructions].count(Offload) == 1
    assert r.feasible and r.peak_ideal_bytes == 300
    # compute 1 + 2 + 3 + 4 + 4 x 1 s; the copies hide under it
    assert r.step_time_s == pytest.approx(14.0, rel=1e-9)
    # with room for liveness / 0.97 nothing is copied
    plan, r = plan_and_run(chain(**CHAIN4), "joint", 413, solver="heuristic", mode="speed")
    assert plan.notes["resident_tail"] == 4 and plan.notes["offloaded"] == 0
    assert not any(type(i) is Offload for i in plan.instructions)


def test_every_new_policy_is_registered():
    assert {"checkmate", "sac_knapsack", "joint"} <= set(list_policies())


def test_joint_bad_solver_is_one_line():
    with pytest.raises(ConfigError, match="option solver .* must be one of auto, milp, "
                                          "heuristic"):
        get_policy("joint", solver="poet")
