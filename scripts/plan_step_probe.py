"""Where a memory plan's step time goes on a real GPU: the launching thread's wall time per
phase, the CUDA runtime calls that block it, and the Python garbage collector.

For each configuration ``MODEL:BATCH:OPTIMIZER:AMP:PLAN`` (``PLAN`` a policy and its
``KEY=VALUE`` options, ``/``-separated: ``plain``, ``checkpoint/modules=EncoderBlock``,
``cpu_offload/pin_memory=true``; built, placed and transformed as ``snsim execute``
does it, :func:`snsim.torchsim.execute.measure`), in a process of its own:

* ``--iters`` steps between CUDA events after ``--warmup`` warm-ups (as ``execute``), with the
  collector on, then the same with ``gc.disable()``;
* the launching thread's seconds per phase (forward and loss F, backward B, optimizer U) in
  those steps, without synchronising inside the step;
* this process's host pace (:func:`snsim.torchsim.hostpace.gauge_add_s`, in µs per call)
  before and after the timed steps, so that a phase's wall can be set against the model at
  this process's pace;
* one step under ``torch.profiler`` (CPU and CUDA activities): the GPU busy time, and per CUDA
  runtime call name the calls and host seconds (``cudaStreamSynchronize``,
  ``cudaMemcpyAsync``, ``cudaHostAlloc``, ``cudaMalloc``, ...), so that a call that waits for
  the GPU inside a plan shows.

Writes ``plan_step_probe.csv`` (one row per configuration and collector setting) and
``plan_step_runtime.csv`` (runtime calls per configuration) under ``--out``.

    OUT=dir PYTHONPATH=. python3 scripts/plan_step_probe.py --out "$OUT" \\
        --configs torchvision:vit_b_16:32:adamw:bf16:checkpoint/modules=EncoderBlock
    # a dry run of the code on the CPU:
    PYTHONPATH=. python scripts/plan_step_probe.py --out /tmp/probe --device cpu \\
        --configs torchvision:resnet18:2:sgd-momentum:none:checkpoint/modules=BasicBlock --iters 1
"""
from __future__ import annotations

import argparse
import csv
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path


class _Phases:
    """The ``inst`` of :func:`snsim.torchsim.record.train_step`: wall time per phase."""

    def __init__(self):
        self.t = {"F": 0.0, "B": 0.0, "U": 0.0}
        self._last = None

    def start(self):
        self._last = ("F", time.perf_counter())

    def mark(self, name, phase, _):
        now = time.perf_counter()
        if name == "optimizer.step":
            self.t["B"] += now - self._last[1]
            self._last = ("U", now)
        elif name == "<end>":
            self.t["U"] += now - self._last[1]

    def before_backward(self, loss):
        now = time.perf_counter()
        self.t["F"] += now - self._last[1]
        self._last = ("B", now)


def parse_config(config):
    """``(model spec, batch, TrainSetup, PlanSpec)`` of a probe configuration
    ``MODEL:BATCH:OPTIMIZER:AMP:PLAN`` (``PLAN``: a policy and its ``/``-separated
    ``KEY=VALUE`` options; the probes and their comparison scripts read it alike)."""
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_sized
    from snsim.torchsim.plans import as_plan
    model, batch, opt_name, amp, plan_text = config.rsplit(":", 4)
    policy, *options = plan_text.split("/")
    return (resolve_sized(model), int(batch),
            TrainSetup(opt_name, "foreach", None if amp == "none" else amp),
            as_plan(policy, options))


def warmed_step(config, warmup, device="cuda"):
    """``(net, opt, x, y, kw)`` of configuration ``MODEL:BATCH:OPTIMIZER:AMP:PLAN``, built,
    placed and transformed as ``snsim execute`` does it, after ``warmup`` steps of
    ``train_step(net, opt, x, y, **kw)`` (also :mod:`aten_count_probe`'s)."""
    import functools
    from snsim.torchsim.amp import warm_up
    from snsim.torchsim.plans import make_transform
    from snsim.torchsim.predict import infer_target_of
    from snsim.torchsim.record import train_step
    spec, batch, setup, plan = parse_config(config)
    net = spec.build()
    net.train()
    target = infer_target_of(net, spec.make_input(2))
    net.to(device)
    x = spec.make_input(batch, device)
    y = target.make(batch, device)
    net = make_transform(plan)(net)
    opt = setup.make_optimizer(net.parameters())
    kw = {"autocast": setup.autocast(device), "scaler": setup.grad_scaler(device),
          "step_scope": setup.step_scope(device), "aux_loss_weight": spec.aux_loss_weight}
    warm_up(functools.partial(train_step, net, opt, x, y, **kw), kw["scaler"], warmup)
    return net, opt, x, y, kw


