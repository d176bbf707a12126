"""Compare the engine's zero_offload simulation with the executed runs of scripts/device_zero.sh.

Usage (repo root):
    PYTHONPATH=. python3 scripts/compare_zero.py traces/h200/zero/zero_runs.json [--traces DIR]

For every run in ``zero_runs.json`` (``snsim execute --policy zero_offload`` or
``superneurons+zero_offload``), the plain capture of the same model, batch and optimizer
(``DIR/<name>_b<batch>[_<optimizer>].json.gz``, ``<name>_b<batch>_s<seq>...`` for hf models) is
simulated under the same policy with the PyTorch allocator on the h200 preset, twice: with the
preset's ``host_mem_bytes_per_s``, and with the one the device run measured (its CPU optimizer
throughput times the bytes per parameter of :data:`HOST_UPDATE_BYTES_PER_PARAM`). Prints
predicted vs measured peak allocated (target 3%) and step time (target 15%).
"""
import argparse
import dataclasses
import json
import os
import sys

from snsim.engine.core import run_plan
from snsim.hardware import load_hardware
from snsim.policies import get_policy
from snsim.policies.zero_offload import HOST_UPDATE_BYTES_PER_PARAM
from snsim.trace import read_trace


def capture_path(run, root):
    prov = run["provenance"]
    model, batch, opt = prov["model"], prov["batch"], prov["optimizer"]
    name = model.split(":", 1)[1].split("/")[-1]
    seq = ""
    if model.startswith("hf:"):
        seq = f"_s{prov['input_shape'][0]}"
    suffix = "" if opt == "sgd-momentum" else f"_{opt}"
    return os.path.join(root, f"{name}_b{batch}{seq}{suffix}.json.gz")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--traces", default="traces/h200")
    a = ap.parse_args(argv)
    with open(a.runs) as f:
        doc = json.load(f)
    hw = load_hardware("h200")
    host = doc.get("host", {})
    rows = []
    for run in doc["runs"]:
        path = capture_path(run, a.traces)
        if not os.path.exists(path):
            print(f"{run['file']}: no plain capture {path}; skipped")
            continue
        program = read_trace(path)
        measured_rate = host.get(f"cpu_{program.optimizer}_params_per_s")
        for label, h in (("preset", hw), ("measured host", None)):
            if h is None:
                if not measured_rate:
                    continue
                h = dataclasses.replace(hw, host_mem_bytes_per_s=measured_rate *
                                        HOST_UPDATE_BYTES_PER_PARAM[program.optimizer])
            plan = get_policy(run["policy"]).plan(program, h, h.budget_bytes)
            r = run_plan(program, plan, h, allocator="pytorch")
            m_alloc, m_step = run["peak_allocated_bytes"], run["step_time_s"]
            rows.append({
                "run": run["file"], "host figure": label,
                "alloc_pred_GiB": round(r.peak_allocated_bytes / 2**30, 3),
                "alloc_meas_GiB": round(m_alloc / 2**30, 3),
                "alloc_err_pct": round(100 * (r.peak_allocated_bytes - m_alloc) / m_alloc, 2),
                "step_pred_ms": round(1e3 * r.step_time_s, 1),
                "step_meas_ms": round(1e3 * m_step, 1),
                "step_err_pct": round(100 * (r.step_time_s - m_step) / m_step, 2),
                "cpu_pred_ms": round(1e3 * plan.notes["cpu_step_s"], 1),
                "cpu_meas_ms": round(1e3 * run["cpu_step_s"], 1),
                "h2d_pred_MB": round(r.h2d_bytes / 1e6, 1),
                "h2d_meas_MB": round(run["h2d_bytes"] / 1e6, 1)})
    if not rows:
        print("no run had a plain capture")
        return 1
    import pandas as pd
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
