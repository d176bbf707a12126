"""The engine's plans against the FakeTensor run of the same plans, on this CPU.

For every run of docs/VALIDATION.md section 3 (an executed ``checkpoint`` / ``cpu_offload`` /
``superneurons`` plan of the suite with a plain capture), the same network, batch, optimizer
and plan twice, both without a GPU: the engine's policy on the *predicted* plain program
(``snsim predict``'s FakeTensor run without a plan), and the FakeTensor run of the plan itself
(the real ``torch.utils.checkpoint`` / ``save_on_cpu`` / SuperNeurons' ``Offloader``, what
``snsim predict --policy`` reports). The second matches the executed runs' peaks (section 1),
so the difference is the engine's own: what section 3's errors owe to the engine rather than
to the captures. One CSV row per run.

    PYTHONPATH=. python scripts/engine_oracle.py --csv docs/data/engine_oracle_cpu.csv
"""
from __future__ import annotations

import argparse
import csv
import sys

FIELDS = ("run", "policy", "options", "engine_allocated_bytes", "engine_reserved_bytes",
          "fake_allocated_bytes", "fake_reserved_bytes", "err_allocated_pct",
          "err_reserved_pct", "torch")


def rows(root="traces/h200"):
    import torch

    from snsim.captured import replay_capture
    from snsim.torchsim.execute import predict_plan
    from snsim.torchsim.predict import predict
    from snsim.torchsim.validate import plain_captures, plan_runs
    from snsim.trace import program_from_dict
    plain = plain_captures(root)
    programs = {}
    for run in plan_runs(root):
        opt = run.get("optimizer") or run["provenance"].get("optimizer") or "sgd-momentum"
        if run["policy"] not in ("checkpoint", "cpu_offload", "superneurons") or \
                (run["model"], int(run["batch"]), opt) not in plain:
            continue
        key = (run["model"], int(run["batch"]), opt)
        if key not in programs:
            programs[key] = program_from_dict(
                predict(run["model"], int(run["batch"]), optimizer=opt)["program"],
                source="plain")
        opts = dict(o.split("=", 1) for o in run["options"])
        try:
            e = replay_capture(programs[key], "h200", policy=run["policy"], policy_options=opts)
        except Exception as exc:   # a plan the engine cannot make (VGG: no block class)
            print(f"{run['name']}: {exc}", file=sys.stderr)
            continue
        f, _ = predict_plan(run["model"], int(run["batch"]), run["policy"],
                            options=run["options"], optimizer=opt)
        yield {"run": run["name"], "policy": run["policy"], "options": ",".join(run["options"]),
               "engine_allocated_bytes": e.peak_allocated_bytes,
               "engine_reserved_bytes": e.peak_reserved_bytes,
               "fake_allocated_bytes": f["peak_allocated_bytes"],
               "fake_reserved_bytes": f["peak_reserved_bytes"],
               "err_allocated_pct": round(100 * (e.peak_allocated_bytes
                                                 / f["peak_allocated_bytes"] - 1), 3),
               "err_reserved_pct": round(100 * (e.peak_reserved_bytes
                                                / f["peak_reserved_bytes"] - 1), 3),
               "torch": torch.__version__}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", required=True, help="where to write the rows")
    ap.add_argument("--root", default="traces/h200")
    a = ap.parse_args(argv)
    with open(a.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        for r in rows(a.root):
            w.writerow(r)
            fh.flush()
            print(f"{r['run']:70s} allocated {r['err_allocated_pct']:+7.2f} %  reserved "
                  f"{r['err_reserved_pct']:+7.2f} %", flush=True)


if __name__ == "__main__":
    main()
