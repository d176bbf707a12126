"""Where a plan step's time goes, measured: the launching thread and the GPU per phase.

For each configuration (model, batch, plan, optimizer, autocast), built and trained as
``snsim.torchsim.execute.measure`` does (the plan's real transform, ``train_step``'s step:
autocast around forward and loss, GradScaler for fp16), after three warm-up steps:

* ``step_s``: steps timed between CUDA events (median), no synchronisation inside a step, as
  the plan suite measures them;
* ``host_F_s`` / ``host_B_s`` / ``host_U_s``: the launching thread's wall time per phase
  (forward and loss issued; ``backward()`` returned; optimizer step and ``zero_grad``), the
  GPU synchronised before each step only (the host then runs ahead as far as it can), and
  the same with Python's cyclic garbage collector off (``host_nogc_*``: its share);
* with ``torch.profiler`` (CPU and CUDA activities) over steps that synchronise at the end of
  every phase (so each GPU event lies inside the CPU range of the phase that issued it): per
  phase, the union of kernel intervals (``kernels_P_s``) and of memcpy intervals
  (``copies_P_s``, ``n_copies_P``: a cpu_offload plan's host copies on the compute stream).

Set beside ``scripts/plan_time_split.py`` (the prediction's split of the same phases), it shows
whether a plan's extra time is the thread (hooks, recomputation's issue) or the GPU (kernels,
copies). ``--kernels CSV``: every GPU event of the profiled steps by phase and kernel name
(calls and seconds per step), to set a plan's kernels beside its plain step's one by one.

    # on the GPU (set heldout7: about 2-3 minutes; set tinyckpt, --no-profile: under 1):
    OUT=dir PYTHONPATH=. python3 scripts/plan_gpu_busy.py --set heldout7 --out "$OUT"
    # a dry run on the CPU (no kernels: busy 0):
    PYTHONPATH=. python scripts/plan_gpu_busy.py --out /tmp/pgb --device cpu --quick
"""
from __future__ import annotations

import argparse
import collections
import csv
import gc
import os
import statistics
import sys
import time

