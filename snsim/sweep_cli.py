"""CLI plugin command ``snsim sweep FILE.yaml [--out ...] [--workers N]``.

Imported by :func:`snsim.cli._load_plugins`; each command registers itself in
``snsim.cli.COMMANDS``. The work lives in :mod:`snsim.sweep`; this module is only the edge
that parses flags, prints and writes.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from .cli import command, output_path
from .errors import ConfigError


def _positive_int(text):
    import argparse
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} must be >= 1")
    return n


@command("sweep")
def add_sweep(sub):
    p = sub.add_parser("sweep", help="run a YAML grid of simulations into one table (resumable)",
                       description="Run every combination of a sweep file's networks, batches, "
                       "gpus, policies, budgets and allocators; write one row per run. Finished "
                       "runs are journalled as they complete, so an interrupted sweep resumes "
                       "where it stopped.")
    p.add_argument("file", help="sweep YAML, e.g. configs/sweeps/example.yaml")
    p.add_argument("--out", default=None,
                   help="results file, .parquet or .csv (default: <file stem>.parquet, or .csv "
                   "without pyarrow)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                       help="run on a local Dask cluster of N worker processes")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run on an existing Dask cluster, e.g. tcp://10.0.0.1:8786")
    p.add_argument("--fresh", action="store_true",
                   help="ignore earlier results in --out and its journal; run everything")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args):
    from .sweep import load_sweep, parquet_available, run_sweep
    sweep = load_sweep(args.file)
    default_ext = ".parquet" if parquet_available() else ".csv"
    out = Path(args.out) if args.out else Path(Path(args.file).stem + default_ext)
    if out.suffix.lower() not in (".parquet", ".csv"):
        raise ConfigError(f"--out {out} must end in .parquet or .csv")
    output_path(out, "--out")
    computed = []
    t0 = time.perf_counter()
    df = run_sweep(sweep, out=out, workers=args.workers, scheduler=args.scheduler,
                   fresh=args.fresh, progress=not args.quiet and sys.stderr.isatty(),
                   on_result=computed.append)
    wall = time.perf_counter() - t0
    where = (f"{args.workers} Dask workers" if args.workers else
             f"Dask cluster {args.scheduler}" if args.scheduler else "in process")
    feasible = int(df["feasible"].sum()) if len(df) else 0
    print(f"sweep {sweep.name}: {len(df)} runs ({len(computed)} computed, "
          f"{len(df) - len(computed)} resumed), {feasible} feasible, {wall:.2f} s {where} "
          f"-> {out}")
    return 0
