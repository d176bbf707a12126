"""Per-call comparison of the kernel table's prediction with a profiled real step: each
profiled top-level op (``scripts/profile_ops.py``'s ``profile_ops.csv``: op, input shapes,
GPU seconds per step) beside the table's prediction of the recorded calls with the same family
and tensor shapes, with the shape class, the table source and the distance to the nearest row.
Where :mod:`scripts.op_breakdown` says which op family is off, this says which shapes.

    PYTHONPATH=. python scripts/shape_compare.py torchvision:regnet_x_1_6gf 128 \\
        --optimizer sgd --profile traces/h200/profile/heldout5_profile_ops.csv.gz \\
        --cache /tmp/records --family conv

Rows are sorted by the absolute error in ms; ``--family`` keeps families starting with it.
"""
from __future__ import annotations

import argparse
import ast
import collections
import csv
import math
import re
import sys

_TENSOR = re.compile(r"\w+\[([\d, ]*)\]")


def _sig_shapes(sig):
    return tuple(tuple(int(v) for v in s.split(",") if v.strip()) for s in _TENSOR.findall(sig))


# a profiled op's family where autocast's wrapper is the top-level op (the recording's is the
# aten op under it)
PROFILE_FAMILY = {"conv2d": "convolution", "linear": "mm"}


def _key(family, shapes):
    """What a recorded call and a profiled op are matched on: the family and the first two
    tensor shapes (a profile row lists optional tensors as ``[]``; bias and statistics vary)."""
    return family, shapes[:2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--optimizer", default="sgd-momentum")
    ap.add_argument("--impl", default="foreach")
    ap.add_argument("--amp", default=None, choices=[None, "bf16", "fp16"])
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--table", default=None, help="kernel table (default: the preset's)")
    ap.add_argument("--profile", required=True,
                    help="profile_ops.csv (or .csv.gz) of scripts/profile_ops.py")
    ap.add_argument("--cache", default=None, help="folder for the recording (pickled)")
    ap.add_argument("--family", default="", help="only families starting with this")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)

    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.opcost import NO_KERNEL_OPS, _lookup_args, _table_time, conv_bias_time_s
    from snsim.torchsim.predict import cached_recording
    from snsim.trace import open_text

    setup = TrainSetup(args.optimizer, args.impl, args.amp)
    name, (ops, marks, _, _, _) = cached_recording(args.model, args.batch, setup, args.cache)
    hw = load_hardware(args.gpu)
    table = load_kernel_table(args.table or args.gpu)
    if table is None:
        print(f"no kernel table for {args.table or args.gpu}", file=sys.stderr)
        return 2
    last = max(m[3] for m in marks)
    pred = collections.defaultdict(lambda: {"s": 0.0, "n": 0, "src": set(), "cls": "",
                                            "d": math.nan})
    for op in ops:
        if op[0] < 0 or marks[op[0]][3] != last or op[1] in NO_KERNEL_OPS:
            continue
        fam, kw = _lookup_args(table, op)
        if not fam.startswith(args.family):
            continue
        t, src = _table_time(table, op)
        if t is None:
            continue
        t += conv_bias_time_s(table, op, hw)
        key = _key(fam.removesuffix("_cl").removesuffix("_strided"),
                   _sig_shapes(op[6] if len(op) > 6 else ""))
        p = pred[key]
        p["s"] += t
        p["n"] += 1
        p["src"].add(src)
        p["cls"] = kw["cls"]
        near = table._neighbours(fam, kw["flops"], kw["nbytes"], kw["ntensors"], kw["cls"],
                                 kw["dtype"], kw["math_"])
        if near is not None and near[2] is not None:
            p["d"] = float((1.0 / math.sqrt(near[2][0])) - 0.05)
    meas = collections.defaultdict(lambda: {"s": 0.0, "n": 0.0, "kernel": ""})
    with open_text(args.profile, newline="") as f:
        for r in csv.DictReader(f):
            if r["config"] != name or not r["family"].startswith(args.family):
                continue
            shapes = tuple(tuple(s) for s in ast.literal_eval(r["shapes"]) if s)
            m = meas[_key(PROFILE_FAMILY.get(r["family"], r["family"]), shapes)]
            m["s"] += float(r["gpu_s_per_step"])
            m["n"] += float(r["calls_per_step"])
            m["kernel"] = r["top_kernel"][:60]
    if not meas:
        print(f"{args.profile}: no rows of {name}", file=sys.stderr)
        return 1
    keys = sorted(set(pred) | set(meas),
                  key=lambda k: -abs(pred[k]["s"] - meas[k]["s"]) if k in pred or k in meas
                  else 0)
    print(f"{name}: per-shape GPU ms, prediction vs profile")
    print(f"{'pred':>8} {'meas':>8} {'err%':>7} {'n':>4} {'dist':>5}  family class shapes | "
          "top kernel")
    tp = tm = 0.0
    for k in keys:
        p, m = pred.get(k), meas.get(k)
        ps, ms = (p["s"] if p else 0.0) * 1e3, (m["s"] if m else 0.0) * 1e3
        tp, tm = tp + ps, tm + ms
    for k in keys[:args.top]:
        p, m = pred.get(k), meas.get(k)
        ps, ms = (p["s"] if p else 0.0) * 1e3, (m["s"] if m else 0.0) * 1e3
        err = f"{100 * (ps - ms) / ms:+7.1f}" if ms else "      -"
        n = p["n"] if p else int(m["n"])
        d = f"{p['d']:5.2f}" if p and p["d"] == p["d"] else "    -"
        cls = p["cls"] if p else "?"
        shp = " ".join("x".join(map(str, s)) for s in k[1][:3])
        print(f"{ps:8.3f} {ms:8.3f} {err} {n:4d} {d}  {k[0]} {cls} {shp} | "
              f"{m['kernel'] if m else ''}")
    print(f"total {tp:.3f} pred vs {tm:.3f} meas ms ({100 * (tp - tm) / tm:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
