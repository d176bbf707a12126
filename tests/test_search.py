"""Capacity searches: snsim maxdepth / maxbatch (snsim.experiments.search, .cli)."""
import dataclasses
import json
import multiprocessing
import os
import re

import pytest

from snsim.api import make_program, simulate
from snsim.cli import main
from snsim.errors import ConfigError, UnknownNameError
from snsim.experiments import search
from snsim.experiments.search import (FAMILIES, _largest_true, _predict, family_network,
                                      get_family, max_batch, max_depth, min_budget, sweep_depth)
from snsim.policies import POLICIES, applicable_policies
from snsim.api import make_program as _mp
from snsim.zoo import build_network, with_module_tree

BUDGET = "700MiB"   # small enough that every search below stays at shallow depths


def params(G):
    return sum(d["params"] for _, d in G.nodes(data=True))


# -- families -----------------------------------------------------------------------------------
@pytest.mark.parametrize("family,k,zoo_name,depth", [
    ("resnet", 6, "resnet50", 50), ("resnet", 23, "resnet101", 101),
    ("vgg", 3, "vgg16", 16), ("vgg", 4, "vgg19", 19), ("densenet", 24, "densenet121", 121),
])
def test_family_members_match_the_zoo(family, k, zoo_name, depth):
    G = family_network(family, k, batch=2)
    Z = build_network(zoo_name, batch=2)
    assert params(G) == params(Z)
    assert G.number_of_nodes() == Z.number_of_nodes()
    assert get_family(family).depth(k) == depth


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_depth_grows_with_k_and_inverts(name):
    fam = FAMILIES[name]
    for k in range(fam.min_size, 30):
        d = fam.depth(k)
        assert fam.size_for_depth(d) == k
        # floor: not deeper than the next member's depth minus one
        assert fam.size_for_depth(d + fam.depth_step - 1) == k
        assert fam.size_for_depth(d + 1, round_up=True) == k + 1
    a = params(family_network(name, fam.min_size, batch=1))
    b = params(family_network(name, fam.min_size + 2, batch=1))
    assert b > a


def test_unknown_family_and_bad_k():
    with pytest.raises(UnknownNameError, match="network family 'foo' is unknown; known: densenet"):
        get_family("foo")
    with pytest.raises(ConfigError, match="k \\(=0\\) must be >= 1"):
        family_network("resnet", 0, batch=1)


# -- the search primitive -----------------------------------------------------------------------
@pytest.mark.parametrize("start_kind", ["low", "exact", "high", "far"])
def test_largest_true_finds_every_threshold(start_kind):
    lo, hi = 3, 200
    for threshold in range(lo, hi):
        calls = []

        def test(n):
            calls.append(n)
            assert lo < n < hi, "never probes the known ends"
            return n <= threshold
        start = {"low": lo + 1, "exact": threshold, "high": threshold + 5, "far": hi}[start_kind]
        got = _largest_true(test, lo, hi, start)
        assert got == (threshold, threshold + 1)
        assert len(calls) <= 2 * 8 + 2            # galloping + bisection: O(log range)
        assert len(calls) == len(set(calls))


def test_largest_true_with_an_exact_prediction_needs_two_probes():
    calls = []
    got = _largest_true(lambda n: calls.append(n) or n <= 57, 1, 1000, 57, lambda lo, hi: 57)
    assert got == (57, 58) and calls == [57, 58]


def test_largest_true_with_a_wrong_prediction_still_converges():
    for threshold in (5, 40, 41, 99):
        got = _largest_true(lambda n: n <= threshold, 1, 100, 50, lambda lo, hi: lo + 3)
        assert got == (threshold, threshold + 1)


def test_largest_true_from_above_gallops_down_from_a_close_start():
    calls = []
    got = _largest_true(lambda n: calls.append(n) or n <= 845, 1, 848, 847, from_above=True)
    assert got == (845, 846) and calls == [847, 846, 844, 845]


@pytest.mark.parametrize("f,expected", [
    (lambda x: 10 * x + 7, 99),           # linear: exact
    (lambda x: 3 * x * x + x, 57),        # quadratic: exact
])
def test_predict_is_exact_for_lines_and_parabolas(f, expected):
    target = f(expected) + (f(expected + 1) - f(expected)) // 2
    pts = [(x, f(x)) for x in (1, 2, 4)]
    assert _predict(pts, target) == expected