def run_one(config, warmup, iters, device="cuda"):
    import torch
    from snsim.torchsim.record import train_step
    net, opt, x, y, kw = warmed_step(config, warmup, device)
    cuda = device == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()
    from snsim.torchsim.hostpace import gauge_add_s
    gauge_before_s = gauge_add_s(device)
    rows = []
    for collector in ("on", "off"):
        if collector == "off":
            gc.collect()
            gc.disable()
        times, phases = [], []
        for _ in range(iters):
            sync()
            inst = _Phases()
            t0 = time.perf_counter()
            if cuda:
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
            inst.start()
            train_step(net, opt, x, y, inst=inst, **kw)
            if cuda:
                e1.record()
            sync()
            times.append(e0.elapsed_time(e1) * 1e-3 if cuda else time.perf_counter() - t0)
            phases.append(inst.t)
        gc.enable()
        rows.append({"config": config, "collector": collector,
                     "step_s": statistics.median(times), "step_min_s": min(times),
                     "step_max_s": max(times),
                     **{f"wall_{p}_s": statistics.median(ph[p] for ph in phases)
                        for p in "FBU"},
                     "gc_objects": len(gc.get_objects()), "torch": torch.__version__})
    gauge_after_s = gauge_add_s(device)
    for r in rows:
        r["gauge_before_us"] = round(gauge_before_s * 1e6, 3)
        r["gauge_after_us"] = round(gauge_after_s * 1e6, 3)
    from torch.profiler import ProfilerActivity, profile
    sync()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        train_step(net, opt, x, y, **kw)
        sync()
    busy = sum(getattr(a, "self_device_time_total", getattr(a, "self_cuda_time_total", 0.0))
               for a in prof.key_averages()) * 1e-6
    runtime = {}
    for e in prof.events():
        if e.name.startswith("cuda") or e.name.startswith("cu") and "Launch" in e.name:
            name = "cudaLaunch*" if "Launch" in e.name else e.name
            n, s = runtime.get(name, (0, 0.0))
            runtime[name] = (n + 1, s + e.cpu_time_total * 1e-6)
    for r in rows:
        r["gpu_busy_s"] = busy
    return rows, [{"config": config, "call": k, "calls": n, "host_s": s}
                  for k, (n, s) in sorted(runtime.items())]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True,
                    help="comma-separated MODEL:BATCH:OPTIMIZER:AMP:PLAN (semicolons when a "
                         "model spec has commas)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--device", default="cuda", help="cuda; cpu: a dry run of the code")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--deadline-s", type=float, default=400.0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.one:
        rows, runtime = run_one(args.one, args.warmup, args.iters, args.device)
        import json
        print("ROWS " + json.dumps({"rows": rows, "runtime": runtime}), flush=True)
        return 0
    import json
    t0 = time.perf_counter()
    rows, runtime = [], []
    # ";"-separated when a model spec has commas of its own (torchvision:resnet:3,16,62,3)
    for config in args.configs.split(";" if ";" in args.configs else ","):
        if time.perf_counter() - t0 > args.deadline_s:
            print(f"deadline: {config} not run", flush=True)
            continue
        p = subprocess.run([sys.executable, __file__, "--out", args.out, "--configs", "-",
                            "--one", config, "--warmup", str(args.warmup),
                            "--iters", str(args.iters), "--device", args.device],
                           capture_output=True, text=True)
        got = [ln for ln in p.stdout.splitlines() if ln.startswith("ROWS ")]
        if not got:
            print(f"{config}: failed\n{p.stderr[-2000:]}", flush=True)
            continue
        doc = json.loads(got[0][5:])
        rows += doc["rows"]
        runtime += doc["runtime"]
        for r in doc["rows"]:
            print(f"{config} gc {r['collector']}: step {r['step_s'] * 1e3:.1f} ms "
                  f"(min {r['step_min_s'] * 1e3:.1f} max {r['step_max_s'] * 1e3:.1f}) "
                  f"F {r['wall_F_s'] * 1e3:.1f} B {r['wall_B_s'] * 1e3:.1f} "
                  f"U {r['wall_U_s'] * 1e3:.1f} busy {r['gpu_busy_s'] * 1e3:.1f} "
                  f"gauge {r['gauge_before_us']}/{r['gauge_after_us']} us "
                  f"objects {r['gc_objects']}", flush=True)
        for r in doc["runtime"]:
            print(f"   {r['call']:<34} {r['calls']:6d} {r['host_s'] * 1e3:9.2f} ms", flush=True)
    for name, data in (("plan_step_probe.csv", rows), ("plan_step_runtime.csv", runtime)):
        if data:
            with open(out / name, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(data[0]))
                w.writeheader()
                w.writerows(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
