"""``scripts/pack_probe.py``'s measured forward walls against the prediction of the same
forwards (CPU only): per configuration, the modelled wall of the forward phase (the shares of
its ops in :func:`snsim.kernel_table.host_stream`, so the GPU's waits for the host are in it)
plain, under torch 2.11's blocking pinned pack and under 2.12's non-blocking one, at the
probe process's own host pace (its gauge over the table's), and the backward of the real
``save_on_cpu``.

    PYTHONPATH=. python scripts/pack_probe_compare.py traces/h200/pack_probe_s29
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys


def phase_walls(model, batch, amp, policy, options, torch_version, pace):
    """Modelled seconds of the last iteration's phases ``{F, B, U}`` (sums of op shares)."""
    from snsim.hardware import load_hardware
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.opcost import op_times_s
    from snsim.torchsim.plans import make_transform, pack_blocks_of
    from snsim.torchsim.predict import record_fake
    hw = load_hardware("h200")
    spec = resolve_model(model)
    setup = TrainSetup("sgd-momentum", "foreach", None if amp == "none" else amp)
    r = record_fake(spec, batch, setup, gpu=hw.name, transform=make_transform(
        policy, shadow=True, options=options, save_on_cpu_blocks=pack_blocks_of(torch_version)))
    rec = r["rec"]
    times = op_times_s(rec.ops, hw, rec.marks, host_sids=rec.excluded,
                       host_events=rec.host_events, accumulations=rec.accumulation_ops,
                       host_pace=pace)
    last = max(m[3] for m in rec.marks)
    out = {"F": 0.0, "B": 0.0, "U": 0.0}
    n_copies = 0
    for op, t in zip(rec.ops, times):
        if op[0] < 0 or rec.marks[op[0]][3] != last:
            continue
        ph = rec.marks[op[0]][1]
        out[ph if ph in out else "B"] += t
        n_copies += op[1].startswith("d2h")
    return out, n_copies


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--csv", default=None)
    a = ap.parse_args(argv)
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.hostpace import pace_factor
    micro = json.load(open(os.path.join(a.folder, "pack_probe_micro.json")))
    pace = pace_factor(micro["gauge_add_s"], load_kernel_table("h200"))
    print(f"probe: torch {micro['torch']}, gauge {micro['gauge_add_s'] * 1e6:.2f} us, "
          f"pace {pace:.3f}")
    rows = []
    for r in csv.DictReader(open(os.path.join(a.folder, "pack_probe.csv"))):
        m, b, amp = r["model"], int(r["batch"]), r["amp"]
        plain, _ = phase_walls(m, b, amp, "plain", [], "2.11", pace)
        block, n = phase_walls(m, b, amp, "cpu_offload", ["pin_memory=true"], "2.11", pace)
        nonb, _ = phase_walls(m, b, amp, "cpu_offload", ["pin_memory=true"], "2.12", pace)
        row = {"model": m, "batch": b, "amp": amp, "packs_measured": r["packs"],
               "copies_predicted": n}
        for key, meas, pred in (("plain_F", "plain_wall_s", plain["F"]),
                                ("pack211_F", "save_on_cpu_wall_s", block["F"]),
                                ("copy_sync_F", "copy_sync_wall_s", block["F"]),
                                ("pack212_F", "copy_nb_wall_s", nonb["F"]),
                                ("unpack_B", "save_on_cpu_back_s", block["B"])):
            mv = float(r[meas])
            row[f"{key}_meas_ms"] = f"{mv * 1e3:.2f}"
            row[f"{key}_pred_ms"] = f"{pred * 1e3:.2f}"
            row[f"{key}_err_pct"] = f"{(pred - mv) / mv * 100:+.1f}"
        rows.append(row)
        print(f"{m} b{b} {amp}: packs {r['packs']} (copies predicted {n}); " + "; ".join(
            f"{k} {row[f'{k}_meas_ms']} vs {row[f'{k}_pred_ms']} ({row[f'{k}_err_pct']} %)"
            for k in ("plain_F", "pack211_F", "pack212_F", "unpack_B")), flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
