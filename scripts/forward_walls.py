"""The launching thread's forward wall against the batch: is a forward's issue time its own, or
does the thread wait for the GPU somewhere inside it?

For each model and batch (one process, training mode, autocast as given): the GPU is
synchronised, then one forward is issued and the thread's wall time to return from it is taken
(``issue_s``), then the time until the GPU finishes it (``gpu_done_s``); medians over
``--reps``. A forward whose issue time grows with the batch while the GPU's work grows faster
waits for the GPU inside (a synchronising call, a full launch queue).

    OUT=dir PYTHONPATH=. python3 scripts/forward_walls.py --out "$OUT" \\
        --configs torchvision:vit_b_32:bf16 --batches 4,64,256
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import time
from pathlib import Path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True, help="model:amp, comma-separated")
    ap.add_argument("--batches", default="4,32,128,256")
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args(argv)
    import torch

    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_model
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "forward_walls.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "amp", "batch", "issue_s", "gpu_done_s"])
        for cfg in args.configs.split(","):
            model, amp = cfg.rsplit(":", 1)
            spec = resolve_model(model)
            m = spec.build().cuda().train()
            autocast = TrainSetup("sgd", "foreach", None if amp == "none" else amp).autocast(
                "cuda") or contextlib.nullcontext
            for b in [int(v) for v in args.batches.split(",")]:
                x = spec.make_input(b, "cuda")
                issue, done = [], []
                for i in range(args.reps + 3):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    with autocast():
                        y = m(x)
                    t1 = time.perf_counter()
                    torch.cuda.synchronize()
                    t2 = time.perf_counter()
                    del y
                    if i >= 3:
                        issue.append(t1 - t0)
                        done.append(t2 - t0)
                row = [model, amp, b, statistics.median(issue), statistics.median(done)]
                w.writerow(row)
                print(f"{model} {amp} b{b}: issue {row[3]*1e3:.2f} ms, GPU done "
                      f"{row[4]*1e3:.2f} ms", flush=True)
                del x
            del m
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
