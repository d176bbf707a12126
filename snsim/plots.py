"""Plots of simulated runs (SPEC §13), one function per plot.

Every function takes a :class:`~snsim.result.Result`, a list of them or a tidy frame, draws on
``ax`` (a new figure's axes when ``ax`` is None) and returns the Axes. Nothing here calls
``plt.show()`` or picks a backend, so the helpers work under Agg (CI, ``snsim reproduce``) as
well as in notebooks.

- :func:`memory_timeline` — memory over one step, stacked by tensor category, with the budget
  line and the peak marked (needs a run simulated with ``record=True``);
- :func:`stream_gantt` — compute, H2D and D2H streams as ``broken_barh`` rows coloured by
  phase (F forward, B backward, R recompute, U update);
- :func:`policy_bars` — one metric per policy, infeasible runs hatched;
- :func:`sweep_curve` — a metric against depth (or batch) per policy, with each policy's
  largest feasible size marked;
- :func:`max_size_bars` — the largest feasible depth or batch per policy (``snsim maxdepth``);
- :func:`frontier_curves` — step time against peak memory per policy over budgets, each
  policy's Pareto front joined (``snsim frontier``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import ConfigError

# bottom to top: the static footprint first, then what policies manage
CATEGORIES = ("parameter", "parameter_grad", "optimizer_state", "buffer", "input",
              "activation", "activation_grad", "workspace")
CATEGORY_COLORS = {
    "parameter": "#4c72b0", "parameter_grad": "#8172b3", "optimizer_state": "#64b5cd",
    "buffer": "#937860", "input": "#8c8c8c", "activation": "#dd8452",
    "activation_grad": "#c44e52", "workspace": "#55a868",
}
PHASES = ("F", "B", "R", "U")
PHASE_NAMES = {"F": "forward", "B": "backward", "R": "recompute", "U": "update"}
PHASE_COLORS = {"F": "#4c72b0", "B": "#dd8452", "R": "#55a868", "U": "#8172b3"}
STREAMS = ("compute", "H2D", "D2H")
POLICY_COLORS = {"keep_all": "#8c8c8c", "liveness": "#4c72b0", "offload": "#64b5cd",
                 "recompute": "#55a868", "superneurons": "#c44e52", "workspace": "#dd8452"}


def _axes(ax, figsize=(8, 4)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=figsize)[1]


def _scale(metric):
    """(divisor, unit) to show ``metric`` in a readable unit."""
    if metric.endswith("_bytes"):
        return 2**30, "GiB"
    if metric.endswith("_s"):
        return 1e-3, "ms"
    return 1, ""


def _label(metric):
    div, unit = _scale(metric)
    name = metric.removesuffix("_bytes").removesuffix("_s").replace("_", " ")
    return f"{name} ({unit})" if unit else name


def _policy_color(name, i):
    import matplotlib as mpl
    return POLICY_COLORS.get(name, mpl.rcParams["axes.prop_cycle"].by_key()["color"][i % 10])


def _title(result):
    return f"{result.network} batch {result.batch}, {result.policy} on {result.hardware}"


# -- memory over the step -----------------------------------------------------------------------
def memory_curve(result):
    """Running bytes per category after every memory event, in time order (a wide frame).

    Columns: ``t_s``, one per category present, and ``total``. Equal times keep the engine's
    order, so the maximum of ``total`` is the ideal peak.
    """
    if not result.memory_events:
        raise ConfigError(f"result of {result.network}/{result.policy} has no memory events; "
                          f"simulate with record=True")
    ev = pd.DataFrame(result.memory_events, columns=["t_s", "category", "delta_bytes"])
    ev = ev.sort_values("t_s", kind="stable")
    cats = [c for c in CATEGORIES if c in set(ev["category"])]
    cats += sorted(set(ev["category"]) - set(cats))
    col = {c: i for i, c in enumerate(cats)}
    deltas = np.zeros((len(ev), len(cats)), dtype=np.int64)
    deltas[np.arange(len(ev)), ev["category"].map(col).to_numpy()] = ev["delta_bytes"].to_numpy()
    wide = pd.DataFrame(np.cumsum(deltas, axis=0), columns=cats)
    wide.insert(0, "t_s", ev["t_s"].to_numpy())
    wide["total"] = wide[cats].sum(axis=1)
    return wide


def memory_timeline(result, *, ax=None, budget=True, title=True, ymin_bytes=0):
    """Memory over one step, stacked by tensor category, with the budget and the peak.

    Parameters
    ----------
    result : Result
        A run simulated with ``record=True`` (the default of :func:`snsim.api.simulate`).
    budget : bool
        Draw the budget as a dashed line.
    ymin_bytes : int
        Bottom of the y axis: zoom past a large static footprint (e.g. ResNet2500's 10.3 GiB).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from snsim.api import simulate
    >>> ax = memory_timeline(simulate("lenet", batch=8, policy="liveness"))
    >>> ax.get_ylabel()
    'memory (GiB)'
    """
    ax = _axes(ax)
    wide = memory_curve(result)
    cats = [c for c in wide.columns if c not in ("t_s", "total")]
    t = wide["t_s"].to_numpy()
    ys = [wide[c].to_numpy() / 2**30 for c in cats]
    ax.stackplot(t, *ys, labels=[c.replace("_", " ") for c in cats], step="post",
                 colors=[CATEGORY_COLORS.get(c, "#cccccc") for c in cats], alpha=0.9,
                 linewidth=0)
    i = int(np.argmax(wide["total"].to_numpy()))
    peak = wide["total"].iloc[i] / 2**30
    ax.plot([t[i]], [peak], marker="v", color="black", linestyle="none", zorder=5,
            label=f"peak {peak:.2f} GiB")
    if budget:
        ax.axhline(result.budget_bytes / 2**30, color="black", linestyle="--", linewidth=1,
                   label=f"budget {result.budget_bytes / 2**30:.2f} GiB")
    ax.set_xlim(0, max(float(t.max()), result.step_time_s) or 1.0)
    top = max(peak, result.budget_bytes / 2**30 if budget else 0)
    low = ymin_bytes / 2**30
    ax.set_ylim(low, top + (top - low) * 0.05)
    ax.set_xlabel("time in step (s)")
    ax.set_ylabel("memory (GiB)")
    if title:
        ax.set_title(_title(result) + ("" if result.feasible else " (infeasible)"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, borderaxespad=0)
    return ax


# -- streams --------------------------------------------------------------------------------------
def stream_gantt(result, *, ax=None, title=True):
    """Compute, H2D and D2H streams as ``broken_barh`` rows, coloured by phase.

    A copy takes the phase of the compute step that is running when it starts.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from snsim.api import simulate
    >>> ax = stream_gantt(simulate("lenet", batch=8, policy="liveness"))
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['D2H', 'H2D', 'compute']
    """
    from matplotlib.patches import Patch
    if not result.steps:
        raise ConfigError(f"result of {result.network}/{result.policy} has no step records; "
                          f"simulate with record=True")
    ax = _axes(ax, figsize=(10, 3))
    steps = result.steps_frame().sort_values("start_s", kind="stable")
    moves = result.transfers_frame()
    rows = {"compute": 2, "H2D": 1, "D2H": 0}
    if len(moves):
        starts = steps["start_s"].to_numpy()
        k = np.clip(np.searchsorted(starts, moves["start_s"].to_numpy(), side="right") - 1,
                    0, len(steps) - 1)
        moves = moves.assign(phase=steps["phase"].to_numpy()[k],
                             stream=moves["direction"].map({"h2d": "H2D", "d2h": "D2H"}))
    used = []
    for stream, frame in (("compute", steps), ("H2D", moves[moves["stream"] == "H2D"]
                                               if len(moves) else moves),
                          ("D2H", moves[moves["stream"] == "D2H"] if len(moves) else moves)):
        if not len(frame):
            continue
        for phase in PHASES:
            part = frame[frame["phase"] == phase]
            if not len(part):
                continue
            spans = list(zip(part["start_s"], part["end_s"] - part["start_s"]))
            ax.broken_barh(spans, (rows[stream] - 0.4, 0.8), facecolors=PHASE_COLORS[phase],
                           edgecolors="none")
            used.append(phase)
    ax.set_yticks([0, 1, 2], ["D2H", "H2D", "compute"])
    ax.set_ylim(-0.6, 2.6)
    ax.set_xlim(0, result.step_time_s or 1.0)
    ax.set_xlabel("time in step (s)")
    handles = [Patch(color=PHASE_COLORS[p], label=f"{p} {PHASE_NAMES[p]}")
               for p in PHASES if p in used]
    ax.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(handles) or 1)
    if title:
        ax.set_title(_title(result))
    return ax


# -- comparisons ----------------------------------------------------------------------------------
def _as_frame(results):
    if isinstance(results, pd.DataFrame):
        return results
    results = list(results)
    if not results:
        raise ConfigError("policy_bars needs at least one result")
    return pd.concat([r.to_frame() for r in results], ignore_index=True)


def policy_bars(results, *, metric="peak_ideal_bytes", ax=None, lower_bound=True, budget=True,
                title=True):
    """One bar per policy for ``metric``; infeasible runs are hatched and labelled.

    Parameters
    ----------
    results : list of Result, or DataFrame
        Runs of one network; a frame needs ``policy``, ``feasible`` and ``metric`` columns
        (``Result.to_frame()`` rows).
    metric : str
        A run column, e.g. ``peak_ideal_bytes`` (GiB) or ``step_time_s`` (ms).
    lower_bound, budget : bool
        For byte metrics, draw ``lower_bound_bytes`` and ``budget_bytes`` as lines.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> from snsim.api import simulate
    >>> rs = [simulate("lenet", batch=8, policy=p) for p in ("keep_all", "liveness")]
    >>> [t.get_text() for t in policy_bars(rs).get_xticklabels()]
    ['keep_all', 'liveness']
    """
    df = _as_frame(results)
    if metric not in df.columns:
        raise ConfigError(f"metric {metric!r} is not a run column; known: {', '.join(df.columns)}")
    ax = _axes(ax, figsize=(6, 4))
    div, _ = _scale(metric)
    feasible = (df["feasible"].astype(bool).to_numpy() if "feasible" in df
                else np.ones(len(df), bool))
    values = pd.to_numeric(df[metric], errors="coerce").fillna(0).to_numpy() / div
    x = np.arange(len(df))
    colors = [_policy_color(p, i) for i, p in enumerate(df["policy"])]
    bars = ax.bar(x, np.where(feasible, values, 0), color=colors)
    top = max(float(values[feasible].max()) if feasible.any() else 0.0, 1e-9)
    for b, ok, v in zip(bars, feasible, values):
        if not ok:
            b.set_height(top * 0.05)
            b.set_hatch("//")
            b.set_facecolor("white")
            b.set_edgecolor("black")
        text = "infeasible" if not ok else (f"{v:,.0f}" if v >= 100 else f"{v:.3g}")
        ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), xytext=(0, 2),
                    textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(x, list(df["policy"]), rotation=25, ha="right")
    ax.set_ylabel(_label(metric))
    lines = []
    if metric.endswith("_bytes"):
        if lower_bound and "lower_bound_bytes" in df and df["lower_bound_bytes"].nunique() == 1:
            lines.append((df["lower_bound_bytes"].iloc[0] / div, ":", "lower bound"))
        if budget and "budget_bytes" in df and df["budget_bytes"].nunique() == 1:
            lines.append((df["budget_bytes"].iloc[0] / div, "--", "budget"))
    for y, style, name in lines:
        # labelled in place, not in a legend that would hide the bars
        ax.axhline(y, color="black", linestyle=style, linewidth=1, label=name)
        ax.annotate(name, (0.0, y), xycoords=("axes fraction", "data"), xytext=(2, 2),
                    textcoords="offset points", ha="left", va="bottom", fontsize=7,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 1})
        top = max(top, y)
    ax.set_ylim(0, top * 1.12)
    if title and {"network", "batch"} <= set(df.columns) and df["network"].nunique() == 1:
        ax.set_title(f"{df['network'].iloc[0]} batch {df['batch'].iloc[0]}"
                     + (f" on {df['hardware'].iloc[0]}" if "hardware" in df else ""))
    return ax


def sweep_curve(frame, *, x="depth", y="peak_ideal_bytes", ax=None, hue="policy", mark_max=True,
                budget=True):
    """``y`` against ``x`` per policy (feasible runs), with each policy's largest feasible ``x``.

    Parameters
    ----------
    frame : DataFrame
        One row per run with columns ``x``, ``y``, ``hue`` and ``feasible`` (e.g.
        :func:`snsim.experiments.search.sweep_depth` or ``SearchReport.probes_frame()``).
    mark_max : bool
        A dotted vertical line at each policy's largest feasible ``x``, named in the legend.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import pandas as pd
    >>> df = pd.DataFrame({"policy": ["a", "a", "b"], "depth": [10, 20, 10],
    ...                    "peak_ideal_bytes": [1e9, 2e9, 5e8], "feasible": [True, True, True]})
    >>> sweep_curve(df).get_lines()[0].get_label()
    'a (max 20)'
    """
    for c in (x, y, hue):
        if c not in frame.columns:
            raise ConfigError(f"sweep_curve: column {c!r} is missing; have "
                              f"{', '.join(frame.columns)}")
    ax = _axes(ax)
    div, _ = _scale(y)
    ok = frame["feasible"].astype(bool) if "feasible" in frame else pd.Series(True, frame.index)
    for i, (name, part) in enumerate(frame.groupby(hue, sort=False)):
        color = _policy_color(name, i)
        good = part[ok.loc[part.index]].sort_values(x)
        top = good[x].max() if len(good) else None
        label = f"{name} (max {top})" if mark_max and top is not None else str(name)
        ax.plot(good[x], pd.to_numeric(good[y]) / div, marker="o", markersize=3, color=color,
                label=label)
        if mark_max and top is not None:
            ax.axvline(top, color=color, linestyle=":", linewidth=1)
    if budget and y.endswith("_bytes") and "budget_bytes" in frame and \
            frame["budget_bytes"].nunique() == 1:
        ax.axhline(frame["budget_bytes"].iloc[0] / div, color="black", linestyle="--",
                   linewidth=1, label="budget")
    ax.set_xlabel(x)
    ax.set_ylabel(_label(y))
    ax.legend(fontsize=7, ncol=2)
    return ax


def max_size_bars(report, *, ax=None, title=True):
    """Horizontal bars: the largest feasible depth (or batch) per policy.

    Parameters
    ----------
    report : SearchReport or DataFrame
        ``snsim maxdepth``/``maxbatch`` output (a frame with ``policy`` and ``max_depth`` or
        ``max_batch``).
    """
    df = report.frame() if hasattr(report, "frame") else report
    col = "max_depth" if "max_depth" in df.columns else "max_batch"
    if col not in df.columns:
        raise ConfigError("max_size_bars needs a max_depth or max_batch column")
    ax = _axes(ax, figsize=(6, 3))
    vals = pd.to_numeric(df[col], errors="coerce").fillna(0).to_numpy()
    y = np.arange(len(df))
    bars = ax.barh(y, vals, color=[_policy_color(p, i) for i, p in enumerate(df["policy"])])
    for b, v in zip(bars, vals):
        ax.annotate(f"{int(v)}" if v else "none", (b.get_width(), b.get_y() + b.get_height() / 2),
                    xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, list(df["policy"]))
    ax.invert_yaxis()
    ax.set_xlabel(col.replace("_", " "))
    ax.set_xlim(0, max(vals.max(), 1) * 1.15)
    if title and hasattr(report, "subject"):
        what = (f"{report.subject} family, batch {report.batch}" if report.axis == "depth"
                else report.subject)
        ax.set_title(f"{col.replace('_', ' ')} per policy: {what} on {report.hardware}")
    return ax


def frontier_curves(frame, *, ax=None, title=True):
    """Step time against reserved peak per policy (:func:`snsim.experiments.frontier.frontier`).

    Each policy's Pareto front is a line; its dominated runs are faint markers; runs that do
    not fit are not drawn. Liveness' unconstrained peak is a dotted vertical line when the
    frame knows it (``frame.attrs["liveness_peak_bytes"]``).

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"policy": ["a", "a", "b"], "feasible": [True, True, False],
    ...                    "peak_reserved_bytes": [1e9, 2e9, None],
    ...                    "step_time_s": [0.3, 0.2, None], "pareto": [True, True, False]})
    >>> [line.get_label() for line in frontier_curves(df).get_lines()]
    ['a']
    """
    for c in ("policy", "feasible", "peak_reserved_bytes", "step_time_s", "pareto"):
        if c not in frame.columns:
            raise ConfigError(f"frontier_curves: column {c!r} is missing; have "
                              f"{', '.join(frame.columns)}")
    ax = _axes(ax, figsize=(8, 5))
    ok = frame[frame["feasible"].astype(bool)]
    for i, (name, part) in enumerate(frame.groupby("policy", sort=True)):
        color = _policy_color(name, i)
        part = ok[ok["policy"] == name]
        if not len(part):
            continue
        front = part[part["pareto"].astype(bool)].sort_values("peak_reserved_bytes")
        ax.plot(front["peak_reserved_bytes"] / 2**30, front["step_time_s"] * 1e3, marker="o",
                markersize=4, color=color, label=str(name))
        rest = part[~part["pareto"].astype(bool)]
        if len(rest):
            ax.scatter(rest["peak_reserved_bytes"] / 2**30, rest["step_time_s"] * 1e3,
                       s=10, color=color, alpha=0.3)
    peak = frame.attrs.get("liveness_peak_bytes")
    if peak:
        ax.axvline(peak / 2**30, color="black", linestyle=":", linewidth=1)
    ax.set_xlabel("peak reserved (GiB)")
    ax.set_ylabel("step time (ms)")
    if title and "network" in frame and len(frame):
        r = frame.iloc[0]
        ax.set_title(f"{r['network']} batch {r['batch']} on {r.get('hardware', '')}: "
                     f"memory–time frontier")
    if ax.get_lines():
        ax.legend(fontsize=7, ncol=2)
    return ax


def batch_by_seq(frame, *, ax=None):
    """Lines: the largest batch per policy against the sequence length (log 2 axis).

    Parameters
    ----------
    frame : DataFrame
        Columns ``policy``, ``seq`` and ``max_batch`` (None where nothing fits), as
        :func:`snsim.experiments.reproduce.measure_transformers` returns.
    """
    for col in ("policy", "seq", "max_batch"):
        if col not in frame.columns:
            raise ConfigError(f"batch_by_seq needs a {col} column")
    ax = _axes(ax, figsize=(6, 4))
    for i, (policy, part) in enumerate(frame.groupby("policy", sort=False)):
        # equal curves (liveness and workspace, say) stay visible: dashes and markers differ
        ax.plot(part["seq"], pd.to_numeric(part["max_batch"], errors="coerce").fillna(0),
                label=policy, color=_policy_color(policy, i), marker="os^vD<>"[i % 7],
                linestyle=("-", "--", ":", "-.")[i % 4])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length")
    ax.set_ylabel("largest batch")
    ax.legend(fontsize=7)
    return ax
