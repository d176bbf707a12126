"""Memory–time frontiers: every policy over a range of budgets, on one program.

:func:`frontier` plans and replays each policy at each budget on the same program, hardware
and allocator, and returns one tidy row per (policy, budget). Budgets are byte sizes or
fractions of *liveness' peak* (the reserved peak of the ``liveness`` plan with no memory
limit: what a framework that frees every tensor after its last use needs). :func:`pareto`
marks the rows no other row beats on both memory and time, per policy or over all of them.

Where a policy named ``checkmate`` (the rematerialisation MILP) is registered, it is also run
at every budget, named or not, and every row carries the time gap to it: ``gap`` is
``step_time_s / optimal_step_time_s - 1``. Checkmate minimises compute time over schedules of
recomputation and the convolutions' algorithms (``ws_policy=planned``); a policy that also
moves tensors over PCIe (superneurons, vdnn, offload, capuchin, cpu_offload, zero_offload,
joint) can beat it (a negative gap), and its plan is the proven optimum only where its
``status`` says ``optimal``.
"""
from __future__ import annotations

import time

from ..errors import ConfigError
from ..gcpause import without_gc
from ..units import format_bytes, parse_bytes

#: the budgets of a frontier by default, as fractions of liveness' peak
DEFAULT_FRACTIONS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: the policy whose plan the gaps are measured against, when it is registered
OPTIMUM = "checkmate"
#: liveness' unconstrained run: a budget no program of the zoo comes near (1 PiB)
_UNLIMITED_BYTES = 1 << 50

#: every column of :func:`frontier`'s frame, in order
COLUMNS = ("network", "batch", "framework", "hardware", "allocator", "policy", "budget_bytes",
           "budget_fraction", "feasible", "step_time_s", "slowdown", "peak_reserved_bytes",
           "peak_ideal_bytes", "recompute_time_s", "stall_time_s", "h2d_bytes", "failure",
           "optimal_step_time_s", "gap", "optimum_status", "pareto", "pareto_all")


def parse_budgets(items, *, field="budgets"):
    """Budgets as ``("fraction", f)`` or ``("bytes", n)`` pairs, from text or a list.

    A fraction of liveness' peak ends in ``x`` (``0.5x``); anything else is a byte size
    (``4GiB``, ``4096``). Text is split on commas.

    >>> parse_budgets("0.5x, 4GiB")
    [('fraction', 0.5), ('bytes', 4294967296)]
    """
    if isinstance(items, (str, int, float)):
        items = [items]
    out = []
    for item in items:
        parts = [p.strip() for p in item.split(",")] if isinstance(item, str) else [item]
        for p in parts:
            if isinstance(p, str) and p.lower().endswith("x"):
                try:
                    f = float(p[:-1])
                except ValueError:
                    f = float("nan")
                if not 0 < f <= 1000:   # nan fails too
                    raise ConfigError(f"{field} entry {p!r} must be a fraction of liveness' "
                                      f"peak in (0, 1000], such as 0.5x")
                out.append(("fraction", f))
            elif p != "":
                try:
                    n = parse_bytes(p, field=field)
                except ConfigError:
                    n = 0
                if n <= 0:
                    raise ConfigError(f"{field} entry {p!r} must be a byte size > 0 (4GiB) or "
                                      f"a fraction of liveness' peak (0.5x)")
                out.append(("bytes", n))
    if not out:
        raise ConfigError(f"{field} must name at least one budget (a size such as 4GiB or a "
                          f"fraction of liveness' peak such as 0.5x)")
    return out


def liveness_peak(program, hardware, *, allocator="ideal"):
    """The ``liveness`` plan's run with no memory limit: ``(peak_reserved_bytes, Result)``.

    ``hardware``: a preset name, a YAML path or a :class:`~snsim.hardware.HardwareSpec`.
    """
    from ..api import resolve_hardware
    from ..engine.core import run_plan
    from ..policies import get_policy
    hardware = resolve_hardware(hardware)
    plan = get_policy("liveness").plan(program, hardware, _UNLIMITED_BYTES)
    r = run_plan(program, plan, hardware, budget_bytes=_UNLIMITED_BYTES, allocator=allocator,
                 record=False)
    return r.peak_reserved_bytes, r


