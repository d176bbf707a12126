"""The launching thread's in-network factor: measured phase host time of real steps over the
sum of the per-call costs (issue 10 item 3).

The per-call costs (:func:`snsim.torchsim.opcost.host_issue_s`: each aten call at its shape
from the kernel table, each module call, each autograd node) are timed in tight loops, where
one op's code and data stay hot in the CPU's caches. A real step runs hundreds of different
ops, and each pays for fetching its own code path again; ``scripts/steptime_probe.py steps``
times whole steps of small networks at a batch and size where the GPU never leads
(``configs/kernels/<preset>_host_steps.csv``: forward issue, ``backward()`` return, optimizer
step), all but those whose modelled GPU time is half the step or more. This script records
each of those steps with FakeTensorMode on the CPU, sums the
per-call costs of each phase, and writes the median ratio per phase with its spread
(``configs/kernels/<preset>_host_scale.csv``), which the host model multiplies in.

Networks named by ``--exclude`` are left out (default: vgg11 and vit_b_16, whose held-out
CPU-bound captures in traces/h200/cpu_bound_heldout/ test the model).

    PYTHONPATH=. python scripts/host_scale.py --gpu h200
"""
from __future__ import annotations

import argparse
import csv
import pickle
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--exclude", default="vgg11,vit_b_16")
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    args = ap.parse_args(argv)
    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_host_costs, load_kernel_table
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.opcost import host_issue_s, op_times_s
    from snsim.torchsim.predict import record_fake
    hw = load_hardware(args.gpu)
    table = load_kernel_table(args.gpu)
    costs = dict(load_host_costs(args.gpu), scale={})   # unscaled per-call costs
    steps_path = ROOT / "configs" / "kernels" / f"{args.gpu}_host_steps.csv"
    rows = list(csv.DictReader(open(steps_path, newline="")))
    skip = set(args.exclude.split(","))
    # one recording per network and batch (sgd-momentum): the forward and backward are the
    # same ops under every optimizer, so both optimizers' F and B rows are compared with it;
    # U only with the rows of the optimizer recorded
    runs = sorted({(r["name"], int(r["batch"]), int(r["input_side"]), "sgd-momentum")
                   for r in rows if r["name"] not in skip})
    ratios = {}
    for name, batch, side, optim in runs:
        spec = resolve_model(f"torchvision:{name}",
                             input_shape=None if name.startswith("vit") else (3, side, side))
        cached = Path(args.cache) / f"{name}_b{batch}_s{side}_{optim}.pkl" if args.cache \
            else None
        if cached is not None and cached.exists():
            with open(cached, "rb") as f:
                ops, marks = pickle.load(f)
        else:
            rec = record_fake(spec, batch, optim)["rec"]
            ops, marks = rec.ops, rec.marks
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                with open(cached, "wb") as f:
                    pickle.dump((ops, marks), f)
        host = host_issue_s(ops, marks, table, costs)
        last = max(m[3] for m in marks)
        per = {}
        for op, h in zip(ops, host):
            if op[0] >= 0 and marks[op[0]][3] == last:
                ph = marks[op[0]][1]
                per[ph] = per.get(ph, 0.0) + h
        # the GPU must never lead: a step whose kernels alone take half its time or more
        # also measures the host blocked on a full launch queue
        rep = {}
        op_times_s(ops, hw, marks, table=table, host=False, report=rep)
        step = [float(r["step_s"]) for r in rows if (r["name"], int(r["batch"])) ==
                (name, batch)]
        if rep["gpu_s"] >= 0.5 * min(step):
            print(f"{name} b{batch}: left out, GPU {rep['gpu_s'] * 1e3:.1f} ms of a "
                  f"{min(step) * 1e3:.1f} ms step", flush=True)
            continue
        for r in rows:
            if (r["name"], int(r["batch"]), int(r["input_side"])) == (name, batch, side) \
                    and (r["phase"] != "U" or r["optimizer"] == optim) and per.get(r["phase"]):
                ratio = float(r["host_s"]) / per[r["phase"]]
                ratios.setdefault(r["phase"], []).append((ratio, f"{name}_b{batch}"))
                print(f"{name} b{batch} {r['optimizer']} {r['phase']}: measured "
                      f"{float(r['host_s']) * 1e3:.2f} ms, per-call sum "
                      f"{per[r['phase']] * 1e3:.2f} ms, ratio {ratio:.2f}", flush=True)
    out = ROOT / "configs" / "kernels" / f"{args.gpu}_host_scale.csv"
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["phase", "scale", "rows", "min", "max", "source"])
        for ph in sorted(ratios):
            v = [x for x, _ in ratios[ph]]
            w.writerow([ph, f"{statistics.median(v):.4f}", len(v), f"{min(v):.4f}",
                        f"{max(v):.4f}", f"{steps_path.name} over "
                        + " ".join(sorted({n for _, n in ratios[ph]}))])
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
