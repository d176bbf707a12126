"""Where ``snsim predict``'s step time goes, per op family: modelled GPU and host seconds of
the steady iteration by (family, math mode, the table group read, shape class, source), with
the distance to the nearest table row; with ``--profile``, beside the GPU seconds per family a
real step measured (``scripts/profile_ops.py``'s ``profile_ops.csv``).

    PYTHONPATH=. python scripts/op_breakdown.py torchvision:regnet_y_1_6gf 96 --meas-ms 68.7
    PYTHONPATH=. python scripts/op_breakdown.py torchvision:mnasnet1_0 128 --amp fp16 \\
        --profile OUT/profile_ops.csv --cache /tmp/records

``group`` is the table group the lookup read (a half type's own rows, the other half type's
or fp32's as a fallback: :meth:`snsim.kernel_table.KernelTable._key`); ``dist`` the median and
max distance to the nearest row (beyond ln 8: the family's fitted efficiency, ``fitted``).
"""
from __future__ import annotations

import argparse
import collections
import csv
import math
import sys
from pathlib import Path

from snsim.torchsim.amp import MATMUL_PRECISIONS, PARAM_DTYPES
from snsim.trace import open_text, text_path

NO_KERNEL_LABEL = "(calls without a kernel)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--optimizer", default="sgd-momentum")
    ap.add_argument("--impl", default="foreach")
    ap.add_argument("--amp", default=None, choices=[None, "bf16", "fp16"])
    ap.add_argument("--matmul-precision", default="highest", choices=MATMUL_PRECISIONS)
    ap.add_argument("--param-dtype", default="fp32", choices=PARAM_DTYPES)
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--table", default=None, help="kernel table (default: the preset's)")
    ap.add_argument("--meas-ms", type=float, default=None, help="the measured step, for the error")
    ap.add_argument("--profile", default=None,
                    help="profile_ops.csv (or .csv.gz) of scripts/profile_ops.py")
    ap.add_argument("--cache", default=None, help="folder for the recording (pickled)")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)

    import numpy as np

    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.opcost import NO_KERNEL_OPS, _lookup_args, op_gpu_time_s

    setup = TrainSetup(args.optimizer, args.impl, args.amp,
                       matmul_precision=args.matmul_precision, param_dtype=args.param_dtype)
    try:
        mod = modelled(args.model, args.batch, setup, args.gpu, args.cache, args.table)
    except LookupError as e:
        print(e, file=sys.stderr)
        return 2
    name, ops, marks, host, table, sibling, hw, rep = (
        mod[k] for k in ("name", "ops", "marks", "host", "table", "sibling", "hw", "rep"))
    last = max(m[3] for m in marks)
    agg = collections.defaultdict(lambda: {"gpu_s": 0.0, "host_s": 0.0, "n": 0, "d": []})
    by_family = collections.Counter()
    host_by = collections.Counter()     # (phase, family) -> modelled host seconds
    for i, op in enumerate(ops):
        if op[0] < 0 or marks[op[0]][3] != last:
            continue
        if op[1] in NO_KERNEL_OPS:
            # the module, autograd-node and per-parameter overheads charged to a call without
            # a kernel (the optimizer step's first call is a record_function's): host time too
            host_by[(marks[op[0]][1], NO_KERNEL_LABEL)] += host[i]
            continue
        fam, kw = _lookup_args(table, op)
        host_by[(marks[op[0]][1], fam)] += host[i]
        # the op's GPU seconds as the prediction charges them
        t, src = op_gpu_time_s(table, op, hw, sibling)
        near = None if src == "roofline" else table._neighbours(
            fam, kw["flops"], kw["nbytes"], kw["ntensors"], kw["cls"], kw["dtype"], kw["math_"])
        group, dist = "", math.nan
        if near is not None:
            key, order, _, _, nbytes = near
            feats = table._groups[key][0]
            q = np.array([math.log1p(kw["flops"]), math.log1p(nbytes),
                          math.log1p(kw["ntensors"])])
            group, dist = key[1], float(np.sqrt(((feats[order[0]] - q) ** 2).sum()))
        a = agg[(fam, kw["math_"], group, kw["cls"] if fam.startswith(("conv", "mm", "addmm",
                                                                         "bmm")) else "", src)]
        a["gpu_s"] += t
        a["host_s"] += host[i]
        a["n"] += 1
        a["d"].append(dist)
        by_family[fam] += t
    err = (f"  measured {args.meas_ms:.2f} ms, err "
           f"{100 * (rep['step_s'] * 1e3 - args.meas_ms) / args.meas_ms:+.1f}%"
           if args.meas_ms else "")
    print(f"{name}: step {rep['step_s'] * 1e3:.2f} ms = GPU {rep['gpu_s'] * 1e3:.2f} + wait "
          f"{rep['wait_s'] * 1e3:.2f} (host {rep['host_s'] * 1e3:.2f}){err}")
    print("GPU ms by source: " + ", ".join(f"{k} {rep[k + '_s'] * 1e3:.2f}"
                                            for k in ("table", "fitted", "proxy", "roofline")))
    print(f"{'gpu_ms':>8} {'host_ms':>8} {'n':>5}  family / math / group / class / source"
          "  dist median max")
    for k, a in sorted(agg.items(), key=lambda kv: -kv[1]["gpu_s"])[:args.top]:
        d = [x for x in a["d"] if x == x]
        ds = f"{np.median(d):.2f} {max(d):.2f}" if d else "-"
        print(f"{a['gpu_s'] * 1e3:8.3f} {a['host_s'] * 1e3:8.3f} {a['n']:5d}  "
              f"{' / '.join(str(v) for v in k)}  {ds}")
    if args.profile:
        meas = collections.Counter()
        with open_text(args.profile, newline="") as f:
            for r in csv.DictReader(f):
                if r["config"] == name:
                    meas[r["family"]] += float(r["gpu_s_per_step"])
        if not meas:
            print(f"{args.profile}: no rows of {name}", file=sys.stderr)
            return 1
        print(f"\n{'family':<36} {'pred_ms':>8} {'meas_ms':>8} {'err%':>7}")
        for fam in sorted(set(meas) | set(by_family), key=lambda f: -max(meas[f],
                                                                          by_family[f])):
            p, m = by_family[fam] * 1e3, meas[fam] * 1e3
            e = f"{100 * (p - m) / m:+7.1f}" if m else "      -"
            print(f"{fam:<36} {p:8.3f} {m:8.3f} {e}")
        print(f"{'total':<36} {sum(by_family.values()) * 1e3:8.3f} "
              f"{sum(meas.values()) * 1e3:8.3f}")
        _host_vs_profile(args.profile, name, host_by)
    return 0


