"""The CPU optimizer step's cost per op by tensor size, in a clean process and in one shaped
like the ZeRO executor's (CUDA initialised, a GPU phase before each step).

``scripts/zero_host_rates.py`` times the dispatch on 4,096 tensors of 16 parameters in a process
that never touched CUDA (2.55 us per op on an H200 host). The executor's CPU steps over
networks of many mid-sized tensors (held-out set 37, traces/h200/plans_heldout37) left 5-6 us
per op after their streamed bytes: either ops on tensors above ATen's parallel grain (32,768
elements, an OpenMP region per op) cost more than tiny ones, or the executor's process makes
every op dearer. This separates the two: for each tensor size, ``--count`` tensors under the
executor's optimizer (``zero._host_optimizer``), the median step in each mode.

    # on the GPU machine (about 2 minutes):
    PYTHONPATH=. python3 scripts/host_op_probe.py --out $OUT/host_op_probe.json
    # a dry run anywhere (no CUDA: the "executor" mode is skipped):
    PYTHONPATH=. python3 scripts/host_op_probe.py --sizes 16,1024 --count 64 --iters 2
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

SIZES = (16, 1024, 8192, 32768, 65536, 262144)


def worker(opt, numel, count, iters, mode):
    import torch
    from snsim.torchsim.zero import _host_optimizer
    ps = []
    for _ in range(count):
        p = torch.zeros(numel)
        p.grad = torch.full((numel,), 1e-3)
        ps.append(p)
    o = _host_optimizer(torch, opt, ps)
    gpu = None
    if mode == "executor":
        a = torch.randn(4096, 4096, device="cuda")
        gpu = lambda: [a @ a for _ in range(40)] and torch.cuda.synchronize()  # noqa: E731
    o.step()
    o.step()
    times = []
    for _ in range(iters):
        if gpu:
            gpu()
        t0 = time.perf_counter()
        o.step()
        times.append(time.perf_counter() - t0)
    return {"optimizer": opt, "numel": numel, "tensors": count, "mode": mode,
            "threads": torch.get_num_threads(), "step_s": statistics.median(times),
            "step_times_s": times}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--count", type=int, default=512)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--worker", nargs=3)
    a = ap.parse_args()
    if a.worker:
        opt, numel, mode = a.worker
        print(json.dumps(worker(opt, int(numel), a.count, a.iters, mode)))
        return
    import torch
    modes = ["clean"] + (["executor"] if torch.cuda.is_available() else [])
    rows = []
    for opt in ("adam", "sgd-momentum"):
        for numel in (int(s) for s in a.sizes.split(",")):
            for mode in modes:
                out = subprocess.run([sys.executable, __file__, "--worker", opt, str(numel), mode,
                                      "--count", str(a.count), "--iters", str(a.iters)],
                                     capture_output=True, text=True, timeout=300,
                                     env=os.environ)
                if out.returncode:
                    print(opt, numel, mode, "failed:", out.stderr.strip()[-300:], flush=True)
                    continue
                row = json.loads(out.stdout.strip().splitlines()[-1])
                rows.append(row)
                print(f"{opt:13s} numel {numel:7d} x {a.count} {mode:8s} "
                      f"step {row['step_s'] * 1e3:8.2f} ms", flush=True)
    doc = {"machine": platform.processor() or platform.machine(), "torch": torch.__version__,
           "cpu_count": os.cpu_count(), "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote", a.out)


if __name__ == "__main__":
    main()
