"""How well the kernel table predicts convolutions it does not hold: each convolution row of
``--rows`` (a calibrate table; only rows whose shape starts with ``--tag``) is predicted by
``--table``'s lookup (:meth:`snsim.kernel_table.KernelTable.time_s`) with every row of the same
family, math mode and shape left out, and the error against the measured time is summarised
per family, math mode and grouping (dense, ``g``, ``dw``) and stride: count, median and 90th
percentile |error|, share within 10%, and the GPU-time-weighted error sum.

With ``--rows`` the table itself this is leave-one-out; with ``--rows`` a newer run's rows and
``--table`` the table before them, it is how the old table covered the new shapes.

    PYTHONPATH=. python scripts/conv_table_loo.py --table configs/kernels/h200.csv.gz \\
        --tag "grouped "
"""
from __future__ import annotations

import argparse
import collections
import math
import sys


def _call_class(row):
    """The recorded-call class (:func:`snsim.kernel_table.conv_class`) of a calibrate row."""
    from snsim.kernel_table import _SHAPE_GROUPS, row_conv_dims
    dims = row_conv_dims(row["shape"])
    if dims is None:
        return row["cls"]
    x, w = dims[:2]
    c, co, hw = x[1], w[0], math.prod(x[2:])
    g = _SHAPE_GROUPS.search(row["shape"])
    groups = int(g.group(1)) if g else 1
    base = row["cls"]
    if base.startswith("g") and not base.startswith("g" + str(groups)):
        base = f"g{groups}" + base[1:]
    return f"{base}:c{c}o{co}hw{hw}"


def print_loo(stats, label, indent=""):
    """Print a leave-one-out's figures: per key of ``stats`` (``{key: [(predicted, measured,
    source), ...]}``, ``label(key)`` naming it) the rows, median and p90 |err|, the share
    within 10 %, the time-weighted sum and the rows read from the fitted efficiency; then all
    rows together."""
    import numpy as np
    allerr, allp, allm = [], 0.0, 0.0
    for k in sorted(stats):
        v = stats[k]
        e = np.array([abs(p - m) / m for p, m, _ in v]) * 100
        allerr += list(e)
        sp, sm = sum(p for p, _, _ in v), sum(m for _, m, _ in v)
        allp, allm = allp + sp, allm + sm
        nf = sum(s != "table" for *_, s in v)
        print(f"{indent}{label(k)} {len(v):5d} {np.median(e):8.1f} "
              f"{np.percentile(e, 90):8.1f} {np.mean(e < 10) * 100:5.0f}% "
              f"{sp / sm:14.3f} {nf:6d}")
    e = np.array(allerr)
    print(f"{indent}all: {len(e)} rows, median |err| {np.median(e):.1f}%, p90 "
          f"{np.percentile(e, 90):.1f}%, within 10%: {np.mean(e < 10) * 100:.0f}%, sum "
          f"pred/meas {allp / allm:.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="configs/kernels/h200.csv.gz")
    ap.add_argument("--rows", default=None, help="rows to predict (default: --table's)")
    ap.add_argument("--tag", default="", help="only rows whose shape starts with this")
    ap.add_argument("--math", default="", help="only this math mode (tf32, bf16, fp16)")
    ap.add_argument("--grouping", default="", choices=["", "dense", "g", "dw"],
                    help="only dense, grouped (g) or depthwise (dw) convolutions")
    args = ap.parse_args(argv)

    import numpy as np

    from snsim.kernel_table import (KernelTable, family_of, row_conv_flops)
    from snsim.torchsim.calibrate import read_table

    table = KernelTable.read(args.table)
    rows, _ = read_table(args.rows or args.table)
    rows = [r for r in rows if family_of(r["family"]).startswith("convolution")
            and r["shape"].startswith(args.tag) and (not args.math or r["math"] == args.math)
            and float(r["time_s"] or 0) > 0 and " bias1" not in r["shape"]
            and (not args.grouping or (r["cls"].split("k")[0] or "dense") == args.grouping)]
    if not rows:
        print("no rows to predict", file=sys.stderr)
        return 1
    # the table's own rows of each (family, math, shape): left out while predicting it
    shapes = collections.defaultdict(list)
    tab_rows, _ = read_table(args.table)
    tab_rows = [r for r in tab_rows if float(r["time_s"] or 0) > 0]
    index = {}
    for (fam, mth), grp in table._groups.items():
        index[(fam, mth)] = grp
    stats = collections.defaultdict(list)
    for r in rows:
        fam = family_of(r["family"])
        key = (fam, r["math"])
        grp = index.get(key)
        if grp is None:
            continue
        feats = grp[0]
        flops = row_conv_flops(r["shape"], "backward" in fam) or float(r["flops"])
        q = np.array([math.log1p(flops), math.log1p(float(r["bytes"])),
                      math.log1p(float(r["ntensors"] or 0))])
        same = np.where((np.abs(feats - q) < 1e-9).all(axis=1))[0]
        saved = feats[same].copy()
        feats[same] = 1e9          # out of reach while this row is predicted
        try:
            t, src = table.time_s(fam, flops=flops, nbytes=float(r["bytes"]),
                                  ntensors=float(r["ntensors"] or 0), cls=_call_class(r),
                                  dtype=r["dtype"], math_=r["math"])
        finally:
            feats[same] = saved
        if t is None:
            continue
        meas = float(r["time_s"])
        prefix = r["cls"].split("k")[0] or "dense"
        stride = "s2" if "s2" in r["cls"] else ("s1" if "s1" in r["cls"] else "s?")
        stats[(fam, r["math"], prefix, stride)].append((t, meas, src))
    shapes.clear()
    print(f"{'family':<24} {'math':<5} {'group':<6} {'s':<3} {'n':>5} {'med|e|%':>8} "
          f"{'p90|e|%':>8} {'<10%':>6} {'sum pred/meas':>14} {'fitted':>6}")
    print_loo(stats, lambda k: f"{k[0]:<24} {k[1]:<5} {k[2]:<6} {k[3]:<3}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
