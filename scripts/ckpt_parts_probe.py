"""What ``torch.utils.checkpoint`` (non-reentrant) costs the launching thread, part by part.

Two measurements, to explain the per-call host cost of a checkpoint plan as a mechanism:

1. **Real blocks at tiny inputs** (the host is the bottleneck), each model built and trained as
   ``scripts/plan_gpu_busy.py`` does, under five variants of the same checkpoint plan,
   interleaved round by round (``--rounds``) (a lease's drift falls on all variants alike):
   ``plain``; ``ckpt`` (the plan as executed: ``preserve_rng_state=True``, the default
   determinism check); ``norng`` (``preserve_rng_state=False``: no CPU/CUDA RNG state got in
   forward, no ``fork_rng`` and set in the recomputation); ``nocheck``
   (``determinism_check="none"``: no shape/dtype/device record per saved tensor in forward,
   no comparison in backward); ``norng_nocheck``. Per variant: the step between CUDA events
   (median), the launching thread's wall time per phase (F forward+loss, B ``backward()``,
   U optimizer step) from an idle GPU with the garbage collector off, and the checkpoint
   calls per step and the determinism check's calls per step (``packed``: a function that wraps
   the default one, in the ``ckpt`` variant only; called per tensor packed in forward and per
   tensor recomputed in backward) and selective checkpointing's policy calls per step
   (``policy``: forward and recomputation).
2. **The parts alone** in a tight loop on the device (median of 5 runs of 2000 calls): the
   CPU RNG state get (``torch.get_rng_state``: a copy of the Mersenne-Twister state), the CUDA
   RNG state get/set, ``get_device_states`` of one tensor, a ``fork_rng`` enter/exit on the
   device, ``_NoopSaveInputs.apply`` (the autograd Function every call creates), a
   ``saved_tensors_hooks`` context, an autocast context, ``torch.empty((0,),
   requires_grad=True)``, and a whole checkpoint call of ``x * 2`` (one saved tensor? none:
   mul by a Python scalar saves nothing) forward and backward beside the bare op.

Outputs (flat, under ``--out``): ``ckpt_parts_blocks.csv`` (model, variant, round, step_s,
host_F_s, host_B_s, host_U_s, calls, packed, policy), ``ckpt_parts_micro.csv`` (part, per_call_s) and
``ckpt_parts.log``.

    # on the GPU (about 2 minutes; the GPT-2 block and the parts alone, about 1):
    OUT=dir PYTHONPATH=. python3 scripts/ckpt_parts_probe.py --out "$OUT" [--only hf:gpt2@64]
    # a dry run on the CPU (RNG parts of the device left out):
    PYTHONPATH=. python scripts/ckpt_parts_probe.py --out /tmp/ckparts --device cpu --quick
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import gc
import os
import statistics
import sys
import time

# (model, batch, block class, optimizer, amp): tinyckpt's blocks (plan_gpu_busy.py --set
# tinyckpt), whose per-call extra the fitted probe under-predicts
CONFIGS = [
    ("hf:HuggingFaceTB/SmolLM2-135M@16", 1, "LlamaDecoderLayer", "adamw", "bf16"),
    ("torchvision:vit_b_16", 1, "EncoderBlock", "adamw", "bf16"),
    # (EfficientNet-B0's MBConv at 64x64, batch 2: its plan's extra was predicted within 5%)
    # selective checkpointing's per-op cost in a transformer block (held-out set 8's GPT-2
    # selective plan was over-predicted)
    ("hf:gpt2@64", 1, "GPT2Block", "adam", "fp16"),
]
QUICK = [("torchvision:resnet18@3x32x32", 2, "BasicBlock", "sgd-momentum", "none")]
VARIANTS = {   # name: checkpoint keyword overrides (None: the plain model)
    "plain": None,
    "ckpt": {},
    "norng": {"preserve_rng_state": False},
    "nocheck": {"determinism_check": "none"},
    "norng_nocheck": {"preserve_rng_state": False, "determinism_check": "none"},
    "selective": {},      # the plan with selective=true (its policy calls counted)
}
PHASES = ("F", "B", "U")
_COUNT = {"calls": 0, "packed": 0, "policy": 0}
_COUNT_CHECK = "probe_count"


def _install_counter():
    """A determinism check that counts the tensors checkpoint packs (one call per pack) and
    runs the default check; and a count of checkpoint calls."""
    from torch.utils import checkpoint as ck
    fns = ck._allowed_determinism_checks_to_fns
    if _COUNT_CHECK not in fns:
        default = fns["default"]

        def count(x):
            _COUNT["packed"] += 1
            return default(x)
        fns[_COUNT_CHECK] = count


@contextlib.contextmanager
def _checkpoint_kwargs(over):
    """``torch.utils.checkpoint.checkpoint`` with ``over`` forced, while the plan wraps the
    model (it looks the function up when it applies)."""
    import torch.utils.checkpoint as ck
    orig = ck.checkpoint

    from snsim.torchsim.plans import _POLICY_CALLS, selective_context_fn
    counted = selective_context_fn(counted=True)

    @functools.wraps(orig)
    def patched(fn, *args, **kwargs):
        _COUNT["calls"] += 1
        kwargs.update(over)
        if "context_fn" in kwargs:       # selective: the same policy, its calls counted
            kwargs["context_fn"] = counted
        before = _POLICY_CALLS[0]
        try:
            return orig(fn, *args, **kwargs)
        finally:
            _COUNT["policy"] += _POLICY_CALLS[0] - before
    ck.checkpoint = patched
    try:
        yield
    finally:
        ck.checkpoint = orig


def build(model, batch, block, optimizer, amp, variant, dev):
    import torch
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.models import resolve_sized
    from snsim.torchsim.plans import as_plan, make_transform
    from snsim.torchsim.predict import infer_target_of
    from snsim.torchsim.record import compute_loss
    spec = resolve_sized(model)
    setup = TrainSetup(optimizer, "foreach", None if amp == "none" else amp)
    torch.manual_seed(0)
    net = spec.build().train()
    target = infer_target_of(net, spec.make_input(2))
    net = net.to(dev)
    x = spec.make_input(batch, dev)
    y = target.make(batch, dev)
    over = VARIANTS[variant]
    if over is not None:
        over = dict(over)
        if variant == "ckpt":
            over["determinism_check"] = _COUNT_CHECK
        opts = [f"modules={block}"] + (["selective=true"] if variant == "selective" else [])
        with _checkpoint_kwargs(over):
            net = make_transform(as_plan("checkpoint", opts))(net)
    opt = setup.make_optimizer(net.parameters())
    autocast = setup.autocast(dev) or contextlib.nullcontext
    scaler = setup.grad_scaler(dev)
    aux = spec.aux_loss_weight

    def step(clock=None):
        with autocast():
            loss = compute_loss(net(x), y, aux)
        if scaler is not None:
            loss = scaler.scale(loss)
        if clock is not None:
            clock.append(time.perf_counter())
        loss.backward()
        if clock is not None:
            clock.append(time.perf_counter())
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        if clock is not None:
            clock.append(time.perf_counter())
    return step, over


def measure(step, iters, dev):
    import torch
    cuda = dev == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()
    for _ in range(3):
        step()
    sync()
    steps = []
    for _ in range(iters):
        if cuda:
            e0, e1 = (torch.cuda.Event(enable_timing=True),
                      torch.cuda.Event(enable_timing=True))
            e0.record()
        t0 = time.perf_counter()
        step()
        if cuda:
            e1.record()
        sync()
        steps.append(e0.elapsed_time(e1) * 1e-3 if cuda else time.perf_counter() - t0)
    host = {p: [] for p in PHASES}
    gc.collect()
    gc.disable()
    try:
        _COUNT.update(calls=0, packed=0, policy=0)
        for _ in range(iters):
            sync()
            clock = [time.perf_counter()]
            step(clock)
            sync()
            for i, p in enumerate(PHASES):
                host[p].append(clock[i + 1] - clock[i])
        calls, packed, policy = (_COUNT[k] / iters for k in ("calls", "packed", "policy"))
    finally:
        gc.enable()
    med = statistics.median
    return {"step_s": med(steps), **{f"host_{p}_s": med(v) for p, v in host.items()},
            "calls": calls, "packed": packed, "policy": policy}


def micro(dev, n=2000):
    """Per-call seconds of checkpoint's parts in a tight loop (see the module docstring)."""
    import torch
    import torch.utils.checkpoint as ck
    cuda = dev == "cuda"
    x = torch.ones(8, device=dev, requires_grad=True)
    dummy = torch.empty((0,), requires_grad=True)
    cpu_state = torch.get_rng_state()
    parts = {
        "cpu_get_rng_state": torch.get_rng_state,
        "cpu_set_rng_state": lambda: torch.set_rng_state(cpu_state),
        "empty0_requires_grad": lambda: torch.empty((0,), requires_grad=True),
        "saved_tensors_hooks_ctx": lambda: torch.autograd.graph.saved_tensors_hooks(
            lambda t: t, lambda t: t).__enter__(),
        "autocast_ctx": lambda: torch.autocast(dev, enabled=False).__enter__(),
        "bare_mul": lambda: x * 2,
    }
    saver = getattr(ck, "_NoopSaveInputs", None)     # torch <= 2.12: the inputs' saver
    if saver is not None:
        parts["noop_save_inputs_apply"] = lambda: saver.apply(dummy, {}, x)
    if cuda:
        dev_state = torch.cuda.get_rng_state()
        parts.update({
            "cuda_get_rng_state": torch.cuda.get_rng_state,
            "cuda_set_rng_state": lambda: torch.cuda.set_rng_state(dev_state),
            "get_device_states_1": lambda: ck.get_device_states(x),
        })

    def fork():
        with torch.random.fork_rng(devices=[0] if cuda else [], device_type=dev):
            pass
    parts["fork_rng_enter_exit"] = fork

    def ck_fwd():
        return ck.checkpoint(lambda t: t.sin(), x, use_reentrant=False)

    def plain_fwd():
        return x.sin()

    def ck_fwd_bwd():
        ck_fwd().sum().backward()

    def plain_fwd_bwd():
        plain_fwd().sum().backward()
    parts.update({"sin_fwd": plain_fwd, "ckpt_sin_fwd": ck_fwd,
                  "sin_fwd_bwd": plain_fwd_bwd, "ckpt_sin_fwd_bwd": ck_fwd_bwd})
    out = {}
    gc.disable()
    try:
        for name, f in parts.items():
            runs = []
            for _ in range(5):
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                if cuda:
                    torch.cuda.synchronize()
                runs.append((time.perf_counter() - t0) / n)
            out[name] = statistics.median(runs)
    finally:
        gc.enable()
    return out