def modelled(model, batch, setup, gpu, cache=None, table_path=None):
    """The steady step as ``snsim predict`` models it: ``{"name", "ops", "marks", "host"
    (modelled host seconds per op), "table", "sibling", "hw", "rep" (op_times_s's report)}``;
    LookupError where the preset has no kernel table or in-network host costs."""
    from snsim.hardware import load_hardware
    from snsim.kernel_table import HOST_READ_OPS, load_host_costs, load_kernel_table
    from snsim.torchsim.opcost import host_issue_s, op_times_s, preset_table
    from snsim.torchsim.predict import cached_recording

    name, (ops, marks, host_sids, _, acc) = cached_recording(model, batch, setup, cache)
    hw = load_hardware(gpu)
    # the preset's own table scales a borrowed one by its measured slowdowns; --table unscaled
    table, sibling = ((load_kernel_table(table_path), None) if table_path
                      else preset_table(hw.name))
    if table is None:
        raise LookupError(f"no kernel table for {table_path or gpu}")
    rep = {}
    op_times_s(ops, hw, marks, table=table, sibling=sibling, report=rep,
               host_sids=host_sids, accumulations=acc)
    syncs = [i for i, op in enumerate(ops)
             if op[1] in HOST_READ_OPS and any(s not in host_sids for s in op[2])]
    costs = load_host_costs(hw.name)
    if "innet" not in costs:
        raise LookupError(f"no in-network host costs for {hw.name} "
                          f"(configs/kernels/{hw.name}_host_innet.csv)")
    host = host_issue_s(ops, marks, table, costs, syncs, accumulations=acc)
    return {"name": name, "ops": ops, "marks": marks, "host": host, "table": table,
            "sibling": sibling, "hw": hw, "rep": rep}