def pareto(frame, *, by="policy", memory="peak_reserved_bytes", time="step_time_s"):
    """Which rows are on the memory–time Pareto front (a boolean Series aligned to ``frame``).

    A feasible row is on the front of its group (``by``: a column, or None for one group)
    unless another feasible row of the group needs no more memory and no more time, and less
    of one of them. Rows that do not fit are never on it.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"policy": ["a", "a", "a"], "feasible": [True] * 3,
    ...                    "peak_reserved_bytes": [1, 2, 3], "step_time_s": [3.0, 1.0, 2.0]})
    >>> list(pareto(df))
    [True, True, False]
    """
    import pandas as pd
    on = pd.Series(False, index=frame.index)
    ok = frame[frame["feasible"].astype(bool)]
    groups = [ok] if by is None else [g for _, g in ok.groupby(by, sort=True)]
    for g in groups:
        # ascending memory, then time: a row is dominated iff an earlier row is at least as
        # fast (ties in both columns dominate no one)
        g = g.sort_values([memory, time], kind="stable")
        best_t = None
        best_m = None
        for idx, m, t in zip(g.index, g[memory], g[time]):
            if best_t is None or t < best_t or (t == best_t and m == best_m):
                on[idx] = True
                if best_t is None or t < best_t:
                    best_t, best_m = t, m
    return on


