"""CLI commands ``snsim maxdepth``, ``snsim maxbatch`` and ``snsim reproduce``.

Imported by :func:`snsim.cli._load_plugins`; each command registers itself with
:func:`snsim.cli.command`. I/O (tables, progress bars, files) lives here, not in the searches.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

from ..cli import (DEFAULT_GPU, _allocator, _allocator_label, _framework_arg, allocator_arg,
                   command, emit, emit_table, output_path, precision_of, seq_arg)
from ..errors import ConfigError
from ..units import format_bytes
from ..zoo import seq_input_size
from ..verdict import format_ms


def _progress(desc):
    """A tqdm bar on stderr (off when stderr is not a terminal) and its per-simulation callback."""
    from tqdm import tqdm
    # no monitor thread: a search with --jobs forks its workers, and a process should not fork
    # while it runs other threads
    tqdm.monitor_interval = 0
    bar = tqdm(desc=desc, unit="sim", leave=False, disable=not sys.stderr.isatty())

    def on_probe(policy, size, result):
        bar.set_postfix_str(f"{policy} {size} {'ok' if result.feasible else 'OOM'}", refresh=False)
        bar.update(1)
    return bar, on_probe


def _precision_kw(args):
    """``amp`` and ``param_dtype`` of a zoo search (``--amp``, ``--param-dtype``)."""
    amp, param_dtype = precision_of(args)
    return {"amp": amp, "param_dtype": param_dtype}


def _precision_label(args):
    """``", bf16 autocast"``, ``", pure bf16"`` or ``""`` (fp32) for a search's title."""
    from ..torchsim.amp import TrainSetup
    amp, param_dtype = precision_of(args)
    if not amp and param_dtype == "fp32":
        return ""
    return ", " + TrainSetup(amp=amp, param_dtype=param_dtype).precision_label


