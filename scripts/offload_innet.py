"""The SuperNeurons offloader's host cost in real networks against the chain probe's: the
in-network ratio ``configs/kernels/<preset>_offload_innet.csv`` (read by
:func:`snsim.kernel_table.load_host_costs`, which scales ``offload_copy_s`` and
``offloader_saved_s`` of that phase by it).

Input: ``scripts/plan_gpu_busy.py --set offload_innet --no-profile`` on the GPU (calibration
networks, each plain and under ``offload``; the launching thread's wall per phase with the GPU
synchronised before each step only) and the gauge of that process (``snsim gauge``, in us).
For each network and phase: the measured extra wall of ``offload`` over ``plain``, taken to the
kernel table's pace (times the table's ``add`` issue cost over the gauge), against the extra
host seconds the model charges the same plan (``scripts/plan_time_split.py``'s host of the
ops and of the plan's mechanisms, ``offload`` less ``plain``). The ratio is the sum of the
measured over the sum of the modelled (times the ratio the model already applies, so a rerun
gives the same file), backward only: the forward's wall also holds the host's
waits for the copies it retires (a copy-bound forward's), so it does not measure the host.

    PYTHONPATH=. python scripts/offload_innet.py traces/h200/offload_innet \\
        [--write configs/kernels/h200_offload_innet.csv]
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--write", default="")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "scripts"))
    from plan_time_split import split

    from snsim.kernel_table import load_host_costs, load_kernel_table
    folder = Path(args.folder)
    gauge_us = float(re.search(r"gauge_add_us\s+([0-9.]+)",
                               (folder / "gauge.txt").read_text()).group(1))
    pace = load_kernel_table("h200").aten_host["add"] * 1e6 / gauge_us
    rows = list(csv.DictReader(open(folder / "plan_gpu_busy_offload_innet.csv", newline="")))
    walls = {(r["model"], int(r["batch"]), r["policy"]): r for r in rows}
    meas_sum = mod_sum = 0.0
    print(f"gauge {gauge_us:.2f} us, table pace factor {pace:.3f}")
    for (model, batch, policy), r in sorted(walls.items()):
        if policy != "offload" or (model, batch, "plain") not in walls:
            continue
        p = walls[(model, batch, "plain")]
        measured = (float(r["host_B_s"]) - float(p["host_B_s"])) * pace
        host = {}
        for pol in ("plain", "offload"):
            out, _, _ = split(model, batch, pol, [], r["optimizer"], "foreach", r["amp"])
            host[pol] = out["B"]["host_ops"] + out["B"]["host_plan"]
        modelled = host["offload"] - host["plain"]
        meas_sum, mod_sum = meas_sum + measured, mod_sum + modelled
        print(f"{model} b{batch}: backward extra host measured {measured * 1e3:6.2f} ms "
              f"(table pace), modelled {modelled * 1e3:6.2f} ms, ratio "
              f"{measured / modelled:.2f}")
    # the model already charges the ratio in force (load_host_costs): the new one is relative
    # to the chain's costs, which nearly all of the modelled extra is
    before = load_host_costs("h200").get("offload_innet", {}).get("B", 1.0)
    ratio = before * meas_sum / mod_sum
    print(f"B ratio {ratio:.3f} (sum measured {meas_sum * 1e3:.2f} ms over modelled "
          f"{mod_sum * 1e3:.2f} ms, times the ratio in force {before:.3f})")
    if args.write:
        with open(args.write, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["phase", "ratio", "n", "source"])
            w.writerow(["B", f"{ratio:.3f}", sum(1 for k in walls if k[2] == "offload"),
                        f"scripts/offload_innet.py {args.folder}: offload less plain "
                        "backward walls over the modelled extra host, summed"])
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
