"""Predicted (``snsim predict``, CPU only) against measured step time for every plain capture.

For each capture without a plan in the given folders, the model is recorded once under
FakeTensorMode and its op times are modelled three ways: the kernel table with the host as a
second resource (what ``snsim predict`` does when the preset has a table), the table without
the host (GPU time only) and the roofline (no table). Prints a markdown table and the
median / max |err| of each, split into captures the table's host calibration used a network of
(``in_table``: the table's ``host_models`` header) and those it did not, and GPU- vs CPU-bound
folders.

    PYTHONPATH=. python scripts/compare_step_time.py traces/h200 traces/h200/cpu_bound \\
        --table configs/kernels/h200.csv.gz --csv step_time.csv
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path


def _captures(folders):
    for folder in folders:
        for path in sorted(Path(folder).glob("*.json.gz")):
            doc = json.load(gzip.open(path))
            prov = doc.get("provenance", {})
            if prov.get("policy") or not prov.get("model"):
                continue
            yield path, prov, doc["measured"]["step_time_s"]


def _zoo(name, batch, hw, table, meas):
    """The zoo twin's ``--framework pytorch`` step time (sum of its steps), when there is one."""
    from snsim.program_torch import build_torch_program
    from snsim.zoo import NETWORKS, build_network
    if name not in NETWORKS:
        return {}
    G = build_network(name, batch=batch, twin=True)
    out = {}
    for label, tab in (("zoo_table", table), ("zoo_roofline", "none")):
        if tab is None:
            continue
        t = sum(st.time_s for st in build_torch_program(G, hardware=hw,
                                                        kernel_table=tab).steps)
        out[f"{label}_ms"] = t * 1e3
        out[f"{label}_err_pct"] = 100 * (t - meas) / meas
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--table", default=None, help="kernel table (default: the preset's)")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--limit", type=int, default=0, help="only the first N captures")
    args = ap.parse_args(argv)

    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.opcost import op_times_s
    from snsim.torchsim.predict import record_fake

    hw = load_hardware(args.gpu)
    table = load_kernel_table(args.table or args.gpu)
    if table is None:
        print(f"no kernel table for {args.table or args.gpu}: roofline only", file=sys.stderr)
    seen = set((table.meta.get("host_models", "") if table else "").split(","))
    rows = []
    for i, (path, prov, meas) in enumerate(_captures(args.folders)):
        if args.limit and i >= args.limit:
            break
        spec = resolve_model(prov["model"], input_shape=tuple(prov["input_shape"]))
        r = record_fake(spec, prov["batch"], prov.get("optimizer", "sgd-momentum"))
        rec = r["rec"]
        row = {"capture": f"{path.parent.name}/{path.name}", "network": spec.name,
               "batch": prov["batch"], "bound": "cpu" if "cpu_bound" in str(path) else "gpu",
               "in_table": spec.name in seen, "meas_ms": meas * 1e3}
        for label, tab, host in (("table_host", table, True), ("table_gpu", table, False),
                                 ("roofline", None, False)):
            if tab is None and label != "roofline":
                continue
            rep = {}
            op_times_s(rec.ops, hw, rec.marks, table=tab, host=host, report=rep)
            row[f"{label}_ms"] = rep["step_s"] * 1e3
            row[f"{label}_err_pct"] = 100 * (rep["step_s"] - meas) / meas
            if label == "table_host":
                for k in ("table_s", "fitted_s", "proxy_s", "roofline_s", "host_s", "wait_s"):
                    row["src_" + k[:-2] + "_ms"] = rep[k] * 1e3
        row.update(_zoo(spec.name, prov["batch"], hw, table, meas))
        rows.append(row)
        print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in row.items()), file=sys.stderr, flush=True)
    if not rows:
        print("no plain captures found", file=sys.stderr)
        return 1
    cols = list(dict.fromkeys(k for r in rows for k in r))
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(f"{r.get(c, ''):.2f}" if isinstance(r.get(c), float)
                                else str(r.get(c, "")) for c in cols) + " |")
    print()
    for label in ("table_host", "table_gpu", "roofline", "zoo_table", "zoo_roofline"):
        key = f"{label}_err_pct"
        if not any(key in r for r in rows):
            continue
        for name, sel in (("all", rows), ("gpu-bound", [r for r in rows if r["bound"] == "gpu"]),
                          ("cpu-bound", [r for r in rows if r["bound"] == "cpu"]),
                          ("network in table", [r for r in rows if r["in_table"]]),
                          ("network not in table", [r for r in rows if not r["in_table"]])):
            errs = [abs(r[key]) for r in sel if key in r]
            if errs:
                print(f"{label:<11} {name:<21} n={len(errs):<3} median |err| "
                      f"{statistics.median(errs):6.2f}%  max |err| {max(errs):6.2f}%")
    if args.csv:
        import pandas as pd
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
