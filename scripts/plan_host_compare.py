"""The launching thread's wall per phase, measured by ``scripts/plan_step_probe.py``, against
the host seconds ``snsim predict`` models for the same configuration at the pace that process
gauged.

For each configuration of a ``plan_step_probe.csv`` (``MODEL:BATCH:OPTIMIZER:AMP:PLAN``), the
fake run of the plan (as ``snsim predict --policy`` records it) gives the modelled host seconds
of the steady iteration per phase (:func:`snsim.torchsim.opcost.host_issue_s` for the ops, the
recomputation's ops counted in B; :func:`snsim.torchsim.opcost.plan_host_s` for the plan's
checkpoint and hook events), scaled by the process's pace (the mean of its two gauges over the
kernel table's ``add``, :func:`snsim.torchsim.hostpace.pace_factor`). The measured figure is
the mean over the collector-on and -off rounds of the median wall per phase. A phase's wall
is the host's time only where the GPU does not hold the thread back (small batches).

    PYTHONPATH=. python scripts/plan_host_compare.py traces/h200/probe_s17/plan_step_probe_gauged.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # plan_step_probe


def fake_recording(config, gpu="h200"):
    """The fake run of a probe configuration's plan, as ``snsim predict --policy`` records
    it (:func:`plan_step_probe.parse_config`): the Recorder."""
    from plan_step_probe import parse_config
    from snsim.torchsim.plans import make_transform
    from snsim.torchsim.predict import record_fake
    spec, batch, setup, plan = parse_config(config)
    return record_fake(spec, batch, setup, transform=make_transform(plan, shadow=True),
                       gpu=gpu)["rec"]


def modelled_host_s(config, gpu="h200"):
    """``{phase: seconds}`` (F, B with the recomputation, U) at the table's pace, and the
    recomputation's share ``R`` and the plan events' ``events_F`` / ``events_B`` apart."""
    from snsim.kernel_table import load_host_costs, load_kernel_table
    from snsim.torchsim.opcost import host_issue_s, plan_host_s
    rec = fake_recording(config, gpu)
    ops, marks = rec.ops, rec.marks
    table, costs = load_kernel_table(gpu), load_host_costs(gpu)
    host = host_issue_s(ops, marks, table, costs, (), (), rec.accumulation_ops)
    last = max(m[3] for m in marks)
    out = collections.Counter()
    for i, op in enumerate(ops):
        if op[0] < 0 or marks[op[0]][3] != last:
            continue
        label, phase = str(marks[op[0]][0]), marks[op[0]][1]
        out[phase] += host[i]
        if label.startswith("recompute:"):
            out["R"] += host[i]
    for at, mech, phase, count in rec.host_events:
        op = ops[min(at, len(ops) - 1)]
        if op[0] >= 0 and marks[op[0]][3] == last:
            s = plan_host_s(mech, phase, count, costs)
            out[phase] += s
            out[f"events_{phase}"] += s
    return dict(out), table


def main(argv=None):
    from snsim.torchsim.hostpace import pace_factor
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="plan_step_probe.csv with gauge_before_us / gauge_after_us")
    ap.add_argument("--gpu", default="h200")
    args = ap.parse_args(argv)
    rows = collections.defaultdict(list)
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            rows[r["config"]].append(r)
    print("| configuration | pace | F meas / model ms | B meas / model ms (R, events) "
          "| U meas / model ms |")
    print("|---|---|---|---|---|")
    for config, rs in rows.items():
        gauge_s = statistics.mean(float(r[k]) for r in rs
                                  for k in ("gauge_before_us", "gauge_after_us")) * 1e-6
        model, table = modelled_host_s(config, args.gpu)
        pace = pace_factor(gauge_s, table)
        meas = {p: statistics.mean(float(r[f"wall_{p}_s"]) for r in rs) for p in "FBU"}
        cell = {p: f"{meas[p] * 1e3:.1f} / {model.get(p, 0) * pace * 1e3:.1f}" for p in "FBU"}
        extra = (f" ({model.get('R', 0) * pace * 1e3:.1f}, "
                 f"{model.get('events_B', 0) * pace * 1e3:.1f})") if model.get("R") else ""
        print(f"| {config} | {pace:.2f} | {cell['F']} | {cell['B']}{extra} | {cell['U']} |",
              flush=True)


if __name__ == "__main__":
    main()
