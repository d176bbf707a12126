"""What Python's cyclic garbage collector costs inside a real training step (issue 10).

A plan suite run (``snsim.torchsim.execute.measure``) trains with the collector on, as users
do; the host model's per-call figures were measured with it on too, but in small steps
(``scripts/host_innet_probe.py``, batch 4). A collection's cost grows with what it scans:
generation 0 and 1 hold what the step made and still holds (tensors autograd saved keep their
Python objects, a checkpoint call its holders and closures), generation 2 everything alive
(the model, torch's own modules). This measures, per configuration, in one fresh process as
the suite runs it:

* ``measure`` with the collector on, ``gc.callbacks`` recording every collection inside the
  timed steps (generation, seconds, objects collected);
* ``measure`` again with the collector off for the whole call (build, warm-up, steps);
* ``measure`` with it on once more (the process's drift);
* the generations' sizes before the timed steps and a pace gauge (a small ``torch.add`` in a
  tight loop, microseconds per call).

    # on the GPU (about 3 minutes for the default configurations):
    OUT=dir PYTHONPATH=$PWD python3 scripts/gc_probe.py --out "$OUT"
    # a dry run on the CPU:
    PYTHONPATH=. python scripts/gc_probe.py --out /tmp/gcp --device cpu \\
        --only torchvision:resnet18:2:plain::sgd-momentum:none

Writes ``$OUT/gc_probe.jsonl`` (one record per configuration) and prints one line each.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time

# model:batch:policy:options(space-separated, ',' inside a value):optimizer:amp -- held-out
# sets 7-9's host-bound runs, under-predicted (most) and over-predicted (DenseNet-121 b16)
DEFAULT = (
    "torchvision:swin_t:32:plain::adamw:fp16",
    "torchvision:densenet161:24:plain::sgd-momentum:fp16",
    "torchvision:densenet161:24:superneurons::sgd-momentum:fp16",
    "torchvision:inception_v3:64:plain::adam:none",
    "torchvision:inception_v3:64:superneurons::adam:none",
    "torchvision:efficientnet_v2_s:48:superneurons::sgd-momentum:bf16",
    "torchvision:resnext50_32x4d:64:checkpoint:modules=Bottleneck:adamw:bf16",
    "torchvision:maxvit_t:32:plain::sgd-momentum:bf16",
    "torchvision:densenet121:16:plain::sgd-momentum:fp16",
    "hf:HuggingFaceTB/SmolLM2-135M@512:8:plain::adamw:bf16",
    "hf:HuggingFaceTB/SmolLM2-135M@512:8:checkpoint:modules=LlamaDecoderLayer:adamw:bf16",
    "hf:EleutherAI/pythia-410m@1024:4:plain::adam:bf16",
)


def parse(text):
    """``(model, input_shape, batch, policy, options, optimizer, amp)`` of one config string."""
    parts = text.rsplit(":", 5)
    if len(parts) != 6:
        raise SystemExit(f"gc_probe: config {text!r}: need model:batch:policy:options:"
                         "optimizer:amp")
    model, batch, policy, opts, optimizer, amp = parts
    from snsim.torchsim.models import split_sized
    model, shape = split_sized(model)
    return model, shape, int(batch), policy, opts.split(), optimizer, amp


def run_config(text, device, iters):
    """Measure one configuration in this process (see the module docstring)."""
    from snsim.torchsim import record
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import measure
    from snsim.torchsim.hostpace import gauge_add_s
    model, shape, batch, policy, opts, optimizer, amp = parse(text)
    setup = TrainSetup.parse(optimizer, "foreach", None if amp == "none" else amp)
    inner = record.train_step
    state = {"in_step": False, "events": [], "calls": 0, "t": 0.0, "sizes": None}

    def on_gc(phase, info):
        if not state["in_step"]:
            return
        if phase == "start":
            state["t"] = time.perf_counter()
        else:
            state["events"].append((state["calls"], info["generation"],
                                    time.perf_counter() - state["t"], info["collected"]))

    def step(*a, **k):
        state["calls"] += 1
        state["in_step"] = True
        try:
            return inner(*a, **k)
        finally:
            state["in_step"] = False

    out = {"config": text}
    record.train_step = step
    gc.callbacks.append(on_gc)
    try:
        for label, collect in (("on", True), ("off", False), ("on2", True)):
            state.update(events=[], calls=0)
            gc.collect()
            if not collect:
                gc.disable()
            try:
                m = measure(model, batch, policy, options=opts, optimizer=setup,
                            input_shape=shape, iters=iters, device=device)
            finally:
                gc.enable()
            calls = state["calls"]
            timed = range(calls - iters + 1, calls + 1)      # the last `iters` steps
            ev = [e for e in state["events"] if e[0] in timed]
            out[f"step_{label}_s"] = m["step_time_s"]
            out[f"steps_{label}_s"] = m["step_times_s"]
            if collect:
                out[f"gc_{label}_s_per_step"] = sum(e[2] for e in ev) / iters
                out[f"gc_{label}_by_gen"] = {
                    g: [sum(1 for e in ev if e[1] == g) / iters,
                        sum(e[2] for e in ev if e[1] == g) / iters]
                    for g in (0, 1, 2)}
        out["gen_counts"] = gc.get_count()
        out["gen_sizes"] = [len(gc.get_objects(generation=g)) for g in (0, 1, 2)]
        out["gauge_add_us"] = gauge_add_s(device) * 1e6
    finally:
        record.train_step = inner
        gc.callbacks.remove(on_gc)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=",".join(DEFAULT),
                    help="comma-separated configurations model[@shape]:batch:policy:options:"
                         "optimizer:amp (options space-separated)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--run", default=None, help="measure one configuration in this process")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per configuration")
    args = ap.parse_args(argv)
    if args.run:
        print(json.dumps(run_config(args.run, args.device, args.iters)))
        return 0
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "gc_probe.jsonl")
    for text in args.only.split(","):
        parse(text)
    with open(path, "w") as f:
        for text in args.only.split(","):
            t0 = time.perf_counter()
            try:
                p = subprocess.run([sys.executable, __file__, "--out", args.out, "--run", text,
                                    "--device", args.device, "--iters", str(args.iters)],
                                   capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                print(f"{text}: timed out after {args.timeout:.0f} s", flush=True)
                continue
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            if p.returncode or not lines:
                err = (p.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{text}: failed: {err}", flush=True)
                continue
            r = json.loads(lines[-1])
            f.write(json.dumps(r) + "\n")
            f.flush()
            g = r["gc_on_by_gen"]
            print(f"{text}: step on {r['step_on_s'] * 1e3:.1f} / off {r['step_off_s'] * 1e3:.1f}"
                  f" / on {r['step_on2_s'] * 1e3:.1f} ms; gc {r['gc_on_s_per_step'] * 1e3:.2f} ms"
                  f"/step (gen0 {g['0'][0]:.1f}x {g['0'][1] * 1e3:.2f} ms, gen1 {g['1'][0]:.1f}x "
                  f"{g['1'][1] * 1e3:.2f} ms, gen2 {g['2'][0]:.1f}x {g['2'][1] * 1e3:.2f} ms); "
                  f"sizes {r['gen_sizes']}; add {r['gauge_add_us']:.2f} us "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
