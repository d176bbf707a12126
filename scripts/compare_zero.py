"""Compare the engine's ZeRO simulation with the executed runs of scripts/device_zero.sh.

Usage (repo root):
    PYTHONPATH=. python3 scripts/compare_zero.py [traces/h200/zero/zero_runs.json] [--traces DIR]

Every run (``snsim execute --policy zero_offload`` or ``superneurons+zero_offload``) is
simulated by :func:`snsim.torchsim.zero.zero_rows`: the engine's ``zero_offload`` policy, PyTorch
allocator, h200 preset, on the program of the torch plan the executor ran beneath its hooks
(:func:`snsim.torchsim.zero.run_program_path`). Prints predicted vs measured peak allocated
(target 3%) and step time (target 15%), and the CPU optimizer step.
"""
import argparse
import sys

from snsim.torchsim.zero import ZERO_RUNS, zero_rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="?", default=ZERO_RUNS)
    ap.add_argument("--traces", default="traces/h200")
    a = ap.parse_args(argv)
    df, skipped = zero_rows(a.runs, a.traces)
    for run, why in skipped:
        print(f"{run}: not simulated: {why}")
    if df.empty:
        print("no run had a program to simulate")
        return 1
    out = df.assign(
        alloc_pred_GiB=(df.pred_allocated_bytes / 2**30).round(3),
        alloc_meas_GiB=(df.meas_allocated_bytes / 2**30).round(3),
        alloc_err_pct=df.err_allocated_pct.round(2),
        step_pred_ms=(1e3 * df.pred_step_time_s).round(1),
        step_meas_ms=(1e3 * df.meas_step_time_s).round(1),
        step_err_pct=df.err_step_time_pct.round(2),
        cpu_pred_ms=(1e3 * df.pred_cpu_step_s).round(1),
        cpu_meas_ms=(1e3 * df.meas_cpu_step_s).round(1))
    print(out[["run", "alloc_pred_GiB", "alloc_meas_GiB", "alloc_err_pct", "step_pred_ms",
               "step_meas_ms", "step_err_pct", "cpu_pred_ms", "cpu_meas_ms"]]
          .to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