def test_predict_undershoots_concave_growth():
    f = lambda x: 1000 * x ** 0.5   # noqa: E731
    pts = [(x, f(x)) for x in (4, 16, 64)]
    true = int((30_000 / 1000) ** 2)
    assert pts[-1][0] < _predict(pts, 30_000) <= true
    assert _predict([(1, 5), (2, 5)], 10) is None          # flat: no crossing
    assert _predict([(1, 5)], 10) is None
    assert _predict([(1, 0), (2, 10)], 1000, hi=50) is None


def test_bound_cap_on_a_quadratic_bound():
    # DenseNet's static bytes grow quadratically with k: the cap search must not overshoot
    rep = max_depth("densenet", batch=1, budget_bytes="1GiB", policies="superneurons")
    cap = rep.bound_cap
    lb = [make_program(family_network("densenet", k, batch=1)).lower_bound_bytes()
          for k in (cap, cap + 1)]
    assert lb[0] <= rep.budget_bytes < lb[1]
    assert rep.best("superneurons").max_size <= cap


# -- max_depth -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_depth():
    return max_depth("resnet", batch=1, budget_bytes=BUDGET)


def test_max_depth_boundaries_are_real(small_depth):
    rep = small_depth
    assert rep.hardware == "k40c" and rep.budget_bytes == 700 * 2**20
    for row in rep.rows:
        assert row.max_size is not None
        assert row.max_depth == 3 * (10 + row.max_size) + 2
        assert row.next_depth == row.max_depth + 3
        net = f"resnet:3,4,{row.max_size},3"
        assert simulate(net, batch=1, policy=row.policy, budget_bytes=BUDGET, record=False).feasible
        nxt = simulate(f"resnet:3,4,{row.max_size + 1},3", batch=1, policy=row.policy,
                       budget_bytes=BUDGET, record=False)
        assert not nxt.feasible
        assert row.step_time_s > 0 and row.peak_ideal_bytes <= rep.budget_bytes
        assert row.network == net
        # the shared cap is the original program's bound; zero_offload's program (parameters
        # on the host) has its own, searched on its own (search._rewrites_program)
        if row.next_size > rep.bound_cap and row.policy != "zero_offload":
            assert "exceeds the budget" in row.next_failure
        else:
            assert row.next_failure == str(nxt.failure)


def test_max_depth_policy_ordering(small_depth):
    d = {r.policy: r.max_depth for r in small_depth.rows}
    assert d["keep_all"] <= d["liveness"] <= d["recompute"] <= d["superneurons"]
    assert d["liveness"] <= d["offload"]


def test_static_bound_caps_the_search(small_depth):
    rep = small_depth
    p = make_program(f"resnet:3,4,{rep.bound_cap},3", batch=1)
    q = make_program(f"resnet:3,4,{rep.bound_cap + 1},3", batch=1)
    assert p.lower_bound_bytes() <= rep.budget_bytes < q.lower_bound_bytes()
    # nothing above the cap was simulated (zero_offload: its own program's bound, above)
    assert all(row["k"] <= rep.bound_cap for row in rep.probes
               if row["policy"] != "zero_offload")


def test_frames(small_depth):
    df = small_depth.frame()
    # every policy that can plan the family's networks (ResNets have blocks to checkpoint),
    # but the solver-based planners (a solver run per probe: searched only when named)
    assert list(df["policy"]) == [n for n in applicable_policies(_mp("resnet:3,4,2,3", batch=1))
                                  if POLICIES[n].in_all]
    assert "checkpoint" in list(df["policy"]) and "checkmate" not in list(df["policy"])
    assert {"max_depth", "k", "step_time_s", "next_depth", "next_failure"} <= set(df.columns)
    probes = small_depth.probes_frame()
    assert len(probes) == sum(r.simulations for r in small_depth.rows)
    assert {"policy", "k", "depth", "feasible", "peak_ideal_bytes"} <= set(probes.columns)


def test_search_shares_programs_and_skips_records(monkeypatch):
    built, recorded = [], []
    real_build, real_run = search.build_program, search.run_plan
    monkeypatch.setattr(search, "build_program", lambda G, **kw: built.append(G.graph["name"])
                        or real_build(G, **kw))
    monkeypatch.setattr(search, "run_plan", lambda *a, **kw: recorded.append(kw["record"])
                        or real_run(*a, **kw))
    rep = max_depth("resnet", batch=1, budget_bytes=BUDGET, policies="liveness,recompute")
    assert len(built) == len(set(built))            # one program per depth, for all policies
    assert recorded and not any(recorded)
    assert sum(r.simulations for r in rep.rows) == len(recorded)


