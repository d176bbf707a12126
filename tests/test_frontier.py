"""Memory–time frontiers (snsim/experiments/frontier.py) and ``snsim frontier``."""
import pandas as pd
import pytest

from snsim.api import make_program
from snsim.cli import main
from snsim.errors import ConfigError
from snsim.experiments.frontier import (COLUMNS, frontier, liveness_peak, parse_budgets,
                                        pareto)
from snsim.policies import POLICIES, all_policies, register
from snsim.policies.liveness import Liveness


# -- Pareto filtering on a hand-made frame -----------------------------------------------------
def _frame(rows):
    return pd.DataFrame(rows, columns=["policy", "feasible", "peak_reserved_bytes",
                                       "step_time_s"])


def test_pareto_per_policy_by_hand():
    df = _frame([
        ("a", True, 1, 5.0),    # least memory: on the front
        ("a", True, 2, 3.0),    # faster for more memory: on
        ("a", True, 3, 3.0),    # as fast as (2, 3.0) with more memory: dominated
        ("a", True, 4, 4.0),    # slower and bigger than (2, 3.0): dominated
        ("a", True, 5, 1.0),    # fastest: on
        ("a", False, 0, 0.0),   # does not fit: never on, even with "better" figures
        ("b", True, 2, 3.0),    # a tie across rows: neither beats the other, both on
        ("b", True, 2, 3.0),
        ("b", True, 2, 4.0),    # same memory, slower: dominated
    ])
    assert list(pareto(df)) == [True, True, False, False, True, False, True, True, False]


def test_pareto_over_all_policies_by_hand():
    df = _frame([
        ("a", True, 1, 5.0),
        ("b", True, 1, 4.0),    # same memory as a's, faster: a's (1, 5.0) is dominated
        ("b", True, 3, 2.0),
        ("a", True, 2, 1.0),    # dominates b's (3, 2.0)
    ])
    assert list(pareto(df, by=None)) == [False, True, False, True]
    assert list(pareto(df)) == [True, True, True, True]   # each alone is its own front


# -- budgets -------------------------------------------------------------------------------------
def test_parse_budgets():
    assert parse_budgets("0.3x, 1x,4GiB") == [("fraction", 0.3), ("fraction", 1.0),
                                              ("bytes", 4 * 2**30)]
    assert parse_budgets(["0.5x", 1024]) == [("fraction", 0.5), ("bytes", 1024)]


