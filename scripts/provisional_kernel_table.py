"""A PROVISIONAL kernel table derived from captures' per-step times (not from ``snsim calibrate``).

Only to exercise the interpolation code before a calibrate run exists: every captured step whose
only kernel-launching op is one op gives a row (that op's family, FLOPs, bytes; the step's
measured time, which includes a CUDA event's cost at the step boundary). No shape classes, no
host costs. The header says ``kind=provisional-from-captures``; never commit it as a preset's
table.

    PYTHONPATH=. python scripts/provisional_kernel_table.py traces/h200/resnet50_b*.json.gz \\
        --out /tmp/provisional.csv.gz
"""
import argparse
import gzip
import json
import sys

from snsim.torchsim.calibrate import write_table
from snsim.torchsim.opcost import NO_KERNEL_OPS


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("captures", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    rows = []
    for path in args.captures:
        prog = json.load(gzip.open(path))["program"]
        by_step = {}
        for step, name, flops, nbytes in prog["ops"]:
            if name not in NO_KERNEL_OPS:
                by_step.setdefault(step, []).append((name, flops, nbytes))
        times = {s[0]: s[4] for s in prog["steps"]}
        for step, ops in by_step.items():
            if len(ops) == 1 and times.get(step, 0) > 0:
                name, flops, nbytes = ops[0]
                mth = {"convolution": "tf32", "convolution_backward": "tf32", "mm": "fp32",
                       "addmm": "fp32"}.get(name, "float32")
                rows.append({"family": name, "dtype": "float32", "math": mth, "cls": "",
                             "flops": flops, "bytes": nbytes, "ntensors": 0,
                             "time_s": times[step], "host_s": 0.0, "shape": path.split("/")[-1]})
    write_table(rows, {"kind": "provisional-from-captures", "captures": " ".join(
        p.split("/")[-1] for p in args.captures)}, args.out)
    print(f"{args.out}: {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
