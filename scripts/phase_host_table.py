"""The host time of each phase of a step (forward F, backward B, optimizer step U), as
``snsim predict`` models it, beside the launching thread's wall time measured without the
profiler (``wall_*_s`` of ``scripts/profile_ops.py``'s ``profile_summary.csv``) and the time
inside the profiled top-level aten ops (``host_s_per_step`` of ``profile_ops.csv``, less the
profiler's own cost per event), for every configuration of the given profile folders.

    PYTHONPATH=. python scripts/phase_host_table.py traces/h200/profile* --gpu h200 \\
        --cache /tmp/rec --csv docs/data/phase_host_h200.csv

A configuration whose model cannot be recorded here is reported on stderr and left out.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from op_breakdown import host_by_phase_s, modelled, profiled_host

from snsim.trace import text_path

PHASES = "FBU"


def n_params(marks):
    """Parameter tensors updated in the last recorded iteration."""
    from snsim.torchsim.opcost import parameters_per_iteration
    return parameters_per_iteration(marks)[max(m[3] for m in marks)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", help="profile folders (profile_summary.csv inside)")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--csv", required=True, help="output CSV")
    args = ap.parse_args(argv)

    from snsim.kernel_table import load_host_costs
    from snsim.torchsim.amp import TrainSetup

    # the optimizer phase's per-parameter host cost the model charged (a refit of it from
    # these walls, scripts/host_innet_fit.py --phase-walls, adds to it)
    per_param_s = load_host_costs(args.gpu).get("innet", {}).get("per_param_s", 0.0)
    rows = []
    for folder in sorted(args.folders):
        spath = Path(folder) / "profile_summary.csv"
        if not spath.exists() or not text_path(Path(folder) / "profile_ops.csv").exists():
            continue
        with open(spath, newline="") as f:
            configs = [r for r in csv.DictReader(f) if r.get("wall_U_s")]
        for r in configs:
            amp = r["amp"] if r["amp"] not in ("", "none") else None
            setup = TrainSetup(r["optimizer"], r["impl"], amp)
            try:
                mod = modelled(r["model"], int(r["batch"]), setup, args.gpu, args.cache)
            except Exception as e:      # noqa: BLE001 -- one model's failure, the rest go on
                print(f"{folder}: {r['config']}: not modelled: {type(e).__name__}: {e}",
                      file=sys.stderr)
                continue
            model_s = host_by_phase_s(mod["ops"], mod["marks"], mod["host"])
            summary, inside, _ = profiled_host(Path(folder) / "profile_ops.csv", r["config"])
            row = {"folder": folder, "config": r["config"], "model": r["model"],
                   "batch": r["batch"], "optimizer": r["optimizer"], "impl": r["impl"],
                   "amp": r["amp"] or "none", "step_s": summary["step_s"],
                   "gpu_busy_s": summary["gpu_busy_s"], "torch": summary.get("torch", ""),
                   "param_tensors": n_params(mod["marks"]),
                   "per_param_us": round(per_param_s * 1e6, 4)}
            for ph in PHASES:
                row[f"{ph}_modelled_ms"] = round(model_s[ph] * 1e3, 3)
                row[f"{ph}_wall_ms"] = round(float(summary[f"wall_{ph}_s"]) * 1e3, 3)
                row[f"{ph}_aten_ms"] = round(sum(v for k, v in inside.items()
                                                 if k[0] == ph) * 1e3, 3)
            rows.append(row)
            print(f"{r['config']:<44} U {row['U_modelled_ms']:7.3f} / {row['U_wall_ms']:7.3f}"
                  f" ms   F+B {row['F_modelled_ms'] + row['B_modelled_ms']:8.3f} / "
                  f"{row['F_wall_ms'] + row['B_wall_ms']:8.3f} ms", flush=True)
    if not rows:
        print("no profile folder with phase walls among the arguments", file=sys.stderr)
        return 1
    with open(args.csv, "w", newline="") as f:
        f.write(f"# scripts/phase_host_table.py {' '.join(sorted(args.folders))} --gpu "
                f"{args.gpu}: modelled host ms per phase beside the launching thread's wall "
                f"(no profiler) and the time inside profiled aten ops (profiler cost taken off); "
                f"torch is the profiled run's version\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
