"""The engine's module-boundary plans on fresh plain captures against the same plans executed.

Reads a folder written by ``scripts/plans_on_fresh_captures.sh`` on the GPU (default the
committed one, traces/h200/plans_on_fresh_captures/): each plain capture's program under
``superneurons``, ``offload`` and ``recompute`` against the executed run of that plan, with
``snsim predict --policy``'s error beside it. No torch needed.

    PYTHONPATH=. python scripts/engine_on_fresh_captures.py [FOLDER]
"""
import argparse
import os

from snsim.torchsim.validate import FRESH_CAPTURES, fresh_capture_rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=os.path.join("traces", "h200", FRESH_CAPTURES))
    args = ap.parse_args(argv)
    df = fresh_capture_rows(args.folder)
    cols = ["run", "err_allocated_pct", "err_reserved_pct", "err_step_time_pct",
            "predict_err_allocated_pct", "predict_err_reserved_pct",
            "predict_err_step_time_pct"]
    print(df[cols].to_string(index=False))
    for q in ("allocated", "reserved", "step_time"):
        a, b = df[f"err_{q}_pct"].abs(), df[f"predict_err_{q}_pct"].abs()
        print(f"{q}: engine on the capture mean |err| {a.mean():.2f}% (max {a.max():.2f}%), "
              f"snsim predict {b.mean():.2f}% (max {b.max():.2f}%) over {len(a)} runs")


if __name__ == "__main__":
    main()
