"""``scripts/ckpt_parts_probe.py``'s measured per-call parts of a checkpoint plan beside what
``snsim predict --policy checkpoint`` charges for them (CPU only).

Per configuration (the medians over rounds of each variant's host seconds per phase, from an
idle GPU with the garbage collector off), per checkpoint call:

* ``F extra``: ``ckpt_F - plain_F``, the forward's per-call cost (context, frame, hooks, one
  pack per saved tensor), beside the model's ``checkpoint`` F events (``plan F``);
* ``B extra``: ``ckpt_B - plain_B``: the recomputation's ops and its set-up, beside the model's
  recomputation ops (``R ops``), its ``checkpoint`` B events (``plan R``) and the backward's own
  change (``dB``);
* ``rng F/B``: ``ckpt - norng`` (``preserve_rng_state``: RNG states got in forward, forked and
  set around the recomputation); ``check F/B``: ``ckpt - nocheck`` (the determinism check's
  metadata per packed tensor, its comparison per recomputed one);
* ``sel F/B``: ``selective - ckpt``, beside the model's ``selective`` events.

**In-network ratios.** Per configuration and measurement (each round of the probe, and each
configuration of ``--busy``: ``scripts/plan_gpu_busy.py``'s CSV of the same blocks, its
collector-off phases), the checkpoint mechanism's measured per-call cost over the one fitted to
the synthetic chains (``configs/kernels/<gpu>_checkpoint_costs.csv``, before any ratio):
forward ``(F extra - the model's change of the forward's ops) / plan F``, backward ``(B extra
- R ops - dB) / plan R``. Their medians, with ``--write-ratios PATH``, are the preset's
``<gpu>_checkpoint_innet.csv`` (:func:`snsim.kernel_table.load_host_costs` scales the chain's
checkpoint costs by them).

    PYTHONPATH=. python scripts/ckpt_parts_analyse.py device_out/c/ckpt_parts_blocks.csv
    PYTHONPATH=. python scripts/ckpt_parts_analyse.py traces/h200/plan_host/ckpt_parts_blocks.csv \
        --busy traces/h200/plan_host/plan_gpu_busy_tinyckpt.csv \
        --write-ratios configs/kernels/h200_checkpoint_innet.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import statistics
import sys


def rounds(path):
    """``({(model, amp): {variant: [row per round]}}, {(model, amp): (batch, block,
    optimizer)})`` of a ``ckpt_parts_blocks.csv``."""
    acc = collections.defaultdict(lambda: collections.defaultdict(list))
    meta = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["model"], r["amp"])
            meta[key] = (int(r["batch"]), r["block"], r["optimizer"])
            acc[key][r["variant"]].append(r)
    return acc, meta


def busy_pairs(path):
    """``{(model, amp): (plain row, checkpoint row)}`` of ``scripts/plan_gpu_busy.py``'s CSV,
    its collector-off phases as ``host_F_s`` / ``host_B_s`` (what the probe's rounds time)."""
    out = collections.defaultdict(dict)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["policy"] in ("plain", "checkpoint") and "selective" not in r["options"]:
                out[(r["model"], r["amp"])][r["policy"]] = {
                    "host_F_s": float(r["host_nogc_F_s"]), "host_B_s": float(r["host_nogc_B_s"])}
    return {k: (v["plain"], v["checkpoint"]) for k, v in out.items()
            if "plain" in v and "checkpoint" in v}


def measured(acc):
    """``{(model, amp): {variant: {host_F_s, host_B_s, host_U_s, step_s, calls, packed,
    policy}}}``: medians over the rounds of :func:`rounds`' ``acc``."""
    out = {}
    for key, variants in acc.items():
        out[key] = {v: {k: statistics.median(float(r[k]) for r in rows)
                        for k in ("host_F_s", "host_B_s", "host_U_s", "step_s", "calls",
                                  "packed", "policy") if rows[0].get(k) not in (None, "")}
                    for v, rows in variants.items()}
    return out


def modelled(model, batch, block, optimizer, amp):
    """The model's per-phase host seconds of plain, checkpoint and selective plans
    (:func:`plan_time_split.split`)."""
    sys.path.insert(0, "scripts")
    from plan_time_split import split
    from snsim.torchsim.models import split_sized
    text, shape = split_sized(model)
    out = {}
    from snsim.errors import ConfigError
    for name, opts in (("plain", None), ("ckpt", [f"modules={block}"]),
                       ("selective", [f"modules={block}", "selective=true"])):
        try:
            rows, mech, step = split(text, batch, "plain" if opts is None else "checkpoint",
                                     opts or [], optimizer, "foreach", amp, shape)
        except ConfigError as e:     # selective checkpointing refuses in-place blocks
            print(f"  ({name}: {e})")
            continue
        out[name] = (rows, mech, step)
    return out


def chain_ratios(mod, pairs, calls):
    """Per measured ``(plain, ckpt)`` pair of phase dicts, ``(F ratio, B ratio)``: the
    measured per-call cost beyond the model's ops over the chain-fitted checkpoint cost
    (the model's ``checkpoint`` events divided by the in-network ratio it applied)."""
    from snsim.kernel_table import load_host_costs
    applied = load_host_costs("h200").get("checkpoint_innet", {})
    pr, cr = mod["plain"][0], mod["ckpt"][0]
    ops_f = (cr["F"]["host_ops"] - pr["F"]["host_ops"]) / calls
    ops_b = (cr["R"]["host_ops"] + cr["B"]["host_ops"] - pr["B"]["host_ops"]) / calls
    plan_f = cr["F"]["host_plan"] / calls / applied.get("F", 1.0)
    plan_b = cr["R"]["host_plan"] / calls / applied.get("B", 1.0)
    out = []
    for p, c in pairs:
        f = (c["host_F_s"] - p["host_F_s"]) / calls - ops_f
        b = (c["host_B_s"] - p["host_B_s"]) / calls - ops_b
        out.append((f / plan_f, b / plan_b))
    return out


def write_ratios(path, per_config, sources):
    """The medians of ``per_config``'s ratios, one row per phase."""
    rows = []
    for k, phase in enumerate("FB"):
        vals = [r[k] for rs in per_config.values() for r in rs]
        rows.append({"phase": phase, "ratio": f"{statistics.median(vals):.4g}",
                     "n": len(vals), "source": "median over " + sources})
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["phase", "ratio", "n", "source"])
        w.writeheader()
        w.writerows(rows)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ckpt_parts_blocks.csv of scripts/ckpt_parts_probe.py")
    ap.add_argument("--no-model", action="store_true", help="measured parts only")
    ap.add_argument("--busy", default=None,
                    help="scripts/plan_gpu_busy.py's CSV of the same blocks: one more "
                         "measurement per configuration for the ratios")
    ap.add_argument("--write-ratios", default=None,
                    help="write the median in-network ratios (phase,ratio,n,source) here")
    args = ap.parse_args(argv)
    per_round, meta = rounds(args.csv)
    meas = measured(per_round)
    busy = busy_pairs(args.busy) if args.busy else {}
    ratios = {}
    us = 1e6
    for key, v in meas.items():
        if "plain" not in v or "ckpt" not in v:
            continue
        batch, block, optimizer = meta[key]
        n = v["ckpt"]["calls"] or 1.0
        p, c = v["plain"], v["ckpt"]

        def per(a, b, ph):
            return (a[f"host_{ph}_s"] - b[f"host_{ph}_s"]) / n * us
        print(f"{key[0]} b{batch} {key[1]} {block}: {n:.0f} calls, {c['packed'] / n:.1f} "
              f"determinism-check calls per call (forward and recomputation); step plain "
              f"{p['step_s'] * 1e3:.2f} ckpt {c['step_s'] * 1e3:.2f} ms")
        print(f"  measured per call (us): F extra {per(c, p, 'F'):7.1f}  B extra "
              f"{per(c, p, 'B'):7.1f}")
        for other, label in (("norng", "rng"), ("nocheck", "check"),
                             ("norng_nocheck", "rng+check")):
            if other in v:
                print(f"    {label:<10} F {per(c, v[other], 'F'):7.1f}  B "
                      f"{per(c, v[other], 'B'):7.1f}")
        if "selective" in v:
            s = v["selective"]
            m = s.get("policy", 0.0) / n
            print(f"    selective  F {per(s, c, 'F'):7.1f}  B {per(s, c, 'B'):7.1f}  "
                  f"({m:.1f} policy calls per call, forward and recomputation)")
        if args.no_model:
            continue
        mod = modelled(key[0], batch, block, optimizer, key[1])
        pr, cr = mod["plain"][0], mod["ckpt"][0]
        mech = mod["ckpt"][1]
        calls = mech.get(("checkpoint", "F", "events"), 0) or 1
        saved = mech.get(("checkpoint", "F", "count"), 0) / calls
        pairs = [({f"host_{ph}_s": float(a[f"host_{ph}_s"]) for ph in "FB"},
                  {f"host_{ph}_s": float(b[f"host_{ph}_s"]) for ph in "FB"})
                 for a, b in zip(per_round[key]["plain"], per_round[key]["ckpt"])]
        pairs += [busy[key]] if key in busy else []
        ratios[key] = chain_ratios(mod, pairs, calls)
        print("  measured over chain-fitted per call: " + ", ".join(
            f"F {f:.2f} B {b:.2f}" for f, b in ratios[key]))
        print(f"  modelled per call (us), {calls} calls, {saved:.1f} saved tensors per call: "
              f"F extra {(cr['F']['host_ops'] + cr['F']['host_plan'] - pr['F']['host_ops']) / calls * us:7.1f}"
              f" (plan F {cr['F']['host_plan'] / calls * us:.1f})  B extra "
              f"{(cr['R']['host_ops'] + cr['R']['host_plan'] + cr['B']['host_ops'] - pr['B']['host_ops']) / calls * us:7.1f}"
              f" (R ops {cr['R']['host_ops'] / calls * us:.1f}, plan R "
              f"{cr['R']['host_plan'] / calls * us:.1f}, dB "
              f"{(cr['B']['host_ops'] - pr['B']['host_ops']) / calls * us:.1f})")
        if "selective" not in mod:
            continue
        sr, smech = mod["selective"][0], mod["selective"][1]
        print(f"    selective  F {(sr['F']['host_plan'] - cr['F']['host_plan']) / calls * us:7.1f}"
              f"  B {(sr['R']['host_plan'] + sr['R']['host_ops'] - cr['R']['host_plan'] - cr['R']['host_ops']) / calls * us:7.1f}"
              f"  ({smech.get(('selective', 'F', 'count'), 0) / calls:.1f} policy calls per "
              f"call in forward)")
        print(f"  modelled step plain {mod['plain'][2] * 1e3:.2f} ckpt {mod['ckpt'][2] * 1e3:.2f}"
              f" selective {mod['selective'][2] * 1e3:.2f} ms")
    if ratios:
        for k, phase in enumerate("FB"):
            vals = sorted(r[k] for rs in ratios.values() for r in rs)
            print(f"{phase}: measured over chain-fitted, median {statistics.median(vals):.3f} "
                  f"of {len(vals)} ({', '.join(f'{v:.2f}' for v in vals)})")
    if args.write_ratios and ratios:
        src = f"{len(ratios)} blocks of {args.csv}" + (f" and {args.busy}" if busy else "")
        for r in write_ratios(args.write_ratios, ratios, src):
            print(f"{args.write_ratios}: {r['phase']} {r['ratio']} (n={r['n']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
