"""Where a predicted plan step's time goes: host and GPU seconds per phase, as ``snsim predict
--policy`` models them (CPU only), to set beside ``scripts/plan_gpu_busy.py``'s measured split.

Phases: ``F`` forward and loss, ``R`` recomputation (marks ``recompute:``, in backward), ``B``
the rest of backward, ``U`` optimizer step. Per phase: the host's issue seconds of the aten
ops (``host_ops``), of the plan's own mechanisms (``host_plan``: checkpoint calls, saved-tensor
hooks ..., by mechanism below), the GPU's kernel seconds (``gpu``, side-stream copies apart)
and the host copies' seconds (``copies``, with their count and bytes); ``span``: the phase's
share of the modelled step (the ops' shares of the two-resource schedule, waits included).

    PYTHONPATH=. python scripts/plan_time_split.py --model torchvision:resnet50 --batch 2 \\
        --input-shape 3,64,64 --policy checkpoint --option modules=Bottleneck
"""
from __future__ import annotations

import argparse
import collections
import sys


def split(model, batch, policy, options, optimizer, impl, amp, input_shape=None, gpu="h200",
          torch_version="installed"):
    """``(rows, mechanisms, step_s)``: per phase ``{phase: {host_ops, host_plan, gpu, copies,
    n_copies, copy_bytes, n_ops}}`` of the last recorded iteration, the plan host seconds per
    mechanism, and the modelled step."""
    from snsim.hardware import load_hardware
    from snsim.kernel_table import HOST_READ_OPS, load_host_costs, load_kernel_table
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.opcost import (HOST_COPY_OPS, SIDE_COPY_OPS, innet_host_s,
                                       op_times_s, plan_host_s)
    from snsim.torchsim.plans import make_transform, pack_blocks_of
    from snsim.torchsim.predict import record_fake
    hw = load_hardware(gpu)
    spec = resolve_model(model, input_shape=input_shape)
    setup = TrainSetup(optimizer, impl, None if amp == "none" else amp)
    r = record_fake(spec, batch, setup, transform=make_transform(
        policy, shadow=True, options=options, save_on_cpu_blocks=pack_blocks_of(torch_version)),
        gpu=hw.name)
    rec = r["rec"]
    ops, marks = rec.ops, rec.marks
    table = load_kernel_table(hw.name)
    costs = load_host_costs(hw.name)
    gpu_s = op_times_s(ops, hw, marks, table=table, host=False)
    syncs = {i for i, op in enumerate(ops)
             if op[1] in HOST_READ_OPS and any(s not in rec.excluded for s in op[2])}
    host_ops = innet_host_s(ops, marks, table, costs["innet"], syncs, rec.accumulation_ops)
    report = {}
    shares = op_times_s(ops, hw, marks, table=table, report=report, host_sids=rec.excluded,
                        host_events=rec.host_events, accumulations=rec.accumulation_ops)
    last = max(m[3] for m in marks)

    def phase_of(i):
        if i < 0 or ops[i][0] < 0:
            return None
        m = marks[ops[i][0]]
        if m[3] != last:
            return None
        return "R" if m[1] == "B" and str(m[0]).startswith("recompute:") else m[1]
    rows = {p: collections.Counter() for p in "FRBU"}
    for i, op in enumerate(ops):
        p = phase_of(i)
        if p is None:
            continue
        rows[p]["n_ops"] += 1
        rows[p]["host_ops"] += host_ops[i]
        rows[p]["span"] += shares[i]
        if op[1] in HOST_COPY_OPS or op[1] in SIDE_COPY_OPS:
            rows[p]["copies"] += gpu_s[i]
            rows[p]["n_copies"] += 1
            rows[p]["copy_bytes"] += op[5]
        else:
            rows[p]["gpu"] += gpu_s[i]
    mech = collections.Counter()
    for at, mechanism, phase, count in rec.host_events:
        p = phase_of(min(at, len(ops) - 1))
        if p is None:
            continue
        s = plan_host_s(mechanism, phase, count, costs)
        rows[p]["host_plan"] += s
        mech[(mechanism, phase, "s")] += s
        mech[(mechanism, phase, "events")] += 1
        mech[(mechanism, phase, "count")] += count
    return rows, mech, report["step_s"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--policy", default="plain")
    ap.add_argument("--option", action="append", default=[])
    ap.add_argument("--optimizer", default="sgd-momentum")
    ap.add_argument("--optimizer-impl", default="foreach")
    ap.add_argument("--amp", default="none")
    ap.add_argument("--input-shape", default=None)
    ap.add_argument("--gpu", default="h200", help="hardware preset (default h200)")
    ap.add_argument("--torch-version", default="installed",
                    help="the torch that runs the plan (save_on_cpu's pack: 2.11 waits for its "
                         "copy, 2.12 on does not); default: the installed one")
    a = ap.parse_args(argv)
    shape = tuple(int(v) for v in a.input_shape.split(",")) if a.input_shape else None
    rows, mech, step = split(a.model, a.batch, a.policy, a.option, a.optimizer,
                             a.optimizer_impl, a.amp, shape, gpu=a.gpu,
                             torch_version=a.torch_version)
    print(f"{a.model} b{a.batch} {a.policy} {' '.join(a.option)} {a.optimizer} "
          f"{a.amp} on {a.gpu}: step {step * 1e3:.2f} ms")
    for p, c in rows.items():
        print(f"  {p}: ops {c['n_ops']:5d} host_ops {c['host_ops'] * 1e3:8.2f} ms  host_plan "
              f"{c['host_plan'] * 1e3:7.2f} ms  gpu {c['gpu'] * 1e3:8.2f} ms  copies "
              f"{c['copies'] * 1e3:7.2f} ms ({c['n_copies']} of {c['copy_bytes'] / 2**20:.1f} "
              f"MiB)  span {c['span'] * 1e3:8.2f} ms")
    for (m, ph, kind), v in sorted(mech.items()):
        if kind == "s":
            print(f"  {m:<20} {ph}: {mech[(m, ph, 'events')]:5d} events, count "
                  f"{mech[(m, ph, 'count')]:6d}, {v * 1e3:7.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