# the standard plan suite's host-bound plans (traces/h200/plans_standard_fresh) and a plain
# step of the same networks: (model, batch, policy, options, optimizer, amp)
CONFIGS = {
    "standard": [
        ("torchvision:mobilenet_v2", 128, "plain", "", "sgd-momentum", "none"),
        ("torchvision:mobilenet_v2", 128, "checkpoint", "modules=InvertedResidual",
         "sgd-momentum", "none"),
        ("torchvision:resnet152", 64, "plain", "", "sgd-momentum", "none"),
        ("torchvision:resnet152", 64, "checkpoint", "modules=Bottleneck", "sgd-momentum",
         "none"),
        ("torchvision:resnet50", 128, "checkpoint", "modules=Bottleneck selective=true",
         "sgd-momentum", "none"),
        ("snsim:gpt", 8, "checkpoint", "modules=Block selective=true", "sgd-momentum", "none"),
    ],
    # held-out set 49's AlexNet b1024 superneurons, 24 % slower than modelled on the H100,
    # beside its plain step
    "heldout49": [
        ("torchvision:alexnet", 1024, "plain", "", "sgd-momentum", "none"),
        ("torchvision:alexnet", 1024, "superneurons", "", "sgd-momentum", "none"),
    ],
    # held-out set 7's plans whose extra time over plain was under-predicted
    # (traces/h200/plans_heldout7), each with its plain step
    "heldout7": [
        ("hf:HuggingFaceTB/SmolLM2-135M@512", 8, "plain", "", "adamw", "bf16"),
        ("hf:HuggingFaceTB/SmolLM2-135M@512", 8, "checkpoint", "modules=LlamaDecoderLayer",
         "adamw", "bf16"),
        ("torchvision:vit_h_14", 4, "plain", "", "adamw", "bf16"),
        ("torchvision:vit_h_14", 4, "checkpoint", "modules=EncoderBlock", "adamw", "bf16"),
        ("torchvision:densenet121", 16, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:densenet121", 16, "cpu_offload", "pin_memory=true", "sgd-momentum",
         "fp16"),
        ("torchvision:efficientnet_b7", 8, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:efficientnet_b7", 8, "cpu_offload", "pin_memory=true", "sgd-momentum",
         "fp16"),
        ("torchvision:efficientnet_b6", 12, "plain", "", "sgd-momentum", "none"),
        ("torchvision:efficientnet_b6", 12, "superneurons", "", "sgd-momentum", "none"),
    ],
    # the host at batch 4 (scripts/host_innet_probe.py's batch) and at a held-out set's batch
    # in one process: DenseNet-161 fp16 b24 stepped in 59 ms (traces/h200/gc_probe) while the
    # probe's b4 host walls summed 94 ms
    "batch10": [
        (m, b, "plain", "", opt, amp)
        for m, bs, opt, amp in (("torchvision:densenet161", (4, 24), "sgd-momentum", "fp16"),
                                ("torchvision:swin_t", (4, 32), "adamw", "fp16"),
                                ("torchvision:maxvit_t", (4, 32), "sgd-momentum", "bf16"),
                                ("torchvision:resnet18", (4, 256), "sgd-momentum", "none"))
        for b in bs],
    # held-out set 24's save_on_cpu runs, both under-predicted (ResNet-152 b32 fp16 -18.8 %,
    # -13.0 % at its own gauge; every executed cpu_offload run re-priced: signed mean -7.9 %),
    # each with its plain step
    "offload24": [
        ("torchvision:resnet152", 32, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:resnet152", 32, "cpu_offload", "pin_memory=true", "sgd-momentum", "fp16"),
        ("torchvision:efficientnet_b3", 64, "plain", "", "sgd-momentum", "bf16"),
        ("torchvision:efficientnet_b3", 64, "cpu_offload", "pin_memory=true modules=MBConv",
         "sgd-momentum", "bf16"),
    ],
    # held-out set 56's largest plan misses on the H100 (predicted too slow at the process's
    # own gauge: ResNet-101 checkpoint +33.8 %, DenseNet-169 superneurons +42.7 %) beside
    # their plain steps
    "heldout56": [
        ("torchvision:resnet101", 48, "plain", "", "adamw", "bf16"),
        ("torchvision:resnet101", 48, "checkpoint", "modules=Bottleneck", "adamw", "bf16"),
        ("torchvision:densenet169", 40, "plain", "", "sgd-momentum", "none"),
        ("torchvision:densenet169", 40, "superneurons", "", "sgd-momentum", "none"),
    ],
    # tiny inputs (the host is the bottleneck): checkpoint's host cost per call in real blocks,
    # bf16 autocast and fp32
    "tinyckpt": [
        ("hf:HuggingFaceTB/SmolLM2-135M@16", 1, "plain", "", "adamw", "bf16"),
        ("hf:HuggingFaceTB/SmolLM2-135M@16", 1, "checkpoint", "modules=LlamaDecoderLayer",
         "adamw", "bf16"),
        ("hf:HuggingFaceTB/SmolLM2-135M@16", 1, "plain", "", "adamw", "none"),
        ("hf:HuggingFaceTB/SmolLM2-135M@16", 1, "checkpoint", "modules=LlamaDecoderLayer",
         "adamw", "none"),
        ("torchvision:vit_b_16", 1, "plain", "", "adamw", "bf16"),
        ("torchvision:vit_b_16", 1, "checkpoint", "modules=EncoderBlock", "adamw", "bf16"),
        ("torchvision:efficientnet_b0@3x64x64", 2, "plain", "", "sgd-momentum", "none"),
        ("torchvision:efficientnet_b0@3x64x64", 2, "checkpoint", "modules=MBConv",
         "sgd-momentum", "none"),
    ],
    # held-out set 26's step-time misses (traces/h200/plans_heldout26: +17 to +33 %), each
    # with its plain step, and set 25's GoogLeNet (+32.6 %)
    "heldout26": [
        ("torchvision:regnet_x_1_6gf", 96, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:regnet_x_1_6gf", 96, "checkpoint", "modules=ResBottleneckBlock",
         "sgd-momentum", "fp16"),
        ("torchvision:convnext_tiny", 96, "plain", "", "sgd-momentum", "bf16"),
        ("torchvision:convnext_tiny", 96, "superneurons", "", "sgd-momentum", "bf16"),
        ("torchvision:googlenet", 64, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:googlenet", 64, "superneurons", "", "sgd-momentum", "fp16"),
        ("scripts.attention_models:causal_encoder", 64, "plain", "", "sgd-momentum", "fp16"),
        ("scripts.attention_models:causal_encoder", 64, "superneurons", "", "sgd-momentum",
         "fp16"),
        ("hf:HuggingFaceTB/SmolLM2-135M@512", 8, "plain", "", "adamw", "fp16"),
    ],
    # the offloader's host cost in real networks against the chain probe's (the in-network
    # ratio of scripts/offload_innet.py): calibration networks no held-out set ran offloaded
    "offload_innet": [
        (m, b, pol, "", "sgd-momentum", "none")
        for m, b in (("torchvision:resnet50", 32), ("torchvision:vgg16", 32),
                     ("torchvision:densenet121", 32), ("torchvision:mobilenet_v2", 64))
        for pol in ("plain", "offload")],
    # held-out set 27's step-time misses (traces/h200/plans_heldout27: -37 to -12 %), each
    # with its plain step
    "heldout27": [
        ("torchvision:resnet152", 48, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:resnet152", 48, "offload", "", "sgd-momentum", "fp16"),
        ("hf:gpt2@512", 8, "plain", "", "adamw", "bf16"),
        ("hf:gpt2@512", 8, "recompute", "", "adamw", "bf16"),
        ("torchvision:densenet169", 48, "plain", "", "adamw", "bf16"),
        ("torchvision:densenet169", 48, "recompute", "", "adamw", "bf16"),
        ("torchvision:regnet_x_3_2gf", 64, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:regnet_x_3_2gf", 64, "superneurons", "", "sgd-momentum", "fp16"),
        ("torchvision:vit_b_16", 32, "plain", "", "adamw", "bf16"),
        ("torchvision:vit_b_16", 32, "offload", "", "adamw", "bf16"),
    ],
    # H100 held-out sets 45 and 46's step-time misses that the run's own gauge did not explain
    # (re-predicted at it, traces/h100/plans_heldout4[56]: -19 to +36 %), each with its plain
    # step
    "heldout46": [
        ("hf:gpt2-large@512", 2, "plain", "", "adamw", "bf16"),
        ("hf:gpt2-large@512", 2, "checkpoint", "modules=GPT2Block", "adamw", "bf16"),
        ("torchvision:regnet_x_8gf", 40, "plain", "", "adamw", "bf16"),
        ("torchvision:regnet_x_8gf", 40, "checkpoint", "modules=ResBottleneckBlock", "adamw",
         "bf16"),
        ("torchvision:swin_v2_s", 16, "plain", "", "adamw", "bf16"),
        ("torchvision:swin_v2_s", 16, "checkpoint", "modules=SwinTransformerBlockV2", "adamw",
         "bf16"),
        ("torchvision:convnext_small", 36, "plain", "", "sgd-momentum", "fp16"),
        ("torchvision:convnext_small", 36, "checkpoint", "modules=CNBlock", "sgd-momentum",
         "fp16"),
        ("torchvision:convnext_tiny", 20, "plain", "", "sgd", "none"),
        ("torchvision:convnext_tiny", 20, "superneurons", "", "sgd", "none"),
        ("torchvision:densenet161", 32, "plain", "", "sgd-momentum", "fp16"),
        ("hf:gpt2@1024", 12, "plain", "", "adamw", "bf16"),
    ],
}
PHASES = ("F", "B", "U")


def _busy_s(spans):
    """Seconds of the union of ``(start_us, end_us)`` intervals."""
    busy, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            busy += b - a
            end = b
        elif b > end:
            busy += b - end
            end = b
    return busy * 1e-6


def _phased_events(prof):
    """``(phase, event, start_us, end_us)`` of every profiled event that starts inside a phase's
    range (``phase_F`` ...; steps that synchronise at the end of every phase range, so every
    GPU event lies in the range of the phase that issued it). The ranges themselves are left
    out: the profiler puts them on the GPU's timeline too (before session 31 that copy was
    counted as a kernel, so ``kernels_P_s`` was the phase's wall)."""
    from torch.autograd import DeviceType
    evts = prof.events()
    ranges = [(e.time_range.start, e.time_range.end, e.name[len("phase_"):]) for e in evts
              if e.name.startswith("phase_") and e.device_type == DeviceType.CPU]
    for e in evts:
        if e.name.startswith("phase_"):
            continue
        a, b = e.time_range.start, e.time_range.end
        ph = next((p for s, t, p in ranges if s <= a <= t), None)
        if ph in PHASES:
            yield ph, e, a, b


def _phase_busy(prof):
    """Per phase, the union of kernel intervals and of copy (memcpy) intervals, and the copies'
    count and bytes (:func:`_phased_events`)."""
    from torch.autograd import DeviceType
    kern = {p: [] for p in PHASES}
    copy = {p: [] for p in PHASES}
    ncopy = dict.fromkeys(PHASES, 0)
    for ph, e, a, b in _phased_events(prof):
        # GPU events only, less the phase's own synchronise
        if e.device_type != DeviceType.CUDA or "sync" in e.name.lower():
            continue
        if "memcpy" in e.name.lower():
            copy[ph].append((a, b))
            ncopy[ph] += 1
        else:
            kern[ph].append((a, b))
    return ({p: _busy_s(v) for p, v in kern.items()}, {p: _busy_s(v) for p, v in copy.items()},
            ncopy)


def _phase_kernels(prof):
    """``{(phase, name): [count, seconds]}`` of the profiled steps' GPU events (kernels and
    copies) and the launching thread's CUDA runtime calls (``cuda*``: launches, event
    synchronisations, host allocations), by phase (:func:`_phased_events`)."""
    from torch.autograd import DeviceType
    out = collections.defaultdict(lambda: [0, 0.0])
    for ph, e, a, b in _phased_events(prof):
        if e.device_type == DeviceType.CUDA or \
                e.device_type == DeviceType.CPU and e.name.startswith("cuda"):
            out[(ph, e.name)][0] += 1
            out[(ph, e.name)][1] += (b - a) * 1e-6
    return out


def plan_step(model, batch, policy, opts, optimizer, amp, dev):
    """``(step, sync)`` of one configuration built and trained as ``snsim execute`` runs it
    (the plan's real transform, ``train_step``'s step: autocast around forward and loss,
    GradScaler for fp16). ``step(marked=False, clock=None)``: one training step; ``marked``
    puts each phase in a profiler range ``phase_F`` / ``_B`` / ``_U`` that ends with the GPU
    synchronised (its kernels inside it), ``clock`` (a list) gets ``time.perf_counter()``
    appended after each phase. ``opts``: the plan's options, space-separated. Shared by the
    plan probes (``plan_host_pyprofile.py``, ``plan_timeline_probe.py``)."""
    import contextlib
    import torch
    from torch.profiler import record_function

    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_sized
    from snsim.torchsim.plans import as_plan, make_transform
    from snsim.torchsim.predict import infer_target_of
    from snsim.torchsim.record import compute_loss
    cuda = dev == "cuda"
    spec = resolve_sized(model)
    setup = TrainSetup(optimizer, "foreach", None if amp == "none" else amp)
    net = spec.build().train()
    target = infer_target_of(net, spec.make_input(2))   # on the CPU, as capture does
    net = net.to(dev)
    x = spec.make_input(batch, dev)
    y = target.make(batch, dev)
    net = make_transform(as_plan(policy, [o for o in opts.split() if o]))(net)
    opt = setup.make_optimizer(net.parameters())
    autocast = setup.autocast(dev) or contextlib.nullcontext
    scaler = setup.grad_scaler(dev)
    scope = setup.step_scope(dev) or contextlib.nullcontext
    aux = spec.aux_loss_weight

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def phase(name, marked):
        # marked: a profiler range that ends with the GPU idle (the phase's kernels inside it)
        @contextlib.contextmanager
        def ctx():
            if not marked:
                yield
                return
            with record_function("phase_" + name):
                yield
                sync()
        return ctx()

    def step(marked=False, clock=None):
        # snsim.torchsim.record.train_step's step, its phases timed or marked
        with scope():
            with phase("F", marked):
                with autocast():
                    loss = compute_loss(net(x), y, aux)
                if scaler is not None:
                    loss = scaler.scale(loss)
            if clock is not None:
                clock.append(time.perf_counter())
            with phase("B", marked):
                loss.backward()
            if clock is not None:
                clock.append(time.perf_counter())
            with phase("U", marked):
                if scaler is not None:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                opt.zero_grad(set_to_none=True)
            if clock is not None:
                clock.append(time.perf_counter())
    return step, sync


def run_one(model, batch, policy, opts, optimizer, amp, args):
    """Measure one configuration (see the module docstring)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    cuda = args.device == "cuda"
    step, sync = plan_step(model, batch, policy, opts, optimizer, amp, args.device)
    for _ in range(3):
        step()
    sync()
    steps = []
    for _ in range(args.iters):          # as the suite measures a step: no synchronisation
        if cuda:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
        t0 = time.perf_counter()
        step()
        if cuda:
            e1.record()
        sync()
        steps.append(e0.elapsed_time(e1) * 1e-3 if cuda else time.perf_counter() - t0)
    host = {p: [] for p in PHASES}
    host_nogc = {p: [] for p in PHASES}
    for collect in (True, False):        # the launching thread alone, from an idle GPU
        gc.collect()
        if not collect:
            gc.disable()                 # Python's cyclic collector off: its share of the host
        try:
            for _ in range(args.iters):
                sync()
                clock = [time.perf_counter()]
                step(clock=clock)
                sync()
                for i, p in enumerate(PHASES):
                    (host if collect else host_nogc)[p].append(clock[i + 1] - clock[i])
        finally:
            gc.enable()
    kern = copy = dict.fromkeys(PHASES, 0.0)
    ncopy = dict.fromkeys(PHASES, 0)
    if not args.no_profile:
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        n_prof = 2
        sync()
        with profile(activities=acts) as prof:
            for _ in range(n_prof):
                step(marked=True)
        kern, copy, ncopy = _phase_busy(prof)
        if args.kernels:
            fresh = not os.path.exists(args.kernels)
            with open(args.kernels, "a", newline="") as fh:
                w = csv.writer(fh)
                if fresh:
                    w.writerow(["model", "batch", "policy", "options", "optimizer", "amp",
                                "phase", "kernel", "calls", "seconds"])
                for (ph, name), (n, sec) in sorted(_phase_kernels(prof).items()):
                    w.writerow([model, batch, policy, opts, optimizer, amp, ph, name,
                                n // n_prof, f"{sec / n_prof:.6e}"])
        kern = {p: v / n_prof for p, v in kern.items()}
        copy = {p: v / n_prof for p, v in copy.items()}
        ncopy = {p: v // n_prof for p, v in ncopy.items()}
    med = statistics.median
    return {"model": model, "batch": batch, "policy": policy, "options": opts,
            "optimizer": optimizer, "amp": amp,
            "step_s": f"{med(steps):.6e}", "min_step_s": f"{min(steps):.6e}",
            **{f"host_{k}_s": f"{med(v):.6e}" for k, v in host.items()},
            **{f"host_nogc_{k}_s": f"{med(v):.6e}" for k, v in host_nogc.items()},
            **{f"kernels_{k}_s": f"{v:.6e}" for k, v in kern.items()},
            **{f"copies_{k}_s": f"{v:.6e}" for k, v in copy.items()},
            **{f"n_copies_{k}": ncopy[k] for k in PHASES}}


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
    ap.add_argument("--set", default="standard", choices=sorted(CONFIGS),
                    help="the configurations to measure")
    ap.add_argument("--only", default="",
                    help="comma-separated model names (as in --set) to keep")
    ap.add_argument("--quick", action="store_true", help="one small configuration per plan")
    ap.add_argument("--kernels", default="",
                    help="also append every GPU event's count and seconds per step by phase "
                         "and kernel name to this CSV (the profiled steps')")
    ap.add_argument("--no-profile", action="store_true",
                    help="skip the profiled steps (kernel and copy busy time)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"plan_gpu_busy_{args.set}.csv")
    configs = CONFIGS[args.set]
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c[0] in keep]
    if args.quick:
        configs = [("torchvision:resnet18@3x64x64", 2, "plain", "", "adamw", "bf16"),
                   ("torchvision:resnet18@3x64x64", 2, "checkpoint", "modules=BasicBlock",
                    "adamw", "bf16"),
                   ("torchvision:resnet18@3x64x64", 2, "cpu_offload", "pin_memory=true",
                    "sgd-momentum", "fp16"),
                   ("torchvision:resnet18@3x64x64", 2, "superneurons", "", "sgd-momentum",
                    "none")]
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

        def ms(key):
            return "/".join(f"{float(r[f'{key}_{p}_s']) * 1e3:.2f}" for p in PHASES)
        print(f"  {r['model']} b{r['batch']} {r['optimizer']} {r['amp']} {r['policy']} "
              f"{r['options'] or '-'}: step {float(r['step_s']) * 1e3:.2f} ms; F/B/U host "
              f"{ms('host')} ms (gc off {ms('host_nogc')}), kernels {ms('kernels')} ms, copies {ms('copies')} ms "
              f"({'/'.join(str(r[f'n_copies_{p}']) for p in PHASES)}) "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
