"""Carry one ``snsim calibrate --only GROUP`` group's rows, timed on a sibling GPU and merged into
a table of another (``--merge``), over to the table's GPU: each row's ``time_s`` divided by the
measured ratio of the sibling to the table's GPU for its family and size band
(``configs/kernels/<sibling>_over_<table>.csv``, :func:`snsim.kernel_table.sibling_ratio_of`).
The header records which rows were carried, from which GPU and by which ratios, so that a later
run of the group on the table's own GPU (``--only GROUP --merge``) replaces them.

For when the lent machine is the sibling: the h100 preset reads the H200's table times these
ratios, so a row carried over and read back by the h100 preset is its H100 measurement again.

    PYTHONPATH=. python scripts/sibling_rows.py merged.csv.gz --group wide --sibling h100 \\
        --out configs/kernels/h200.csv.gz
"""
from __future__ import annotations

import argparse
import sys


def carry(rows, meta, group, sibling_ratios, sibling_name):
    """``rows`` with those of calibrate group ``group`` divided by ``sibling_ratios``' ratio
    (:func:`snsim.kernel_table.load_sibling_ratios`' form) of their family and bytes; the
    header ``meta`` plus ``<group>_rows_from`` saying so. Returns ``(rows, meta, count)``."""
    from snsim.kernel_table import sibling_ratio_of
    from snsim.torchsim.calibrate import group_rows
    of_group = group_rows(group)
    out, n, ratios = [], 0, []
    for r in rows:
        if of_group(r):
            ratio = sibling_ratio_of(sibling_ratios, r["family"], int(float(r["bytes"])))
            r = dict(r, time_s=float(r["time_s"]) / ratio)
            ratios.append(ratio)
            n += 1
        out.append(r)
    meta = dict(meta)
    if n:
        meta[f"{group}_rows_from"] = (
            f"{n} rows timed on {meta.get('remeasured_gpu', sibling_name)} "
            f"({meta.get('remeasured_date', '')}), time_s divided by "
            f"{sibling_name}_over_{meta.get('gpu_preset', '<table>')}.csv's ratio of their "
            f"family and size ({min(ratios):.4f}-{max(ratios):.4f})")
    return out, meta, n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="the merged table (calibrate --only GROUP --merge's output)")
    ap.add_argument("--group", required=True, help="the calibrate --only group to carry over")
    ap.add_argument("--sibling", required=True, help="the preset of the GPU that timed them")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    from snsim.errors import ConfigError
    from snsim.kernel_table import load_sibling_ratios
    from snsim.torchsim.calibrate import ONLY, read_table, write_table
    if args.group not in ONLY:
        print(f"sibling_rows: --group {args.group!r}: one of {sorted(ONLY)}", file=sys.stderr)
        return 2
    ratios = load_sibling_ratios(args.sibling)
    if not ratios:
        print(f"sibling_rows: --sibling {args.sibling}: no measured ratios for that preset "
              "(configs/kernels/<sibling>_over_<table>.csv)", file=sys.stderr)
        return 2
    try:
        rows, meta = read_table(args.table)
    except (OSError, ConfigError) as e:
        print(f"sibling_rows: {args.table}: {e}", file=sys.stderr)
        return 2
    rows, meta, n = carry(rows, meta, args.group, ratios, args.sibling)
    write_table(rows, meta, args.out)
    print(f"{args.out}: {n} rows of group {args.group} carried from {args.sibling}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
