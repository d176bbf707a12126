"""Capuchin's swap-or-recompute planner (snsim/policies/capuchin.py; issue 12).

The golden program is hand-made; its timeline and memory are derived in the comments (ideal
allocator, no static memory, a 1000 B/s link with no latency: a 1000 B copy takes 1 s).
"""
import dataclasses

import pytest

from snsim.api import make_program
from snsim.engine.core import run_plan
from snsim.errors import ConfigError
from snsim.hardware import load_hardware
from snsim.plan import Drop, Offload, Prefetch, Recompute
from snsim.policies import get_policy
from snsim.policies.capuchin import _Link, capuchin_choices
from snsim.program import Program, Step, Tensor

HW = dataclasses.replace(load_hardware("k40c"), malloc_latency_s=0.0, free_latency_s=0.0,
                         copy_latency_s=0.0, copy_efficiency_by_bytes=(),
                         h2d_pinned_bytes_per_s=1000.0, d2h_pinned_bytes_per_s=1000.0,
                         copy_engines=2, link_shared=False)


def long_and_short_gap():
    """L (1000 B) is made first and read last; S (1000 B) is made after an 8 s step and read
    one step into backward; P (2000 B) is made and read back at once (never a candidate).

    step  phase  time  starts at  reads      resident under liveness (B)
    0 L   F      1 s    0 s       L          L                 1000
    1 mm  F      8 s    1 s       -          L                 1000
    2 S   F      1 s    9 s       S          L S               2000
    3 P   F      1 s   10 s       P          L S P             4000  <- peak
    4 P   B      1 s   11 s       P          L S P             4000
    5 S   B      1 s   12 s       S          L S               2000
    6 L   B      1 s   13 s       L          L                 1000   (ends at 14 s)
    """
    T = [Tensor(0, "L", "activation", 1000, 0, "CONV"),
         Tensor(1, "S", "activation", 1000, 2, "CONV"),
         Tensor(2, "P", "activation", 2000, 3, "CONV")]
    S = [Step(0, 0, "L", "CONV", "F", 1.0, (0,), (0,), ()),
         Step(1, 1, "mm", "CONV", "F", 8.0, ()),
         Step(2, 2, "S", "CONV", "F", 1.0, (1,), (1,), ()),
         Step(3, 3, "P", "CONV", "F", 1.0, (2,), (2,), ()),
         Step(4, 3, "P", "CONV", "B", 1.0, (2,)),
         Step(5, 2, "S", "CONV", "B", 1.0, (1,)),
         Step(6, 0, "L", "CONV", "B", 1.0, (0,))]
    return Program(name="gaps", batch=1, steps=S, tensors=T, static_bytes={})


def run(p, budget, **options):
    plan = get_policy("capuchin", **options).plan(p, HW, budget)
    return plan, run_plan(p, plan, HW, budget_bytes=budget, allocator="ideal")


def test_long_gap_is_swapped_and_short_gap_recomputed():
    # Budget 2000 B: the peak (steps 3-4, 4000 B) must lose L and S.
    # L: copy out right after its forward, [1, 2] s; copy in as late as it still lands before
    # its backward (13 s): [12, 13] s. FreeTime = 12 - 2 = 10 s, hidden. L is away from the
    # first step starting after 2 s (step 2) to the step before the one running at 12 s
    # (step 5): steps 2-4, the peak included. Chosen first (a hidden swap).
    # S: its copy-out, [10, 11] s, ends inside step 3 (10-11 s), so a swap frees nothing at
    # the peak step 3; recomputing it (its 1 s forward, no inputs) frees steps 3-4. Chosen.
    # Estimated peak: step 3/4 = P alone = 2000 B; step 5 = L (prefetched at 12 s) + S = 2000 B.
    p = long_and_short_gap()
    swaps, recomputes, est = capuchin_choices(p, HW, 2000)
    assert swaps == {0: (0, 5)}             # offload after step 0, prefetch before step 5
    assert recomputes == {1: (2, 5)}        # drop after step 2, replay before step 5
    assert est == 2000
    plan, r = run(p, 2000)
    ins = plan.instructions
    assert Offload(0) in ins and Prefetch(0) in ins and Drop(1) in ins and Recompute(2) in ins
    # the engine: 14 s of steps + S's 1 s replay before step 5; L's copy-in (12-13 s)
    # overlaps the replay (12-13 s), so step 6 does not wait: 15 s, peak 2000 B
    assert r.feasible, r.failure
    assert r.step_time_s == 15.0 and r.stall_time_s == 0.0
    assert r.peak_ideal_bytes == 2000 and r.recomputed_layers == ("S",)


def test_swap_only_cannot_fit_and_recompute_only_pays_twice():
    p = long_and_short_gap()
    # swap alone: S cannot leave the peak step, which stays at P + S = 3000 B > 2000 B
    swaps, recomputes, est = capuchin_choices(p, HW, 2000, mode="swap")
    assert (swaps, recomputes, est) == ({0: (0, 5)}, {}, 3000)
    assert not run(p, 2000, mode="swap")[1].feasible
    # recompute alone: L (MSPS 1000 B / 1 s, a tie with S broken by the lower id; away for
    # steps 1-5) then S, both 1 s replays, S's before step 5 and L's before step 6:
    # 14 + 2 s
    _, r = run(p, 2000, mode="recompute")
    assert r.feasible and r.step_time_s == 16.0 and r.recomputed_layers == ("S", "L")


def test_a_link_busy_with_an_earlier_swap_pushes_the_next_copy_earlier():
    # Capuchin counts the link as occupied by the swaps already chosen: with [12, 13] s taken,
    # the latest 1 s slot ending by 13 s starts at 11 s, and none fits in [12.5, 13]
    link = _Link()
    link.reserve(12.0, 13.0)
    assert link.latest(0.0, 13.0, 1.0) == 11.0
    assert link.latest(12.5, 13.0, 0.5) is None
    assert link.earliest(12.5, 1.0) == 13.0 and link.earliest(10.0, 1.0) == 10.0
    assert link.earliest(11.5, 1.0) == 13.0   # [11.5, 12.5] would overlap


def test_liveness_budget_changes_nothing_and_the_zoo_fits_at_0_7():
    k40c = load_hardware("k40c")
    p = make_program("resnet50", batch=16, hardware=k40c)
    live = run_plan(p, get_policy("liveness").plan(p, k40c, 10**13), k40c, budget_bytes=10**13)
    plan = get_policy("capuchin").plan(p, k40c, live.peak_ideal_bytes)
    assert plan.notes["swapped"] == plan.notes["recomputed"] == 0
    budget = int(0.7 * live.peak_ideal_bytes)
    plan = get_policy("capuchin").plan(p, k40c, budget)
    r = run_plan(p, plan, k40c, budget_bytes=budget)
    assert r.feasible, r.failure
    assert plan.notes["swapped"] > 0 and r.peak_ideal_bytes <= budget
    # the copies hide: under 5% slower than liveness
    assert r.step_time_s < 1.05 * live.step_time_s


def test_bad_mode_is_one_line():
    with pytest.raises(ConfigError, match=r"option mode \(='both'\) must be one of hybrid, "
                                          r"swap, recompute"):
        get_policy("capuchin", mode="both")
