"""A plan's extra aten calls over the plain step, on the GPU (``scripts/aten_count_probe.py``'s
``aten_counts.csv``) against the fake run's (what ``snsim predict --policy`` records).

For each plan configuration of the CSV whose ``...:plain`` twin is there too: per aten op name,
the calls per step the plan adds on the GPU and its self host µs per step, beside the calls the
fake run's steady iteration adds (:func:`plan_host_compare.fake_recording`). Ops nested inside
another op's call (``empty``, ``copy_`` inside ``_to_copy``, ``linear`` around ``addmm``) show
on the GPU only: the recorder's dispatch mode sees the calls below autograd, not their insides.

    PYTHONPATH=. python scripts/aten_count_compare.py traces/h200/probe_s17/aten_counts.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # plan_host_compare


def fake_counts(config):
    """Calls per op name of the fake run's steady (last) iteration."""
    from plan_host_compare import fake_recording
    rec = fake_recording(config)
    last = max(m[3] for m in rec.marks)
    return collections.Counter(op[1] for op in rec.ops
                               if op[0] >= 0 and rec.marks[op[0]][3] == last)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="aten_counts.csv of scripts/aten_count_probe.py")
    ap.add_argument("--top", type=int, default=20, help="ops per configuration, by host µs")
    args = ap.parse_args(argv)
    gpu = collections.defaultdict(dict)
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            gpu[r["config"]][r["op"]] = (float(r["calls_per_step"]),
                                         float(r["self_host_us_per_step"]))
    for config in gpu:
        plain = config.rsplit(":", 1)[0] + ":plain"
        if config == plain or plain not in gpu:
            continue
        fake, fake_plain = fake_counts(config), fake_counts(plain)
        print(f"## {config}\n\n| op | GPU extra calls | GPU extra self host µs | fake extra "
              "calls |\n|---|---|---|---|")
        rows = []
        for name in set(gpu[config]) | set(gpu[plain]):
            (c1, h1), (c0, h0) = gpu[config].get(name, (0, 0)), gpu[plain].get(name, (0, 0))
            rows.append((h1 - h0, name, c1 - c0, fake[name] - fake_plain[name]))
        for dh, name, dc, df in sorted(rows, reverse=True)[:args.top]:
            print(f"| {name} | {dc:+.0f} | {dh:+.0f} | {df:+d} |")
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
