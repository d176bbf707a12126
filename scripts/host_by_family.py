"""Modelled vs measured host (kernel-issue) time per (op group, phase) over every profiled
configuration at once (issue 10 item 3): where the host model is biased.

Measured: ``scripts/profile_ops.py``'s per-configuration summaries that carry the launching
thread's wall per phase without the profiler (``wall_F_s``/``wall_B_s``/``wall_U_s``), and its
per top-level aten op host time under the profiler (``host_s_per_step``, less
``profiler_event_s`` per call: a lower bound of the profiler's cost, which also records every
nested op and kernel launch). Modelled: :func:`snsim.torchsim.opcost.host_issue_s` of the
same configuration recorded on the CPU (FakeTensorMode), its steady iteration, with each
autocast cast (a nested op) charged to the op it was issued for, as the profiler charges it.

Ops are compared by group (:data:`GROUPS`): the profiler sees ``conv2d`` / ``linear`` /
``cross_entropy_loss`` where the recorder sees the aten ops below them. View ops (no kernel:
:data:`snsim.kernel_table.NO_KERNEL_OPS`) form the group ``views``.

    PYTHONPATH=. python scripts/host_by_family.py --cache /tmp/host6_rec
    PYTHONPATH=. python scripts/host_by_family.py --configs regnet_y_8gf_b32_adamw_bf16
    PYTHONPATH=. python scripts/host_by_family.py --cache /tmp/host_rec2 --profiles \
        traces/h200/profile_s28/profile,traces/h200/profile_s30/profile,...

The walls of profile_host/ other than the first configuration of each process are left out
(:data:`CLEAN_WALLS`), and so is the optimizer phase of fp16 runs with a foreach optimizer
(GradScaler reads ``found_inf`` with ``.item()``: the wall waits for the GPU).
Configurations whose GPU busy time is at least ``--gpu-bound`` (0.9) of the step are left out
of the per-group table (their host may block on a full launch queue: its op times are not issue
costs), and listed apart in the per-phase table. A last table puts each optimizer's step (U)
beside the forward and backward of the same processes (F+B), whose error is the process's own
pace: a U error well below its F+B is the optimizer's host model, not the machine.
"""
from __future__ import annotations

import argparse
import collections
import csv
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ("traces/h200/profile_host/profile", "traces/h200/profile/heldout4_profile",
            "traces/h200/profile/heldout5_profile", "traces/h200/profile_heldout7/profile",
            "traces/h200/profile_host/engine/profile", "traces/h200/probe_s21/profile/profile")
# profile_host/ was taken before profile_ops.py timed every configuration's walls ahead of any
# profile (commit f33ff43): a CUDA profile leaves CUPTI attached and the process slower (the
# same ViT-B/16 forward: 8.9 ms first in its process, 15.7 ms eighth), so only the first
# configuration of each of its two processes (profile_host.log) has walls to compare
CLEAN_WALLS = {"traces/h200/profile_host/profile": {"gpt_b4_bf16",
                                                    "vit_b_16_b32_adamw_fused_fp16"}}
