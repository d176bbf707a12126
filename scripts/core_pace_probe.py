"""Does the launching thread's pace depend on the CPU core it runs on? (issue 10)

The same host-bound configuration stepped in 59, 102 and 121 ms in three processes on the H200
(DenseNet-161 b24 fp16: traces/h200/gc_probe, plan_host/plan_gpu_busy_batch10.csv, held-out
set 9), and a small ``torch.add`` issued in a tight loop took 6.3-10.0 us from one process to
the next. A CPU far from the GPU (another socket or NUMA node) pays more per kernel launch.
This prints the machine's NUMA layout and the GPU's CPU affinity, then, in one fresh process
per core (``os.sched_setaffinity``, the process and its threads on that core alone), the
gauge (microseconds per small ``torch.add``) and, with ``--step MODEL:BATCH:AMP``, the median
step of that configuration as ``snsim.torchsim.execute.measure`` times it.

    # on the GPU (about 2 minutes):
    PYTHONPATH=$PWD python3 scripts/core_pace_probe.py --out $OUT --step torchvision:densenet161:24:fp16
    # a dry run on the CPU:
    PYTHONPATH=. python scripts/core_pace_probe.py --out /tmp/cpp --device cpu --cores 0,1

Writes ``$OUT/core_pace.csv`` (core, gauge_add_us, step_s) and ``$OUT/topology.txt``.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys


def one(core, device, step):
    """In this process: pinned to ``core``, the gauge and the optional step."""
    os.sched_setaffinity(0, {core})
    import torch
    torch.set_num_threads(1)
    from snsim.torchsim.hostpace import gauge_add_s
    out = {"core": core, "gauge_add_us": gauge_add_s(device) * 1e6}
    if step:
        from snsim.torchsim.amp import TrainSetup
        from snsim.torchsim.execute import measure
        model, batch, amp = step.rsplit(":", 2)
        setup = TrainSetup.parse("sgd-momentum", "foreach", None if amp == "none" else amp)
        m = measure(model, int(batch), "plain", optimizer=setup, iters=7, device=device)
        out["step_s"] = m["step_time_s"]
        out["gauge_after_us"] = gauge_add_s(device) * 1e6
    return out


def topology():
    """The machine's NUMA layout and the GPU's CPU affinity, as text."""
    parts = []
    for cmd in (["lscpu"], ["nvidia-smi", "topo", "-m"], ["numactl", "--hardware"]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            parts.append(f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}")
        except (OSError, subprocess.TimeoutExpired) as e:
            parts.append(f"$ {' '.join(cmd)}\n{type(e).__name__}: {e}\n")
    return "\n".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--cores", default=None, help="comma-separated cores (default: all)")
    ap.add_argument("--step", default=None, help="MODEL:BATCH:AMP to step on each core")
    ap.add_argument("--step-cores", default=None,
                    help="cores to step on (default: every core of --cores)")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.one, args.device, args.step)))
        return 0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "topology.txt"), "w") as f:
        f.write(topology())
    cores = ([int(c) for c in args.cores.split(",")] if args.cores
             else sorted(os.sched_getaffinity(0)))
    step_cores = set(int(c) for c in args.step_cores.split(",")) if args.step_cores else set(cores)
    rows = []
    for core in cores:
        cmd = [sys.executable, __file__, "--out", args.out, "--one", str(core),
               "--device", args.device]
        if args.step and core in step_cores:
            cmd += ["--step", args.step]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if p.returncode or not lines:
            print(f"core {core}: failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}",
                  flush=True)
            continue
        r = json.loads(lines[-1])
        rows.append(r)
        print(f"core {core}: add {r['gauge_add_us']:.2f} us"
              + (f", step {r['step_s'] * 1e3:.1f} ms, add after {r['gauge_after_us']:.2f} us"
                 if "step_s" in r else ""), flush=True)
        with open(os.path.join(args.out, "core_pace.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["core", "gauge_add_us", "step_s",
                                              "gauge_after_us"])
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
