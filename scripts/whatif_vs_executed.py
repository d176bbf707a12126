"""The engine's plans on plain captures against the same plans executed on the H200.

For every executed `checkpoint` / `cpu_offload` run of the plan suite (traces/h200/plans/)
whose network and batch also have a plain capture (traces/h200/ or traces/h200/cpu_bound/),
the plain capture's program runs through the engine under the same policy and options; its
peaks and step time (from the plain capture's measured per-step times) are compared with the
executed run. No torch needed.

    python scripts/whatif_vs_executed.py [--csv out.csv]
"""
import argparse
import glob
import gzip
import json
import os

import pandas as pd

from snsim.captured import replay_capture
from snsim.errors import ConfigError
from snsim.trace import load_trace_doc, read_trace


def plain_captures(root="traces/h200"):
    out = {}
    for f in sorted(glob.glob(f"{root}/*.json.gz") + glob.glob(f"{root}/cpu_bound/*.json.gz")):
        prov = load_trace_doc(f)["provenance"]
        if not prov.get("policy"):
            out[(prov["model"], int(prov["batch"]))] = f
    return out


def rows(root="traces/h200"):
    plain = plain_captures(root)
    out = []
    for bundle in ("checkpoint", "cpu_offload"):
        with gzip.open(os.path.join(root, "plans", f"{bundle}.json.gz"), "rt") as f:
            runs = json.load(f)["runs"]
        for run in runs:
            src = plain.get((run["model"], int(run["batch"])))
            if run["status"] != "ok" or src is None:
                continue
            opts = dict(o.split("=", 1) for o in run["options"])
            try:
                r = replay_capture(read_trace(src), "h200", policy=run["policy"],
                                   policy_options=opts)
            except ConfigError as e:   # e.g. VGG: no block class (the suite wrapped conv runs)
                print(f"{run['name']}: not simulated: {e}")
                continue
            m = run["measured"]
            row = {"run": run["name"], "plain_capture": os.path.relpath(src, root),
                   "policy": run["policy"], "options": ",".join(run["options"])}
            for q, pred, meas in (("allocated", r.peak_allocated_bytes, m["peak_allocated_bytes"]),
                                  ("reserved", r.peak_reserved_bytes, m["peak_reserved_bytes"]),
                                  ("step_time", r.step_time_s, m["step_time_s"])):
                row[f"pred_{q}"], row[f"meas_{q}"] = pred, meas
                row[f"err_{q}_pct"] = round(100 * (pred / meas - 1), 3)
            out.append(row)
    return pd.DataFrame(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv")
    args = ap.parse_args(argv)
    df = rows()
    if args.csv:
        df.to_csv(args.csv, index=False)
    cols = ["run", "err_allocated_pct", "err_reserved_pct", "err_step_time_pct"]
    print(df[cols].to_string(index=False))
    for q in ("allocated", "reserved", "step_time"):
        a = df[f"err_{q}_pct"].abs()
        print(f"{q}: mean |err| {a.mean():.2f}%, max {a.max():.2f}% over {len(a)} runs")


if __name__ == "__main__":
    main()