GROUPS = {
    "conv2d": "convolution", "conv1d": "convolution", "conv3d": "convolution",
    "convolution": "convolution", "convolution_cl": "convolution",
    "convolution_backward_cl": "convolution_backward",
    "linear": "matmul", "addmm": "matmul", "mm": "matmul", "matmul": "matmul",
    "bmm": "matmul", "einsum": "matmul", "baddbmm": "matmul",
    "batch_norm": "batch_norm", "native_batch_norm": "batch_norm",
    "layer_norm": "layer_norm", "native_layer_norm": "layer_norm",
    "group_norm": "group_norm", "native_group_norm": "group_norm",
    "cross_entropy_loss": "loss", "_log_softmax": "loss", "nll_loss_forward": "loss",
    "log_softmax": "loss", "nll_loss": "loss", "nll_loss_nd": "loss",
    "scaled_dot_product_attention": "attention", "sdpa_flash": "attention",
    "sdpa_efficient": "attention", "sdpa_math": "attention",
    "sdpa_flash_backward": "attention_backward", "sdpa_efficient_backward":
    "attention_backward", "sdpa_math_backward": "attention_backward",
    "dropout": "dropout", "native_dropout": "dropout", "bernoulli_": "dropout",
    "silu": "activation", "silu_": "activation", "relu": "activation", "relu_": "activation",
    "gelu": "activation", "hardswish": "activation", "hardswish_": "activation",
    "hardsigmoid": "activation", "sigmoid": "activation", "threshold_backward":
    "activation_backward", "gelu_backward": "activation_backward", "silu_backward":
    "activation_backward", "hardswish_backward": "activation_backward",
    "hardsigmoid_backward": "activation_backward", "sigmoid_backward": "activation_backward",
    "add": "elementwise", "add_": "elementwise", "mul": "elementwise", "mul_": "elementwise",
    "div": "elementwise", "div_": "elementwise", "sub": "elementwise", "neg": "elementwise",
    "clone": "copy", "copy_": "copy", "_to_copy": "copy", "to": "copy", "contiguous": "copy",
    "sum": "reduction", "mean": "reduction", "adaptive_avg_pool2d": "reduction",
    "item": "item", "_local_scalar_dense": "item",
}


def group_of(family):
    from snsim.kernel_table import NO_KERNEL_OPS
    if family in NO_KERNEL_OPS or family in ("flatten", "chunk", "narrow", "unflatten",
                                              "view_as", "detach_", "lift_fresh"):
        return "views"
    if family.startswith(("_foreach", "_fused_", "_amp_")):
        return family
    return GROUPS.get(family, family)


