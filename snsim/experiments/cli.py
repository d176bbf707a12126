"""CLI commands ``snsim maxdepth``, ``snsim maxbatch`` and ``snsim reproduce``.

Imported by :func:`snsim.cli._load_plugins`; each command registers itself with
:func:`snsim.cli.command`. I/O (tables, progress bars, files) lives here, not in the searches.
"""
from __future__ import annotations

import sys

from ..cli import DEFAULT_GPU, _framework_arg, command, emit, output_path
from ..units import format_bytes


def _progress(desc):
    """A tqdm bar on stderr (off when stderr is not a terminal) and its per-simulation callback."""
    from tqdm import tqdm
    bar = tqdm(desc=desc, unit="sim", leave=False, disable=not sys.stderr.isatty())

    def on_probe(policy, size, result):
        bar.set_postfix_str(f"{policy} {size} {'ok' if result.feasible else 'OOM'}", refresh=False)
        bar.update(1)
    return bar, on_probe


def _common(p):
    p.add_argument("--gpu", default=DEFAULT_GPU, help="hardware preset or YAML path (k40c)")
    p.add_argument("--policy", default="all",
                   help="a policy, a comma-separated list, or 'all' (default)")
    p.add_argument("--budget", default=None,
                   help="GPU memory budget, e.g. 6GiB (default: the preset's DRAM minus context)")
    p.add_argument("--allocator", default="ideal", choices=("ideal", "pool", "pytorch"))
    p.add_argument("--optimizer", default="sgd-momentum",
                   help="sgd | sgd-momentum | nesterov | adam (sets optimizer-state bytes)")
    p.add_argument("--input-size", type=int, default=None, help="image side in pixels")
    p.add_argument("--variant", default="torchvision", choices=("torchvision", "release"))
    _framework_arg(p)
    p.add_argument("--format", default="table", choices=("table", "json", "csv"))


def _table(rep, size_cols):
    rows = []
    for r in rep.rows:
        row = {"policy": r.policy, **size_cols(r),
               "step_time_ms": None if r.step_time_s is None else round(r.step_time_s * 1e3, 1),
               "images_per_s": None if r.result is None else round(r.result.images_per_s, 2),
               "peak_GiB": None if r.peak_ideal_bytes is None
               else round(r.peak_ideal_bytes / 2**30, 3),
               "next_failure": r.next_failure}
        rows.append(row)
    return rows


def _print(rep, args, title, size_cols):
    if args.format == "table":
        emit(_table(rep, size_cols), "table", title=title)
        print(f"({sum(r.simulations for r in rep.rows)} simulations, {rep.wall_s:.1f} s; static "
              f"bound caps the search at {rep.bound_cap} "
              f"{'(k)' if rep.axis == 'depth' else '(batch)'})")
    else:
        df = rep.frame()
        emit(df.astype(object).where(df.notna(), None).to_dict("records"), args.format,
             title="list")


# -- maxdepth -----------------------------------------------------------------------------------
def cmd_maxdepth(args):
    from ..experiments.search import get_family, max_depth
    fam = get_family(args.family)
    bar, on_probe = _progress(f"maxdepth {fam.name}")
    try:
        rep = max_depth(fam, batch=args.batch, hardware=args.gpu, policies=args.policy,
                        min_depth=args.min_depth, max_depth=args.max_depth,
                        budget_bytes=args.budget, allocator=args.allocator,
                        optimizer=args.optimizer, input_size=args.input_size,
                        variant=args.variant, on_probe=on_probe, framework=args.framework)
    finally:
        bar.close()
    title = (f"deepest {fam.name} ({fam.description}) per policy at batch {args.batch} on "
             f"{rep.hardware}, budget {format_bytes(rep.budget_bytes)}, allocator {args.allocator}, "
             f"{rep.framework} semantics")
    _print(rep, args, title, lambda r: {"max_depth": r.max_depth, "k": r.max_size,
                                        "next_depth": r.next_depth})
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
    from ..experiments.search import max_batch
    bar, on_probe = _progress(f"maxbatch {args.network}")
    try:
        rep = max_batch(args.network, hardware=args.gpu, policies=args.policy,
                        min_batch=args.min_batch, max_batch=args.max_batch,
                        budget_bytes=args.budget, allocator=args.allocator,
                        optimizer=args.optimizer, input_size=args.input_size,
                        variant=args.variant, on_probe=on_probe, framework=args.framework)
    finally:
        bar.close()
    title = (f"largest batch of {args.network} per policy on {rep.hardware}, budget "
             f"{format_bytes(rep.budget_bytes)}, allocator {args.allocator}, "
             f"{rep.framework} semantics")
    _print(rep, args, title, lambda r: {"max_batch": r.max_size, "next_batch": r.next_size})
    return 0


@command("maxbatch")
def add_maxbatch(sub):
    p = sub.add_parser("maxbatch", help="largest mini-batch of a network each policy can train",
                       description="Galloping, then binary search over the batch, per policy. "
                       "Assumes feasibility is monotone in the batch.")
    p.add_argument("--network", default="resnet50", help="zoo network name (default resnet50)")
    p.add_argument("--min-batch", type=int, default=1, help="smallest batch to try (1)")
    p.add_argument("--max-batch", type=int, default=None,
                   help="largest batch to try (default 2**20)")
    _common(p)
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
