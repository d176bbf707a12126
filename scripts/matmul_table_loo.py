"""Leave-one-shape-out over the kernel table's matmul rows (mm, addmm, bmm): each row predicted
from the others, its own shape's rows left out (an attention shape's six GEMMs share FLOPs and
bytes, and go together), looked up as a recorded call of the same operands would be (its class
and, unaligned, its operands' vector width: ``kernel_table.matmul_lookup_class``), at each
``--weights`` value of ``kernel_table.MATMUL_ALIGN_WEIGHT``. With ``--shapes S:F:T,...`` the
calls also carry their batch, m, k, n and operand form (as ``matmul_lookup_class`` gives a
recorded call), and each triple sets ``MATMUL_SHAPE_WEIGHT``, ``MATMUL_FORM_WEIGHT`` and
``MATMUL_TILE_WEIGHT``: every row of the same FLOPs (a Linear's three GEMMs) is left out.

    PYTHONPATH=. python scripts/matmul_table_loo.py --unaligned --weights 0,1,4,16
    PYTHONPATH=. python scripts/matmul_table_loo.py --tag "net " --shapes 0:0:0,0.25:0.5:0.1
"""
from __future__ import annotations

import argparse
import collections
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # conv_table_loo


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="configs/kernels/h200.csv.gz")
    ap.add_argument("--tag", default="", help="only rows whose shape starts with this")
    ap.add_argument("--math", default="", help="only this math mode (fp32, bf16, fp16)")
    ap.add_argument("--unaligned", action="store_true", help="only unaligned rows")
    ap.add_argument("--weights", default="4", help="comma list of MATMUL_ALIGN_WEIGHT values")
    ap.add_argument("--shapes", default=None,
                    help="comma list of SHAPE:FORM:TILE weight triples (calls in shape space)")
    args = ap.parse_args(argv)

    import numpy as np

    from conv_table_loo import print_loo

    from snsim import kernel_table as kt
    from snsim.torchsim.calibrate import read_table

    table = kt.KernelTable.read(args.table)
    rows, _ = read_table(args.table)
    rows = [r for r in rows if kt.family_of(r["family"]) in kt.MATMUL_FAMILIES
            and float(r["time_s"] or 0) > 0 and r["shape"].startswith(args.tag)
            and (not args.math or r["math"] == args.math)
            and (not args.unaligned or r["cls"] != "a8")]
    if not rows:
        print("no rows to predict", file=sys.stderr)
        return 1
    settings = ([(float(args.weights.split(",")[0]), tuple(float(v) for v in t.split(":")))
                 for t in args.shapes.split(",")] if args.shapes
                else [(float(w), None) for w in args.weights.split(",")])
    for weight, shape_w in settings:
        kt.MATMUL_ALIGN_WEIGHT = weight
        if shape_w:
            kt.MATMUL_SHAPE_WEIGHT, kt.MATMUL_FORM_WEIGHT, kt.MATMUL_TILE_WEIGHT = shape_w
        stats = collections.defaultdict(list)
        for r in rows:
            fam = kt.family_of(r["family"])
            grp = table._groups.get((fam, r["math"]))
            if grp is None:
                continue
            feats = grp[0]
            flops, nbytes = float(r["flops"]), float(r["bytes"])
            q = np.array([math.log1p(flops), math.log1p(nbytes),
                          math.log1p(float(r["ntensors"] or 0))])
            same = np.where((np.abs(feats - q) < 1e-9).all(axis=1) if shape_w is None
                            else np.abs(feats[:, 0] - q[0]) < 1e-9)[0]
            saved = feats[same].copy()
            feats[same] = 1e9          # out of reach while this shape is predicted
            align = kt.row_matmul_align(r["shape"], r["cls"])
            cls = r["cls"] if align in (None, 8) else f"{r['cls']}:al{align}"
            m = kt._ROW_MATMUL.match(r["shape"]) if shape_w else None
            if m:
                cls += "@b{}m{}k{}n{}".format(*m.groups()[2:]) + kt.row_matmul_form(
                    r["family"], r["shape"])
            try:
                t, src = table.time_s(fam, flops=flops, nbytes=nbytes,
                                      ntensors=float(r["ntensors"] or 0), cls=cls,
                                      dtype=r["dtype"], math_=r["math"])
            finally:
                feats[same] = saved
            if t is None:
                continue
            stats[(fam, r["math"], f"al{align}")].append((t, float(r["time_s"]), src))
        print(f"MATMUL_ALIGN_WEIGHT {weight:g}" + (
            " SHAPE/FORM/TILE {:g}/{:g}/{:g}".format(*shape_w) if shape_w else ""))
        print_loo(stats, lambda k: f"{k[0]:<6} {k[1]:<5} {k[2]:<5}", indent="  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
