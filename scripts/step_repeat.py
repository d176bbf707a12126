"""How much a measured step time moves between processes on one machine.

Each configuration is measured ``--repeat`` times, each time in a fresh process (as the plan
suite runs plans), in turn (A B C A B C ...): ``snsim.torchsim.execute.measure``'s median of
``--iters`` steps after warm-up, no hooks. The GPU's SM clock, power and throttle reasons are
logged every 0.5 s meanwhile (``gpu_clocks.csv``), the machine in ``machine.txt``. A measured
step that moves more between processes than a prediction's error bound is a noise floor the
step-time gates cannot go below; this script says how large it is.

    # on the GPU (about 12 s per run):
    OUT=dir PYTHONPATH=. python3 scripts/step_repeat.py --out "$OUT" --repeat 3 \\
        torchvision:regnet_y_32gf:24:adamw:bf16 hf:HuggingFaceTB/SmolLM2-135M@512:8:adamw:bf16
    # one run on the CPU (no CUDA: a dry run of the code):
    PYTHONPATH=. python scripts/step_repeat.py --out /tmp/rep --device cpu --repeat 1 \\
        torchvision:resnet18:2:sgd-momentum:none

A configuration is ``MODEL[@SHAPE]:BATCH:OPTIMIZER:AMP`` (``@512`` a token model's sequence
length, ``@3x160x160`` an image size; amp none|bf16|fp16); the plan is plain.
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

FIELDS = ["round", "config", "start_utc", "step_time_s", "step_times_s", "wall_s", "error"]


def parse_config(text):
    """``(model, input_shape or None, batch, optimizer, amp)`` of ``MODEL[@SHAPE]:B:OPT:AMP``."""
    parts = text.rsplit(":", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        raise SystemExit(f"step_repeat: configuration {text!r}: needs MODEL[@SHAPE]:BATCH:"
                         "OPTIMIZER:AMP")
    model, batch, opt, amp = parts
    shape = None
    if "@" in model:
        model, size = model.split("@", 1)
        shape = tuple(int(s) for s in size.split("x"))
    return model, shape, int(batch), opt, amp


def measure_one(text, iters, device):
    """One configuration's measurement in this process: the JSON line the parent reads."""
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import measure
    model, shape, batch, opt, amp = parse_config(text)
    setup = TrainSetup.parse(opt, "foreach", None if amp == "none" else amp)
    m = measure(model, batch, "plain", optimizer=setup, input_shape=shape,
                iters=iters, device=device)
    print(json.dumps({"step_time_s": m["step_time_s"],
                      "step_times_s": m.get("step_times_s", [])}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        measure_one(args.configs[0], args.iters, args.device)
        return 0
    for c in args.configs:
        parse_config(c)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    monitor = None
    if args.device == "cuda":
        with open(out / "machine.txt", "w") as f:
            for cmd in (["lscpu"], ["nvidia-smi", "-q", "-d", "PERFORMANCE,CLOCK,POWER"]):
                f.write(subprocess.run(cmd, capture_output=True, text=True).stdout)
        monitor = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,"
             "temperature.gpu,clocks_throttle_reasons.active", "--format=csv", "-lms", "500"],
            stdout=open(out / "gpu_clocks.csv", "w"), stderr=subprocess.STDOUT)
    try:
        with open(out / "step_repeat.csv", "w", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            w.writeheader()
            for r in range(1, args.repeat + 1):
                for c in args.configs:
                    start = time.strftime("%H:%M:%S", time.gmtime())
                    t0 = time.perf_counter()
                    p = subprocess.run([sys.executable, __file__, "--one", c, "--out", args.out,
                                        "--iters", str(args.iters), "--device", args.device],
                                       capture_output=True, text=True)
                    row = {"round": r, "config": c, "start_utc": start,
                           "wall_s": round(time.perf_counter() - t0, 2)}
                    try:
                        m = json.loads(p.stdout.strip().splitlines()[-1])
                        row.update(step_time_s=f"{m['step_time_s']:.6f}",
                                   step_times_s=" ".join(f"{t:.6f}" for t in m["step_times_s"]))
                    except (IndexError, ValueError, KeyError):
                        row["error"] = (p.stderr.strip().splitlines() or ["no output"])[-1]
                    w.writerow(row)
                    f.flush()
                    print(row, flush=True)
    finally:
        if monitor:
            monitor.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