def read_profiles(paths):
    """``(summaries, ops)``: summary rows by configuration (those with phase walls) and
    ``{config: Counter((phase, group) -> [host_s, calls])}`` of the top-level ops."""
    from snsim.trace import open_text
    summaries, ops = {}, {}
    for base in paths:
        spath, opath = ROOT / f"{base}_summary.csv", ROOT / f"{base}_ops.csv"
        # a configuration profiled again in another folder is another process: its own row,
        # named after the folder (one name would mix its ops and keep the last one's walls)
        names = {}
        with open(spath, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("wall_F_s") and r["config"] in CLEAN_WALLS.get(base, {r["config"]}):
                    name = r["config"]
                    if name in summaries:
                        name = f"{name}@{Path(base).parent.name}"
                    names[r["config"]] = name
                    summaries[name] = dict(r, source=base)
        with open_text(opath, newline="") as f:
            for r in csv.DictReader(f):
                if r["config"] not in names or not r.get("phase"):
                    continue
                d = ops.setdefault(names[r["config"]],
                                   collections.defaultdict(lambda: [0.0, 0.0]))
                k = (r["phase"], group_of(r["family"]))
                d[k][0] += float(r["host_s_per_step"])
                d[k][1] += float(r["calls_per_step"])
    return summaries, ops


def recording(row, cache):
    """``(ops, marks, host_sids, nested, accumulations)`` of configuration ``row``, recorded on the CPU (the
    pickle ``scripts/op_breakdown.py --cache`` writes, reused)."""
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.predict import cached_recording
    setup = TrainSetup.from_precision_field(row["optimizer"], row["impl"], row["amp"])
    return cached_recording(row["model"], int(row["batch"]), setup, cache)[1]


def phase_of(marks, op):
    m = marks[op[0]]
    return "F" if m[1] == "B" and str(m[0]).startswith("recompute:") else m[1]


def modelled(rec, table, costs):
    """``Counter((phase, group) -> [host_s, calls])`` of the steady iteration's modelled host
    seconds; a nested op (autocast's cast) is charged to the next op that is not nested."""
    from snsim.kernel_table import HOST_READ_OPS
    from snsim.torchsim.opcost import host_issue_s
    ops, marks, host_sids, nested, acc = rec
    syncs = [i for i, op in enumerate(ops)
             if op[1] in HOST_READ_OPS and any(s not in host_sids for s in op[2])]
    host = host_issue_s(ops, marks, table, costs, syncs, accumulations=acc)
    # the module calls' and autograd nodes' share, charged where a mark is entered: a group
    # of its own ("(module/node)"), which the profiler counts outside any aten op
    bare = dict(costs, innet=dict(costs["innet"], per_module_s=0.0, per_node_s=0.0,
                                  per_param_s=0.0))
    own = host_issue_s(ops, marks, table, bare, syncs, accumulations=acc)
    last = max(m[3] for m in marks)
    out = collections.defaultdict(lambda: [0.0, 0.0])
    carry = 0.0
    from snsim.kernel_table import family_of
    for i, op in enumerate(ops):
        if op[0] < 0 or marks[op[0]][3] != last:
            continue
        if i in nested or (carry and group_of(family_of(op[1])) == "views"):
            carry += own[i]      # a cast: charged to the op it feeds (views: to the next)
            out[(phase_of(marks, op), "(module/node)")][0] += host[i] - own[i]
            continue
        phase = phase_of(marks, op)
        k = (phase, group_of(family_of(op[1])))
        out[k][0] += own[i] + carry
        out[k][1] += 1
        out[(phase, "(module/node)")][0] += host[i] - own[i]
        carry = 0.0
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--configs", default=None, help="comma list of configuration names")
    ap.add_argument("--profiles", default=None,
                    help="comma list of profile_ops.py outputs, each without its _summary.csv "
                         "(default: PROFILES)")
    ap.add_argument("--gpu-bound", type=float, default=0.9,
                    help="GPU busy / step at or above which a configuration is GPU-bound")
    ap.add_argument("--innet", default=None,
                    help="a <preset>_host_innet.csv to model with (default: the preset's)")
    ap.add_argument("--csv", default=None, help="write the per-(config, phase, group) rows")
    ap.add_argument("--min-ms", type=float, default=1.0,
                    help="list groups whose measured or modelled total reaches this")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from snsim.kernel_table import load_host_costs, load_kernel_table, read_host_innet
    table = load_kernel_table("h200")
    costs = dict(load_host_costs("h200"))
    if args.innet:
        costs["innet"] = read_host_innet(args.innet)
    if "innet" not in costs:
        print("no in-network host costs (configs/kernels/h200_host_innet.csv or --innet)",
              file=sys.stderr)
        return 2
    summaries, meas = read_profiles(args.profiles.split(",") if args.profiles else PROFILES)
    names = sorted(summaries) if args.configs is None else args.configs.split(",")
    unknown = [n for n in names if n not in summaries]
    if unknown:
        print(f"--configs: {', '.join(unknown)} not in the profiles' summaries (profiled: "
              f"{', '.join(sorted(summaries))})", file=sys.stderr)
        return 2
    rows = []
    print(f"{'config':<42} {'ph':>2} {'model_ms':>9} {'wall_ms':>9} {'in_ops_ms':>9} "
          f"{'err%':>7}  (GPU busy / step)")
    errs = collections.defaultdict(list)
    by_opt = collections.defaultdict(lambda: collections.defaultdict(list))
    for name in names:
        s = summaries[name]
        try:
            rec = recording(s, args.cache)
        except Exception as e:      # a model this machine cannot build: say so, go on
            print(f"{name}: not recorded ({type(e).__name__}: {e})", flush=True)
            continue
        mod = modelled(rec, table, costs)
        ev = float(s.get("profiler_event_s") or 0)
        busy = float(s["gpu_busy_s"]) / float(s["step_s"])
        gpu_bound = busy >= args.gpu_bound
        for ph in "FBU":
            if ph == "U" and s["amp"] == "fp16" and s["impl"] == "foreach":
                continue     # GradScaler's found_inf.item(): the U wall waits for the GPU
            m = sum(v[0] for k, v in mod.items() if k[0] == ph)
            wall = float(s[f"wall_{ph}_s"])
            inside = sum(v[0] - ev * v[1] for k, v in meas[name].items() if k[0] == ph)
            err = 100 * (m - wall) / wall
            if not gpu_bound:
                errs[ph].append(err)
                by_opt[(s["optimizer"], s["impl"])][ph].append((m, wall))
            print(f"{name:<42} {ph:>2} {m * 1e3:9.3f} {wall * 1e3:9.3f} {inside * 1e3:9.3f} "
                  f"{err:+7.1f}  ({busy:.2f}{' GPU-bound' if gpu_bound else ''})", flush=True)
            for k in set(mod) | set(meas[name]):
                if k[0] == ph:
                    mv, mc = mod.get(k, (0.0, 0.0))
                    pv, pc = meas[name].get(k, (0.0, 0.0))
                    rows.append({"config": name, "phase": ph, "group": k[1],
                                 "gpu_bound": int(gpu_bound), "model_s": mv,
                                 "model_calls": mc, "meas_s": pv - ev * pc, "meas_calls": pc,
                                 "wall_phase_s": wall, "model_phase_s": m})
    print("\nper phase over the host-bound configurations: model vs wall err% median "
          "[min, max]")
    for ph in "FBU":
        if errs[ph]:
            print(f"  {ph}: {statistics.median(errs[ph]):+.1f} [{min(errs[ph]):+.1f}, "
                  f"{max(errs[ph]):+.1f}] over {len(errs[ph])}")
    print("\nper optimizer over the host-bound configurations: the optimizer step (U) against "
          "the same processes' forward and backward (F+B), model vs wall err% median")
    for (opt, impl), walls in sorted(by_opt.items()):
        fb = [(sum(x[0] for x in p), sum(x[1] for x in p))
              for p in zip(walls["F"], walls["B"])]
        med = [statistics.median(100 * (m - w) / w for m, w in v) if v else math.nan
               for v in (walls["U"], fb)]
        print(f"  {opt:>12} {impl:<7} U {med[0]:+6.1f} over {len(walls['U']):2d}   "
              f"F+B {med[1]:+6.1f} over {len(fb):2d}")
    agg = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, []])
    for r in rows:
        if r["gpu_bound"]:
            continue
        a = agg[(r["phase"], r["group"])]
        a[0] += r["model_s"]
        a[1] += r["meas_s"]
        a[2] += r["model_calls"]
        a[3] += r["meas_calls"]
        if r["meas_s"] > 0 and r["model_s"] > 0:
            a[4].append(r["model_s"] / r["meas_s"])
    print(f"\nper (phase, group), host-bound configurations summed: modelled vs measured in "
          f"top-level ops (profiler cost per call taken off)\n"
          f"{'ph':>2} {'group':<34} {'model_ms':>9} {'meas_ms':>9} {'ratio':>6} "
          f"{'calls_mod':>9} {'calls_meas':>10} {'us/call_mod':>11} {'us/call_meas':>12} "
          f"{'ratio med [min,max] per config':>30}")
    for (ph, g), a in sorted(agg.items(), key=lambda kv: (kv[0][0], -max(kv[1][0],
                                                                          kv[1][1]))):
        if max(a[0], a[1]) * 1e3 < args.min_ms:
            continue
        ratio = f"{a[0] / a[1]:6.2f}" if a[1] > 0 else "     -"
        per = (f"{statistics.median(a[4]):.2f} [{min(a[4]):.2f}, {max(a[4]):.2f}]"
               if a[4] else "-")
        um = f"{a[0] / a[2] * 1e6:11.1f}" if a[2] else f"{'-':>11}"
        up = f"{a[1] / a[3] * 1e6:12.1f}" if a[3] else f"{'-':>12}"
        print(f"{ph:>2} {g:<34} {a[0] * 1e3:9.3f} {a[1] * 1e3:9.3f} {ratio} {a[2]:9.0f} "
              f"{a[3]:10.0f} {um} {up} {per:>30}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
