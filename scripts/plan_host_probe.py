"""Real step times of executed memory plans where the launching thread is the bottleneck, and
the Python garbage collector's share of a host-bound plan step.

Part ``tiny``: each network at a batch and input so small that its kernels take microseconds,
plain and under the plans whose host work ``snsim predict`` models per mechanism
(``torch.utils.checkpoint`` calls and recomputations, selective checkpointing's dispatch mode,
the SuperNeurons executor's hooks): the step is then the host's issue time, so
``plan - plain`` is what the plan adds on the host in a real network -- the figure to set
beside the prediction of the same configuration (``snsim predict`` on the CPU, same batch and
input), which charges each mechanism from ``steptime_probe.py ckpt``'s chain of tiny blocks.

Part ``gc``: host-bound plan steps at their suite batch, timed as ``snsim.torchsim.execute.
measure`` times them, with the cyclic garbage collector enabled (as in the suite) and then
disabled, and the collections (per generation) and their seconds during the timed run: a
checkpointed step makes Python objects per saved tensor (holders, weak references, frames).

Each configuration runs through :func:`snsim.torchsim.execute.measure` (the suite's ground
truth: warm-up, then ``--iters`` steps between CUDA events, median). Writes
``plan_host_steps.csv`` (rewritten after every configuration: a run cut short keeps what it
finished).

    # on the GPU (about 2 minutes):
    OUT=dir PYTHONPATH=. python3 scripts/plan_host_probe.py --out "$OUT"
    # a dry run on the CPU (CPU times):
    PYTHONPATH=. python scripts/plan_host_probe.py --out /tmp/php --device cpu --quick
    # here, after the run: snsim predict of every configuration beside the measured step, and
    # each plan's step less its network's plain step, measured and predicted
    PYTHONPATH=. python scripts/plan_host_probe.py --compare traces/h200/plan_host/plan_host_steps.csv
"""
from __future__ import annotations

import argparse
import csv
import gc
import os
import sys
import time

# (model, batch, input shape or "", policy, options): the standard plan suite's networks and
# plans (snsim.torchsim.suite), host-bound
TINY = [
    (m, b, shape, pol, opts)
    for m, b, shape, plans in (
        ("torchvision:resnet50", 2, "3,64,64",
         [("checkpoint", "modules=Bottleneck"),
          ("checkpoint", "modules=Bottleneck selective=true"), ("superneurons", "")]),
        ("torchvision:resnet152", 2, "3,64,64", [("checkpoint", "modules=Bottleneck")]),
        ("torchvision:resnet34", 2, "3,64,64", [("checkpoint", "modules=BasicBlock")]),
        ("torchvision:mobilenet_v2", 2, "3,64,64",
         [("checkpoint", "modules=InvertedResidual")]),
        ("torchvision:densenet121", 2, "3,64,64",
         [("checkpoint", "modules=_DenseLayer"), ("superneurons", "")]),
        ("snsim:gpt", 1, "128", [("checkpoint", "modules=Block"),
                                 ("checkpoint", "modules=Block selective=true")]),
        ("torchvision:vit_b_16", 1, "", [("checkpoint", "modules=EncoderBlock"),
                                         ("checkpoint", "modules=EncoderBlock selective=true")]),
    )
    for pol, opts in [("plain", "")] + plans
]
# host-bound at the suite's batch (traces/h200/plans_standard_fresh: measured 40-130% above
# the plain step): timed with the collector on, then off
GC = [
    ("torchvision:resnet152", 64, "", "checkpoint", "modules=Bottleneck"),
    ("torchvision:mobilenet_v2", 128, "", "checkpoint", "modules=InvertedResidual"),
    ("torchvision:resnet50", 128, "", "checkpoint", "modules=Bottleneck selective=true"),
    ("torchvision:densenet121", 128, "", "superneurons", ""),
]


class GcClock:
    """Collections per generation and their wall seconds while active (``gc.callbacks``)."""

    def __init__(self):
        self.count = [0, 0, 0]
        self.seconds = 0.0
        self._t0 = None

    def _cb(self, phase, info):
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self.count[info["generation"]] += 1
            self._t0 = None

    def __enter__(self):
        gc.callbacks.append(self._cb)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._cb)


