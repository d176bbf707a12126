"""The zoo's ``--amp`` and ``--param-dtype`` (PyTorch semantics) against real runs of
configurations no capture holds: predictions written before the runs, the runs on a GPU, the
comparison after.

    # 1. on any machine (no torch): the zoo's predictions for each preset, before the runs
    PYTHONPATH=. python scripts/zoo_precision_runs.py predict --out traces/h100/zoo_precision
    # 2. on the GPU: each configuration in a fresh process (snsim execute --fast, plain plan)
    OUT=dir bash -c 'PYTHONPATH=. python3 scripts/zoo_precision_runs.py run --out "$OUT"'
    # 3. the comparison (the device's preset: h100 or h200)
    PYTHONPATH=. python scripts/zoo_precision_runs.py compare traces/h100/zoo_precision \\
        --gpu h100 [--now]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: (zoo network, its torch model, batch, sequence or None, optimizer, --amp, --param-dtype):
#: zoo twins at precisions and batches no capture in traces/h200/amp ran
CONFIGS = (
    ("resnet101", "torchvision:resnet101", 64, None, "adamw", "bf16", "fp32"),
    ("resnet34", "torchvision:resnet34", 128, None, "sgd-momentum", "fp16", "fp32"),
    ("vgg19", "torchvision:vgg19", 32, None, "sgd-momentum", "bf16", "fp32"),
    ("densenet169", "torchvision:densenet169", 32, None, "adamw", "bf16", "fp32"),
    ("mobilenet_v2", "torchvision:mobilenet_v2", 96, None, "adamw", "none", "bf16"),
    ("resnet152", "torchvision:resnet152", 32, None, "sgd-momentum", "none", "bf16"),
    ("alexnet", "torchvision:alexnet", 256, None, "sgd-momentum", "bf16", "fp32"),
    ("gpt2", "zoo:gpt2", 8, 512, "adamw", "bf16", "fp32"),
    ("vit-b16", "torchvision:vit_b_16", 32, None, "adamw", "none", "bf16"),
)


def _name(c):
    net, _, batch, seq, opt, amp, pd = c
    tag = f"amp{amp}" if amp != "none" else f"pure{pd}"
    return f"{net}_b{batch}{f'_s{seq}' if seq else ''}_{opt}_{tag}"


def _zoo(c, gpu):
    """The zoo's figures of configuration ``c`` on preset ``gpu``."""
    from snsim.torchsim.report import zoo_figures
    net, _, batch, seq, opt, amp, pd = c
    return zoo_figures(net, gpu, batch=batch, seq=seq, optimizer=opt,
                       amp=None if amp == "none" else amp, param_dtype=pd)


def predict(out):
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    out.mkdir(parents=True, exist_ok=True)
    for gpu in ("h100", "h200"):
        rows = [{"name": _name(c), **_zoo(c, gpu)} for c in CONFIGS]
        path = out / f"zoo_predicted_{gpu}.csv"
        with open(path, "w", newline="") as f:
            f.write(f"# snsim run --framework pytorch --allocator pytorch --policy liveness on "
                    f"preset {gpu}, git {rev}, "
                    f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"
                    f", before any run\n")
            w = csv.DictWriter(f, fieldnames=list(rows[0]))   # name, then the figures
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {path}")


def run(out, deadline_s):
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for c in CONFIGS:
        if time.perf_counter() - t0 > deadline_s:
            print(f"out of time before {_name(c)}", flush=True)
            break
        _, model, batch, seq, opt, amp, pd = c
        cmd = [sys.executable, "-m", "snsim.cli", "execute", "--model", model, "--batch",
               str(batch), "--optimizer", opt, "--amp", amp, "--param-dtype", pd, "--policy",
               "plain", "--fast", "--out", str(out / f"{_name(c)}.json"), "--format", "json"]
        if seq:
            cmd += ["--seq", str(seq)]
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        print(f"{_name(c)}: rc {p.returncode} ({time.perf_counter() - t:.0f} s) "
              f"{p.stderr.strip().splitlines()[-1] if p.returncode else ''}", flush=True)


def _zoo_now(gpu):
    """The zoo's figures for every configuration with this checkout's code (after the runs:
    not a prediction of them)."""
    return {_name(c): _zoo(c, gpu) for c in CONFIGS}


def compare(folder, gpu, now=False):
    from snsim.torchsim.report import ZOO_FIGURES
    with open(folder / f"zoo_predicted_{gpu}.csv", newline="") as f:
        pred = {r["name"]: r for r in csv.DictReader(line for line in f
                                                      if not line.startswith("#"))}
    cur = _zoo_now(gpu) if now else {}
    print("| configuration | alloc err % | reserved err % | step zoo ms | step predict ms | "
          "step meas ms | zoo err % | predict err % |"
          + (" now: alloc err % | reserved err % | step err % |" if now else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|---|" if now else ""))
    for c in CONFIGS:
        path = folder / f"{_name(c)}.json"
        if not path.exists() or _name(c) not in pred:
            continue
        doc = json.loads(path.read_text())
        m, p = doc["measured"], pred[_name(c)]
        snsim = doc["predictions"]["snsim_predict_plan"]

        def err(a, b):
            return 100 * (float(a) / float(b) - 1)
        print(f"| {_name(c)} | {err(p['peak_allocated_bytes'], m['peak_allocated_bytes']):+.2f}"
              f" | {err(p['peak_reserved_bytes'], m['peak_reserved_bytes']):+.2f} | "
              f"{1e3 * float(p['step_time_s']):.1f} | {1e3 * float(snsim['step_time_s']):.1f} | "
              f"{1e3 * m['step_time_s']:.1f} | {err(p['step_time_s'], m['step_time_s']):+.1f} | "
              f"{err(snsim['step_time_s'], m['step_time_s']):+.1f} |"
              + (" ".join(f" {err(cur[_name(c)][k], m[k]):+.2f} |" for k in ZOO_FIGURES)
                 if now else ""))
    runs = sorted(folder.glob("*_b*.json"))
    if not runs:
        sys.exit(f"{folder}: no runs (scripts/zoo_precision_runs.py run writes <name>.json)")
    pv = json.loads(runs[0].read_text())["provenance"]
    print(f"\nruns: {pv.get('gpu')}, torch {pv.get('torch')}, CUDA {pv.get('cuda')}, "
          f"cuDNN {pv.get('cudnn')}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--out", required=True)
    p = sub.add_parser("run")
    p.add_argument("--out", required=True)
    p.add_argument("--deadline-s", type=float, default=480)
    p = sub.add_parser("compare")
    p.add_argument("folder")
    p.add_argument("--gpu", default="h200")
    p.add_argument("--now", action="store_true",
                   help="also the zoo's errors with this checkout's code (after the runs)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.cmd == "predict":
        predict(Path(args.out))
    elif args.cmd == "run":
        run(Path(args.out), args.deadline_s)
    else:
        compare(Path(args.folder), args.gpu, args.now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
