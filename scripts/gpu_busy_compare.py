"""Modelled GPU time of a step (the kernel table, no host) against the GPU busy time a profiled
real step measured (``scripts/profile_ops.py``'s ``profile_summary.csv``: ``gpu_busy_s``, the
kernels' summed time per step under the profiler): a check of the kernel model alone, free of
the launching thread's lease-to-lease spread (traces/h200/step_repeat: host-bound steps moved
40 % between two processes on one lease, kernel sums a few percent).

    PYTHONPATH=. python scripts/gpu_busy_compare.py traces/h200/profile_heldout7/profile_summary.csv \\
        traces/h200/profile/profile_summary.csv --cache /tmp/records --csv out.csv

Prints one line per configuration and the median / max |err|; ``--match`` keeps configurations
whose name contains one of its comma-separated parts. A token model is recorded at the
sequence length it was profiled at (:func:`sized_model`).
"""
from __future__ import annotations

import argparse
import csv
import functools
import json
import statistics
import sys
from pathlib import Path

from snsim.trace import open_text, text_path


def sized_model(row, summary_path):
    """The model spec of a ``profile_summary.csv`` row at the size it was profiled: a token
    model's summaries name it without its sequence length (``hf:EleutherAI/pythia-410m``, run
    at 1,024 where ``snsim predict`` takes 512), which its ``embedding`` call's token ids in
    the ``profile_ops.csv`` beside it tell (``model@seq``); the row's model otherwise."""
    model = row["model"]
    ops = text_path(Path(summary_path).with_name(
        Path(summary_path).name.replace("summary", "ops")))
    if "@" in model or not ops.exists():
        return model
    seq = _token_lengths(str(ops)).get(row["config"])
    return f"{model}@{seq}" if seq else model


@functools.lru_cache(maxsize=None)
def _token_lengths(ops_path):
    """``{config: sequence length}`` of a ``profile_ops.csv``'s configurations with a
    forward ``embedding`` call of ``[batch, seq]`` token ids (its first), read once."""
    out = {}
    with open_text(ops_path, newline="") as f:
        for r in csv.DictReader(f):
            if r["family"] == "embedding" and r.get("phase", "F") == "F" \
                    and r["config"] not in out:
                ids = json.loads(r["shapes"])[1]
                out[r["config"]] = ids[-1] if len(ids) == 2 else None
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summaries", nargs="+", help="profile_summary.csv files")
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--match", default=None)
    ap.add_argument("--gpu", default="h200")
    args = ap.parse_args(argv)

    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.opcost import op_times_s
    from snsim.torchsim.predict import cached_recording

    hw = load_hardware(args.gpu)
    table = load_kernel_table(args.gpu)
    rows = []
    for path in args.summaries:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if args.match and not any(m in r["config"] for m in args.match.split(",")):
                    continue
                setup = TrainSetup(r["optimizer"], r["impl"],
                                   None if r["amp"] in ("", "none") else r["amp"])
                try:
                    name, (ops, marks, host_sids, _, _) = cached_recording(
                        sized_model(r, path), int(r["batch"]), setup, args.cache)
                except Exception as e:   # one configuration that cannot be recorded: a line
                    print(f"{r['config']}: {type(e).__name__}: {e}", file=sys.stderr)
                    continue
                rep = {}
                op_times_s(ops, hw, marks, table=table, host=False, report=rep,
                           host_sids=host_sids)
                meas = float(r["gpu_busy_s"])
                err = 100 * (rep["gpu_s"] - meas) / meas
                rows.append({"config": r["config"], "summary": path,
                             "meas_gpu_busy_ms": round(meas * 1e3, 3),
                             "pred_gpu_ms": round(rep["gpu_s"] * 1e3, 3),
                             "err_pct": round(err, 2)})
                print(f"{r['config']:<42} busy {meas * 1e3:8.2f} ms  pred "
                      f"{rep['gpu_s'] * 1e3:8.2f} ms  {err:+7.2f} %", flush=True)
    if not rows:
        return 1
    errs = [abs(r["err_pct"]) for r in rows]
    print(f"n={len(rows)} median |err| {statistics.median(errs):.2f} % max {max(errs):.2f} %")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
