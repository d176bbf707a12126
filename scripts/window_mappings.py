"""Where device memory outside the caching allocator appears during a plan's first training step
(issue 8: what else CUDA maps into the lazy-loading window).

The H100 allocator history of ConvNeXt-T b20 sgd ``superneurons`` (traces/h100/plans_history)
replays to its measured reserved peak only with 74 MiB more mapped into the 414 MiB window than
cuBLAS's 64 MiB (``scripts/lazy_window.py``; the predicted requests equal the history's but for
the next batch's input), and the history cannot say what: the mapping is no allocator event.
This runs each plan as the suite does (:func:`snsim.torchsim.execute.measure`) with a dispatch
mode active during the first training step only, which after every aten call reads the
driver's free memory (``torch.cuda.mem_get_info``) and the allocator's reserved bytes; memory
used outside the allocator is ``total - free - reserved``. Each call after which that grew by
``--min-mib`` or more is printed with the op and the module stack around it, and everything is
written to one file:

    $OUT/window_mappings.json   [{"name", "config", "measured", "jumps": [[call index, op,
                                  module path, growth bytes, outside bytes], ...],
                                  "outside_before_step_bytes", "outside_after_step_bytes"}, ...]

Usage (one GPU, from the repository root, a fresh process per run as the suite's, under a
minute each):

    PYTHONPATH=$PWD python3 scripts/window_mappings.py --out $OUT \\
        [--only convnext_tiny_b20_sgd_superneurons,...] [--min-mib 1]

Reading the driver's free memory is a host call; no kernel runs and the allocator is
untouched, so the step's allocations are those of a run without the mode.
"""
import argparse
import json
import os
import subprocess
import sys

#: (name, model, batch, plan policy, plan options, training setup)
RUNS = [
    ("convnext_tiny_b20_sgd_superneurons", "torchvision:convnext_tiny", 20, "superneurons",
     {}, ("sgd", "foreach", "none")),
    ("convnext_tiny_b20_sgd_plain", "torchvision:convnext_tiny", 20, "plain", {},
     ("sgd", "foreach", "none")),
    ("convnext_small_b32_fp16_cpu_offload", "torchvision:convnext_small", 32, "cpu_offload",
     {"pin_memory": "true"}, ("sgd-momentum", "foreach", "fp16")),
    ("resnet50_b64_superneurons", "torchvision:resnet50", 64, "superneurons", {},
     ("sgd-momentum", "foreach", "none")),
]


def run_one(name, model, batch, policy, options, setup_args, min_bytes):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    import snsim.torchsim.record as record
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import measure
    from snsim.torchsim.plans import as_plan

    total = torch.cuda.mem_get_info()[1]

    def outside():
        return total - torch.cuda.mem_get_info()[0] - torch.cuda.memory_reserved()

    stack = []       # the module path of the forward being run (backward: the last forward's)
    jumps = []

    class Watch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls, self.last = 0, outside()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.calls += 1
            now = outside()
            if now - self.last >= min_bytes:
                jumps.append([self.calls, str(func), "/".join(stack), now - self.last, now])
            self.last = now
            return out

    def pre(mod, args):
        stack.append(type(mod).__name__)

    def post(mod, args, out):
        if stack:
            stack.pop()
    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post)
    step, state = record.train_step, {"n": 0}

    def first_step_watched(*a, **kw):
        state["n"] += 1
        if state["n"] != 1:
            return step(*a, **kw)
        state["before"] = outside()
        with Watch():
            r = step(*a, **kw)
        torch.cuda.synchronize()
        state["after"] = outside()
        return r
    record.train_step = first_step_watched
    try:
        plan = as_plan(None if policy == "plain" else policy, dict(options))
        measured = measure(model, batch, plan, optimizer=TrainSetup.parse(*setup_args))
    finally:
        record.train_step = step
        h1.remove()
        h2.remove()
    return {"name": name, "config": {"model": model, "batch": batch, "policy": policy,
                                     "options": options, "setup": list(setup_args),
                                     "torch": torch.__version__},
            "measured": {k: measured.get(k) for k in ("peak_allocated_bytes",
                                                      "peak_reserved_bytes", "step_time_s")},
            "jumps": jumps, "outside_before_step_bytes": state.get("before"),
            "outside_after_step_bytes": state.get("after")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--only", default="")
    ap.add_argument("--min-mib", type=float, default=1.0)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)   # the child process
    args = ap.parse_args(argv)
    if args.one:
        run = next(r for r in RUNS if r[0] == args.one)
        print(json.dumps(run_one(*run, int(args.min_mib * 2**20))))
        return 0
    only = {s for s in args.only.split(",") if s}
    unknown = only - {r[0] for r in RUNS}
    if unknown:
        sys.exit(f"window_mappings: --only names {', '.join(sorted(unknown))}, not in "
                 f"{', '.join(r[0] for r in RUNS)}")
    docs = []
    for run in RUNS:
        if only and run[0] not in only:
            continue
        p = subprocess.run([sys.executable, __file__, "--one", run[0], "--min-mib",
                            str(args.min_mib)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{run[0]}: failed: {p.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        doc = json.loads(p.stdout.strip().splitlines()[-1])
        docs.append(doc)
        mib = 2**20
        print(f"{run[0]}: reserved {doc['measured']['peak_reserved_bytes']}, outside the "
              f"allocator {doc['outside_before_step_bytes'] / mib:.0f} -> "
              f"{doc['outside_after_step_bytes'] / mib:.0f} MiB over the first step", flush=True)
        for call, op, path, grew, now in doc["jumps"]:
            print(f"    call {call:5d} {op:45s} +{grew / mib:6.1f} MiB ({now / mib:.0f})  {path}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "window_mappings.json"), "w") as f:
        json.dump(docs, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