def test_min_and_max_depth_limits():
    rep = max_depth("resnet", batch=1, budget_bytes=BUDGET, policies=["superneurons"],
                    max_depth=50)
    row = rep.best("superneurons")
    assert row.max_depth == 50 and row.max_size == 6
    assert row.next_failure.startswith("not tested: above the depth limit 50")
    rep = max_depth("resnet", batch=1, budget_bytes=BUDGET, policies=["keep_all"],
                    min_depth=40, max_depth=45)
    assert rep.min_size == 3 and rep.limit == 4


@pytest.mark.parametrize("kwargs,message", [
    (dict(max_depth=20), "max depth \\(=20\\) is below the smallest resnet depth 35"),
    (dict(min_depth=100, max_depth=50), "max depth \\(=50\\) must be >= min depth \\(=100\\)"),
    (dict(budget_bytes="100MiB"), "even the smallest depth \\(35 \\(k=1\\).*lower bound"),
    (dict(budget_bytes="420MiB", policies="keep_all"),
     "even the smallest depth .* is infeasible under keep_all"),
    (dict(batch=0), "batch \\(=0\\) must be a positive integer"),
])
def test_max_depth_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        max_depth("resnet", **{"batch": 1, **kwargs})


def test_unknown_policy_fails_before_simulating():
    with pytest.raises(UnknownNameError, match="policy 'nope' is unknown"):
        max_depth("resnet", batch=1, policies="liveness,nope")


def test_other_families_search():
    rep = max_depth("vgg", batch=1, budget_bytes="2.5GiB", policies=["liveness", "superneurons"])
    d = {r.policy: r for r in rep.rows}
    assert d["liveness"].max_depth <= d["superneurons"].max_depth
    assert d["liveness"].network == f"vgg(2,2,{d['liveness'].max_size},{d['liveness'].max_size}," \
                                    f"{d['liveness'].max_size})"


def test_partial_infeasibility_reports_none():
    # keep_all cannot even run the smallest member; the others can: a row with no maximum
    rep = max_depth("resnet", batch=1, budget_bytes="420MiB", policies="keep_all,superneurons")
    row = rep.best("keep_all")
    assert row.max_size is None and row.next_size == 1 and "out of memory" in row.next_failure
    assert rep.best("superneurons").max_size >= 1


# -- max_batch, min_budget, sweeps ---------------------------------------------------------------
def test_max_batch_boundaries_are_real():
    rep = max_batch("alexnet", budget_bytes="1GiB", policies="keep_all,liveness,superneurons")
    for row in rep.rows:
        assert row.batch == row.max_size and row.next_size == row.max_size + 1
        assert simulate("alexnet", batch=row.max_size, policy=row.policy, budget_bytes="1GiB",
                        record=False).feasible
        if row.next_size <= rep.bound_cap:
            assert not simulate("alexnet", batch=row.next_size, policy=row.policy,
                                budget_bytes="1GiB", record=False).feasible
    b = {r.policy: r.max_size for r in rep.rows}
    assert b["keep_all"] <= b["liveness"] <= b["superneurons"]


def test_max_batch_errors():
    with pytest.raises(UnknownNameError, match="network 'nonet' is unknown"):
        max_batch("nonet")
    with pytest.raises(ConfigError, match="min batch \\(=0\\)"):
        max_batch("lenet", min_batch=0)
    with pytest.raises(ConfigError,
                       match="largest batch to try \\(4\\) is below the smallest \\(8\\)"):
        max_batch("lenet", min_batch=8, max_batch=4)


def test_min_budget_is_tight():
    tol = 1 << 16
    b, r = min_budget("resnet50", batch=4, policy="superneurons", tol_bytes=tol)
    assert r.feasible and r.budget_bytes == b
    assert r.lower_bound_bytes <= b
    assert not simulate("resnet50", batch=4, policy="superneurons", budget_bytes=b - tol,
                        record=False).feasible
    with pytest.raises(ConfigError, match="infeasible under keep_all even with"):
        min_budget("resnet50", batch=4, policy="keep_all", max_budget_bytes="200MiB")