@pytest.mark.parametrize("text,message", [
    ("0x", "must be a fraction of liveness' peak in (0, 1000]"),
    ("nanx", "must be a fraction of liveness' peak"),
    ("abc", "must be a byte size > 0 (4GiB) or a fraction"),
    ("-1GiB", "must be a byte size > 0"),
    (" , ", "must name at least one budget"),
])
def test_parse_budgets_rejects(text, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        parse_budgets(text)


# -- the frame -----------------------------------------------------------------------------------
def test_frontier_frame():
    # optimum=None: no optimum policy runs (checkmate, when registered, would add its rows)
    df = frontier("lenet", batch=8, policies=["liveness", "recompute", "keep_all"],
                  budgets="0.5x,1x,64MiB", optimum=None)
    assert tuple(df.columns) == COLUMNS
    peak, _ = liveness_peak(make_program("lenet", batch=8), "k40c")
    assert df.attrs["liveness_peak_bytes"] == peak
    # three budgets, sorted, each with every policy
    assert sorted(set(df["budget_bytes"])) == sorted({peak // 2, peak, 64 * 2**20})
    assert len(df) == 9 and list(df["budget_bytes"]) == sorted(df["budget_bytes"])
    live = df[(df["policy"] == "liveness") & (df["budget_fraction"] == 1.0)].iloc[0]
    # at its own unconstrained peak liveness fits, and is the reference of the slowdown
    assert live["feasible"] and live["slowdown"] == 1.0
    assert live["peak_reserved_bytes"] == peak
    # runs that do not fit carry no figures, only the reason
    bad = df[~df["feasible"]]
    assert len(bad) and bad["step_time_s"].isna().all() and bad["peak_reserved_bytes"].isna().all()
    assert (bad["failure"] != "").all() and not bad["pareto"].any()
    # no optimum: no gaps
    assert df["gap"].isna().all() and df.attrs["optimum"] is None


@pytest.fixture
def fake_optimum():
    """A solver-like policy outside 'all' (liveness' plan under another name)."""
    @register
    class FakeOptimum(Liveness):
        name = "fake_optimum"
        in_all = False
    yield "fake_optimum"
    del POLICIES["fake_optimum"]


def test_gaps_to_the_optimum_and_all_leaves_out_solvers(fake_optimum):
    assert fake_optimum not in all_policies()
    df = frontier("lenet", batch=8, policies="all", budgets="1x", optimum=fake_optimum)
    assert fake_optimum in set(df["policy"])          # run for the gaps though not in 'all'
    opt = df[df["policy"] == fake_optimum].iloc[0]
    assert opt["feasible"] and opt["gap"] == 0.0 and df.attrs["optimum"] == fake_optimum
    fits = df[df["feasible"]]
    # gap = step time / the optimum's step time - 1, at the same budget
    for _, r in fits.iterrows():
        assert r["optimal_step_time_s"] == opt["step_time_s"]
        assert r["gap"] == pytest.approx(r["step_time_s"] / opt["step_time_s"] - 1)


# -- CLI ---------------------------------------------------------------------------------------
def test_cli_frontier_table_csv_and_plot(capsys, tmp_path):
    csv, png = tmp_path / "f.csv", tmp_path / "f.png"
    assert main(["frontier", "--network", "lenet", "--batch", "8", "--policy",
                 "liveness,recompute", "--budgets", "0.5x,1x", "--out", str(csv),
                 "--plot", str(png), "--no-optimum"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("lenet batch 8 on k40c") and "liveness needs" in out[0]
    assert out[2].split() == ["budget", "liveness", "recompute"]
    assert len(out) == 5                # headline, legend, header, two budgets (no optimum run)
    df = pd.read_csv(csv)
    assert tuple(df.columns) == COLUMNS and len(df) == 4
    assert png.stat().st_size > 0


def test_cli_frontier_csv_to_stdout(capsys):
    assert main(["frontier", "--network", "lenet", "--batch", "8", "--policy", "liveness",
                 "--budgets", "1x", "--format", "csv", "--no-optimum"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.split(",") == list(COLUMNS)


@pytest.mark.parametrize("argv,message", [
    (["--budgets", "abc"], "--budgets entry 'abc' must be a byte size > 0"),
    (["--budgets", "0x"], "--budgets entry '0x' must be a fraction of liveness' peak"),
    (["--policy", "nope"], "policy 'nope' is unknown"),
    (["--network", "nonet"], "network 'nonet' is unknown"),
])
def test_cli_frontier_bad_input_is_one_line(capsys, argv, message):
    assert main(["frontier", "--network", "lenet", "--batch", "8", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("snsim: error: ") and message in err and err.count("\n") == 1


def test_doctests():
    import doctest

    import snsim.experiments.frontier as module
    assert doctest.testmod(module).failed == 0


def test_all_leaves_out_solvers_and_says_so(fake_optimum, capsys):
    from snsim.experiments.search import max_batch
    rep = max_batch("lenet", budget_bytes="48MiB", policies="all", max_batch=4)
    assert fake_optimum not in {r.policy for r in rep.rows}
    assert main(["compare", "--network", "lenet", "--batch", "8"]) == 0
    captured = capsys.readouterr()
    note = next(line for line in captured.err.splitlines() if line.startswith("'all' leaves out"))
    assert fake_optimum in note and "checkmate" in note and "name them to run them" in note
    assert fake_optimum not in captured.out
    assert main(["maxbatch", "--network", "lenet", "--budget", "48MiB", "--max-batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "('all' leaves out " in out and fake_optimum in out.split("('all' leaves out ")[1]
    assert main(["compare", "--network", "lenet", "--batch", "8", "--policies",
                 f"liveness,{fake_optimum}"]) == 0     # named, it runs
    assert fake_optimum in capsys.readouterr().out
    assert main(["list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if fake_optimum in x)
    assert line.endswith("[not in 'all': name it]")
