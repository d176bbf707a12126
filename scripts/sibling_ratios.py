"""How much longer each kernel family runs on one GPU than on the GPU whose kernel table its preset
borrows, measured: the rows ``snsim calibrate`` timed on both (the same seed draws the same
shapes), joined on their family, dtype, math, class, work and shape; per family and size band
the median ratio of the two times (issue 10: the h100 preset reads the H200's table,
``kernel_table.TABLES_OF``).

    PYTHONPATH=. python scripts/sibling_ratios.py traces/h100/calibrate_s60/h100.csv.gz \\
        configs/kernels/h200.csv.gz --out configs/kernels/h100_over_h200.csv

Writes ``family,bytes_lo,bytes_hi,ratio,rows`` (``*``: every family's rows of the band), read by
:func:`snsim.kernel_table.load_sibling_ratios`.
"""
from __future__ import annotations

import argparse

#: the size bands (bytes a call moves, the table's ``bytes``): L2-resident, around the L2
#: (50 MB on the H100, 60 MiB on the H200), device-memory-bound
BANDS_MIB = (0, 1, 8, 32, 128, 512, None)
#: rows a family needs in a band for a ratio of its own (else the band's ``*``)
MIN_ROWS = 3


def ratios(own, base):
    """``[(family, bytes_lo, bytes_hi, ratio, rows), ...]`` of two kernel tables' frames."""
    import numpy as np
    keys = ["family", "dtype", "math", "cls", "flops", "bytes", "shape"]
    m = own.merge(base, on=keys, suffixes=("_own", "_base"))
    m = m[(m.time_s_own > 0) & (m.time_s_base > 0)]
    m["ratio"] = m.time_s_own / m.time_s_base
    out = []
    for lo, hi in zip(BANDS_MIB[:-1], BANDS_MIB[1:]):
        lo_b = lo << 20
        hi_b = None if hi is None else hi << 20
        band = m[(m["bytes"] > lo_b) & ((m["bytes"] <= hi_b) if hi_b is not None else True)]
        if band.empty:
            continue
        out.append(("*", lo_b, hi_b or "", round(float(np.median(band.ratio)), 4), len(band)))
        for fam, g in sorted(band.groupby("family")):
            if len(g) >= MIN_ROWS:
                out.append((fam, lo_b, hi_b or "", round(float(np.median(g.ratio)), 4), len(g)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("own", help="the GPU's own calibrate table (csv.gz)")
    ap.add_argument("base", help="the table its preset borrows")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import csv
    import pandas as pd
    own = pd.read_csv(args.own, comment="#")
    base = pd.read_csv(args.base, comment="#")
    rows = ratios(own, base)
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["family", "bytes_lo", "bytes_hi", "ratio", "rows"])
        w.writerows(rows)
    print(f"{args.out}: {len(rows)} ratios from {sum(r[4] for r in rows if r[0] == '*')} "
          f"joined rows")


if __name__ == "__main__":
    main()
