"""Plot helpers (snsim.plots): the artists and labels each returns, under the Agg backend."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from snsim import plots  # noqa: E402
from snsim.api import simulate  # noqa: E402
from snsim.errors import ConfigError  # noqa: E402
from snsim.experiments.search import max_depth  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def pressured():
    """resnet50 under superneurons in a budget tight enough to swap: all streams busy."""
    return simulate("resnet50", batch=8, policy="superneurons", budget_bytes="700MiB")


@pytest.fixture(scope="module")
def lenet_runs():
    return [simulate("lenet", batch=8, policy=p) for p in ("keep_all", "liveness", "recompute")]


def test_memory_curve_peak_is_the_ideal_peak(pressured, lenet_runs):
    for r in [pressured, *lenet_runs]:
        w = plots.memory_curve(r)
        assert w["total"].max() == r.peak_ideal_bytes
        assert (np.diff(w["t_s"]) >= 0).all()
        assert w["total"].iloc[-1] == r.static_bytes   # managed tensors freed at the end


def test_memory_timeline_artists(pressured):
    ax = plots.memory_timeline(pressured)
    stacks = [c for c in ax.collections if isinstance(c, PolyCollection)]
    cats = [c for c in plots.CATEGORIES if c in {e[1] for e in pressured.memory_events}]
    assert len(stacks) == len(cats)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:len(cats)] == [c.replace("_", " ") for c in cats]
    assert any(lbl.startswith("budget") for lbl in labels)
    assert any(lbl.startswith("peak") for lbl in labels)
    peak = [ln for ln in ax.get_lines() if ln.get_marker() == "v"]
    assert len(peak) == 1 and peak[0].get_ydata()[0] == pytest.approx(
        pressured.peak_ideal_bytes / 2**30)
    budget = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert budget[0].get_ydata()[0] == pytest.approx(pressured.budget_bytes / 2**30)
    assert ax.get_xlabel() == "time in step (s)" and ax.get_ylabel() == "memory (GiB)"
    assert "resnet50 batch 8, superneurons" in ax.get_title()


def test_memory_timeline_zoom_and_given_axes(pressured):
    fig, ax = plt.subplots()
    out = plots.memory_timeline(pressured, ax=ax, ymin_bytes=pressured.static_bytes, budget=False)
    assert out is ax
    assert ax.get_ylim()[0] == pytest.approx(pressured.static_bytes / 2**30)
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]


def test_stream_gantt_rows_and_phases(pressured):
    ax = plots.stream_gantt(pressured)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["D2H", "H2D", "compute"]
    bars = [c for c in ax.collections if isinstance(c, PolyCollection)]
    rows = {round(float(np.mean(c.get_paths()[0].vertices[:, 1]))) for c in bars}
    assert rows == {0, 1, 2}     # compute, H2D and D2H all busy under memory pressure
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["F forward", "B backward", "R recompute", "U update"]
    n_spans = sum(len(c.get_paths()) for c in bars)
    assert n_spans == len(pressured.steps) + len(pressured.transfers)
    assert ax.get_xlim()[1] == pytest.approx(pressured.step_time_s)


def test_stream_gantt_without_copies(lenet_runs):
    ax = plots.stream_gantt(lenet_runs[1])
    bars = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert {round(float(np.mean(c.get_paths()[0].vertices[:, 1]))) for c in bars} == {2}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["F forward", "B backward",
                                                                   "U update"]


def test_plots_need_records():
    r = simulate("lenet", batch=8, policy="liveness", record=False)
    with pytest.raises(ConfigError, match="no memory events; simulate with record=True"):
        plots.memory_timeline(r)
    with pytest.raises(ConfigError, match="no step records"):
        plots.stream_gantt(r)


def test_policy_bars(lenet_runs):
    infeasible = simulate("lenet", batch=8, policy="keep_all", budget_bytes="6MiB")
    assert not infeasible.feasible
    runs = [*lenet_runs, infeasible]
    ax = plots.policy_bars(runs)
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["keep_all", "liveness", "recompute",
                                                            "keep_all"]
    heights = [p.get_height() for p in ax.patches[:3]]
    assert heights == pytest.approx([r.peak_ideal_bytes / 2**30 for r in lenet_runs])
    assert ax.patches[3].get_hatch() == "//"
    assert "infeasible" in [t.get_text() for t in ax.texts]
    assert ax.get_ylabel() == "peak ideal (GiB)"
    lb = [ln for ln in ax.get_lines() if ln.get_label() == "lower bound"]
    assert lb and lb[0].get_ydata()[0] == pytest.approx(lenet_runs[0].lower_bound_bytes / 2**30)


def test_policy_bars_time_metric_and_frame(lenet_runs):
    df = pd.concat([r.to_frame() for r in lenet_runs], ignore_index=True)
    ax = plots.policy_bars(df, metric="step_time_s")
    assert ax.get_ylabel() == "step time (ms)"
    assert ax.patches[0].get_height() == pytest.approx(lenet_runs[0].step_time_s * 1e3)
    assert not ax.get_lines()        # no byte lines on a time metric
    with pytest.raises(ConfigError, match="metric 'nope' is not a run column"):
        plots.policy_bars(df, metric="nope")


def test_sweep_curve_marks_the_largest_feasible_depth():
    df = pd.DataFrame({
        "policy": ["liveness"] * 3 + ["superneurons"] * 3,
        "depth": [35, 50, 65, 35, 50, 65],
        "peak_ideal_bytes": [1e9, 2e9, None, 5e8, 7e8, 9e8],
        "feasible": [True, True, False, True, True, True],
        "budget_bytes": [2**31] * 6})
    ax = plots.sweep_curve(df)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert list(lines["liveness (max 50)"].get_xdata()) == [35, 50]
    assert list(lines["superneurons (max 65)"].get_xdata()) == [35, 50, 65]
    vlines = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert sorted(ln.get_xdata()[0] for ln in vlines) == [50, 65]
    assert lines["budget"].get_ydata()[0] == pytest.approx(2.0)
    assert ax.get_xlabel() == "depth" and ax.get_ylabel() == "peak ideal (GiB)"
    with pytest.raises(ConfigError, match="column 'batch' is missing"):
        plots.sweep_curve(df, x="batch")


def test_max_size_bars_from_a_search():
    rep = max_depth("resnet", batch=1, budget_bytes="600MiB", policies="liveness,superneurons")
    ax = plots.max_size_bars(rep)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["liveness", "superneurons"]
    assert [p.get_width() for p in ax.patches] == [r.max_depth for r in rep.rows]
    assert ax.get_xlabel() == "max depth" and "resnet family, batch 1" in ax.get_title()


def test_png_renders(tmp_path, pressured):
    fig, (a, b) = plt.subplots(2, 1)
    plots.memory_timeline(pressured, ax=a)
    plots.stream_gantt(pressured, ax=b)
    fig.savefig(tmp_path / "x.png")
    assert (tmp_path / "x.png").stat().st_size > 10_000


def test_batch_by_seq_lines_and_bad_frame():
    import pandas as pd
    from snsim.errors import ConfigError
    from snsim.plots import batch_by_seq
    df = pd.DataFrame({"policy": ["liveness"] * 2 + ["recompute"] * 2, "seq": [128, 256] * 2,
                       "max_batch": [8, 4, 16, None]})
    ax = batch_by_seq(df)
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [[8, 4], [16, 0]]
    with pytest.raises(ConfigError, match="needs a seq column"):
        batch_by_seq(df.drop(columns="seq"))