def test_sweep_depth_prunes_beyond_the_bound():
    df = sweep_depth("resnet", [1, 2, 400], batch=1, budget_bytes=BUDGET,
                     policies=["liveness"])
    assert list(df["depth"]) == [35, 38, 1232]
    assert list(df["pruned"]) == [False, False, True]
    assert not df["feasible"].iloc[-1] and "exceeds the budget" in df["failure"].iloc[-1]


# -- CLI -----------------------------------------------------------------------------------------
def test_cli_maxdepth_json(capsys):
    assert main(["maxdepth", "--family", "resnet", "--batch", "1", "--budget", BUDGET,
                 "--policy", "liveness", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["policy"] == "liveness" and rows[0]["max_depth"] >= 35


def test_cli_maxdepth_table_and_maxbatch_csv(capsys):
    assert main(["maxdepth", "--batch", "1", "--budget", BUDGET, "--policy", "recompute"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("deepest: depth ") and "with recompute" in lines[0]
    assert "deepest per policy at batch 1" in out and "simulations" in out
    assert all(len(line) <= 110 for line in lines)   # fits a terminal
    assert main(["maxbatch", "--network", "lenet", "--budget", "64MiB", "--policy",
                 "keep_all", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("policy,network,max_batch")


@pytest.mark.parametrize("argv,message", [
    (["maxdepth", "--family", "foo"], "network family 'foo' is unknown"),
    (["maxdepth", "--min-depth", "100", "--max-depth", "50"], "must be >= min depth"),
    (["maxdepth", "--batch", "1", "--budget", "100MiB"], "even the smallest depth"),
    (["maxbatch", "--network", "nonet"], "network 'nonet' is unknown"),
])
def test_cli_errors_are_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("snsim: error: ") and message in err and err.count("\n") == 1


def test_family_dataclass_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FAMILIES["resnet"].min_size = 3


# -- the certified search equals a plain search -------------------------------------------------
def _plain_largest(feasible, lo):
    """``(largest n >= lo with feasible(n), the next n)`` by doubling then bisection: no peak
    model, no extrapolation, only feasibility (assumed monotone, as the search assumes)."""
    hi = lo + 1
    while feasible(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo, hi


@pytest.mark.parametrize("family,batch,budget,policies", [
    ("resnet", 1, BUDGET, ["liveness", "recompute", "superneurons", "chen_sqrt"]),
    ("vgg", 1, "1.9GiB", ["liveness", "offload", "vdnn"]),
    ("densenet", 1, "600MiB", ["liveness", "recompute", "checkpoint"]),
])
def test_max_depth_equals_a_plain_search(family, batch, budget, policies):
    rep = max_depth(family, batch=batch, budget_bytes=budget, policies=policies)
    fam = get_family(family)
    for row in rep.rows:
        def fits(k, policy=row.policy):
            return simulate(with_module_tree(family_network(family, k, batch=batch)),
                            policy=policy, budget_bytes=budget, record=False).feasible
        # the bracket: the maximum fits and the next size does not (simulated here again)
        assert fits(row.max_size) and not fits(row.max_size + 1)
        assert _plain_largest(fits, fam.min_size) == (row.max_size, row.next_size), row.policy


@pytest.mark.parametrize("network,budget,policies", [
    ("lenet", "48MiB", ["keep_all", "liveness", "recompute"]),
    ("cifar_resnet32", "300MiB", ["liveness", "superneurons"]),
])
def test_max_batch_equals_a_plain_search(network, budget, policies):
    rep = max_batch(network, budget_bytes=budget, policies=policies)
    for row in rep.rows:
        def fits(n, policy=row.policy):
            return simulate(network, batch=n, policy=policy, budget_bytes=budget,
                            record=False).feasible
        assert fits(row.max_size) and not fits(row.max_size + 1)
        assert _plain_largest(fits, 1) == (row.max_size, row.next_size), row.policy


def test_exactly_linear_needs_a_wide_span_and_every_byte():
    def result(peak, feasible=True, evictions=0):
        return type("R", (), {"feasible": feasible, "evictions": evictions,
                              "peak_reserved_bytes": peak})()
    prober = search._Prober(None, None, 10_000, allocator="ideal", optimizer="sgd",
                            policy_options=None, on_probe=None)
    line = {k: 100 + 7 * k for k in (1, 2, 4, 16, 64)}      # hand-made: 100 B + 7 B per k
    prober.results = {("p", k): result(v) for k, v in line.items() if k < 64}
    assert not prober.exactly_linear("p")                    # 1..16: not 64-fold yet
    prober.results[("p", 64)] = result(line[64])
    assert prober.exactly_linear("p")
    prober.results[("p", 16)] = result(line[16] + 1)         # one byte off the line
    assert not prober.exactly_linear("p")
    prober.results[("p", 16)] = result(line[16], evictions=1)   # saturated runs do not count
    assert prober.exactly_linear("p")


def test_skipping_the_4x_check_keeps_the_answer(monkeypatch):
    # batch 8, 4 GiB: cpu_offload's peaks are exactly linear over k = 1..64 and the answer
    # (k = 295) lies beyond 4 x 64, where the search used to probe k = 256 first
    fast = max_depth("resnet", batch=8, budget_bytes="4GiB", policies=["cpu_offload"])
    monkeypatch.setattr(search._Prober, "exactly_linear", lambda self, policy, span=64: False)
    plain = max_depth("resnet", batch=8, budget_bytes="4GiB", policies=["cpu_offload"])
    (f,), (p,) = fast.rows, plain.rows
    assert (f.max_size, f.next_size, f.peak_ideal_bytes, f.next_failure) == \
        (p.max_size, p.next_size, p.peak_ideal_bytes, p.next_failure)
    ks = {q["k"] for q in fast.probes}
    assert 256 not in ks and 256 in {q["k"] for q in plain.probes}
    assert {f.max_size, f.max_size + 1} <= ks and f.simulations < p.simulations


def test_convex_midpoint_only_where_the_peaks_bend_upwards():
    def result(peak):
        return type("R", (), {"feasible": True, "evictions": 0, "peak_reserved_bytes": peak})()
    prober = search._Prober(None, None, 10_000, allocator="ideal", optimizer="sgd",
                            policy_options=None, on_probe=None)
    # hand-made peaks: slope 1 B per k up to k = 16, then 3 B per k (convex)
    prober.results = {("p", k): result(100 + k if k <= 16 else 116 + 3 * (k - 16))
                      for k in (1, 4, 16, 64)}
    assert prober.convex_midpoint("p") == 40
    prober.results = {("p", k): result(100 + 5 * k) for k in (4, 16, 64)}    # a line
    assert prober.convex_midpoint("p") is None
    prober.results = {("p", k): result(100 + 30 * k - k * k // 8) for k in (4, 16, 64)}
    assert prober.convex_midpoint("p") is None                               # concave


def test_the_midpoint_probe_keeps_the_answer_and_skips_a_large_probe(monkeypatch):
    # batch 4, 3 GiB: checkpoint's peaks bend upwards over k = 4..64 and are exactly linear
    # from k = 16 on: the midpoint k = 40 shows it, and the line through 40 and 64 lands on
    # the answer (k = 172); without it the parabola's undershoot probes k = 143 first
    fast = max_depth("resnet", batch=4, budget_bytes="3GiB", policies=["checkpoint"])
    monkeypatch.setattr(search._Prober, "convex_midpoint", lambda self, policy: None)
    plain = max_depth("resnet", batch=4, budget_bytes="3GiB", policies=["checkpoint"])
    (f,), (p,) = fast.rows, plain.rows
    assert (f.max_size, f.next_size, f.step_time_s, f.peak_ideal_bytes, f.next_failure) == \
        (p.max_size, p.next_size, p.step_time_s, p.peak_ideal_bytes, p.next_failure)
    big = sorted(q["k"] for q in fast.probes if q["k"] > 64)
    assert big == [f.max_size, f.max_size + 1]
    assert len([q for q in plain.probes if q["k"] > 64]) > len(big)


# -- policies searched in worker processes (--jobs) ----------------------------------------------
PARALLEL_CASES = [
    # an LRU chain (superneurons, offload: one task) beside policies searched on their own
    ["maxdepth", "--family", "resnet", "--batch", "1", "--budget", BUDGET,
     "--policy", "liveness,superneurons,offload,recompute"],
    ["maxdepth", "--family", "vgg", "--batch", "1", "--budget", "1.9GiB",
     "--policy", "liveness,offload,vdnn"],
    ["maxdepth", "--family", "gpt", "--batch", "1", "--seq", "128", "--budget", "3GiB",
     "--policy", "liveness,superneurons,offload,checkpoint"],
    ["maxbatch", "--network", "cifar_resnet32", "--budget", "300MiB",
     "--policy", "liveness,superneurons,recompute"],
]


def _cli(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    # the table's footer gives the search's wall time, the one figure that may differ
    return code, re.sub(r"simulations, [0-9.]+ s;", "simulations, _ s;", captured.out), \
        captured.err


@pytest.mark.parametrize("argv", PARALLEL_CASES, ids=lambda a: a[2])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_jobs_2_prints_what_jobs_1_prints(capsys, argv, fmt):
    one = _cli(capsys, argv + ["--format", fmt, "--jobs", "1"])
    two = _cli(capsys, argv + ["--format", fmt, "--jobs", "2"])
    assert one[0] == 0 and len(one[1].splitlines()) >= 3
    assert two == one


def _report_fields(rep):
    return {**{f.name: getattr(rep, f.name) for f in dataclasses.fields(rep)
               if f.name != "wall_s"},
            # every field of the runs at the answers but their own wall time
            "results": [dataclasses.replace(r.result, sim_wall_s=0.0) for r in rep.rows]}


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_parallel_search_leaves_the_report_and_progress_of_one_process(monkeypatch,
                                                                       start_method):
    if start_method == "spawn":    # as on a platform without fork: workers get a pickled prober
        monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    elif "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("this platform does not fork")
    reports, probes = [], []
    for jobs in (1, 3):
        seen = []
        reports.append(max_depth("resnet", batch=1, budget_bytes=BUDGET, jobs=jobs,
                                 policies="liveness,superneurons,offload,recompute,chen_sqrt",
                                 on_probe=lambda p, k, r, seen=seen: seen.append((p, k,
                                                                                  r.feasible))))
        probes.append(seen)
    assert _report_fields(reports[1]) == _report_fields(reports[0])
    # every run, in the order the search in one process runs them (the probes too)
    assert probes[1] == probes[0] and len(probes[0]) == len(reports[0].probes) > 10


def test_bad_jobs_is_one_line(capsys):
    for bad in ("0", "-2"):
        assert main(["maxdepth", "--batch", "1", "--budget", BUDGET, "--jobs", bad]) == 2
        err = capsys.readouterr().err
        assert err == f"snsim: error: jobs (={bad}) must be a positive integer: the number of " \
                      f"worker processes (1: search in this process)\n"
    with pytest.raises(ConfigError, match="jobs"):
        max_batch("lenet", policies="keep_all", jobs=0)


def _failing_beyond(monkeypatch, steps, fail):
    """Simulations of recompute's plans of programs longer than ``steps`` call ``fail``."""
    real = search.run_plan

    def run_plan(program, plan, *a, **kw):
        if len(program.steps) > steps and plan.policy == "recompute":
            fail()
        return real(program, plan, *a, **kw)
    monkeypatch.setattr(search, "run_plan", run_plan)


def test_an_error_in_a_worker_is_the_one_line_of_one_process(monkeypatch, capsys):
    from snsim.errors import PlanError

    def fail():
        raise PlanError("tensor 7 freed twice")
    # ResNet (3, 4, k, 3) at batch 1 has 351 steps at k = 1 (every policy's first run, in the
    # searching process), 379 at k = 2, 435 at k = 4: recompute's search fails at k = 4
    _failing_beyond(monkeypatch, 400, fail)
    argv = PARALLEL_CASES[0]
    one, two = _cli(capsys, argv + ["--jobs", "1"]), _cli(capsys, argv + ["--jobs", "2"])
    assert one[0] == 2 and one[1] == "" and one[2].count("\n") == 1
    assert "policy 'recompute' on resnet:3,4,4,3" in one[2] and "tensor 7 freed twice" in one[2]
    assert two == one


def test_a_worker_that_dies_is_one_line(monkeypatch, capsys):
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("the failure is patched in, which only a forked worker inherits")
    pid = os.getpid()

    def die():
        # only a worker dies: should this process ever run the failing simulation, it fails
        # the test instead of ending pytest
        assert os.getpid() != pid, "the simulation ran in the searching process"
        os._exit(9)
    _failing_beyond(monkeypatch, 400, die)   # recompute at k = 4, in a worker (above)
    code, out, err = _cli(capsys, PARALLEL_CASES[0] + ["--jobs", "2"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("snsim: error: a search worker process ended abruptly")