def _common(p):
    p.add_argument("--gpu", default=None, help="hardware preset or YAML path (default k40c; "
                   "h200 for maxbatch --model)")
    from ..policies import all_note
    p.add_argument("--policy", default="all",
                   help="a policy, a comma-separated list, or 'all' (default)"
                   + (f"; {all_note()}" if all_note() else ""))
    p.add_argument("--budget", default=None,
                   help="GPU memory budget, e.g. 6GiB (default: the preset's DRAM minus context)")
    allocator_arg(p)
    p.add_argument("--optimizer", default="sgd-momentum",
                   help="sgd | sgd-momentum | nesterov | adam (sets optimizer-state bytes)")
    p.add_argument("--input-size", type=int, default=None, help="image side in pixels (224)")
    seq_arg(p)
    p.add_argument("--variant", default="torchvision", choices=("torchvision", "release"),
                   help="torchvision topology (224 px) or the SuperNeurons release's (227 px)")
    _framework_arg(p)
    p.add_argument("--format", default="table", choices=("table", "json", "csv"),
                   help="table for people (default), json or csv for programs (every field)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="the whole reason the next size fails, not a shortened one")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="worker processes searching the policies concurrently (default: one "
                   "per CPU, at most one per policy; 1: in this process); the output is the "
                   "same for every value")


def _short(why, verbose):
    """A failure reason cut to a table cell (whole with ``--verbose``)."""
    return why if verbose or len(why) <= 44 else why[:43] + "…"


def _table(rep, size_cols, verbose=False):
    rows = []
    for r in rep.rows:
        why = _short(r.next_failure, verbose)
        row = {"policy": r.policy, **size_cols(r),
               "step_ms": None if r.step_time_s is None else round(r.step_time_s * 1e3, 1),
               "img/s": None if r.result is None else round(r.result.images_per_s, 2),
               "peak_GiB": None if r.peak_ideal_bytes is None
               else round(r.peak_ideal_bytes / 2**30, 3),
               "why the next size fails": why}
        rows.append(row)
    return rows


def _best(rows, size=lambda r: r.max_size):
    """The row with the largest ``size`` (then the fastest there), or None."""
    ok = [r for r in rows if size(r) is not None]
    if not ok:
        return None
    return max(ok, key=lambda r: (size(r), -(r.step_time_s or 0.0)))


def _emit_frame(df, fmt):
    """A report's frame as JSON or CSV records (missing values as null)."""
    emit(df.astype(object).where(df.notna(), None).to_dict("records"), fmt, title="list")


def _next(row, what, size):
    if row.next_failure.startswith("not tested"):
        return f"{what} {size} not tried (above the search's limit)"
    return f"{what} {size} does not fit"


def _print(rep, args, title, size_cols, headline):
    if args.format == "table":
        print(headline)
        print(title)
        rows = sorted(rep.rows, key=lambda r: (-(r.max_size or 0), r.step_time_s or 0.0))
        rep_sorted = type("R", (), {"rows": rows})
        emit_table(_table(rep_sorted, size_cols, args.verbose))
        print(f"({sum(r.simulations for r in rep.rows)} simulations, {rep.wall_s:.1f} s; static "
              f"bound caps the search at {rep.bound_cap} "
              f"{'(k)' if rep.axis == 'depth' else '(batch)'}; step times modelled; peak: ideal "
              f"bytes)")
        from ..policies import all_note
        if args.policy.strip().lower() == "all" and all_note():
            print(f"({all_note()})")
    else:
        _emit_frame(rep.frame(), args.format)


# -- maxdepth -----------------------------------------------------------------------------------
def cmd_maxdepth(args):
    from ..experiments.search import get_family, max_depth
    args.gpu = args.gpu or DEFAULT_GPU
    fam = get_family(args.family)
    _allocator(args)
    bar, on_probe = _progress(f"maxdepth {fam.name}")
    try:
        rep = max_depth(fam, batch=args.batch, hardware=args.gpu, policies=args.policy,
                        min_depth=args.min_depth, max_depth=args.max_depth,
                        budget_bytes=args.budget, allocator=args.allocator,
                        optimizer=args.optimizer,
                        input_size=seq_input_size(fam.name, seq=args.seq,
                                                  input_size=args.input_size),
                        variant=args.variant, on_probe=on_probe, framework=args.framework,
                        jobs=args.jobs, **_precision_kw(args))
    finally:
        bar.close()
    import textwrap
    title = (textwrap.fill(f"{fam.name}: {fam.description}", 100) + "\n"
             f"deepest per policy at batch {args.batch} on {rep.hardware}, budget "
             f"{format_bytes(rep.budget_bytes)}, {_allocator_label(args)}, {rep.framework} "
             f"semantics{_precision_label(args)}")
    b = _best(rep.rows)
    headline = ("no policy trains even the smallest depth" if b is None else
                f"deepest: depth {b.max_depth} (k={b.max_size}) with {b.policy}, step "
                f"{format_ms(b.step_time_s)} (modelled); {_next(b, 'depth', b.next_depth)}")
    _print(rep, args, title, lambda r: {"max_depth": r.max_depth, "k": r.max_size,
                                        "next_depth": r.next_depth}, headline)
    return 0


@command("maxdepth")
def add_maxdepth(sub):
    from ..experiments.search import list_families
    p = sub.add_parser("maxdepth", help="deepest network of a family each policy can train",
                       description="Galloping, then binary search over the depth of a network "
                       "family, per policy. Assumes feasibility is monotone in depth.")
    p.add_argument("--family", default="resnet",
                   help=f"network family: {', '.join(list_families())} (default resnet)")
    p.add_argument("--batch", type=int, default=16, help="mini-batch size (default 16)")
    p.add_argument("--min-depth", type=int, default=None, help="smallest depth to try")
    p.add_argument("--max-depth", type=int, default=None,
                   help="largest depth to try (default 10000)")
    _common(p)
    p.set_defaults(func=cmd_maxdepth)


# -- maxbatch -----------------------------------------------------------------------------------
def cmd_maxbatch(args):
    if args.model is not None:
        return _maxbatch_model(args)
    for flag, value in (("--optimizer-impl", args.optimizer_impl),
                        ("--matmul-precision", args.matmul_precision),
                        ("--input-shape", args.input_shape), ("--option", args.option)):
        if value:
            raise ConfigError(f"{flag} applies to a PyTorch model: give --model (a zoo "
                              f"--network takes --input-size, --seq and --optimizer)")
    from ..experiments.search import max_batch
    from ..zoo import canonical_name
    _allocator(args)
    args.gpu = args.gpu or DEFAULT_GPU
    args.network = args.network or "resnet50"
    bar, on_probe = _progress(f"maxbatch {args.network}")
    try:
        rep = max_batch(args.network, hardware=args.gpu, policies=args.policy,
                        min_batch=args.min_batch, max_batch=args.max_batch,
                        budget_bytes=args.budget, allocator=args.allocator,
                        optimizer=args.optimizer,
                        input_size=seq_input_size(args.network, seq=args.seq,
                                                  input_size=args.input_size),
                        variant=args.variant, on_probe=on_probe, framework=args.framework,
                        jobs=args.jobs, **_precision_kw(args))
    finally:
        bar.close()
    title = (f"largest batch of {canonical_name(args.network)}"
             f"{'' if args.seq is None else f' at sequence {args.seq}'} per policy on "
             f"{rep.hardware}, "
             f"budget {format_bytes(rep.budget_bytes)}, {_allocator_label(args)}, "
             f"{rep.framework} semantics{_precision_label(args)}")
    b = _best(rep.rows)
    headline = ("no policy trains even the smallest batch" if b is None else
                f"largest batch: {b.max_size} with {b.policy}, step "
                f"{format_ms(b.step_time_s)} (modelled); {_next(b, 'batch', b.next_size)}")
    _print(rep, args, title, lambda r: {"max_batch": r.max_size, "next_batch": r.next_size},
           headline)
    return 0


def _maxbatch_model(args):
    """``snsim maxbatch --model``: the largest batch per plan, by ``snsim predict`` probes."""
    from ..torchsim.amp import TrainSetup
    from ..torchsim.cli import _budget, _input_shape, _torch_modelled
    from .model_search import max_batch_model
    for flag, given in (("--network", args.network is not None),
                        ("--allocator", args.allocator is not None),
                        ("--input-size", args.input_size is not None),
                        ("--variant", args.variant != "torchvision"),
                        ("--framework", args.framework != "superneurons")):
        if given:
            raise ConfigError(f"{flag} applies to a zoo --network, not to --model (a PyTorch "
                              f"model runs PyTorch's own allocator and semantics)")
    args.gpu = args.gpu or "h200"
    setup = TrainSetup.parse(args.optimizer, args.optimizer_impl or "foreach", args.amp or "none",
                             matmul_precision=args.matmul_precision,
                             param_dtype=args.param_dtype)
    bar, on_probe = _progress(f"maxbatch {args.model}")
    try:
        rep = max_batch_model(args.model, gpu=args.gpu, policies=args.policy,
                              options=args.option, optimizer=setup,
                              input_shape=_input_shape(args), budget_bytes=_budget(args),
                              min_batch=args.min_batch, max_batch=args.max_batch,
                              torch_version=_torch_modelled(args), jobs=args.jobs,
                              on_probe=lambda plan, n, ok: on_probe(
                                  plan, n, SimpleNamespace(feasible=ok)))
    finally:
        bar.close()
    if args.format != "table":
        _emit_frame(rep.frame(), args.format)
        return 0
    b = _best(rep.rows, lambda r: r.max_batch)
    print("no plan trains even the smallest batch" if b is None else
          f"largest batch: {b.max_batch} with {b.plan}, step {format_ms(b.step_time_s)} "
          f"(predicted); " + (f"batch {b.next_batch} not tried (above --max-batch)"
                              if b.next_batch > rep.limit else
                              f"batch {b.next_batch} does not fit"))
    print(f"largest batch of {rep.model} per plan on {rep.hardware}, budget "
          f"{format_bytes(rep.budget_bytes)}, {setup.optimizer} ({setup.optimizer_impl}), "
          f"{setup.precision_label}, "
          f"PyTorch's caching allocator "
          f"(snsim predict at each batch)")
    rows = []
    for r in sorted(rep.rows, key=lambda r: (-(r.max_batch or 0), r.step_time_s or 0.0)):
        why = _short(r.next_failure, args.verbose)
        rows.append({"plan": r.plan, "max_batch": r.max_batch,
                     "step_ms": None if r.step_time_s is None else round(r.step_time_s * 1e3, 1),
                     "samples/s": None if not r.step_time_s
                     else round(r.max_batch / r.step_time_s, 1),
                     "reserved_GiB": None if r.peak_reserved_bytes is None
                     else round(r.peak_reserved_bytes / 2**30, 3),
                     "next_batch": r.next_batch, "why the next batch fails": why})
    emit_table(rows)
    print(f"({len(rep.probes)} predictions, {rep.wall_s:.1f} s; predicted by torch "
          f"{rep.provenance.get('torch_version', '?')}, modelling "
          f"{rep.provenance.get('torch_modelled', '?')}; assumes feasibility is monotone in "
          f"the batch)")
    return 0


@command("maxbatch")
def add_maxbatch(sub):
    p = sub.add_parser("maxbatch", help="largest mini-batch of a network each policy can train",
                       description="Galloping, then binary search over the batch, per policy. "
                       "Assumes feasibility is monotone in the batch. A zoo --network is "
                       "simulated from its layer graph (no torch); a PyTorch --model is "
                       "predicted by snsim predict at each batch probed, per memory plan.")
    p.add_argument("--network", default=None, help="zoo network name (default resnet50)")
    p.add_argument("--model", default=None,
                   help="a PyTorch model instead (torchvision:NAME, hf:NAME, snsim:gpt, "
                        "package.module:callable, ...): --policy names plans run in PyTorch "
                        "(plain, checkpoint, cpu_offload, recompute, offload, superneurons; "
                        "'all': every one); default --gpu h200")
    p.add_argument("--min-batch", type=int, default=1, help="smallest batch to try (1)")
    p.add_argument("--max-batch", type=int, default=None,
                   help="largest batch to try (default 2**20)")
    _common(p)
    p.add_argument("--optimizer-impl", default=None,
                   help="with --model: foreach | fused (default foreach)")
    p.add_argument("--matmul-precision", default=None,
                   help="with --model: highest | high | medium, torch's float32 matmul "
                        "precision (high, medium: TF32; default highest); moves the step, "
                        "not the memory")
    p.add_argument("--input-shape", default=None,
                   help="with --model: one sample's shape, e.g. 3,224,224 (default per model)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="with --model and one --policy: a plan option, repeatable (as snsim "
                        "predict's)")
    p.set_defaults(func=cmd_maxbatch)


# -- reproduce ----------------------------------------------------------------------------------
def cmd_reproduce(args):
    from ..experiments.reproduce import reproduce
    from tqdm import tqdm
    output_path(args.out, "--out", folder=True)
    bar = tqdm(desc="reproduce", unit="claim", leave=False, disable=not sys.stderr.isatty())

    def on_stage(name):
        bar.set_postfix_str(name, refresh=False)
        bar.update(1)
    try:
        rep = reproduce(args.out, hardware=args.gpu, plots=not args.no_plots, on_stage=on_stage)
    finally:
        bar.close()
    for c in rep.claims:
        print(f"{c.number}. {c.verdict:<14} {c.claim}")
    print(f"report: {rep.path} ({rep.wall_s:.1f} s)")
    return 0


@command("reproduce")
def add_reproduce(sub):
    p = sub.add_parser("reproduce", help="markdown report + plots of the paper's headline claims")
    p.add_argument("--out", default="report", help="output directory (default ./report)")
    p.add_argument("--gpu", default="k40c", help="hardware preset (default k40c, the paper's GPU)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.set_defaults(func=cmd_reproduce)


# -- frontier -----------------------------------------------------------------------------------
def cmd_frontier(args):
    from ..cli import load_program
    from ..policies import all_note
    from .frontier import frontier, frontier_table, parse_budgets
    if args.budgets is not None:
        parse_budgets(args.budgets, field="--budgets")   # bad input fails before any work
    if args.out:
        output_path(args.out, "--out")
    if args.plot:
        output_path(args.plot, "--plot")
    hw, program = load_program(args)
    _allocator(args, program)
    bar, _ = _progress("frontier")

    def on_run(policy, budget, plan_s, result):
        bar.set_postfix_str(f"{policy} {format_bytes(budget)}", refresh=False)
        bar.update(1)
    try:
        df = frontier(program, hardware=hw, policies=args.policy,
                      budgets=args.budgets,
                      allocator=args.allocator, optimum=None if args.no_optimum else "checkmate",
                      on_run=on_run)
    finally:
        bar.close()
    if args.out:
        df.to_csv(args.out, index=False)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        from ..plots import frontier_curves
        ax = frontier_curves(df)
        ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
    if args.format == "table":
        peak = df.attrs["liveness_peak_bytes"]
        fits = df[df["feasible"]]
        least = fits.loc[fits["peak_reserved_bytes"].idxmin()] if len(fits) else None
        smallest = ("" if least is None else f"; the least memory that trains: "
                    f"{format_bytes(least['peak_reserved_bytes'])} with {least['policy']}")
        print(f"{program.name} batch {program.batch} on {hw.name}, {_allocator_label(args)}, "
              f"{program.framework or program.source} semantics: liveness needs "
              f"{format_bytes(peak)} ({format_ms(df.attrs['liveness_step_time_s'])} a step, "
              f"modelled){smallest}")
        print("step time (ms, modelled) per budget and policy; — does not fit"
              + ("; (gap to checkmate's plan)" if df.attrs.get("optimum") else ""))
        emit_table(frontier_table(df))
        if args.policy.strip().lower() == "all" and all_note():
            print(f"({all_note()})")
        if not df.attrs.get("optimum") and not args.no_optimum:
            print("(no optimality gaps: no policy named checkmate is registered or it fit "
                  "nowhere)")
    else:
        _emit_frame(df, args.format)
    for what, path in (("csv", args.out), ("plot", args.plot)):
        if path:
            print(f"{what}: {path}", file=sys.stderr)
    return 0


@command("frontier")
def add_frontier(sub):
    from ..cli import _add_network_args
    from ..policies import all_note
    p = sub.add_parser("frontier", help="memory-time Pareto curves: every policy over budgets",
                       description="Plan and replay every policy at every budget on one network "
                       "and print the step time per budget and policy. Budgets default to "
                       "0.3x..1x of liveness' peak (its reserved peak with no memory limit). "
                       "Where a policy named checkmate is registered, it runs at every budget "
                       "and each time's gap to it is shown.")
    _add_network_args(p)
    p.add_argument("--policy", default="all",
                   help="a policy, a comma-separated list, or 'all' (default)"
                   + (f"; {all_note()}" if all_note() else ""))
    p.add_argument("--budgets", default=None,
                   help="comma-separated budgets: sizes (4GiB) or fractions of liveness' peak "
                   "(0.5x); default 0.3x,0.4x,...,1x")
    allocator_arg(p)
    p.add_argument("--no-optimum", action="store_true",
                   help="do not run checkmate for the optimality gaps")
    p.add_argument("--out", default=None, help="write every row as CSV here")
    p.add_argument("--plot", default=None, help="write the curves as a PNG here")
    p.add_argument("--format", default="table", choices=("table", "json", "csv"),
                   help="table for people (default), json or csv for programs (every field)")
    p.set_defaults(func=cmd_frontier)
