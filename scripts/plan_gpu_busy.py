"""Where a plan step's time goes on the GPU: its kernels' busy time against the step, per phase.

For each configuration (model, batch, plan), built and trained as ``snsim.torchsim.execute.
measure`` does (the plan's real transform, ``train_step``'s optimizer), after warm-up:

* ``step_s``: steps timed between CUDA events (median), no profiler;
* the launching thread's wall time per phase without the profiler (``host_F_s``: forward and
  loss issued; ``host_B_s``: ``backward()`` returned; ``host_U_s``: optimizer step), with the
  GPU synchronised before each step (the host's lead over the GPU is then only what it gains
  in the step);
* with ``torch.profiler`` (CPU and CUDA activities), per phase (the CPU ranges of forward,
  backward and the optimizer step; a kernel belongs to the phase whose range launched it):
  the kernels' summed GPU seconds, and of the step the union of kernel intervals
  (``gpu_busy_s``): ``step_s - gpu_busy_s`` is the GPU waiting for the host.

On torch 2.11+cu130 (the H200 run of traces/h200/plan_host/plan_gpu_busy.csv) the per-phase
split came out 0 (the kernel events' ``linked_correlation_id`` matched no CPU op id there);
``gpu_busy_s`` and the host figures are valid.

A plan whose measured step exceeds its predicted GPU time by more than its predicted host
waits shows here whether the excess is kernel time (``gpu_busy_s``) or idle GPU.

    # on the GPU (about 1 minute):
    OUT=dir PYTHONPATH=. python3 scripts/plan_gpu_busy.py --out "$OUT"
    # a dry run on the CPU (no kernels: busy 0):
    PYTHONPATH=. python scripts/plan_gpu_busy.py --out /tmp/pgb --device cpu --quick
"""
from __future__ import annotations

import argparse
import csv
import gc
import os
import statistics
import sys
import time

# the standard plan suite's host-bound plans (traces/h200/plans_standard_fresh) and a plain
# step of the same networks
CONFIGS = [
    ("torchvision:mobilenet_v2", 128, "plain", ""),
    ("torchvision:mobilenet_v2", 128, "checkpoint", "modules=InvertedResidual"),
    ("torchvision:resnet152", 64, "plain", ""),
    ("torchvision:resnet152", 64, "checkpoint", "modules=Bottleneck"),
    ("torchvision:resnet50", 128, "checkpoint", "modules=Bottleneck selective=true"),
    ("snsim:gpt", 8, "checkpoint", "modules=Block selective=true"),
]


def _phases_and_busy(prof, names=("F", "B", "U")):
    """Kernel seconds per phase (by the CPU range that launched each kernel) and the union of
    kernel intervals, from a profile whose steps mark their phases with record_function."""
    from torch.autograd import DeviceType
    evts = prof.events()
    ranges = [(e.time_range.start, e.time_range.end, e.name[len("phase_"):]) for e in evts
              if e.name.startswith("phase_") and e.device_type == DeviceType.CPU]
    # a kernel's linked correlation id is the id of the CPU op that launched it
    cpu_start = {e.id: e.time_range.start for e in evts
                 if e.device_type == DeviceType.CPU and not e.name.startswith("phase_")}
    per = dict.fromkeys(names, 0.0)
    spans = []
    for e in evts:
        if e.device_type != DeviceType.CUDA:
            continue
        spans.append((e.time_range.start, e.time_range.end))
        t = cpu_start.get(getattr(e, "linked_correlation_id", -1))
        ph = next((p for a, b, p in ranges if t is not None and a <= t <= b), None)
        if ph in per:
            per[ph] += (e.time_range.end - e.time_range.start) * 1e-6
    busy, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            busy += b - a
            end = b
        elif b > end:
            busy += b - end
            end = b
    return per, busy * 1e-6


def run_one(model, batch, policy, opts, args):
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from snsim.torchsim.amp import as_setup
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.plans import as_plan, make_transform
    from snsim.torchsim.predict import infer_num_classes_of
    from snsim.torchsim.record import compute_loss
    cuda = args.device == "cuda"
    dev = args.device
    spec = resolve_model(model)
    setup = as_setup("sgd-momentum")
    net = spec.build().train().to(dev)
    x = spec.make_input(batch, dev)
    y = torch.randint(0, infer_num_classes_of(net, x), (batch,), device=dev)
    net = make_transform(as_plan(policy, [o for o in opts.split() if o]))(net)
    opt = setup.make_optimizer(net.parameters())

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def step(marked=False):
        with record_function("phase_F") if marked else _null():
            loss = compute_loss(net(x), y)
        with record_function("phase_B") if marked else _null():
            loss.backward()
        with record_function("phase_U") if marked else _null():
            opt.step()
            opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    sync()
    steps, host = [], {"F": [], "B": [], "U": []}
    for _ in range(args.iters):
        sync()
        if cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
        t0 = time.perf_counter()
        loss = compute_loss(net(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if cuda:
            e1.record()
        sync()
        steps.append(e0.elapsed_time(e1) * 1e-3 if cuda else time.perf_counter() - t0)
        for k, v in (("F", t1 - t0), ("B", t2 - t1), ("U", t3 - t2)):
            host[k].append(v)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    n_prof = 2
    sync()
    with profile(activities=acts) as prof:
        for _ in range(n_prof):
            step(marked=True)
            sync()
    per, busy = _phases_and_busy(prof)
    med = statistics.median
    return {"model": model, "batch": batch, "policy": policy, "options": opts,
            "step_s": f"{med(steps):.6e}", "min_step_s": f"{min(steps):.6e}",
            **{f"host_{k}_s": f"{med(v):.6e}" for k, v in host.items()},
            "gpu_busy_s": f"{busy / n_prof:.6e}",
            **{f"kernels_{k}_s": f"{v / n_prof:.6e}" for k, v in per.items()}}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="one small configuration")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "plan_gpu_busy.csv")
    configs = [("torchvision:resnet18", 2, "checkpoint", "modules=BasicBlock")] \
        if args.quick else CONFIGS
    rows = []
    for cfg in configs:
        t0 = time.perf_counter()
        try:
            r = run_one(*cfg, args)
        except Exception as e:       # one line, then the next configuration
            print(f"  {cfg}: {type(e).__name__}: {e}", flush=True)
            continue
        gc.collect()                 # the configuration's model, optimizer state
        if args.device == "cuda":
            import torch
            torch.cuda.empty_cache()
        rows.append(r)
        print(f"  {r['model']} b{r['batch']} {r['policy']} {r['options'] or '-'}: step "
              f"{float(r['step_s']) * 1e3:.2f} ms, GPU busy {float(r['gpu_busy_s']) * 1e3:.2f} "
              f"ms, kernels F/B/U {float(r['kernels_F_s']) * 1e3:.2f}/"
              f"{float(r['kernels_B_s']) * 1e3:.2f}/{float(r['kernels_U_s']) * 1e3:.2f} ms, "
              f"host F/B/U {float(r['host_F_s']) * 1e3:.2f}/{float(r['host_B_s']) * 1e3:.2f}/"
              f"{float(r['host_U_s']) * 1e3:.2f} ms ({time.perf_counter() - t0:.1f} s)",
              flush=True)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
