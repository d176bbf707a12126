"""The kernel table's time for each GEMM a profiled training step ran, against the step's own
kernel time for it: the matmul lookup checked call by call, free of the other ops.

For every configuration of the ``profile_summary.csv`` files given (``scripts/profile_ops.py``),
each top-level ``mm``/``addmm``/``bmm`` op that launched one kernel (a Linear's forward in
FP32, a backward GEMM; not an autocast Linear, whose casts share the op) is matched to the
recorded calls of ``snsim predict``'s program with the same phase, FLOPs and dimensions, and
its measured seconds per call are set beside the table's (``snsim.torchsim.opcost``). Writes
one row per matched GEMM and prints the error by precision.

    PYTHONPATH=. python scripts/gemm_lookup_compare.py traces/h200/*/profile_summary.csv \\
        --cache /tmp/records --csv docs/data/gemm_lookup_h200.csv
"""
from __future__ import annotations

import argparse
import ast
import collections
import csv
import math
import re
import statistics
import sys
from pathlib import Path


def _profile_key(op, shapes):
    """(FLOPs, sorted (batch, m, k, n)) of a profiled matmul op and its input shapes."""
    s = [x for x in shapes if x]
    if op.startswith("linear"):
        x, w = s[0], s[1]
        b, m, k, n = 1, math.prod(x[:-1]), x[-1], w[0]
    elif op.split(">")[-1] == "addmm":
        (m, k), n, b = s[1], s[2][1], 1
    else:
        x, w = s[0], s[1]
        m, k, n = x[-2], x[-1], w[-1]
        b = max(math.prod(x[:-2]), math.prod(w[:-2]))
    return 2 * b * m * k * n, tuple(sorted((b, m, k, n)))


def _recorded_key(sig):
    """(FLOPs, sorted (batch, m, k, n)) of a recorded matmul signature (its last two
    operands of two or more dimensions; read here, so that a checkout of an older lookup can
    run this script too)."""
    mats = [[int(v) for v in shape.split(",") if v.strip()]
            for shape in re.findall(r"\w+\[([\d, ]*)\]", sig)]
    a, w = [s for s in mats if len(s) >= 2][-2:]
    b, m, k, n = math.prod(a[:-2]) or 1, a[-2], a[-1], w[-1]
    return 2 * b * m * k * n, tuple(sorted((b, m, k, n)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summaries", nargs="+", help="profile_summary.csv files")
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--gpu", default="h200")
    args = ap.parse_args(argv)
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.opcost import _table_time
    from snsim.torchsim.predict import cached_recording
    from snsim.trace import open_text
    table = load_kernel_table(args.gpu)
    out, seen = [], set()
    for summ in args.summaries:
        ops_path = Path(summ).with_name(Path(summ).name.replace("summary", "ops"))
        with open_text(ops_path, newline="") as f:
            prof = list(csv.DictReader(f))
        with open(summ, newline="") as f:
            configs = list(csv.DictReader(f))
        for r in configs:
            if r["config"] in seen:
                continue
            seen.add(r["config"])
            meas = collections.defaultdict(lambda: [0.0, 0.0])
            for o in prof:
                if (o["config"] != r["config"] or o.get("kernels", "1") != "1"
                        or o["op"].split(">")[-1] not in ("mm", "addmm", "bmm")):
                    continue
                a = meas[(o.get("phase", ""),) + _profile_key(o["op"],
                                                             ast.literal_eval(o["shapes"]))]
                a[0] += float(o["gpu_s_per_step"])
                a[1] += float(o["calls_per_step"])
            if not meas:
                continue
            setup = TrainSetup(r["optimizer"], r["impl"], None if r["amp"] == "none"
                               else r["amp"])
            try:
                _, (ops, marks, *_rest) = cached_recording(r["model"], int(r["batch"]), setup,
                                                           args.cache)
            except Exception as e:     # a model this torch cannot build: left out, said
                print(f"{r['config']}: {type(e).__name__}: {str(e)[:100]}", file=sys.stderr)
                continue
            last = max(m[3] for m in marks)
            recs = collections.defaultdict(list)
            for op in ops:
                if op[0] >= 0 and marks[op[0]][3] == last and op[1] in ("mm", "addmm", "bmm"):
                    recs[(marks[op[0]][1],) + _recorded_key(op[6])].append(op)
            for key, (sec, calls) in sorted(meas.items()):
                got = recs.get(key)
                if not got or abs(len(got) - calls) > 0.5:
                    continue
                pred = statistics.mean(_table_time(table, op)[0] or math.nan for op in got)
                out.append({"config": r["config"], "amp": r["amp"], "phase": key[0],
                            "dims": " ".join(map(str, key[2])), "calls": int(round(calls)),
                            "meas_us": round(sec / calls * 1e6, 3),
                            "pred_us": round(pred * 1e6, 3),
                            "err_pct": round(100 * (pred * calls - sec) / sec, 2)})
    if not out:
        print("gemm_lookup_compare: no GEMM matched", file=sys.stderr)
        return 1
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    for amp in sorted({r["amp"] for r in out}):
        sel = [r for r in out if r["amp"] == amp]
        e = [abs(r["err_pct"]) for r in sel]
        tot = sum(r["meas_us"] * r["calls"] for r in sel)
        tw = sum(abs(r["pred_us"] - r["meas_us"]) * r["calls"] for r in sel) / tot * 100
        print(f"{amp:5s} n={len(sel):4d} median |err| {statistics.median(e):5.1f} %  "
              f"time-weighted |err| {tw:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
