"""Re-level one calibrate group's host issue costs that were measured in another lease of the
machine, from a run that timed that group and a reference group in one process.

A kernel table is merged from several ``snsim calibrate --only`` runs, each in its own lease,
and the host's pace moves from lease to lease (docs/DESIGN.md, the host gauge): a group's
``host_s`` carries its lease's pace. Two groups that time the same shapes (the networks'
convolutions in fp16 and in bf16) can be compared shape by shape; when ``--same-process``, a
table written by one ``snsim calibrate`` run holding both, gives their ratio in one lease, the
table's group is scaled so that its ratio to the reference group (geometric mean over the
shapes both tables hold) equals that one:

    factor = gm(same fp16 / same bf16) / gm(table fp16 / table bf16)

per family. The reference group's rows are left as they are; only ``host_s`` of the group's
rows changes, and the table's header records the factor and its source
(``host_relevelled_<family>_<math>_<prefix>``). A second run finds the group level (factor 1)
and changes nothing.

    PYTHONPATH=. python scripts/relevel_host.py --table configs/kernels/h200.csv.gz \\
        --same-process traces/h100/calibrate_net_amp/h100_net.csv.gz --prefix "net " \\
        --math fp16 --reference bf16 --families convolution,convolution_backward
"""
from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _host_by_shape(rows, family, math_mode, prefix):
    """{(cls, shape): median host_s} of ``rows`` of one family, math mode and shape prefix."""
    got = collections.defaultdict(list)
    for r in rows:
        if (r["family"] == family and r["math"] == math_mode
                and str(r["shape"]).startswith(prefix) and float(r["host_s"]) > 0):
            got[(r["cls"], r["shape"])].append(float(r["host_s"]))
    return {k: statistics.median(v) for k, v in got.items()}


def log_ratio(a, b):
    """Mean of ln(a/b) over the keys both hold, and how many."""
    keys = sorted(set(a) & set(b))
    if not keys:
        return None, 0
    return sum(math.log(a[k] / b[k]) for k in keys) / len(keys), len(keys)


def relevel(rows, same_rows, family, math_mode, reference, prefix):
    """``(factor, pairs in the table, pairs in the same-process run)`` for one family."""
    t, nt = log_ratio(_host_by_shape(rows, family, math_mode, prefix),
                      _host_by_shape(rows, family, reference, prefix))
    s, ns = log_ratio(_host_by_shape(same_rows, family, math_mode, prefix),
                      _host_by_shape(same_rows, family, reference, prefix))
    if t is None or s is None:
        raise SystemExit(f"relevel_host: no {family} shapes under {prefix!r} in both "
                         f"{math_mode} and {reference} (table {nt}, same-process {ns})")
    return math.exp(s - t), nt, ns


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", required=True, help="the kernel table to re-level (rewritten)")
    ap.add_argument("--same-process", required=True,
                    help="a table of one snsim calibrate run holding both groups")
    ap.add_argument("--prefix", required=True, help="the group's shape prefix, e.g. 'net '")
    ap.add_argument("--math", required=True, help="the group's math mode, e.g. fp16")
    ap.add_argument("--reference", required=True, help="the reference math mode, e.g. bf16")
    ap.add_argument("--families", required=True, help="comma-separated families")
    ap.add_argument("--date", required=True, help="recorded in the header (ISO date)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from snsim.torchsim.calibrate import read_table, write_table
    rows, meta = read_table(args.table)
    same_rows, same_meta = read_table(args.same_process)
    for fam in args.families.split(","):
        factor, nt, ns = relevel(rows, same_rows, fam, args.math, args.reference, args.prefix)
        if abs(factor - 1.0) < 5e-4:
            print(f"{fam} {args.math} {args.prefix!r}: already level (x{factor:.4f})")
            continue
        n = 0
        for r in rows:
            if (r["family"] == fam and r["math"] == args.math
                    and str(r["shape"]).startswith(args.prefix)):
                r["host_s"] = float(r["host_s"]) * factor
                n += 1
        key = f"host_relevelled_{fam}_{args.math}_{args.prefix.strip()}"
        meta[key] = (f"{args.date}: host_s x{factor:.4f} on {n} rows, so that their ratio to "
                     f"the {args.reference} rows of the same shapes ({nt} shapes) equals the one "
                     f"timed in one process ({ns} shapes, {Path(args.same_process).name}, "
                     f"{same_meta.get('gpu', '?')} {same_meta.get('date', '?')})")
        print(f"{fam} {args.math} {args.prefix!r}: x{factor:.4f} on {n} rows "
              f"(table pairs {nt}, same-process pairs {ns})")
    write_table(rows, meta, args.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