def run(configs, part, args, rows, path):
    from snsim.torchsim.execute import measure
    for model, batch, shape, policy, opts in configs:
        options = [o for o in opts.split() if o]
        input_shape = tuple(int(v) for v in shape.split(",")) if shape else None
        for collector in (("on", "off") if part == "gc" else ("on",)):
            t0 = time.perf_counter()
            was = gc.isenabled()
            if collector == "off":
                gc.collect()
                gc.disable()
            try:
                with GcClock() as clock:
                    out = measure(model, batch, policy, options=options, input_shape=input_shape,
                                  iters=args.iters, device=args.device)
            except Exception as e:      # one line, the probe goes on with the next one
                print(f"  {model} b{batch} {policy} {opts}: {type(e).__name__}: {e}",
                      flush=True)
                continue
            finally:
                if was:
                    gc.enable()
            steps = out["step_times_s"]
            rows.append({"part": part, "model": model, "batch": batch, "input_shape": shape,
                         "policy": policy, "options": opts, "gc": collector,
                         "step_s": f"{out['step_time_s']:.6e}",
                         "min_step_s": f"{min(steps):.6e}", "max_step_s": f"{max(steps):.6e}",
                         "iters": out["iters"], "warmup_iters": out["warmup_iters"],
                         "gc_gen0": clock.count[0], "gc_gen1": clock.count[1],
                         "gc_gen2": clock.count[2], "gc_s": f"{clock.seconds:.4e}",
                         "wall_s": f"{time.perf_counter() - t0:.1f}"})
            print(f"  {part} {model} b{batch} {shape or '-'} {policy} {opts or '-'} gc {collector}:"
                  f" step {out['step_time_s'] * 1e3:.2f} ms (min {min(steps) * 1e3:.2f}, max "
                  f"{max(steps) * 1e3:.2f}); collections {clock.count} in "
                  f"{clock.seconds * 1e3:.1f} ms", flush=True)
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)


def compare(path, parts=("tiny",)):
    """Print ``snsim predict`` (CPU) of each measured configuration with the collector on, the
    error, and per network each plan's step less the plain one, measured and predicted."""
    from snsim.torchsim.execute import predict_plan
    rows = [r for r in csv.DictReader(open(path, newline=""))
            if r["part"] in parts and r["gc"] == "on"]
    plain = {}
    errs = []
    for r in rows:
        shape = tuple(int(v) for v in r["input_shape"].split(",")) if r["input_shape"] else None
        out, _ = predict_plan(r["model"], int(r["batch"]), r["policy"],
                              options=[o for o in r["options"].split() if o],
                              input_shape=shape, hidden=False)
        meas, pred = float(r["step_s"]), out["step_time_s"]
        key = (r["model"], r["batch"], r["input_shape"])
        extra = ""
        if r["policy"] == "plain":
            plain[key] = (meas, pred)
        elif key in plain:
            extra = (f"  plan - plain: measured {(meas - plain[key][0]) * 1e3:7.2f} ms, "
                     f"predicted {(pred - plain[key][1]) * 1e3:7.2f} ms")
        errs.append(abs(pred / meas - 1))
        print(f"{r['part']} {r['model']} b{r['batch']} {r['input_shape'] or '-'} {r['policy']} "
              f"{r['options'] or '-'}: measured {meas * 1e3:7.2f} ms, predicted "
              f"{pred * 1e3:7.2f} ms ({100 * (pred / meas - 1):+.1f}%){extra}", flush=True)
    if errs:
        errs.sort()
        print(f"{len(errs)} configurations: median |err| {100 * errs[len(errs) // 2]:.1f}%, "
              f"max {100 * errs[-1]:.1f}%")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--compare", metavar="CSV",
                    help="a run's plan_host_steps.csv: predict each configuration (CPU)")
    ap.add_argument("--parts", default="tiny,gc")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="two configurations per part")
    args = ap.parse_args(argv)
    if args.compare:
        compare(args.compare)
        return 0
    if not args.out:
        ap.error("--out is required to run the probe")
    os.makedirs(args.out, exist_ok=True)
    import torch
    print(f"torch {torch.__version__} "
          f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu'}", flush=True)
    path = os.path.join(args.out, "plan_host_steps.csv")
    rows = []
    t0 = time.perf_counter()
    for part in args.parts.split(","):
        configs = {"tiny": TINY, "gc": GC}[part]
        if args.quick:
            configs = configs[:2] if part == "tiny" else [
                ("torchvision:resnet18", 2, "3,32,32", "checkpoint", "modules=BasicBlock")]
        run(configs, part, args, rows, path)
    print(f"plan_host_probe: {len(rows)} rows in {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
