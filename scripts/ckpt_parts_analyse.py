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

    PYTHONPATH=. python scripts/ckpt_parts_analyse.py device_out/c/ckpt_parts_blocks.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import statistics
import sys


def measured(path):
    """``{(model, amp): {variant: {host_F_s, host_B_s, host_U_s, step_s, calls, packed,
    policy}}}``: medians over rounds."""
    acc = collections.defaultdict(lambda: collections.defaultdict(list))
    meta = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["model"], r["amp"])
            meta[key] = (int(r["batch"]), r["block"], r["optimizer"])
            acc[key][r["variant"]].append(r)
    out = {}
    for key, variants in acc.items():
        out[key] = {v: {k: statistics.median(float(r[k]) for r in rows)
                        for k in ("host_F_s", "host_B_s", "host_U_s", "step_s", "calls",
                                  "packed", "policy") if rows[0].get(k) not in (None, "")}
                    for v, rows in variants.items()}
    return out, meta


def modelled(model, batch, block, optimizer, amp):
    """The model's per-phase host seconds of plain, checkpoint and selective plans
    (:func:`plan_time_split.split`)."""
    sys.path.insert(0, "scripts")
    from plan_time_split import split
    text, _, size = model.partition("@")
    shape = tuple(int(v) for v in size.split("x")) if size else None
    out = {}
    for name, opts in (("plain", None), ("ckpt", [f"modules={block}"]),
                       ("selective", [f"modules={block}", "selective=true"])):
        rows, mech, step = split(text, batch, "plain" if opts is None else "checkpoint",
                                 opts or [], optimizer, "foreach", amp, shape)
        out[name] = (rows, mech, step)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ckpt_parts_blocks.csv of scripts/ckpt_parts_probe.py")
    ap.add_argument("--no-model", action="store_true", help="measured parts only")
    args = ap.parse_args(argv)
    meas, meta = measured(args.csv)
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
        pr, cr, sr = (mod[k][0] for k in ("plain", "ckpt", "selective"))
        mech = mod["ckpt"][1]
        calls = mech.get(("checkpoint", "F", "events"), 0) or 1
        saved = mech.get(("checkpoint", "F", "count"), 0) / calls
        print(f"  modelled per call (us), {calls} calls, {saved:.1f} saved tensors per call: "
              f"F extra {(cr['F']['host_ops'] + cr['F']['host_plan'] - pr['F']['host_ops']) / calls * us:7.1f}"
              f" (plan F {cr['F']['host_plan'] / calls * us:.1f})  B extra "
              f"{(cr['R']['host_ops'] + cr['R']['host_plan'] + cr['B']['host_ops'] - pr['B']['host_ops']) / calls * us:7.1f}"
              f" (R ops {cr['R']['host_ops'] / calls * us:.1f}, plan R "
              f"{cr['R']['host_plan'] / calls * us:.1f}, dB "
              f"{(cr['B']['host_ops'] - pr['B']['host_ops']) / calls * us:.1f})")
        smech = mod["selective"][1]
        print(f"    selective  F {(sr['F']['host_plan'] - cr['F']['host_plan']) / calls * us:7.1f}"
              f"  B {(sr['R']['host_plan'] + sr['R']['host_ops'] - cr['R']['host_plan'] - cr['R']['host_ops']) / calls * us:7.1f}"
              f"  ({smech.get(('selective', 'F', 'count'), 0) / calls:.1f} policy calls per "
              f"call in forward)")
        print(f"  modelled step plain {mod['plain'][2] * 1e3:.2f} ckpt {mod['ckpt'][2] * 1e3:.2f}"
              f" selective {mod['selective'][2] * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
