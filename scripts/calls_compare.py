"""Calls of some aten ops in the profiled H200 steps against the kernel table.

For each configuration of the given ``profile_summary.csv`` files whose ``profile_ops.csv``
(beside it) holds calls of ``--ops`` (names, or prefixes ending in ``*``), the model is
recorded as ``snsim predict`` records it (:func:`snsim.torchsim.predict.cached_recording`, at
the size it was profiled: ``gpu_busy_compare.sized_model``) and each recorded call of the
steady step is timed from the table (:func:`snsim.torchsim.opcost._table_time`). ``--by
shape``: per call, the profile's kernels of the first argument's shape against the recorded
calls of that shape; ``--by config``: the kernels of all such calls of a step summed. One line
each, the median and max |err|, and with ``--csv`` one row each.

    PYTHONPATH=. python scripts/calls_compare.py traces/h200/*/profile_summary.csv \\
        --cache /tmp/records --ops roll --csv docs/data/roll_calls_h200.csv
    PYTHONPATH=. python scripts/calls_compare.py traces/h200/*/profile_summary.csv \\
        --cache /tmp/records --ops '_foreach_*,_fused_*' --by config \\
        --csv docs/data/optimizer_kernels_h200.csv
"""
from __future__ import annotations

import argparse
import ast
import collections
import csv
import re
import statistics
import sys
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summaries", nargs="+", help="profile_summary.csv files")
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--ops", default="roll", help="comma-separated op names; NAME* a prefix")
    ap.add_argument("--by", choices=("shape", "config"), default="shape")
    ap.add_argument("--csv", default=None)
    args = ap.parse_args(argv)
    names = [n for n in args.ops.split(",") if n]

    def wanted(op):
        return any(op.startswith(n[:-1]) if n.endswith("*") else op == n for n in names)

    def key_of(shape):
        return shape if args.by == "shape" else ()

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_busy_compare import sized_model

    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.opcost import _table_time
    from snsim.torchsim.predict import cached_recording
    from snsim.trace import open_text, text_path

    table = load_kernel_table("h200")
    rows = []
    for summary in args.summaries:
        ops_csv = text_path(Path(summary).with_name(
            Path(summary).name.replace("profile_summary", "profile_ops")))
        if not ops_csv.exists():
            continue
        measured = collections.defaultdict(list)    # (config, shape) -> seconds per call
        with open_text(ops_csv, newline="") as f:
            for r in csv.DictReader(f):
                if wanted(r["op"]):
                    shapes = ast.literal_eval(r["shapes"])
                    shape = key_of(tuple(shapes[0]) if shapes and isinstance(shapes[0], list)
                                   else ())
                    per = float(r["gpu_s_per_step"]) / (
                        float(r["calls_per_step"]) if args.by == "shape" else 1.0)
                    measured[(r["config"], shape)].append(per)
        configs = {c for c, _ in measured}
        with open(summary, newline="") as f:
            summ = [r for r in csv.DictReader(f) if r["config"] in configs]
        for row in summ:
            setup = TrainSetup(row["optimizer"], row["impl"],
                               None if row["amp"] in ("", "none") else row["amp"])
            _, (ops, marks, _, _, _) = cached_recording(sized_model(row, summary),
                                                        int(row["batch"]), setup, args.cache)
            last = max(m[3] for m in marks)
            predicted = collections.defaultdict(list)
            for op in ops:
                if op[0] >= 0 and marks[op[0]][3] == last and wanted(op[1]):
                    m = re.search(r"\[([^\]]*)\]", op[6] or "") if args.by == "shape" else None
                    if args.by == "shape" and not m:
                        continue
                    shape = key_of(tuple(int(v) for v in m.group(1).split(",")) if m else ())
                    predicted[shape].append(_table_time(table, op)[0])
            for (config, shape), ts in sorted(measured.items()):
                if config != row["config"] or shape not in predicted:
                    continue
                if args.by == "shape":
                    meas, pred = statistics.mean(ts), statistics.mean(predicted[shape])
                else:       # a step's calls summed
                    meas, pred = sum(ts), sum(predicted[shape])
                rows.append({"config": config, "shape": list(shape),
                             "meas_us": round(meas * 1e6, 2), "pred_us": round(pred * 1e6, 2),
                             "err_pct": round(100 * (pred / meas - 1), 2)})
                print(f"{config[:34]:<34} {str(list(shape)):<24} measured {meas * 1e6:7.1f} us "
                      f"predicted {pred * 1e6:7.1f} us {100 * (pred / meas - 1):+7.1f} %",
                      flush=True)
    if not rows:
        print(f"no calls of {args.ops} in these profiles", file=sys.stderr)
        return 1
    err = [abs(r["err_pct"]) for r in rows]
    print(f"n={len(rows)} median |err| {statistics.median(err):.1f} % max {max(err):.1f} %")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