@without_gc
def frontier(network, *, batch=None, hardware="k40c", policies="all", budgets=None,
             allocator="ideal", optimizer="sgd-momentum", input_size=None,
             variant="torchvision", framework="superneurons", policy_options=None,
             optimum=OPTIMUM, on_run=None):
    """Every policy at every budget: a tidy frame (one row per policy and budget).

    Parameters
    ----------
    network : str, networkx.DiGraph or Program
        A zoo name (with ``batch``), a layer DAG or a prepared program.
    policies : "all", str or list of str
        ``all``: :func:`snsim.policies.all_policies` that can plan the program.
    budgets : str or list, optional
        Byte sizes and fractions of liveness' peak (:func:`parse_budgets`); default
        :data:`DEFAULT_FRACTIONS`.
    optimum : str or None
        The policy the gaps are measured against when it is registered (``checkmate``); it is
        run at every budget even if ``policies`` does not name it. None: no gaps.
    on_run : callable, optional
        Called as ``on_run(policy, budget_bytes, plan_s, result)`` after every run (progress,
        planning cost).

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`. Figures of runs that do not fit (step time, peaks, slowdown, gap) are
        missing. ``slowdown``: step time over liveness' unconstrained step time;
        ``pareto``: on the policy's own memory–time front; ``pareto_all``: on the front of
        every policy together. Sorted by budget, then policy.

    Examples
    --------
    >>> df = frontier("lenet", batch=8, policies=["liveness", "recompute"], budgets="0.5x,1x")
    >>> sorted(set(df["policy"])), sorted(set(df["budget_fraction"].tolist()))
    (['checkmate', 'liveness', 'recompute'], [0.5, 1.0])
    """
    import pandas as pd

    from ..api import make_program, resolve_hardware
    from ..engine.core import run_plan
    from ..policies import POLICIES, all_policies, applicable_policies, get_policy
    hw = resolve_hardware(hardware)
    program = make_program(network, batch=batch, hardware=hw, input_size=input_size,
                           variant=variant, optimizer=optimizer, framework=framework)
    wanted = parse_budgets(list(budgets) if isinstance(budgets, (list, tuple)) else budgets) \
        if budgets is not None else [("fraction", f) for f in DEFAULT_FRACTIONS]
    if policies is None or policies == "all":
        can = set(applicable_policies(program))
        names = [n for n in all_policies() if n in can]
    else:
        names = [policies] if isinstance(policies, str) else list(policies)
        names = [n.strip() for item in names for n in str(item).split(",") if n.strip()]
        if not names:
            raise ConfigError("policies must name at least one policy (or 'all')")
        names = [get_policy(n).name for n in names]   # unknown names fail before any run
    names = list(dict.fromkeys(names))
    if optimum is not None and optimum in POLICIES and optimum not in names \
            and get_policy(optimum).unsupported(program) is None:
        names.append(optimum)
    options = policy_options or {}

    ref_bytes, ref = liveness_peak(program, hw, allocator=allocator)
    budget_list = sorted({int(v * ref_bytes) if kind == "fraction" else v
                          for kind, v in wanted})
    rows = []
    for budget in budget_list:
        for name in names:
            t0 = time.perf_counter()
            plan = get_policy(name, **options.get(name, {})).plan(program, hw, budget)
            plan_s = time.perf_counter() - t0
            r = run_plan(program, plan, hw, budget_bytes=budget, allocator=allocator,
                         record=False)
            if on_run is not None:
                on_run(name, budget, plan_s, r)
            fits = r.feasible
            rows.append({
                "network": program.name, "batch": program.batch,
                "framework": program.framework or program.source, "hardware": hw.name,
                "allocator": allocator, "policy": name, "budget_bytes": budget,
                "budget_fraction": round(budget / ref_bytes, 6), "feasible": fits,
                "step_time_s": r.step_time_s if fits else None,
                "slowdown": r.step_time_s / ref.step_time_s if fits else None,
                "peak_reserved_bytes": r.peak_reserved_bytes if fits else None,
                "peak_ideal_bytes": r.peak_ideal_bytes if fits else None,
                "recompute_time_s": r.recompute_time_s if fits else None,
                "stall_time_s": r.stall_time_s if fits else None,
                "h2d_bytes": r.h2d_bytes, "failure": str(r.failure or ""),
                "optimum_status": (r.options.get("status") if name == optimum else None)})
    df = pd.DataFrame(rows, columns=[c for c in COLUMNS
                                     if c not in ("optimal_step_time_s", "gap", "pareto",
                                                  "pareto_all")])
    best = {}
    if optimum is not None and optimum in names:
        opt = df[(df["policy"] == optimum) & df["feasible"]]
        best = dict(zip(opt["budget_bytes"], opt["step_time_s"]))
    df["optimal_step_time_s"] = [best.get(b) if ok else None
                                 for b, ok in zip(df["budget_bytes"], df["feasible"])]
    df["gap"] = [t / o - 1 if ok and o else None
                 for t, o, ok in zip(df["step_time_s"], df["optimal_step_time_s"],
                                     df["feasible"])]
    df["optimum_status"] = df["budget_bytes"].map(
        {b: s for b, s, p in zip(df["budget_bytes"], df["optimum_status"], df["policy"])
         if p == optimum})
    df["pareto"] = pareto(df)
    df["pareto_all"] = pareto(df, by=None)
    df = df.sort_values(["budget_bytes", "policy"], kind="stable").reset_index(drop=True)
    df.attrs.update(liveness_peak_bytes=ref_bytes, liveness_step_time_s=ref.step_time_s,
                    device_budget_bytes=hw.budget_bytes, optimum=optimum if best else None)
    return df[list(COLUMNS)]


def frontier_table(df):
    """The frame as a people's table: one row per budget, one column per policy, the step
    time in ms ("—" where it does not fit), with the gap to the optimum in parentheses."""
    import pandas as pd
    rows = []
    for budget, g in df.groupby("budget_bytes", sort=True):
        row = {"budget": f"{format_bytes(budget)} ({g['budget_fraction'].iloc[0]:.2f}x)"}
        for _, r in g.iterrows():
            if not r["feasible"]:
                cell = "—"
            else:
                cell = f"{r['step_time_s'] * 1e3:,.1f}"
                if pd.notna(r["gap"]) and r["policy"] != df.attrs.get("optimum"):
                    cell += f" ({r['gap']:+.1%})"
            row[r["policy"]] = cell
        rows.append(row)
    return rows


__all__ = ["COLUMNS", "DEFAULT_FRACTIONS", "OPTIMUM", "frontier", "frontier_table",
           "liveness_peak", "parse_budgets", "pareto"]
