"""Re-price the executed plan runs' step times from cached recordings (CPU only).

``scripts/repredict_plans.py`` predicts each run from scratch (a fake run per plan, seconds to
tens of seconds each). The step time depends on the recording only through its ops, marks and
plan events, so this script records every run of the ``--folder`` list once into ``--cache``
(a pickle per run: the shadow plan's fake run, what ``snsim predict --policy`` records) and
prices each recording with the current kernel table and host costs
(:func:`snsim.torchsim.opcost.op_times_s`, the step of the last recorded iteration): changing
a host cost re-prices 300 runs in minutes instead of re-recording them in an hour. Writes one
CSV row per run (folder, run, policy, measured and re-priced step, error) and prints the
signed mean and the mean / median |error| per policy.

    PYTHONPATH=. python scripts/reprice_plans.py --cache /tmp/plan_recordings \\
        --folder plans_standard_fresh,plans_heldout,plans_heldout2_rerun,... \\
        --policies checkpoint,superneurons --csv /tmp/repriced.csv

The re-priced step is the host/GPU schedule's (``report["step_s"]``); ``snsim predict``'s
``step_time_s`` replays the same per-op times through the engine, which adds nothing to a
step's time, so the two agree (sets 11-15's 19 checkpoint and superneurons runs: the same
errors to 0.01 % as ``scripts/repredict_plans.py``'s).
"""
from __future__ import annotations

import argparse
import csv
import os
import pickle
import statistics
import sys
import time


def record(run, folder, path):
    """Record ``run`` under its plan's shadow transform and pickle what pricing needs."""
    from repredict_plans import run_torch
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.plans import as_plan, make_transform, pack_blocks_of
    from snsim.torchsim.predict import record_fake
    p = run["prediction"]
    setup = TrainSetup.parse(p.get("optimizer", "sgd-momentum"),
                             p.get("optimizer_impl") or "foreach", p.get("amp"))
    plan = as_plan(run["policy"], dict(o.split("=", 1) for o in run["options"]))
    spec = resolve_model(run["model"], input_shape=tuple(run["input_shape"]))
    rec = record_fake(spec, int(run["batch"]), setup,
                      transform=make_transform(plan, shadow=True,
                                               save_on_cpu_blocks=pack_blocks_of(run_torch(run))),
                      gpu="h200")["rec"]
    doc = {"folder": folder, "name": run["name"], "policy": run["policy"],
           "meas_step_s": run["measured"]["step_time_s"], "ops": rec.ops, "marks": rec.marks,
           "excluded": rec.excluded, "host_events": rec.host_events,
           "accumulations": rec.accumulation_ops}
    with open(path + ".tmp", "wb") as f:
        pickle.dump(doc, f)
    os.replace(path + ".tmp", path)
    return doc


def price(doc, hw, table, costs=None):
    """The step seconds of a recording's last iteration with today's costs (or ``costs``)."""
    from snsim.torchsim.opcost import op_times_s
    rep = {}
    op_times_s(doc["ops"], hw, doc["marks"], table=table, report=rep, host_costs=costs,
               host_sids=doc["excluded"], host_events=doc["host_events"],
               accumulations=doc["accumulations"])
    return rep["step_s"]


def chain_costs(costs):
    """``costs`` with the plan costs of the synthetic chains, the in-network ratios
    (``checkpoint_innet``, ``offload_innet``) divided out."""
    from snsim.kernel_table import INNET_RATIOS, scale_plan_costs
    out = dict(costs)
    for name, keys in INNET_RATIOS.items():
        ratio = out.pop(name, {})
        out.update(scale_plan_costs(out, {ph: 1.0 / r for ph, r in ratio.items()}, keys))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="traces/h200")
    ap.add_argument("--folder", required=True, help="plan-suite folders, comma-separated")
    ap.add_argument("--policies", default="plain,checkpoint,cpu_offload,superneurons")
    ap.add_argument("--cache", required=True, help="folder for the recordings (pickles)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--chain", action="store_true",
                    help="also price with the chain-fitted checkpoint costs (no in-network "
                         "ratio): the chain_step_s and chain_err_pct columns")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_host_costs, load_kernel_table
    from snsim.torchsim.validate import plan_runs
    hw, table = load_hardware("h200"), load_kernel_table("h200")
    chain = chain_costs(load_host_costs("h200")) if args.chain else None
    policies = args.policies.split(",")
    os.makedirs(args.cache, exist_ok=True)
    rows = []
    for folder in args.folder.split(","):
        for run in plan_runs(args.root, folder):
            if run["policy"] not in policies or run["prediction"] is None:
                continue
            path = os.path.join(args.cache, f"{folder}__{run['name']}.pkl")
            t0 = time.perf_counter()
            if os.path.exists(path):
                with open(path, "rb") as f:
                    doc = pickle.load(f)
            else:
                doc = record(run, folder, path)
            step = price(doc, hw, table)
            err = 100 * (step / doc["meas_step_s"] - 1)
            row = {"folder": folder, "run": run["name"], "policy": run["policy"],
                   "meas_step_s": f"{doc['meas_step_s']:.6g}",
                   "repriced_step_s": f"{step:.6g}", "err_pct": f"{err:.2f}"}
            if chain is not None:
                cstep = price(doc, hw, table, chain)
                row.update(chain_step_s=f"{cstep:.6g}",
                           chain_err_pct=f"{100 * (cstep / doc['meas_step_s'] - 1):.2f}")
            rows.append(row)
            print(f"{folder} {run['name']} {err:+.2f}% ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["run"])
        w.writeheader()
        w.writerows(rows)
    for line in summary(rows, policies):
        print(line)
    return 0


def summary(rows, policies):
    """Per policy and all: signed mean, mean / median / max |error| of each error column."""
    out = []
    for col in ("err_pct", "chain_err_pct"):
        for pol in policies + ["all"]:
            e = [float(r[col]) for r in rows
                 if (pol == "all" or r["policy"] == pol) and r.get(col) not in (None, "")]
            if e:
                a = [abs(v) for v in e]
                out.append(f"{col:<14} {pol:<13} n={len(e):<4} mean {statistics.mean(e):+6.2f}%"
                           f"  |err| mean {statistics.mean(a):6.2f}%  median "
                           f"{statistics.median(a):6.2f}%  max {max(a):6.2f}%")
    return out


if __name__ == "__main__":
    sys.exit(main())
