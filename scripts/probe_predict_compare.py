"""``snsim predict``'s step time against real steps measured by ``scripts/plan_step_probe.py``:
each configuration's fake run priced at the kernel table's own host pace (what ``snsim
predict`` prints) and at the pace its process gauged (``--host-gauge-us``), beside the
measured median step of every process that ran it (gc on, the harness ``snsim execute`` uses).

A configuration measured in several processes gets one row per process and a summary row
against the median of the processes (``process`` = ``median``); a measured step of a
CPU-bound configuration moves with the launching thread's pace, which differs between
processes and leases (docs/VALIDATION.md, "How repeatable a measured step is").

    PYTHONPATH=. python scripts/probe_predict_compare.py traces/h200/probe_s18/plan_step_probe.csv \\
        traces/h200/probe_s18/unseen/plan_step_probe.csv --csv docs/data/probe_s18_step_h200.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # plan_host_compare


def predicted_step_s(config, paces, gpu="h200"):
    """``{pace: step seconds}`` of ``config``'s fake run (as ``snsim predict --policy``
    records it) priced at each host pace."""
    from plan_host_compare import fake_recording
    from snsim.hardware.spec import load_hardware
    from snsim.torchsim.opcost import op_times_s
    rec = fake_recording(config, gpu)
    hw = load_hardware(gpu)
    out = {}
    for pace in paces:
        rep = {}
        op_times_s(rec.ops, hw, rec.marks, report=rep, host_sids=rec.excluded,
                   host_events=rec.host_events, accumulations=rec.accumulation_ops,
                   host_pace=pace)
        out[pace] = rep["step_s"]
    return out


def main(argv=None):
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.hostpace import pace_factor
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csvs", nargs="+", help="plan_step_probe.csv files")
    ap.add_argument("--csv", required=True, help="output")
    ap.add_argument("--gpu", default="h200")
    args = ap.parse_args(argv)
    table = load_kernel_table(args.gpu)
    runs = collections.defaultdict(list)     # config -> [(source, step_s, pace)]
    for path in args.csvs:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["collector"] != "on":
                    continue
                gauge_s = (float(r["gauge_before_us"]) + float(r["gauge_after_us"])) / 2e6
                runs[r["config"]].append((os.path.relpath(path), float(r["step_s"]),
                                          pace_factor(gauge_s, table)))
    rows = []
    for config, got in runs.items():
        pred = predicted_step_s(config, sorted({1.0} | {p for *_, p in got}), args.gpu)
        for i, (src, meas, pace) in enumerate(got):
            rows.append({"config": config, "source": src, "process": i + 1,
                         "meas_ms": meas * 1e3, "pace": pace, "pred_ms": pred[1.0] * 1e3,
                         "err_pct": 100 * (pred[1.0] - meas) / meas,
                         "pred_at_pace_ms": pred[pace] * 1e3,
                         "err_at_pace_pct": 100 * (pred[pace] - meas) / meas})
        if len(got) > 1:
            meas = statistics.median(m for _, m, _ in got)
            rows.append({"config": config, "source": "", "process": "median",
                         "meas_ms": meas * 1e3, "pace": statistics.median(p for *_, p in got),
                         "pred_ms": pred[1.0] * 1e3,
                         "err_pct": 100 * (pred[1.0] - meas) / meas,
                         "pred_at_pace_ms": "", "err_at_pace_pct": ""})
        r = rows[-1]
        print(f"{config} {r['process']}: measured {r['meas_ms']:.1f} ms, predicted "
              f"{r['pred_ms']:.1f} ({r['err_pct']:+.1f} %)", flush=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