def host_by_phase_s(ops, marks, host):
    """Modelled host seconds of the last recorded iteration per phase (F, B, U): every call,
    those without a kernel too (module, autograd-node and per-parameter overheads are
    charged to whichever call comes next)."""
    last = max(m[3] for m in marks)
    out = collections.Counter()
    for i, op in enumerate(ops):
        if op[0] >= 0 and marks[op[0]][3] == last:
            out[marks[op[0]][1]] += host[i]
    return out


def profiled_host(path, name):
    """A profiled configuration's host time (``scripts/profile_ops.py``): ``(summary,
    inside, calls)``, its ``profile_summary.csv`` row beside ``path`` ({} without one), and
    per ``(phase, family)`` the seconds inside top-level aten ops (``host_s_per_step`` of
    ``profile_ops.csv``, less the profiler's own cost per event) and the calls a step."""
    raw, calls = collections.Counter(), collections.Counter()
    with open_text(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["config"] == name and r.get("phase"):
                raw[(r["phase"], r["family"])] += float(r["host_s_per_step"])
                calls[(r["phase"], r["family"])] += float(r["calls_per_step"])
    summary = {}
    spath = text_path(Path(path).with_name(Path(path).name.removesuffix(".gz")
                                           .replace("_ops.csv", "_summary.csv")))
    if spath.exists():
        with open_text(spath, newline="") as f:
            summary = next((r for r in csv.DictReader(f) if r["config"] == name), {})
    ev = float(summary.get("profiler_event_s", 0) or 0)
    inside = collections.Counter({k: v - ev * calls[k] for k, v in raw.items()})
    return summary, inside, calls


def _host_vs_profile(path, name, host_by, top=12):
    """Modelled host seconds per phase (and its largest families) beside a profiled step's:
    the launching thread's wall time per phase without the profiler (``wall_*_s`` of
    ``profile_summary.csv``), and the time inside top-level aten ops under it
    (:func:`profiled_host`)."""
    summary, inside, calls = profiled_host(path, name)
    if not inside:
        return
    ev = float(summary.get("profiler_event_s", 0) or 0)
    print(f"\nhost ms by phase: modelled / measured wall / measured in aten ops (profiler "
          f"cost {ev * 1e6:.2f} us per op taken off)")
    for ph in "FBU":
        model = sum(v for (p, _), v in host_by.items() if p == ph)
        within = sum(v for k, v in inside.items() if k[0] == ph)
        wall = float(summary.get(f"wall_{ph}_s", "nan") or "nan")
        print(f"  {ph}: {model * 1e3:8.3f} {wall * 1e3:8.3f} {within * 1e3:8.3f}")
        fams = sorted({f for p, f in list(host_by) + list(inside) if p == ph},
                      key=lambda f: -max(host_by[(ph, f)], inside[(ph, f)]))[:top]
        for fam in fams:
            k = (ph, fam)
            print(f"     {fam:<34} {host_by[k] * 1e3:8.3f} {'':>8} "
                  f"{inside[k] * 1e3:8.3f}  ({calls[k]:.0f} calls)")


if __name__ == "__main__":
    sys.exit(main())
