"""The optimizer step's host time in a real training setup, and its foreach calls' in place
(issue 10 item 3): why ``snsim predict``'s optimizer phase (U) falls short of the real one.

In traces/h200/profile_heldout7 every configuration's U phase took 2-8 ms more than the
modelled host cost, and the out-of-place foreach calls (Adam's ``_foreach_sqrt``, SGD's weight
decay ``_foreach_add``) took ~10 us per tensor under the profiler where calibrate's tight loop
of equal-size tensors takes ~2 (configs/kernels/h200.csv.gz) and the in-network probe's small
networks ~2.5 (traces/h200/profile_host/innet). This separates what the step does from the
calls: for each configuration, warmed up as ``scripts/profile_ops.py`` does
(:func:`snsim.torchsim.record.warm_training`), forward and backward are run and the GPU
drained, then timed on the launching thread (no profiler):

* ``opt_step``: ``optimizer.step()`` (with GradScaler: ``scaler.step`` and ``update``);
  ``zero_grad``: ``optimizer.zero_grad(set_to_none=True)``;
* on the real gradients (after a backward, the GPU drained before each call): ``sqrt``
  (``torch._foreach_sqrt``: out of place), ``add_wd`` (``torch._foreach_add(grads, params,
  alpha)``: out of place, SGD's weight decay), ``mul_`` (``torch._foreach_mul_``: in place);
* ``fresh_sqrt``: ``_foreach_sqrt`` of new tensors of the gradients' sizes;
  ``uniform_sqrt``: of as many tensors of their mean size (calibrate's pattern).

``optstep_host.csv``: config, variant, ntensors, numel, host_s (median), host_min_s, reps.

``--gpu-time`` (CUDA only) also times the kernels of each call (torch.profiler, the calls'
kernel durations summed, ``gpu_hot_s`` back to back and ``gpu_cold_s`` each after a write of
twice the L2 cache), and adds the in-place multi-tensor calls a step makes to its momentum
buffers and parameters (``mul_`` of the gradients, ``add_`` of gradients into parameters,
depth 1 and 2; ``_fused_adamw_``, depth 4, and on one tensor of 262,144 elements, calibrate's
smallest fused row: 73 us there), on three layouts of the same element counts: ``real`` (the gradients, where
the allocator put them), ``packed`` (views into one contiguous buffer) and ``uniform`` (as many
tensors of their mean size: calibrate's pattern). In the H200 profiles an SGD step over
DenseNet-121's 364 tensors ran its foreach kernels 2x calibrate's rows (0.41 against 0.22 ms)
while fused AdamW over ViT-B/16's 152 ran 0.7x (0.80 against 1.17 ms): this separates the
tensors' sizes, their placement and the cache from the kernel.

    # on the GPU (about 10-20 s per configuration):
    OUT=dir PYTHONPATH=. python3 scripts/optstep_host_probe.py --out "$OUT"
    # a dry run on the CPU (CPU times):
    PYTHONPATH=. python scripts/optstep_host_probe.py --out /tmp/optstep --device cpu \\
        --configs torchvision:resnet18:2:adamw:foreach:none --reps 3
    # the kernels too (GPU):
    OUT=dir PYTHONPATH=. python3 scripts/optstep_host_probe.py --out "$OUT" --gpu-time --reps 9 \\
        --configs torchvision:densenet121:16:sgd-momentum:foreach:none,\\
torchvision:vit_b_16:32:adamw:fused:bf16,torchvision:resnet50:64:sgd-momentum:foreach:none
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import sys
import time
from pathlib import Path

DEFAULT_CONFIGS = ",".join([
    # the in-network host probe's networks (traces/h200/profile_host/innet), batch 4
    "torchvision:resnet18:4:sgd-momentum:foreach:none",
    "torchvision:efficientnet_b0:4:adamw:foreach:bf16",
    # held-out set 7's plain configurations (traces/h200/profile_heldout7)
    "torchvision:efficientnet_b6:12:sgd-momentum:foreach:none",
    "torchvision:densenet121:16:sgd-momentum:foreach:fp16",
    "hf:HuggingFaceTB/SmolLM2-135M@512:8:adamw:foreach:bf16",
    "torchvision:swin_v2_b:16:adamw:foreach:bf16",
    "torchvision:vit_h_14:4:adamw:foreach:bf16",
    "torchvision:regnet_y_32gf:24:adamw:foreach:bf16",
])


def _host_s(fn, sync, reps):
    """Seconds on the launching thread of ``fn()`` (its result dropped after the clock),
    the device drained before each call: median and minimum over ``reps``."""
    out = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        r = fn()
        out.append(time.perf_counter() - t0)
        del r
    sync()
    return statistics.median(out), min(out)


def _gpu_s(fn, sync, reps, flush=None):
    """Kernel seconds of one ``fn()`` call (median over ``reps``; the profiler's kernel
    records, those of ``flush()`` before each call left out)."""
    import torch
    from idle_gaps import kernel_launches, profile_events
    from torch.profiler import ProfilerActivity, profile
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(reps):
            if flush is not None:
                flush()
            with torch.profiler.record_function(f"snsim_call_{i}"):
                fn()
        sync()
    events = profile_events(prof)
    # a kernel belongs to the call whose CPU range holds its launch (correlation id)
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"
             and str(e.get("name", "")).startswith("snsim_call_")
             and e.get("cat") == "user_annotation"]
    launches = kernel_launches(events)
    per_call = [0.0] * len(calls)
    for e in events:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        ln = launches.get(e.get("args", {}).get("correlation"))
        for i, (a, b) in enumerate(calls):
            if ln is not None and a <= ln["ts"] <= b:
                per_call[i] += e["dur"] * 1e-6
                break
    return statistics.median(per_call) if per_call else float("nan")


def _gpu_rows(name, grads, ps, device, sync, reps):
    """``--gpu-time``'s layouts and calls (the module docstring): rows with the kernels'
    seconds hot and cold."""
    import torch
    numels = [g.numel() for g in grads]
    dtype = grads[0].dtype
    packed_buf = torch.randn(sum(numels), device=device, dtype=dtype)
    packed = list(torch.split(packed_buf, numels))
    packed2 = [t.clone() for t in packed]   # separate allocations, the real layout's kind
    mean = max(1, sum(numels) // max(1, len(numels)))
    uniform = [torch.randn(mean, device=device, dtype=dtype) for _ in numels]
    uniform2 = [torch.randn(mean, device=device, dtype=dtype) for _ in numels]
    l2 = torch.cuda.get_device_properties(device).L2_cache_size if device == "cuda" else 0
    scratch = torch.empty(max(1, 2 * l2 // 4), device=device)
    def adamw(ts):
        """``_fused_adamw_`` on ``ts`` as parameters, with state and gradients like them."""
        st = [[torch.zeros_like(t) for t in ts] for _ in range(3)]
        steps = [torch.ones((), device=device) for _ in ts]
        return lambda: torch._fused_adamw_(ts, st[0], st[1], st[2], [], steps, lr=1e-3,
                                           beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8,
                                           amsgrad=False, maximize=False)
    single = [torch.randn(262144, device=device, dtype=dtype)]    # calibrate's smallest row
    rows = []
    with torch.no_grad():
        for variant, fn, ts in (
                ("real_fused_adamw_", adamw(grads), grads),
                ("uniform_fused_adamw_", adamw(uniform), uniform),
                ("single_fused_adamw_", adamw(single), single),
                ("real_mul_", lambda: torch._foreach_mul_(grads, 1.0), grads),
                ("real_add_", lambda: torch._foreach_add_(ps, grads, alpha=0.0), grads),
                ("packed_mul_", lambda: torch._foreach_mul_(packed, 1.0), packed),
                ("packed_add_", lambda: torch._foreach_add_(packed, packed2, alpha=0.0),
                 packed),
                ("uniform_mul_", lambda: torch._foreach_mul_(uniform, 1.0), uniform),
                ("uniform_add_", lambda: torch._foreach_add_(uniform, uniform2, alpha=0.0),
                 uniform)):
            hot = _gpu_s(fn, sync, reps)
            cold = _gpu_s(fn, sync, reps, flush=lambda: scratch.fill_(1.0))
            rows.append({"config": name, "variant": variant, "ntensors": len(ts),
                         "numel": sum(t.numel() for t in ts), "host_s": float("nan"),
                         "host_min_s": float("nan"), "reps": reps,
                         "gpu_hot_s": hot, "gpu_cold_s": cold})
    return rows


def probe_one(text, batch, optimizer, impl, amp, *, device, reps, gpu_time=False):
    """Rows of one configuration (see the module docstring)."""
    import torch

    from snsim.torchsim.record import compute_loss, warm_training
    w = warm_training(text, batch, optimizer, impl, amp, device)
    net, opt, x, y, kw, sync = w.net, w.opt, w.x, w.y, w.kw, w.sync
    scaler = kw["scaler"]
    name = f"{w.spec.name}_b{batch}{w.setup.slug}"

    def scope(key):
        return kw[key]() if kw[key] is not None else contextlib.nullcontext()

    def backward():
        with scope("step_scope"):
            with scope("autocast"):
                loss = compute_loss(net(x), y, kw["aux_loss_weight"])
            if scaler is not None:
                loss = scaler.scale(loss)
            loss.backward()
        sync()

    step_s, zero_s = [], []
    for _ in range(reps):
        backward()
        t0 = time.perf_counter()
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        t2 = time.perf_counter()
        sync()
        step_s.append(t1 - t0)
        zero_s.append(t2 - t1)
    params = [p for p in net.parameters() if p.requires_grad]
    numel = sum(p.numel() for p in params)
    rows = [{"config": name, "variant": "opt_step", "ntensors": len(params), "numel": numel,
             "host_s": statistics.median(step_s), "host_min_s": min(step_s), "reps": reps},
            {"config": name, "variant": "zero_grad", "ntensors": len(params), "numel": numel,
             "host_s": statistics.median(zero_s), "host_min_s": min(zero_s), "reps": reps}]
    backward()
    pairs = [(p, p.grad) for p in params if p.grad is not None]
    ps, grads = [p for p, _ in pairs], [g for _, g in pairs]
    fresh = [torch.randn_like(g) for g in grads]
    mean = max(1, sum(g.numel() for g in grads) // max(1, len(grads)))
    uniform = [torch.randn(mean, device=grads[0].device, dtype=grads[0].dtype)
               for _ in grads]
    with torch.no_grad():
        for variant, fn, ts in (
                ("sqrt", lambda: torch._foreach_sqrt(grads), grads),
                ("add_wd", lambda: torch._foreach_add(grads, ps, alpha=1e-4), grads),
                ("mul_", lambda: torch._foreach_mul_(grads, 1.0), grads),
                ("fresh_sqrt", lambda: torch._foreach_sqrt(fresh), fresh),
                ("uniform_sqrt", lambda: torch._foreach_sqrt(uniform), uniform)):
            med, lo = _host_s(fn, sync, reps)
            rows.append({"config": name, "variant": variant, "ntensors": len(ts),
                         "numel": sum(t.numel() for t in ts), "host_s": med, "host_min_s": lo,
                         "reps": reps})
    if gpu_time:
        rows += _gpu_rows(name, grads, ps, device, sync, reps)
    del w, net, opt, x, y, ps, grads, fresh, uniform, pairs, params
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="model:batch:optimizer:impl:amp, comma-separated")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--gpu-time", action="store_true",
                    help="also the calls' kernel seconds, hot and cold, on three layouts")
    ap.add_argument("--deadline-s", type=float, default=240.0,
                    help="start no configuration after this long")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = []
    for cfg in args.configs.split(","):
        if time.perf_counter() - t0 > args.deadline_s:
            print(f"deadline: skipped {cfg}", flush=True)
            continue
        text, batch, optimizer, impl, amp = cfg.rsplit(":", 4)
        try:
            got = probe_one(text, int(batch), optimizer, impl, amp, device=args.device,
                            reps=args.reps, gpu_time=args.gpu_time)
        except Exception as e:    # one configuration's failure is a line; the rest still run
            print(f"{cfg}: {type(e).__name__}: {e}", flush=True)
            continue
        rows += got
        for r in got:
            gpu = (f"  kernels hot {r['gpu_hot_s'] * 1e3:7.3f} cold {r['gpu_cold_s'] * 1e3:7.3f} ms"
                   if "gpu_hot_s" in r else "")
            print(f"{r['config']:<34} {r['variant']:<13} n={r['ntensors']:<5} "
                  f"{r['host_s'] * 1e3:8.3f} ms ({r['host_s'] / r['ntensors'] * 1e6:6.2f} us "
                  f"per tensor){gpu}", flush=True)
        with open(out / "optstep_host.csv", "w", newline="") as f:
            fields = list(dict.fromkeys(k for r in rows for k in r))
            wr = csv.DictWriter(f, fieldnames=fields)
            wr.writeheader()
            wr.writerows(rows)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