def _write_rows(rows, out):
    keys = ["model", "batch", "block", "optimizer", "amp", "variant", "round", "step_s",
            "host_F_s", "host_B_s", "host_U_s", "calls", "packed", "policy"]
    with open(os.path.join(out, "ckpt_parts_blocks.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{r[k]:.6e}" if k.endswith("_s") else r[k]) for k in keys})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="one small configuration")
    ap.add_argument("--only", default="", help="comma-separated models of CONFIGS to keep")
    args = ap.parse_args(argv)
    import torch
    os.makedirs(args.out, exist_ok=True)
    _install_counter()
    log = open(os.path.join(args.out, "ckpt_parts.log"), "w")

    def say(s):
        print(s, flush=True)
        log.write(s + "\n")
    say(f"torch {torch.__version__} cuda {torch.version.cuda} "
        f"device {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}")
    rows = []
    configs = QUICK if args.quick else CONFIGS
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c[0] in keep]
        if not configs:
            ap.error(f"--only {args.only}: none of {', '.join(c[0] for c in CONFIGS)}")
    for cfg in configs:
        t0 = time.perf_counter()
        try:
            built = {v: build(*cfg, v, args.device) for v in VARIANTS}
            for rnd in range(args.rounds):
                for v, (step, _) in built.items():
                    r = measure(step, args.iters, args.device)
                    rows.append({"model": cfg[0], "batch": cfg[1], "block": cfg[2],
                                 "optimizer": cfg[3], "amp": cfg[4], "variant": v,
                                 "round": rnd, **r})
                    say(f"{cfg[0]} {cfg[4]} {v:<14} r{rnd}: step {r['step_s'] * 1e3:7.2f} ms"
                        f" host F/B/U " + "/".join(f"{r[f'host_{p}_s'] * 1e3:.2f}"
                                                    for p in PHASES)
                        + f" ms, calls {r['calls']:.0f}, packed {r['packed']:.0f}, policy "
                        f"{r['policy']:.0f}")
        except Exception as e:       # one line, then the next configuration
            say(f"  {cfg}: {type(e).__name__}: {e}")
        built = None
        gc.collect()
        if args.device == "cuda":
            torch.cuda.empty_cache()
        say(f"  ({time.perf_counter() - t0:.1f} s)")
        _write_rows(rows, args.out)        # after every configuration: a cut-short run keeps them
    parts = micro(args.device, n=50 if args.quick else 2000)
    with open(os.path.join(args.out, "ckpt_parts_micro.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "per_call_s"])
        for k, v in parts.items():
            w.writerow([k, f"{v:.6e}"])
            say(f"  {k:<24} {v * 1e6:8.2f} us")
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
