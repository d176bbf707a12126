"""The engine's plans on plain captures against the same plans executed on the H200.

For every executed `checkpoint` / `cpu_offload` run of the standard plan suite (its latest
run: traces/h200/plans/ and its re-runs after harness fixes, `validate.latest_runs`) whose
network and batch also have a plain capture (traces/h200/, cpu_bound/ or plain_history/),
the plain capture's program runs through the engine under the same policy and options; its
peaks and step time (from the plain capture's measured per-step times) are compared with the
executed run, and with the first run (plans/). No torch needed.

    python scripts/whatif_vs_executed.py [--csv out.csv]
"""
import argparse

from snsim.torchsim.validate import whatif_rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv")
    args = ap.parse_args(argv)
    df, skipped = whatif_rows()
    for run, why in skipped:
        print(f"{run}: not simulated: {why}")
    if args.csv:
        df.to_csv(args.csv, index=False)
    cols = ["run", "executed", "err_allocated_pct", "err_reserved_pct", "err_step_time_pct",
            "first_err_reserved_pct"]
    print(df[cols].to_string(index=False))
    for q in ("allocated", "reserved", "step_time"):
        a = df[f"err_{q}_pct"].abs()
        print(f"{q}: mean |err| {a.mean():.2f}%, max {a.max():.2f}% over {len(a)} runs")


if __name__ == "__main__":
    main()
