"""The validation suites, run on a CUDA machine.

``python -m snsim.torchsim.suite --out traces/h200`` captures every network × batch and
executes SuperNeurons' plans, in one process: one trace per configuration;
``docs/VALIDATION.md`` is generated from them by ``python -m snsim.torchsim.report``. Each
capture starts from an empty allocator cache (``empty_cache()``, cuBLAS workspaces cleared),
but not, as a fresh process would, from an empty address space: cudaMalloc's addresses, and so
best fit's ties and the reserved peak, can depend on the earlier captures.

``python -m snsim.torchsim.suite --only plans --out DIR`` (issue 8) runs :data:`PLAN_RUNS`:
every network under ``plain``, ``checkpoint`` of its block class, ``cpu_offload``
(``pin_memory=true``) and ``superneurons``, plus a few checkpoint variants (:data:`PLAN_EXTRA`:
selective, every other block). For each run it first predicts the plan on the CPU
(:func:`~snsim.torchsim.execute.predict_plan`, the code of ``snsim predict --policy``, with
the preset of the GPU it runs on, h200's on a GPU no preset names or a CPU; in a pool of
worker processes, ahead of the GPU), then executes it for real, in a fresh process
of its own as a user's run would start (``--same-process``: all in this one), without hooks
(:func:`~snsim.torchsim.execute.measure`: peaks, median step time of ``--iters`` iterations
after ``--warmup`` warm-ups). It writes one document per run — measured values, the stored
before-run prediction, torch/CUDA/cuDNN/driver versions, or the error that stopped it — into
one ``PLAN.json.gz`` bundle per plan (rewritten after every run, so a killed suite keeps what it
did) and a ``summary.csv``: a handful of flat files. A run whose estimate (from its
prediction) would pass ``--deadline-s`` is skipped and recorded as skipped.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

from ..errors import ConfigError

DEEP_RESNET = "torchvision:resnet:3,16,62,3"   # ResNet(Bottleneck, [3, 16, 62, 3]): 254 layers
# batch sizes at which the H200 is busy for the whole step: at smaller ones eager PyTorch is
# CPU-bound and the step-boundary hooks' own CPU time shows in the measured step times
CAPTURES = (
    ("torchvision:alexnet", (128, 256)),
    ("torchvision:vgg16", (32, 64)),
    ("torchvision:resnet50", (128, 256)),
    ("torchvision:resnet101", (128, 256)),
    ("torchvision:resnet152", (128, 256)),
    (DEEP_RESNET, (128, 192)),
    ("torchvision:densenet121", (256, 384)),
    ("torchvision:inception_v3", (128, 256)),
)
EXECUTIONS = (
    ("torchvision:resnet50", 256, "recompute"),
    ("torchvision:resnet50", 256, "offload"),
    ("torchvision:resnet50", 256, "superneurons"),
    ("torchvision:vgg16", 64, "recompute"),
    ("torchvision:vgg16", 64, "offload"),
)


def _name(model, batch, policy=None):
    from .models import resolve_model
    n = resolve_model(model).name
    return f"{n}_b{batch}" + (f"_{policy}" if policy else "")


def _last_heldout():
    return max(int(k[len("heldout"):] or 1) for k in PLAN_SETS if k.startswith("heldout"))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m snsim.torchsim.suite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None,
                   help="output directory (default: traces/h200; with --only plans, "
                        "traces/h200/plans_SET, so that plan bundles never mix with captures)")
    p.add_argument("--only", choices=("capture", "execute", "all", "plans"), default="all")
    p.add_argument("--match", default="",
                   help="run only configurations whose name has one of these comma-separated "
                        "parts")
    p.add_argument("--timing-iters", type=int, default=5)
    p.add_argument("--plain-iters", type=int, default=10)
    g = p.add_argument_group("--only plans")
    g.add_argument("--warmup", type=int, default=2, help="warm-up iterations (default 2)")
    g.add_argument("--iters", type=int, default=5, help="timed iterations (default 5)")
    g.add_argument("--deadline-s", type=float, default=480.0,
                   help="skip runs that would end after this many seconds (default 480)")
    g.add_argument("--workers", type=int, default=None,
                   help="prediction processes (default: CPUs - 4, at most 10; 0: in process)")
    g.add_argument("--mode", choices=("measure", "capture"), default="measure",
                   help="measure: hook-free iterations (default); capture: full snsim capture "
                        "with the program (slower, larger files)")
    g.add_argument("--dry-run", action="store_true",
                   help="predict every run on the CPU and print the estimates; no GPU")
    g.add_argument("--overlap", action="store_true",
                   help="start running while predictions are still being made (faster; the "
                        "workers' CPU load may slow CPU-bound runs)")
    g.add_argument("--set", choices=tuple(PLAN_SETS), default="standard",
                   help="standard: the 10 networks of docs/VALIDATION.md section 1; heldout, "
                        f"heldout2 ... heldout{_last_heldout()}: networks, batches, "
                        "precisions, optimizers and plans never run before, each set written "
                        "and predicted before its run (docs/VALIDATION.md section 1 says what "
                        "each tested); pageable: cpu_offload with pin_memory=false")
    g.add_argument("--same-process", action="store_true",
                   help="execute every run in this process (faster; runs after the first find "
                        "CUDA's address space as earlier runs left it, which moves reserved "
                        "peaks); default: each run in a fresh process, as a user's")
    g.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.only == "plans":
        out = args.out or os.path.join("traces", "h200", f"plans_{args.set}")
        return run_plans(PLAN_SETS[args.set], out, match=args.match, warmup=args.warmup,
                         iters=args.iters, deadline_s=args.deadline_s, workers=args.workers,
                         mode=args.mode, dry_run=args.dry_run, device=args.device,
                         predict_first=not args.overlap,
                         fresh_process=False if args.same_process else None)
    args.out = args.out or os.path.join("traces", "h200")
    from .capture import capture, write_capture
    from .execute import execute
    from .validate import validate
    failures = 0
    done = []
    jobs = []
    if args.only in ("capture", "all"):
        jobs += [(m, b, None) for m, bs in CAPTURES for b in bs]
    if args.only in ("execute", "all"):
        jobs += list(EXECUTIONS)
    for model, batch, policy in jobs:
        name = _name(model, batch, policy)
        if args.match and not any(m in name for m in args.match.split(",")):
            continue
        path = f"{args.out}/{name}.json.gz"
        t0 = time.perf_counter()
        try:
            if policy is None:
                doc = capture(model, batch, timing_iters=args.timing_iters,
                              plain_iters=args.plain_iters)
            else:
                plain = f"{args.out}/{_name(model, batch)}.json.gz"
                doc = execute(model, batch, policy, timing_iters=args.timing_iters,
                              plain_iters=args.plain_iters,
                              plain_trace=plain if os.path.exists(plain) else None)
            write_capture(doc, path)
            done.append(path)
            m = doc["measured"]
            print(f"{name}: {time.perf_counter() - t0:.1f} s, allocated "
                  f"{m['peak_allocated_bytes']:,} B, reserved {m['peak_reserved_bytes']:,} B, "
                  f"step {m['step_time_s'] * 1e3:.2f} ms (hooked "
                  f"{m['hooked_step_time_s'] * 1e3:.2f} ms), base "
                  f"{m.get('base_allocated_bytes')}, notes "
                  f"{ {k: v for k, v in doc['program']['notes'].items() if k != 'allocator_trace_sample'} }",
                  flush=True)
            if doc.get("predictions"):
                print(f"   prediction {doc['predictions']}", flush=True)
        except Exception:   # keep going: one broken configuration must not stop the suite
            failures += 1
            print(f"{name}: FAILED after {time.perf_counter() - t0:.1f} s", flush=True)
            traceback.print_exc()
    if done:
        for r in validate(done):
            print(f"{r['trace']:<40} alloc {r['err_allocated_pct']:+7.2f}%  reserved "
                  f"{r['err_reserved_pct']:+7.2f}%  step {r['err_step_time_pct']:+7.2f}%  "
                  f"(engine alloc {r['err_engine_allocated_pct']:+.2f}%)", flush=True)
    return 1 if failures else 0


# -- issue 8: plans predicted before the run, then executed ---------------------------------
# (model, batch, checkpoint options): the block class each network's users would checkpoint
# (VGG16 has none: its conv stacks, as `recompute`)
PLAN_NETWORKS = (
    ("torchvision:resnet50", 128, "modules=Bottleneck"),
    ("torchvision:resnet152", 64, "modules=Bottleneck"),
    ("torchvision:vgg16", 64, ""),
    ("torchvision:densenet121", 128, "modules=_DenseLayer"),
    ("torchvision:resnet34", 128, "modules=BasicBlock"),
    ("torchvision:mobilenet_v2", 128, "modules=InvertedResidual"),
    ("torchvision:efficientnet_b0", 128, "modules=MBConv"),
    ("torchvision:vit_b_16", 64, "modules=EncoderBlock"),
    ("snsim:transformer_encoder", 32, "modules=TransformerEncoderLayer"),
    ("snsim:gpt", 8, "modules=Block"),
)
PLAN_POLICIES = ("plain", "checkpoint", "superneurons", "cpu_offload")


# a few more checkpoint variants (SPEC §12.3's selective checkpointing, every other block)
PLAN_EXTRA = (
    ("torchvision:resnet50", 128, ["modules=Bottleneck", "selective=true"]),
    ("torchvision:resnet50", 128, ["modules=Bottleneck", "every=2"]),
    ("torchvision:vit_b_16", 64, ["modules=EncoderBlock", "selective=true"]),
    ("snsim:gpt", 8, ["modules=Block", "selective=true"]),
)


def _plan_runs():
    runs = []
    # cpu_offload last: the slowest runs, the first to drop if time runs short
    for policy in PLAN_POLICIES:
        if policy == "cpu_offload":
            runs += [{"model": m, "batch": b, "policy": "checkpoint", "options": list(o)}
                     for m, b, o in PLAN_EXTRA]
        for model, batch, ckpt in PLAN_NETWORKS:
            opts = []
            if policy == "checkpoint" and ckpt:
                opts = [ckpt]
            elif policy == "cpu_offload":
                opts = ["pin_memory=true"]
            runs.append({"model": model, "batch": batch, "policy": policy, "options": opts})
    return runs


PLAN_RUNS = _plan_runs()

# held out: networks, batches, precisions and optimizers that no earlier plan suite, capture or
# kernel-table row was made of (a test of the model, not of what it was tuned on)
_HELDOUT = (
    # (model, batch, policies with their options, training setup)
    ("torchvision:resnet101", 96, {"plain": [], "checkpoint": ["modules=Bottleneck"],
                                   "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:wide_resnet50_2", 64, {"plain": [], "checkpoint": ["modules=Bottleneck"],
                                         "superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet169", 64, {"plain": [], "checkpoint": ["modules=_DenseLayer"]}, {}),
    ("torchvision:convnext_tiny", 64, {"plain": [], "checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:regnet_y_1_6gf", 96, {"plain": [], "superneurons": [],
                                        "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:shufflenet_v2_x1_0", 256, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {}),
    ("torchvision:vit_b_32", 128, {"plain": [], "checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mnasnet1_0", 128, {"plain": [], "checkpoint": ["every=2"]},
     {"amp": "fp16"}),
    ("torchvision:vgg19", 48, {"plain": [], "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:resnet50", 96, {"plain": [], "superneurons": []},
     {"optimizer": "adamw", "amp": "fp16"}),
)


def _plan_set(networks, hf_networks=()):
    """The runs of a held-out set: one per (network, policy) of ``networks`` ``(model,
    batch, {policy: options}, training setup)`` and of ``hf_networks`` (the same with the
    input shape after the batch)."""
    return tuple(
        {"model": m, "batch": b, "policy": pol, "options": list(opts), **setup}
        for m, b, plans, setup in networks for pol, opts in plans.items()) + tuple(
        {"model": m, "batch": b, "input_shape": shape, "policy": pol, "options": list(opts),
         **setup}
        for m, b, shape, plans, setup in hf_networks for pol, opts in plans.items())


PLAN_HELDOUT = _plan_set(_HELDOUT)
# a second held-out set, written (2026-11-30, 12:55 UTC, commit 3b422f4) before any of it ran: networks no
# capture, plan suite or kernel-table row was made of, and a Hugging Face model, under every
# plan kind, precision and optimizer; the test of the model after the first held-out set's
# fixes
_HELDOUT2 = (
    ("torchvision:resnext50_32x4d", 64, {"plain": [], "checkpoint": ["modules=Bottleneck"],
                                         "superneurons": []}, {}),
    ("torchvision:mobilenet_v3_large", 128, {"plain": [],
                                             "checkpoint": ["modules=InvertedResidual"],
                                             "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet201", 48, {"plain": [], "superneurons": []}, {}),
    ("torchvision:resnet18", 256, {"plain": [], "checkpoint": ["modules=BasicBlock"]},
     {"amp": "fp16"}),
    ("torchvision:swin_t", 64, {"plain": [], "checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_3_2gf", 64, {"plain": [], "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:vgg13", 64, {"plain": [], "superneurons": []}, {}),
    ("torchvision:efficientnet_b2", 64, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
    ("torchvision:wide_resnet101_2", 32, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused"}),
)
_HELDOUT2_HF = (
    ("hf:gpt2-medium", 4, (512,), {"plain": [], "checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT2 = _plan_set(_HELDOUT2, _HELDOUT2_HF)
# a third held-out set, written (2026-11-30, 15:38 UTC, commit a2a93a2) before any of it ran
# and before that session's model changes: networks no capture, plan suite or kernel-table row
# was made of (SqueezeNet, EfficientNetV2, ConvNeXt-S, ResNeXt-101, ShuffleNetV2 x2, VGG-11-BN,
# RegNetY-3.2GF, MNASNet 0.5, ViT-L/32) and a Hugging Face architecture none of the others has
# (Qwen2: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU); run first with that
# commit's code (traces/h200/plans_heldout3), again with the session's final code
# (traces/h200/plans_heldout3_rerun)
_HELDOUT3 = (
    ("torchvision:squeezenet1_1", 256, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:efficientnet_v2_s", 48,
     {"plain": [], "checkpoint": ["modules=MBConv,FusedMBConv"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_small", 32, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:resnext101_32x8d", 32, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"amp": "fp16"}),
    ("torchvision:shufflenet_v2_x2_0", 192, {"plain": [], "superneurons": []}, {}),
    ("torchvision:vgg11_bn", 96, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw"}),
    ("torchvision:regnet_y_3_2gf", 64, {"plain": [], "superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mnasnet0_5", 256, {"plain": []}, {}),
    ("torchvision:vit_l_32", 32, {"plain": [], "checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT3_HF = (
    ("hf:Qwen/Qwen2-0.5B", 4, (512,), {"plain": [], "checkpoint": ["modules=Qwen2DecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT3 = _plan_set(_HELDOUT3, _HELDOUT3_HF)
# a fourth held-out set, written (2026-11-30, 18:25 UTC, on commit 0e6b6e3) before any of it
# ran and before that session's model changes: networks no capture, plan suite or kernel-table
# row was made of (GoogLeNet, MobileNetV3-S, EfficientNet-B4, RegNetX-8GF, Swin-S,
# DenseNet-161, ResNeXt-101 64x4d, VGG-19-BN, MaxViT-T, ConvNeXt-B, ShuffleNetV2 x0.5,
# ViT-L/16) and GPT-2 large, under every plan kind, precision and optimizer
_HELDOUT4 = (
    ("torchvision:googlenet", 128, {"plain": [], "checkpoint": ["modules=Inception"]}, {}),
    ("torchvision:mobilenet_v3_small", 256, {"plain": [], "superneurons": []},
     {"optimizer": "adam", "amp": "bf16"}),
    ("torchvision:efficientnet_b4", 32, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw"}),
    ("torchvision:regnet_x_8gf", 64, {"plain": [], "checkpoint": ["modules=ResBottleneckBlock"]},
     {"amp": "fp16"}),
    ("torchvision:swin_s", 32, {"plain": [], "checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet161", 48, {"plain": [], "superneurons": []}, {"optimizer": "sgd"}),
    ("torchvision:resnext101_64x4d", 48, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:vgg19_bn", 64, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:maxvit_t", 32, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_base", 32, {"plain": [], "checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:shufflenet_v2_x0_5", 512, {"plain": []}, {}),
    ("torchvision:vit_l_16", 16, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT4_HF = (
    ("hf:gpt2-large", 2, (1024,), {"plain": [], "checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT4 = _plan_set(_HELDOUT4, _HELDOUT4_HF)
# a fifth held-out set, written (2026-11-30, 21:15 UTC, on commit 3d2e3c8) before any of it
# ran and before that session's model changes: networks no capture, plan suite or kernel-table
# row was made of (VGG-16-BN, RegNetY-8GF, EfficientNet-B1, Swin-V2-T, MNASNet 1.3,
# ShuffleNetV2 x1.5, RegNetX-1.6GF, ConvNeXt-L, SqueezeNet 1.0, EfficientNetV2-M,
# RegNetX-400MF, Swin-B) and a Hugging Face architecture none of the others has (GPT-NeoX,
# Pythia-410M: partial rotary embeddings, parallel attention and MLP), under every plan kind,
# precision and optimizer
_HELDOUT5 = (
    ("torchvision:vgg16_bn", 64, {"plain": [], "superneurons": []}, {}),
    ("torchvision:regnet_y_8gf", 32, {"plain": [], "checkpoint": ["modules=ResBottleneckBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b1", 96, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:swin_v2_t", 32,
     {"plain": [], "checkpoint": ["modules=SwinTransformerBlockV2"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mnasnet1_3", 128, {"plain": [], "superneurons": []}, {}),
    ("torchvision:shufflenet_v2_x1_5", 256, {"plain": [], "checkpoint": ["every=2"]},
     {"optimizer": "adam", "amp": "bf16"}),
    ("torchvision:regnet_x_1_6gf", 128, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "sgd"}),
    ("torchvision:convnext_large", 16, {"plain": [], "checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:squeezenet1_0", 128, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:efficientnet_v2_m", 16, {"plain": [], "superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_400mf", 512, {"plain": []}, {}),
    ("torchvision:swin_b", 16, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT5_HF = (
    ("hf:EleutherAI/pythia-410m", 4, (1024,),
     {"plain": [], "checkpoint": ["modules=GPTNeoXLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT5 = _plan_set(_HELDOUT5, _HELDOUT5_HF)
# a sixth held-out set, written (2026-11-30, 21:45 UTC, on commit 75a3eed) before any of it
# ran and before any of that session's model changes were merged, to be run once with the
# session's final code: networks no capture, plan suite or kernel-table row was made of
# (VGG-11, VGG-13-BN, MNASNet 0.75, EfficientNet-B3, EfficientNet-B5, EfficientNetV2-L,
# RegNetY-400MF, RegNetY-16GF, RegNetX-800MF, RegNetX-16GF, Swin-V2-S) and a Hugging Face
# architecture none of the others has (OPT-350M: post-block layer norm, ReLU MLP, learned
# positions, projected embeddings, dropout); RegNetX-800MF's save_on_cpu() in its default,
# pageable copies, added (21:58 UTC) before the pageable copy model's re-measurement ran
_HELDOUT6 = (
    ("torchvision:vgg11", 128, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:vgg13_bn", 48, {"plain": [], "superneurons": []}, {"optimizer": "adamw"}),
    ("torchvision:mnasnet0_75", 192, {"plain": [], "checkpoint": ["every=2"]},
     {"amp": "bf16"}),
    ("torchvision:efficientnet_b3", 48, {"plain": [], "checkpoint": ["modules=MBConv"]}, {}),
    ("torchvision:efficientnet_b5", 16, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_v2_l", 8, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:regnet_y_400mf", 256, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
    ("torchvision:regnet_y_16gf", 32, {"plain": [], "checkpoint": ["modules=ResBottleneckBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_800mf", 256, {"plain": [], "cpu_offload": ["pin_memory=false"]},
     {"optimizer": "sgd"}),
    ("torchvision:regnet_x_16gf", 48, {"plain": [], "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:swin_v2_s", 24,
     {"plain": [], "checkpoint": ["modules=SwinTransformerBlockV2"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT6_HF = (
    ("hf:facebook/opt-350m", 8, (512,), {"plain": [], "checkpoint": ["modules=OPTDecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT6 = _plan_set(_HELDOUT6, _HELDOUT6_HF)
# a seventh held-out set, written (2026-11-30, 23:58 UTC, on commit 0d4c755; committed as
# 13608f8) before any of it ran and before any of this session's changes, to be run once with
# the session's final code:
# networks no capture, plan suite or kernel-table row was made of (RegNetY-32GF,
# EfficientNet-B6, EfficientNet-B7, Swin-V2-B, ViT-H/14) and a Llama-architecture model
# (SmolLM2-135M: RMSNorm, SwiGLU, rotary positions, grouped-query attention), plus networks run
# before at batches, precisions, optimizers and plans never run with them
_HELDOUT7 = (
    ("torchvision:regnet_y_32gf", 24, {"plain": [], "checkpoint": ["modules=ResBottleneckBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b6", 12, {"plain": [], "superneurons": []}, {}),
    ("torchvision:efficientnet_b7", 8, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:swin_v2_b", 16,
     {"plain": [], "checkpoint": ["modules=SwinTransformerBlockV2", "selective=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vit_h_14", 4, {"plain": [], "checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet50", 32, {"plain": [], "checkpoint": ["modules=Bottleneck",
                                                             "selective=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet121", 16, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:vit_b_16", 16, {"plain": [], "checkpoint": ["every=3"]}, {"optimizer": "sgd"}),
    ("torchvision:mobilenet_v3_small", 512, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
    ("torchvision:resnet101", 48, {"checkpoint": ["modules=Bottleneck", "every=2"]},
     {"optimizer": "adam"}),
)
_HELDOUT7_HF = (
    ("hf:HuggingFaceTB/SmolLM2-135M", 8, (512,),
     {"plain": [], "checkpoint": ["modules=LlamaDecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT7 = _plan_set(_HELDOUT7, _HELDOUT7_HF)
# an eighth held-out set, written (2026-12-01, 02:40 UTC, on commit 0f48049) before any of it
# ran and before any of session 8's changes, to be run once with the session's final code:
# networks run before, each at a batch, precision, optimizer and plan never run with it
# (selective checkpointing of a wide ResNet and a ViT-L, fp16 save_on_cpu of a ConvNeXt,
# pageable save_on_cpu of an EfficientNet, a MaxViT and a DenseNet-169 with every=2, fused
# AdamW on ResNet-152), and two Hugging Face models at sequence lengths never run with them
_HELDOUT8 = (
    ("torchvision:wide_resnet50_2", 48,
     {"plain": [], "checkpoint": ["modules=Bottleneck", "selective=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_small", 32, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:regnet_x_8gf", 64, {"plain": [], "superneurons": []}, {"optimizer": "sgd"}),
    ("torchvision:densenet169", 32, {"plain": [], "checkpoint": ["every=2"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vit_l_16", 8,
     {"plain": [], "checkpoint": ["modules=EncoderBlock", "selective=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:googlenet", 128, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
    ("torchvision:efficientnet_b2", 64, {"plain": [], "cpu_offload": ["pin_memory=false"]},
     {"optimizer": "adam"}),
    ("torchvision:maxvit_t", 32, {"plain": [], "checkpoint": ["every=2"]}, {"amp": "bf16"}),
    ("torchvision:resnet152", 96, {"plain": [], "checkpoint": ["modules=Bottleneck", "every=3"]},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
)
_HELDOUT8_HF = (
    ("hf:Qwen/Qwen2-0.5B", 8, (256,), {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:gpt2", 16, (512,), {"plain": [], "checkpoint": ["modules=GPT2Block", "selective=true"]},
     {"optimizer": "adam", "amp": "fp16"}),
)
PLAN_HELDOUT8 = _plan_set(_HELDOUT8, _HELDOUT8_HF)
# a ninth held-out set, written (2026-12-01, 05:25 UTC, on commit 6ea3c09) before any of it ran
# and before any of session 9's changes, to be run once with the session's final code:
# networks seldom or never run in a plan suite (ResNeXt-50, Swin-T, EfficientNetV2-S, VGG19-BN,
# MNASNet-1.3, RegNetY-16GF, Inception-v3, ViT-L/32, DenseNet-161, OPT-350M, Pythia-410M), each
# at a batch, precision, optimizer and plan never run with it
_HELDOUT9 = (
    ("torchvision:resnext50_32x4d", 64, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_t", 32, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:efficientnet_v2_s", 48, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:vgg19_bn", 32, {"plain": [], "checkpoint": ["every=2"]}, {"optimizer": "sgd"}),
    ("torchvision:mnasnet1_3", 128, {"plain": [], "cpu_offload": ["pin_memory=false"]},
     {"optimizer": "adam"}),
    ("torchvision:regnet_y_16gf", 32,
     {"plain": [], "checkpoint": ["modules=ResBottleneckBlock", "selective=true"]},
     {"amp": "fp16"}),
    ("torchvision:inception_v3", 64, {"plain": [], "superneurons": []}, {"optimizer": "adam"}),
    ("torchvision:vit_l_32", 32, {"plain": [], "checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:densenet161", 24, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
)
_HELDOUT9_HF = (
    ("hf:facebook/opt-350m", 8, (512,), {"plain": [], "checkpoint": ["modules=OPTDecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-410m", 4, (1024,), {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adam", "amp": "bf16"}),
)
PLAN_HELDOUT9 = _plan_set(_HELDOUT9, _HELDOUT9_HF)
# a tenth held-out set, written (2026-12-01, 09:20 UTC, on commit 3fb7ec3) before any of it ran
# and before any of session 10's changes, to be run once with the session's final code:
# networks seldom or never run in a plan suite (ShuffleNetV2-x2.0, ResNet-34, ConvNeXt-B, VGG11,
# EfficientNet-B1, Wide-ResNet-101, ViT-B/32, SqueezeNet-1.1, RegNetX-3.2GF, GPT-2 medium,
# SmolLM2-135M), each at a batch, precision, optimizer and plan never run with it
_HELDOUT10 = (
    ("torchvision:shufflenet_v2_x2_0", 256, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:resnet34", 128, {"plain": [], "checkpoint": ["modules=BasicBlock"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:convnext_base", 24,
     {"plain": [], "checkpoint": ["modules=CNBlock", "selective=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vgg11", 64, {"plain": [], "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:efficientnet_b1", 96, {"plain": [], "checkpoint": ["every=2"]}, {"amp": "fp16"}),
    ("torchvision:wide_resnet101_2", 24, {"plain": [], "superneurons": []}, {"optimizer": "adam"}),
    ("torchvision:vit_b_32", 96, {"plain": [], "cpu_offload": ["pin_memory=false"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:squeezenet1_1", 256, {"plain": [], "checkpoint": ["every=3"]},
     {"optimizer": "sgd"}),
    ("torchvision:regnet_x_3_2gf", 128, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "bf16"}),
)
_HELDOUT10_HF = (
    ("hf:gpt2-medium", 4, (512,), {"plain": [], "checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 8, (256,), {"plain": [], "superneurons": []},
     {"optimizer": "adam", "amp": "fp16"}),
)
PLAN_HELDOUT10 = _plan_set(_HELDOUT10, _HELDOUT10_HF)
# an eleventh held-out set, written (2026-12-02, 00:20 UTC) before any of it ran: the model
# families snsim could not build before this session -- torchvision's segmentation models
# (dense N x H x W targets, 480 x 480 crops) and video models (3-D convolutions, 16-frame
# clips) -- under every plan kind and precision
_HELDOUT11 = (
    ("torchvision:fcn_resnet50", 8, {"plain": [], "checkpoint": ["modules=Bottleneck"]}, {}),
    ("torchvision:deeplabv3_resnet50", 8, {"plain": [], "superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:lraspp_mobilenet_v3_large", 16,
     {"plain": [], "cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:r3d_18", 16, {"plain": [], "checkpoint": ["modules=BasicBlock"]},
     {"amp": "fp16"}),
    ("torchvision:r2plus1d_18", 8, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:mvit_v2_s", 8, {"plain": [], "checkpoint": ["modules=MultiscaleBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin3d_t", 4, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:s3d", 8, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
)
PLAN_HELDOUT11 = _plan_set(_HELDOUT11)
# a twelfth, written (2026-12-02, 01:40 UTC) after set 11 informed the 3-D convolution rows,
# their workspaces and the upsample rows, before any of it ran: the same families at other
# batches, depths and precisions
_HELDOUT12 = (
    ("torchvision:r3d_18", 24, {"plain": [], "checkpoint": ["modules=BasicBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mc3_18", 8, {"plain": [], "superneurons": []}, {}),
    ("torchvision:r2plus1d_18", 16, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:fcn_resnet101", 4, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"amp": "bf16"}),
    ("torchvision:deeplabv3_mobilenet_v3_large", 16, {"plain": [], "superneurons": []},
     {"amp": "fp16"}),
    ("torchvision:lraspp_mobilenet_v3_large", 8,
     {"plain": [], "checkpoint": ["modules=InvertedResidual"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT12 = _plan_set(_HELDOUT12)
# a thirteenth, written (2026-12-02, 01:10 UTC) after set 12 informed the dilated convolution
# rows, before any of it ran: segmentation networks at other batches, depths and precisions
_HELDOUT13 = (
    ("torchvision:deeplabv3_resnet101", 4, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:fcn_resnet50", 16, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:deeplabv3_mobilenet_v3_large", 8,
     {"plain": [], "checkpoint": ["modules=InvertedResidual"]}, {"amp": "bf16"}),
    ("torchvision:lraspp_mobilenet_v3_large", 32, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:deeplabv3_resnet50", 4, {"plain": []}, {}),
)
PLAN_HELDOUT13 = _plan_set(_HELDOUT13)
# a fourteenth, written (2026-12-02, 03:11 UTC, after eb22aee: the upsample backward's
# contention, the pooled branches' rows) before any of it ran: DeepLabV3 at batches and
# precisions not profiled (batch 16's ASPP pooling beyond every row), networks no suite ran
# (RegNetY-800MF, RegNetX-32GF, Swin3D-S, EfficientNet-B0 under bf16) and GPT-2 at another
# sequence length
_HELDOUT14 = (
    ("torchvision:deeplabv3_resnet50", 16, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"amp": "fp16"}),
    ("torchvision:deeplabv3_resnet101", 2, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:deeplabv3_mobilenet_v3_large", 32, {"plain": []}, {}),
    ("torchvision:regnet_y_800mf", 128, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:regnet_x_32gf", 16, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin3d_s", 2, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b0", 128, {"plain": [], "checkpoint": ["modules=MBConv"]},
     {"amp": "bf16"}),
)
_HELDOUT14_HF = (
    ("hf:gpt2", 32, (256,), {"plain": [], "checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT14 = _plan_set(_HELDOUT14, _HELDOUT14_HF)
# a fifteenth, written (2026-12-02, 04:21 UTC) after session 13's upsample, segnet and zoo
# workspace changes, before any of it ran: segmentation networks at batches and precisions no
# calibrate group or profile used, and classification networks at new batches/precisions
_HELDOUT15 = (
    ("torchvision:deeplabv3_resnet101", 8, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:fcn_resnet50", 4, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:lraspp_mobilenet_v3_large", 24,
     {"plain": [], "checkpoint": ["modules=InvertedResidual"]}, {"amp": "bf16"}),
    ("torchvision:deeplabv3_mobilenet_v3_large", 24, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:fcn_resnet101", 8, {"plain": []}, {}),
    ("torchvision:mobilenet_v2", 256, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"amp": "bf16"}),
    ("torchvision:resnet152", 32, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:vit_b_16", 48, {"plain": []}, {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT15 = _plan_set(_HELDOUT15)
# a sixteenth, written (2026-12-02, 06:27 UTC) after session 14's in-network checkpoint costs
# and broader workspace probe, before any of it ran: mostly checkpoint and superneurons plans
# (the mechanism the change prices) on networks, batches and precisions never run
_HELDOUT16 = (
    ("torchvision:resnet101", 48, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"amp": "bf16"}),
    ("torchvision:densenet201", 32, {"checkpoint": ["modules=_DenseLayer"]}, {"amp": "bf16"}),
    ("torchvision:mobilenet_v3_large", 192, {"plain": [], "superneurons": []}, {"amp": "bf16"}),
    ("torchvision:vit_b_16", 32, {"checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b2", 64, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:convnext_tiny", 48, {"plain": [], "checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet50", 64, {"checkpoint": ["every=2", "modules=Bottleneck"]}, {}),
)
_HELDOUT16_HF = (
    ("hf:gpt2", 8, (512,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT16 = _plan_set(_HELDOUT16, _HELDOUT16_HF)
# a seventeenth, written (2026-12-02, 08:20 UTC) after session 15's row-op (layer norm,
# column sums), channels-last depthwise, pooling and attention tables, before any of it ran:
# networks whose steps those ops carry, at batches, precisions and plans never run
_HELDOUT17 = (
    ("torchvision:convnext_small", 32, {"plain": []}, {}),
    ("torchvision:convnext_base", 32, {"plain": [], "checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_t", 64, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:inception_v3", 96, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:googlenet", 128, {"plain": []}, {}),
    ("torchvision:vit_l_16", 16, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet169", 64, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:vgg19", 48, {"plain": []}, {"amp": "bf16"}),
)
_HELDOUT17_HF = (
    ("hf:gpt2", 8, (1024,), {"plain": []}, {}),
    ("hf:gpt2", 16, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT17 = _plan_set(_HELDOUT17, _HELDOUT17_HF)
# written 2026-12-02 (session 18) after the kernels' own copies were timed and grouped convs
# looked up by channels per group, before any of it ran: plans on networks and batches the
# plan suites never ran, grouped convs and LayerNorm networks among them
_HELDOUT18 = (
    ("torchvision:regnet_y_800mf", 96,
     {"plain": [], "checkpoint": ["modules=ResBottleneckBlock"]}, {}),
    ("torchvision:resnext50_32x4d", 48, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:vit_b_16", 16, {"checkpoint": ["modules=EncoderBlock"]}, {}),
    ("torchvision:swin_s", 16, {"checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b1", 64, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:mobilenet_v3_large", 96, {"checkpoint": ["modules=InvertedResidual"]},
     {"amp": "bf16"}),
    ("torchvision:resnet50", 96, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet121", 48, {"checkpoint": ["modules=_DenseLayer"]}, {}),
    ("torchvision:vgg16_bn", 32, {"superneurons": []}, {}),
)
_HELDOUT18_HF = (
    ("hf:gpt2", 4, (1024,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT18 = _plan_set(_HELDOUT18, _HELDOUT18_HF)
# a nineteenth held-out set, written (2026-12-02 22:35 UTC, session 19) after the attention
# GEMM, 3-D pooling, indexing and conv-row FLOP changes and before any of it ran: window
# attention (Swin-T, MaxViT), MViT-V2-S, S3D and Swin3D-T (3-D pools, relative position bias),
# mixed precision and every plan kind, at batches no plan run used
_HELDOUT19 = (
    ("torchvision:swin_t", 48, {"plain": [], "checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mvit_v2_s", 4, {"plain": [], "checkpoint": ["modules=MultiscaleBlock"]}, {}),
    ("torchvision:s3d", 8, {"plain": [], "cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("torchvision:swin3d_t", 2, {"plain": [], "superneurons": []}, {"amp": "fp16"}),
    ("torchvision:maxvit_t", 24, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet50", 48, {"checkpoint": ["every=2", "modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:convnext_small", 24, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:regnet_y_3_2gf", 48, {"plain": []}, {}),
)
_HELDOUT19_HF = (
    ("hf:gpt2", 6, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT19 = _plan_set(_HELDOUT19, _HELDOUT19_HF)
# a twentieth held-out set, written (2026-12-03 02:25 UTC, session 20) after the softmax
# backward's temporary (record.cuda_temporaries) and before any of it ran: explicit-softmax
# attention (Swin3D-S, Swin-B, Swin-V2-T, MViT-V2-S, MaxViT-T) under every plan kind, at
# batches and precisions no run used, OPT-350M (never run), and two CNNs
_HELDOUT20 = (
    ("torchvision:swin3d_s", 2, {"cpu_offload": ["pin_memory=true"],
                                 "checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_b", 24, {"plain": [], "superneurons": [],
                                "checkpoint": ["modules=SwinTransformerBlock"]}, {"amp": "fp16"}),
    ("torchvision:mvit_v2_s", 6, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:maxvit_t", 12, {"checkpoint": ["every=2"]}, {}),
    ("torchvision:swin_v2_t", 24, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:resnet101", 64, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:efficientnet_b2", 48, {"checkpoint": ["modules=MBConv"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT20_HF = (
    ("hf:opt-350m", 4, (512,), {"plain": [], "checkpoint": ["modules=OPTDecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT20 = _plan_set(_HELDOUT20, _HELDOUT20_HF)
# a twenty-first held-out set, written (2026-12-03 03:15 UTC, session 20) after the fp16
# softmax (half_to_float) and the value-propagating fake run, before any of it ran: fp16
# explicit-softmax attention under each plan kind, a fused-attention control, and OPT-350M in
# fp16 (its causal-mask branch on values)
_HELDOUT21 = (
    ("torchvision:swin_t", 64, {"plain": [], "cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:swin_v2_s", 16, {"checkpoint": ["modules=SwinTransformerBlockV2"]},
     {"amp": "fp16"}),
    ("torchvision:mvit_v2_s", 4, {"checkpoint": ["modules=MultiscaleBlock"]}, {"amp": "fp16"}),
    ("torchvision:maxvit_t", 16, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:swin3d_t", 2, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:vit_b_16", 32, {"checkpoint": ["modules=EncoderBlock"]}, {"amp": "fp16"}),
)
_HELDOUT21_HF = (
    ("hf:opt-350m", 2, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT21 = _plan_set(_HELDOUT21, _HELDOUT21_HF)
# a twenty-second held-out set, written (2026-12-03 08:00 UTC, session 22) before any of it
# ran: (network, batch, precision, plan) combinations never run, one per family, with
# save_on_cpu's own default (pageable) once, a fused optimizer once; predicted on this
# session's CPU (torch 2.14.1, modelling the H200's 2.11: snsim predict --torch-version
# default) before the device run, as well as by the suite on the device's CPU
_HELDOUT22 = (
    ("torchvision:resnet152", 48, {"checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet169", 64, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
    ("torchvision:vgg19_bn", 48, {"superneurons": []}, {}),
    ("torchvision:efficientnet_b3", 64, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:convnext_tiny", 96, {"checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:regnet_y_1_6gf", 128, {"plain": []}, {}),
    ("torchvision:vit_b_32", 128, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_s", 32, {"superneurons": []}, {}),
    ("torchvision:mobilenet_v3_large", 192, {"checkpoint": ["every=2"]}, {"amp": "fp16"}),
    ("torchvision:wide_resnet101_2", 32, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:resnet34", 64, {"cpu_offload": []}, {}),
    ("snsim:gpt", 8, {"checkpoint": ["modules=Block"]}, {"optimizer": "adamw", "amp": "fp16"}),
)
_HELDOUT22_TOKENS = (
    ("snsim:transformer_encoder", 64, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"amp": "bf16"}),
    ("hf:EleutherAI/pythia-410m", 8, (512,), {"checkpoint": ["modules=GPTNeoXLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT22 = _plan_set(_HELDOUT22, _HELDOUT22_TOKENS)
# held-out set 23 (2026-12-03): (network, batch, precision, optimizer, plan) combinations no
# earlier set, capture or profile ran; predicted on this CPU before the device ran them
_HELDOUT23 = (
    ("torchvision:resnext50_32x4d", 96, {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("torchvision:googlenet", 192, {"checkpoint": ["modules=Inception"]},
     {"optimizer": "adamw"}),
    ("torchvision:shufflenet_v2_x2_0", 256, {"superneurons": []}, {}),
    ("torchvision:efficientnet_v2_s", 48, {"checkpoint": ["every=2"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_3_2gf", 96, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:vit_l_32", 64, {"checkpoint": ["modules=EncoderBlock"]}, {"amp": "fp16"}),
    ("torchvision:swin_t", 48, {"plain": []}, {"optimizer": "adam", "amp": "fp16"}),
    ("torchvision:densenet201", 48, {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("torchvision:mnasnet1_3", 192, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:convnext_small", 48, {"checkpoint": ["modules=CNBlock", "selective=true"]},
     {"amp": "bf16"}),
    ("torchvision:resnet101", 96, {"superneurons": []}, {}),
    ("torchvision:inception_v3", 64, {"plain": []}, {"amp": "fp16"}),
)
_HELDOUT23_TOKENS = (
    ("snsim:gpt", 16, (512,), {"checkpoint": ["modules=Block", "selective=true"]},
     {"amp": "bf16"}),
    ("snsim:transformer_encoder", 128, (512,),
     {"checkpoint": ["modules=TransformerEncoderLayer"]}, {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT23 = _plan_set(_HELDOUT23, _HELDOUT23_TOKENS)
# held-out set 24 (2026-12-03 21:20 UTC), written before any of it ran and before any change of
# session 28: small CPU-bound batches, fp16 with plain SGD, Nesterov and fused Adam, selective
# checkpointing of a CNN in fp16, cpu_offload of chosen modules, superneurons in half precision,
# and a GPT-NeoX checkpoint -- combinations no earlier set, capture or profile held
_HELDOUT24 = (
    ("torchvision:resnet18", 32, {"plain": []}, {"optimizer": "sgd"}),
    ("torchvision:vgg13", 128, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:efficientnet_b3", 64, {"cpu_offload": ["pin_memory=true", "modules=MBConv"]},
     {"amp": "bf16"}),
    ("torchvision:regnet_y_800mf", 256, {"checkpoint": ["modules=ResBottleneckBlock"]},
     {"amp": "fp16", "optimizer": "sgd"}),
    ("torchvision:wide_resnet50_2", 64, {"plain": []},
     {"optimizer": "adam", "optimizer_impl": "fused"}),
    ("torchvision:convnext_tiny", 64, {"superneurons": []}, {"optimizer": "nesterov"}),
    ("torchvision:mobilenet_v3_small", 512, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:densenet169", 64, {"checkpoint": ["modules=_DenseLayer", "selective=true"]},
     {"amp": "fp16"}),
    ("torchvision:vit_b_32", 256, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:swin_s", 32, {"checkpoint": ["modules=SwinTransformerBlock", "every=2"]},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:resnet152", 32, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
    ("torchvision:inception_v3", 16, {"plain": []}, {"amp": "fp16"}),
)
_HELDOUT24_TOKENS = (
    ("hf:EleutherAI/pythia-410m", 8, (512,), {"checkpoint": ["modules=GPTNeoXLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("snsim:gpt", 4, (1024,), {"plain": []}, {"optimizer": "adamw"}),
)
PLAN_HELDOUT24 = _plan_set(_HELDOUT24, _HELDOUT24_TOKENS)
# session 29 (2026-12-04), written before any of it ran and after save_on_cpu's pinned pack
# gained its host allocation and the blocking copy's return: five pinned save_on_cpu runs
# (fp32, bf16, fp16; a module class only; a ViT-L and a GPT), each combination of network,
# batch, precision and plan new, as are the others'
_HELDOUT25 = (
    ("torchvision:resnet101", 40, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:mobilenet_v3_large", 96, {"cpu_offload": ["pin_memory=true"]},
     {"amp": "bf16"}),
    ("torchvision:convnext_small", 24, {"cpu_offload": ["pin_memory=true", "modules=CNBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_y_3_2gf", 48, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
    ("torchvision:vit_l_16", 6, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnext101_32x8d", 24, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:efficientnet_b2", 96, {"checkpoint": ["modules=MBConv"]}, {"amp": "bf16"}),
    ("torchvision:vgg19_bn", 48, {"superneurons": []}, {}),
    ("torchvision:swin_t", 48, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:densenet161", 32, {"checkpoint": ["modules=_DenseLayer"]}, {}),
    ("torchvision:shufflenet_v2_x2_0", 128, {"plain": []}, {"optimizer": "sgd"}),
    ("torchvision:googlenet", 64, {"superneurons": []}, {"amp": "fp16"}),
)
_HELDOUT25_TOKENS = (
    ("snsim:gpt", 6, (512,), {"cpu_offload": ["pin_memory=true"]}, {"optimizer": "adamw"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 4, (1024,), {"checkpoint": ["modules=LlamaDecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT25 = _plan_set(_HELDOUT25, _HELDOUT25_TOKENS)
# held-out set 26 (2026-12-04, session 30), written before any of it ran, after attention's
# kernel choice was measured (traces/h200/sdpa_choice: cuDNN for every fp16/bf16 call, masks
# and grouped-query heads included; memory-efficient for fp32 with a mask) and buffers' values
# reached the fake run's value branches: nn.TransformerEncoder classifiers with a registered
# causal or banded mask (scripts/attention_models.py, never predictable before: the encoder's
# causal-mask test reads the mask's values), two grouped-query Hugging Face models at new
# lengths and precisions, and vision networks at batches, precisions and plans never run
_HELDOUT26 = (
    ("scripts.attention_models:causal_encoder", 32,
     {"plain": [], "checkpoint": ["modules=TransformerEncoderLayer"]}, {"optimizer": "adamw"}),
    ("scripts.attention_models:banded_encoder", 48,
     {"plain": [], "cpu_offload": ["pin_memory=true"]}, {"optimizer": "adamw", "amp": "bf16"}),
    ("scripts.attention_models:banded_encoder", 24, {"plain": []}, {}),
    ("scripts.attention_models:causal_encoder", 64, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:resnet50", 160, {"checkpoint": ["every=3"]}, {"amp": "bf16"}),
    ("torchvision:efficientnet_b0", 192, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:swin_s", 24, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mobilenet_v2", 256, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vit_b_16", 48, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("torchvision:convnext_tiny", 96, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:regnet_x_1_6gf", 96, {"checkpoint": ["modules=ResBottleneckBlock"]},
     {"amp": "fp16"}),
    ("torchvision:wide_resnet50_2", 48, {"plain": []}, {"optimizer": "nesterov"}),
)
_HELDOUT26_TOKENS = (
    ("hf:Qwen/Qwen2-0.5B", 2, (1024,), {"checkpoint": ["modules=Qwen2DecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 8, (512,), {"plain": []},
     {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT26 = _plan_set(_HELDOUT26, _HELDOUT26_TOKENS)
# held-out set 27 (2026-12-04, session 31), written before any of it ran and before any change
# of the session: SuperNeurons' own plans placed on module boundaries -- `recompute` (the
# segments alone) and `offload` (the Offloader alone), which only ResNet-50 b256, VGG16 b64 and
# seven fp32 captures of 2026-12-03 ever executed -- on networks, batches, precisions and
# optimizers never run with them, transformers among them
_HELDOUT27 = (
    ("torchvision:resnet50", 96, {"recompute": [], "offload": []}, {"amp": "bf16"}),
    ("torchvision:resnet152", 48, {"offload": []}, {"amp": "fp16"}),
    ("torchvision:densenet169", 48, {"recompute": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b1", 96, {"recompute": []}, {"amp": "fp16"}),
    ("torchvision:vgg16", 96, {"offload": []}, {"optimizer": "adamw"}),
    ("torchvision:mobilenet_v2", 192, {"offload": []}, {"amp": "bf16"}),
    ("torchvision:convnext_small", 32, {"recompute": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_t", 32, {"recompute": []}, {"amp": "bf16"}),
    ("torchvision:vit_b_16", 32, {"offload": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:inception_v3", 64, {"recompute": []}, {}),
    ("torchvision:wide_resnet50_2", 64, {"offload": []}, {"amp": "fp16"}),
    ("torchvision:shufflenet_v2_x1_5", 256, {"recompute": []}, {}),
    ("torchvision:resnext50_32x4d", 96, {"recompute": []}, {"amp": "bf16"}),
    ("torchvision:regnet_x_3_2gf", 64, {"superneurons": []}, {"amp": "fp16"}),
)
_HELDOUT27_TOKENS = (
    ("hf:gpt2", 8, (512,), {"recompute": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("snsim:gpt", 12, (512,), {"recompute": []}, {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT27 = _plan_set(_HELDOUT27, _HELDOUT27_TOKENS)
# held-out set 28 (2026-12-04, session 31), written before any of it ran and after the
# offloader's Python around each copy became a measured plan host cost (offload_copy): the
# offloader on networks, batches and precisions never run with it
_HELDOUT28 = (
    ("torchvision:resnet101", 64, {"offload": []}, {"amp": "fp16"}),
    ("torchvision:densenet201", 32, {"offload": []}, {}),
    ("torchvision:efficientnet_b3", 64, {"offload": []}, {"amp": "bf16"}),
    ("torchvision:vgg19_bn", 48, {"offload": []}, {"amp": "fp16", "optimizer": "adamw"}),
    ("torchvision:regnet_y_3_2gf", 64, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:mobilenet_v3_large", 128, {"offload": []}, {"amp": "bf16"}),
    ("torchvision:resnet34", 128, {"superneurons": []}, {"amp": "fp16"}),
)
PLAN_HELDOUT28 = _plan_set(_HELDOUT28)
# held-out set 29 (2026-12-04, session 32), written before any of it ran and before any change
# of the session: SuperNeurons' plans on Hugging Face decoders and transformers (recompute and
# superneurons now checkpoint each block of a wrapped model: commit 5451576, never run on a GPU),
# and networks, batches and precisions never run with these plans
_HELDOUT29 = (
    ("torchvision:vit_b_16", 64, {"recompute": []}, {"amp": "bf16"}),
    ("torchvision:swin_s", 32, {"offload": []}, {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:resnet50", 128, {"superneurons": []}, {}),
    ("torchvision:densenet121", 64, {"offload": []}, {"amp": "fp16"}),
    ("torchvision:mobilenet_v2", 128, {"recompute": []}, {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:efficientnet_b0", 128, {"superneurons": []}, {"amp": "fp16"}),
)
_HELDOUT29_TOKENS = (
    ("hf:gpt2", 8, (512,), {"recompute": [], "superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:gpt2-medium", 4, (512,), {"offload": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-410m", 4, (512,), {"recompute": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 8, (512,), {"superneurons": []}, {"amp": "bf16"}),
    ("hf:facebook/opt-350m", 8, (256,), {"recompute": []}, {"optimizer": "adamw", "amp": "fp16"}),
    ("snsim:transformer_encoder", 64, (512,), {"superneurons": []}, {}),
)
PLAN_HELDOUT29 = _plan_set(_HELDOUT29, _HELDOUT29_TOKENS)
# held-out set 30 (2026-12-04, session 33), written before any of it ran and before any change
# of the session: networks, batches, precisions and optimizers never run with these plans
# (bf16 with fused AdamW, plain SGD, fp32 offload), and Pythia-410M at
# s1024 in the fp32 program snsim has built since 95bbbd0 (set 5 measured its config's fp16)
_HELDOUT30 = (
    ("torchvision:resnet152", 32, {"checkpoint": ["every=3"]},
     {"amp": "bf16", "optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:vit_l_16", 16, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
    ("torchvision:efficientnet_v2_s", 64, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:regnet_y_1_6gf", 64, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:convnext_tiny", 64, {"offload": []}, {}),
    ("torchvision:wide_resnet101_2", 32, {"recompute": []}, {"optimizer": "sgd"}),
    ("torchvision:densenet169", 96, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:mobilenet_v3_small", 256, {"checkpoint": ["every=2"]}, {"amp": "fp16"}),
    ("torchvision:maxvit_t", 32, {"plain": []}, {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:swin_v2_t", 32, {"offload": []}, {"amp": "fp16"}),
)
_HELDOUT30_TOKENS = (
    ("hf:gpt2-large", 2, (512,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:Qwen/Qwen2-0.5B", 2, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-410m", 4, (1024,), {"plain": []},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT30 = _plan_set(_HELDOUT30, _HELDOUT30_TOKENS)
# held-out set 31 (2026-12-05, session 36), written before any of it ran and before any change
# of the session: the networks whose fake autograd changed in session 35 (in-place-modified
# views: MViT-V2, Swin-V2; tied embeddings: SmolLM2, GPT-2, Qwen2) at batches, lengths,
# precisions and plans never run, ViT-B/16 past 65,536 LayerNorm rows (b384: 75,648), and
# networks whose reserved peak the lazy-loading window moved (EfficientNet-B2, Swin-V2-T,
# RegNetY-3.2GF, the snsim encoder under save_on_cpu)
_HELDOUT31 = (
    ("torchvision:mvit_v2_s", 12, {"superneurons": []}, {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:mvit_v2_s", 10, {"plain": []}, {}),
    ("torchvision:swin_v2_s", 16, {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("torchvision:swin_v2_b", 12, {"checkpoint": ["modules=SwinTransformerBlockV2"]},
     {"amp": "fp16"}),
    ("torchvision:vit_b_16", 384, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:efficientnet_b2", 64, {"checkpoint": ["modules=MBConv"]}, {}),
    ("torchvision:swin_v2_t", 48, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:regnet_y_3_2gf", 96, {"superneurons": []}, {}),
    ("torchvision:convnext_small", 48, {"checkpoint": ["every=2"]},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:resnet101", 96, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
)
_HELDOUT31_TOKENS = (
    ("hf:HuggingFaceTB/SmolLM2-135M", 4, (2048,), {"plain": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:gpt2", 2, (1024,), {"checkpoint": ["modules=GPT2Block"]}, {}),
    ("hf:Qwen/Qwen2-0.5B", 1, (2048,), {"checkpoint": ["modules=Qwen2DecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("snsim:transformer_encoder", 48, (512,), {"cpu_offload": ["pin_memory=true"]}, {}),
)
PLAN_HELDOUT31 = _plan_set(_HELDOUT31, _HELDOUT31_TOKENS)
# held-out set 32 (2026-12-05, session 37), written before any of it ran, with no change to
# the prediction code since session 36 (this session's commits touched the timing scripts,
# the report and the docs): the two torchvision networks no suite has run (MViT-V1-B,
# Swin3D-B), and the commonest user cases at batches, precisions and optimizers never run with
# them (plain and per-block checkpoint of ResNet-50 with fused AdamW, ViT-L/16 checkpoint,
# RegNetY-8GF fp32 grouped convolutions, DeepLabV3, OPT-350M plain at s1024), and
# SuperNeurons' and save_on_cpu's plans on networks not run with them
_HELDOUT32 = (
    ("torchvision:resnet50", 192, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"amp": "bf16", "optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:mvit_v1_b", 8, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:swin3d_b", 2, {"checkpoint": ["modules=SwinTransformerBlock"]},
     {"amp": "fp16"}),
    ("torchvision:densenet161", 64, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:efficientnet_v2_m", 32, {"cpu_offload": ["pin_memory=true"]},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:vgg19_bn", 64, {"recompute": []}, {"amp": "fp16"}),
    ("torchvision:convnext_base", 48, {"offload": []}, {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:regnet_y_8gf", 48, {"plain": []}, {}),
    ("torchvision:vit_l_16", 24, {"checkpoint": ["modules=EncoderBlock"]},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:deeplabv3_resnet50", 8, {"plain": []}, {"amp": "bf16"}),
)
_HELDOUT32_TOKENS = (
    ("hf:gpt2-medium", 8, (512,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:EleutherAI/pythia-410m", 4, (1024,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:facebook/opt-350m", 4, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("snsim:gpt", 16, (512,), {"superneurons": []}, {"amp": "bf16"}),
)
PLAN_HELDOUT32 = _plan_set(_HELDOUT32, _HELDOUT32_TOKENS)
# held-out set 33 (2026-12-05, session 38), written before any of it ran, after this session's
# batch-norm lookup changes (kernel_table: a call reads its own class's rows, by channels and
# N x H*W): batch norm in bf16 and fp16 at batches and maps the table never timed, the plans
# on networks never run with them, and the token models at lengths and precisions not run
_HELDOUT33 = (
    ("torchvision:resnet34", 256, {"plain": []},
     {"amp": "bf16", "optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:googlenet", 96, {"checkpoint": ["modules=Inception"]}, {"amp": "fp16"}),
    ("torchvision:shufflenet_v2_x2_0", 192, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:efficientnet_b3", 40, {"superneurons": []},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:regnet_x_3_2gf", 80, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
    ("torchvision:wide_resnet50_2", 48, {"recompute": []}, {"amp": "bf16"}),
    ("torchvision:vit_b_32", 160, {"checkpoint": ["modules=EncoderBlock"]}, {"amp": "fp16"}),
    ("torchvision:convnext_small", 40, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:densenet201", 24, {"offload": []}, {}),
    ("torchvision:mobilenet_v2", 224, {"checkpoint": ["every=3"]},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:resnext50_32x4d", 56, {"plain": []}, {}),
    ("torchvision:inception_v3", 48, {"superneurons": []}, {"amp": "bf16"}),
)
_HELDOUT33_TOKENS = (
    ("hf:gpt2", 8, (512,), {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 8, (1024,), {"checkpoint": ["modules=LlamaDecoderLayer"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("snsim:gpt", 8, (1024,), {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
)
PLAN_HELDOUT33 = _plan_set(_HELDOUT33, _HELDOUT33_TOKENS)
# session 39: fp16 against bf16 on the same network and batch, plain, at batches small enough
# for the launching thread to set the step (the fp16 host costs re-levelled and GradScaler's
# per-parameter cost re-measured that session): each pair's measured step ratio tests what the
# host model charges fp16, whatever pace the two processes ran at; no network of the
# re-measurement's three (DenseNet-121, Inception-v3, ResNet-50)
_HELDOUT34 = tuple(
    (model, batch, {"plain": []}, dict(setup, amp=amp))
    for model, batch, setup in (
        ("torchvision:resnet18", 16, {}),
        ("torchvision:googlenet", 16, {}),
        ("torchvision:regnet_x_800mf", 32, {}),
        ("torchvision:densenet169", 8, {}),
        ("torchvision:efficientnet_b0", 16, {"optimizer": "adamw"}),
        ("torchvision:resnet101", 16, {"optimizer": "adamw"}))
    for amp in ("fp16", "bf16"))
PLAN_HELDOUT34 = _plan_set(_HELDOUT34)
# session 40: the ZeRO-style plans, whose `snsim predict --policy zero_offload` (the engine's
# zero_offload on the fake run's program) no executed run had yet tested (traces/h200/zero/
# compares captured programs' replays): fp32 (what the scheme runs), networks and optimizers
# never run with it, CNNs, vision transformers and decoders
_HELDOUT35 = (
    ("torchvision:resnet101", 64, {"zero_offload": []}, {}),
    ("torchvision:vit_b_16", 32, {"zero_offload": [], "superneurons+zero_offload": []},
     {"optimizer": "adamw"}),
    ("torchvision:densenet121", 64, {"zero_offload": []}, {"optimizer": "adam"}),
    ("torchvision:efficientnet_b0", 96, {"superneurons+zero_offload": []}, {}),
    ("torchvision:convnext_tiny", 48, {"zero_offload": []}, {"optimizer": "adamw"}),
    ("torchvision:vgg16", 32, {"zero_offload": []}, {"optimizer": "nesterov"}),
    ("torchvision:mobilenet_v3_large", 128, {"zero_offload": []}, {"optimizer": "sgd"}),
    ("torchvision:swin_t", 32, {"superneurons+zero_offload": []}, {"optimizer": "adam"}),
)
_HELDOUT35_TOKENS = (
    ("hf:gpt2-medium", 4, (512,), {"zero_offload": []}, {"optimizer": "adamw"}),
    ("hf:facebook/opt-350m", 4, (512,), {"superneurons+zero_offload": []}, {"optimizer": "adam"}),
    ("snsim:transformer_encoder", 32, (256,), {"zero_offload": []}, {"optimizer": "adamw"}),
    ("hf:Qwen/Qwen2-0.5B", 2, (512,), {"zero_offload": []}, {}),
)
PLAN_HELDOUT35 = _plan_set(_HELDOUT35, _HELDOUT35_TOKENS)
# session 40: grouped-query attention in fp32, which CUDA runs as the math composite (its s x s
# scores), recorded since then as that composite rather than the CPU's flash kernel (Qwen2-0.5B
# b2 fp32 ZeRO was -16 % allocated without them); decoders never run in fp32 here
_HELDOUT36_TOKENS = (
    ("hf:HuggingFaceTB/SmolLM2-135M", 4, (512,),
     {"plain": [], "checkpoint": ["modules=LlamaDecoderLayer"]}, {"optimizer": "adamw"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 8, (256,), {"cpu_offload": ["pin_memory=true"]}, {}),
    ("hf:Qwen/Qwen2-0.5B", 2, (512,), {"plain": []}, {}),
    ("hf:Qwen/Qwen2-0.5B", 1, (1024,), {"checkpoint": ["modules=Qwen2DecoderLayer"]},
     {"optimizer": "adamw"}),
)
PLAN_HELDOUT36 = _plan_set((), _HELDOUT36_TOKENS)
# session 41: ZeRO plans again, on networks never run with them, after the engine began making
# the first iteration's cuBLAS workspaces at their turn under zero_offload (set 35's third run,
# re-predicted: reserved max 10.65 -> 0.38 %); large classifier GEMMs (AlexNet, VGG-11-BN), both
# plans on one network, optimizers and decoders the ZeRO sets have not paired
_HELDOUT37 = (
    ("torchvision:alexnet", 128, {"zero_offload": []}, {"optimizer": "adamw"}),
    ("torchvision:vgg11_bn", 32, {"zero_offload": [], "superneurons+zero_offload": []},
     {"optimizer": "adam"}),
    ("torchvision:inception_v3", 64, {"zero_offload": []}, {}),
    ("torchvision:wide_resnet50_2", 64, {"superneurons+zero_offload": []},
     {"optimizer": "adamw"}),
    ("torchvision:regnet_y_800mf", 128, {"zero_offload": []}, {"optimizer": "sgd"}),
    ("torchvision:efficientnet_v2_s", 32, {"zero_offload": []}, {"optimizer": "adamw"}),
    ("torchvision:maxvit_t", 16, {"superneurons+zero_offload": []}, {"optimizer": "adamw"}),
    ("torchvision:swin_v2_t", 32, {"zero_offload": []}, {"optimizer": "adamw"}),
    ("torchvision:densenet161", 32, {"zero_offload": []}, {"optimizer": "nesterov"}),
)
_HELDOUT37_TOKENS = (
    ("hf:gpt2", 8, (512,), {"zero_offload": [], "superneurons+zero_offload": []},
     {"optimizer": "adamw"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 4, (512,), {"zero_offload": []}, {"optimizer": "adam"}),
)
PLAN_HELDOUT37 = _plan_set(_HELDOUT37, _HELDOUT37_TOKENS)
# session 42, written before any of it ran: Hugging Face encoders (masked language models,
# newly supported: BERT, RoBERTa, DistilBERT - bidirectional attention with dropout, token-type
# and learned position embeddings) under each plan and precision, and image networks at
# batches and plans not run with them
_HELDOUT38 = (
    ("torchvision:efficientnet_b2", 48, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:convnext_small", 24, {"checkpoint": ["modules=CNBlock"]},
     {"amp": "bf16", "optimizer": "adamw"}),
    ("torchvision:resnet101", 80, {"cpu_offload": ["pin_memory=true"]}, {"amp": "fp16"}),
)
_HELDOUT38_TOKENS = (
    ("hf:bert-base-uncased", 16, (512,), {"plain": []}, {"optimizer": "adamw"}),
    ("hf:bert-base-uncased", 32, (256,), {"checkpoint": ["modules=BertLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:roberta-base", 16, (512,), {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("hf:roberta-base", 8, (512,), {"cpu_offload": ["pin_memory=true"]}, {"optimizer": "adamw"}),
    ("hf:distilbert-base-uncased", 32, (512,), {"plain": []}, {"amp": "fp16"}),
    ("hf:distilbert-base-uncased", 16, (512,), {"superneurons": []}, {"optimizer": "adamw"}),
    ("hf:bert-base-uncased", 8, (512,), {"zero_offload": []}, {"optimizer": "adamw"}),
)
PLAN_HELDOUT38 = _plan_set(_HELDOUT38, _HELDOUT38_TOKENS)
# session 42, written before any of it ran; run on the H200 on 2026-12-06 (BART b8 cpu_offload
# cut by the call's deadline, not run): the Hugging Face heads added after set 38 -
# encoder-decoders (T5: relative position bias; BART) and an image classifier (ViT) - under
# plain, checkpoint of their blocks and cpu_offload
_HELDOUT39 = (
    ("hf:google/vit-base-patch16-224", 64, {"plain": []}, {"amp": "bf16", "optimizer": "adamw"}),
    ("hf:google/vit-base-patch16-224", 32, {"checkpoint": ["modules=ViTLayer"]},
     {"amp": "fp16"}),
)
_HELDOUT39_TOKENS = (
    ("hf:t5-small", 16, (512,), {"plain": []}, {"optimizer": "adamw"}),
    ("hf:t5-small", 32, (256,), {"checkpoint": ["modules=T5Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:bart-base", 16, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:bart-base", 8, (512,), {"cpu_offload": ["pin_memory=true"]}, {"optimizer": "adamw"}),
)
PLAN_HELDOUT39 = _plan_set(_HELDOUT39, _HELDOUT39_TOKENS)
# session 44, written before any of it ran (no device started that session); run on the H200 on
# 2026-12-06: a network never run here (RegNetY-128GF, 645 M parameters), and networks under a plan,
# precision, optimizer and batch never run together: fused AdamW under fp16 checkpointing,
# Nesterov under fp16 recompute, pageable save_on_cpu in bf16 and fp16, selective checkpointing
# of GPT-2 medium's blocks in fp16
_HELDOUT40 = (
    ("torchvision:regnet_y_128gf", 16, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:convnext_base", 32, {"checkpoint": ["modules=CNBlock", "every=2"]},
     {"amp": "fp16", "optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:wide_resnet50_2", 96, {"recompute": []},
     {"amp": "fp16", "optimizer": "nesterov"}),
    ("torchvision:mobilenet_v3_large", 256, {"superneurons": []},
     {"amp": "bf16", "optimizer": "adam"}),
    ("torchvision:vgg13_bn", 64, {"cpu_offload": ["pin_memory=false"]}, {"amp": "bf16"}),
    ("torchvision:efficientnet_v2_m", 24, {"plain": []}, {"optimizer": "adamw"}),
)
_HELDOUT40_TOKENS = (
    ("hf:gpt2-medium", 4, (1024,), {"checkpoint": ["modules=GPT2Block", "selective=true"]},
     {"amp": "fp16", "optimizer": "adamw"}),
    ("hf:Qwen/Qwen2-0.5B", 4, (512,), {"plain": []},
     {"amp": "bf16", "optimizer": "adamw", "optimizer_impl": "fused"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 16, (256,), {"cpu_offload": ["pin_memory=false"]},
     {"amp": "fp16"}),
    ("hf:roberta-base", 32, (256,), {"superneurons": []}, {"amp": "bf16", "optimizer": "adamw"}),
)
PLAN_HELDOUT40 = _plan_set(_HELDOUT40, _HELDOUT40_TOKENS)
# session 44, written before any of it ran; run on the H200 on 2026-12-06: fp32 matmuls on TF32
# tensor cores
# (torch.set_float32_matmul_precision("high"), --matmul-precision high), new to snsim; the
# predictions before the run read the table's 19 TF32 matmul rows of random shapes (the
# table's Linear, attention and LM-head grids were fp32, bf16 and fp16 only); two of the
# shipped configs added in session 44 (Qwen2.5-0.5B, Pythia-160M) run for the first time
_TF32 = {"optimizer": "adamw", "matmul_precision": "high"}
_HELDOUT41 = (
    ("torchvision:vit_b_16", 64, {"plain": []}, _TF32),
    ("torchvision:swin_t", 64, {"plain": []}, _TF32),
)
_HELDOUT41_TOKENS = (
    ("hf:gpt2", 8, (1024,), {"plain": []}, _TF32),
    ("hf:gpt2-medium", 4, (1024,), {"checkpoint": ["modules=GPT2Block"]}, _TF32),
    ("hf:bert-base-uncased", 32, (512,), {"plain": []}, _TF32),
    ("hf:Qwen/Qwen2.5-0.5B", 4, (512,), {"plain": []}, _TF32),
    ("hf:EleutherAI/pythia-160m", 8, (1024,), {"plain": []}, _TF32),
)
PLAN_HELDOUT41 = _plan_set(_HELDOUT41, _HELDOUT41_TOKENS)
# session 58, written before any of it ran (run 2026-12-06, traces/h200/plans_heldout42): the
# six shipped Hugging Face configs
# never run (TinyLlama 1.1B, Pythia-1B, OPT-125M, BERT-large, DistilGPT2, GPT-Neo 125M), and the
# math composite of attention as a plain CUDA run makes it (predict.cuda_math_attention): T5's
# learned mask under bf16 at a new length and under cpu_offload, fp32 grouped-query heads
# (SmolLM2 at a batch never run, TinyLlama checkpointed); RegNetY-32GF's wide grouped
# convolutions in bf16 at a batch never run
_HELDOUT42 = (
    ("torchvision:regnet_y_32gf", 32, {"plain": []}, {"amp": "bf16"}),
)
_HELDOUT42_TOKENS = (
    ("hf:TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 1, (1024,),
     {"checkpoint": ["modules=LlamaDecoderLayer"]}, {"optimizer": "adamw"}),
    ("hf:TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 2, (512,), {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-1b", 2, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:facebook/opt-125m", 16, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:bert-large-uncased", 8, (512,), {"checkpoint": ["modules=BertLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:distilgpt2", 16, (1024,), {"plain": []}, _TF32),
    ("hf:EleutherAI/gpt-neo-125m", 8, (1024,), {"plain": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:t5-small", 8, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:t5-small", 16, (512,), {"cpu_offload": ["pin_memory=true"]}, {"optimizer": "adamw"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 6, (512,), {"plain": []}, {"optimizer": "adamw"}),
)
PLAN_HELDOUT42 = _plan_set(_HELDOUT42, _HELDOUT42_TOKENS)
# session 59, written before any of it ran and not yet run: plans, precisions and lengths
# never run on these networks - ViT-H/14 checkpointed, ConvNeXt-L fp16 superneurons, Swin-V2-B
# bf16 under cpu_offload, RegNetX-32GF fp32; GPT-Neo's eager attention at 2048 tokens
# checkpointed, Pythia-410M fp16 cpu_offload, OPT-350M fp32 superneurons, BERT-large fp16,
# T5-small's math composite under checkpoint, DistilBERT fused bf16, Qwen2.5-0.5B bf16
# checkpointed
_HELDOUT43 = (
    ("torchvision:vit_h_14", 8, {"checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_large", 32, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:swin_v2_b", 16, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_32gf", 48, {"plain": []}, {}),
)
_HELDOUT43_TOKENS = (
    ("hf:EleutherAI/gpt-neo-125m", 4, (2048,), {"checkpoint": ["modules=GPTNeoBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-410m", 8, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:facebook/opt-350m", 8, (512,), {"superneurons": []}, {"optimizer": "adamw"}),
    ("hf:bert-large-uncased", 16, (256,), {"plain": []}, {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:t5-small", 32, (256,), {"checkpoint": ["modules=T5Block"]}, {"optimizer": "adamw"}),
    ("hf:distilbert-base-uncased", 64, (256,), {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("hf:Qwen/Qwen2.5-0.5B", 2, (1024,), {"checkpoint": ["modules=Qwen2DecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT43 = _plan_set(_HELDOUT43, _HELDOUT43_TOKENS)
# session 60, written before any of it ran: batches, lengths and plans never run on these
# networks, after the workspace line below the probed batches (ViT-L/16 b4's patch embedding),
# linear's cached autocast casts (batch-first attention under autocast: ViT-L, HF ViT) and the
# H100's sibling scaling of the H200's kernel table; a host-bound ResNet-50 b8
_HELDOUT44 = (
    ("torchvision:vit_l_16", 4, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_v2_s", 40, {"checkpoint": ["modules=MBConv"]}, {"amp": "fp16"}),
    ("torchvision:resnet101", 80, {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("torchvision:wide_resnet50_2", 40, {"superneurons": []}, {}),
    ("torchvision:swin_s", 20, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet50", 8, {"plain": []}, {}),
    ("hf:google/vit-base-patch16-224", 48, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT44_TOKENS = (
    ("hf:roberta-base", 24, (384,), {"plain": []}, {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:gpt2-medium", 3, (1024,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-160m", 16, (512,), {"plain": []}, {"optimizer": "adamw"}),
    ("hf:Qwen/Qwen2-0.5B", 3, (768,), {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("hf:bart-base", 16, (512,), {"superneurons": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT44 = _plan_set(_HELDOUT44, _HELDOUT44_TOKENS)
# session 61, written before any of it ran: networks, batches, lengths and plans never run -
# RegNetY-16GF's wide grouped convolutions in bf16, ResNeXt-101 64x4d fp16 checkpointed,
# ConvNeXt-S bf16 superneurons, EfficientNet-B3 fp32, VGG19-BN bf16 pinned cpu_offload,
# Swin-V2-S checkpointed, DenseNet-161 fp16, MobileNet-V2 fused bf16 superneurons; GPT-2 large
# checkpointed, BERT-base fp32 superneurons, Pythia-410M fp16 at 1024 tokens, DistilGPT2 bf16
# pinned cpu_offload
_HELDOUT45 = (
    ("torchvision:regnet_y_16gf", 24, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:resnext101_64x4d", 32, {"checkpoint": ["modules=Bottleneck"]},
     {"amp": "fp16"}),
    ("torchvision:convnext_small", 48, {"superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b3", 64, {"plain": []}, {"optimizer": "adamw"}),
    ("torchvision:vgg19_bn", 48, {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("torchvision:swin_v2_s", 16, {"checkpoint": ["modules=SwinTransformerBlockV2"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet161", 32, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:mobilenet_v2", 192, {"superneurons": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
)
_HELDOUT45_TOKENS = (
    ("hf:gpt2-large", 2, (512,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:bert-base-uncased", 16, (512,), {"superneurons": []}, {"optimizer": "adamw"}),
    ("hf:EleutherAI/pythia-410m", 6, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:distilgpt2", 32, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT45 = _plan_set(_HELDOUT45, _HELDOUT45_TOKENS)
# session 61, written before any of it ran, after the channels-last workspaces and grad_output
# conversions: ConvNeXt at batches the channels-last probe did not run (B b56 bf16, T b20 fp32
# superneurons, S b36 fp16 checkpointed), Swin-B bf16 pinned cpu_offload, ViT-B/16 b40
# checkpointed, ResNet-152 fp16 superneurons, MobileNetV3-L b160 bf16, RegNetX-8GF bf16
# checkpointed; GPT-2 b12 s1024 bf16, RoBERTa-base checkpointed, Qwen2.5-0.5B fp32, T5-small
# bf16 superneurons
_HELDOUT46 = (
    ("torchvision:convnext_base", 56, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_tiny", 20, {"superneurons": []}, {"optimizer": "sgd"}),
    ("torchvision:convnext_small", 36, {"checkpoint": ["modules=CNBlock"]}, {"amp": "fp16"}),
    ("torchvision:swin_b", 24, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vit_b_16", 40, {"checkpoint": ["modules=EncoderBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet152", 40, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:mobilenet_v3_large", 160, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:regnet_x_8gf", 40, {"checkpoint": ["modules=ResBottleneckBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT46_TOKENS = (
    ("hf:gpt2", 12, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:roberta-base", 16, (512,), {"checkpoint": ["modules=RobertaLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:Qwen/Qwen2.5-0.5B", 2, (1024,), {"plain": []}, {"optimizer": "adamw"}),
    ("hf:t5-small", 24, (512,), {"superneurons": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT46 = _plan_set(_HELDOUT46, _HELDOUT46_TOKENS)
# session 62, written before any of it ran, after the workspace probe at batches 24, 40 and 56
# (and channels-last 20, 56): CNNs at those batches (RegNetY-8GF b40 fp16 checkpointed,
# EfficientNetV2-S b56 bf16 superneurons, Wide ResNet-50-2 b24 bf16 pinned cpu_offload) and
# off them (ResNeXt-50 b36 bf16, DenseNet-169 b28 fp16, ConvNeXt-T b44 bf16 checkpointed,
# Inception-v3 b72 fp32, MNASNet-1.0 b100 bf16 superneurons); Pythia-160M checkpointed,
# BERT-large fp16 superneurons, OPT-125M bf16, GPT-2 medium bf16 pinned cpu_offload
_HELDOUT47 = (
    ("torchvision:resnext50_32x4d", 36, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:regnet_y_8gf", 40, {"checkpoint": ["modules=ResBottleneckBlock"]},
     {"amp": "fp16"}),
    ("torchvision:efficientnet_v2_s", 56, {"superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet169", 28, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:wide_resnet50_2", 24, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_tiny", 44, {"checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:inception_v3", 72, {"plain": []}, {}),
    ("torchvision:mnasnet1_0", 100, {"superneurons": []}, {"amp": "bf16"}),
)
_HELDOUT47_TOKENS = (
    ("hf:EleutherAI/pythia-160m", 8, (1024,), {"checkpoint": ["modules=GPTNeoXLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:bert-large-uncased", 8, (512,), {"superneurons": []},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:facebook/opt-125m", 16, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:gpt2-medium", 4, (1024,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT47 = _plan_set(_HELDOUT47, _HELDOUT47_TOKENS)
# session 63 (2026-12-06): written and predicted before the run; segmentation at a batch the
# dilated probe ran (16) and one it did not (12), batches between the grid's elsewhere
_HELDOUT48 = (
    ("torchvision:deeplabv3_resnet101", 12, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:lraspp_mobilenet_v3_large", 16, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:resnet101", 96, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:vgg13_bn", 40, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:efficientnet_b3", 40, {"checkpoint": ["modules=MBConv"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_3_2gf", 80, {"plain": []}, {}),
    ("torchvision:swin_s", 40, {"checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:shufflenet_v2_x1_5", 160, {"superneurons": []}, {"amp": "fp16"}),
)
_HELDOUT48_TOKENS = (
    ("hf:t5-small", 16, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:distilgpt2", 24, (1024,), {"checkpoint": ["modules=GPT2Block"]}, {"amp": "fp16"}),
    ("hf:EleutherAI/gpt-neo-125m", 8, (1024,), {"superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:bart-base", 12, (384,),
     {"checkpoint": ["modules=BartEncoderLayer,BartDecoderLayer"]},
     {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT48 = _plan_set(_HELDOUT48, _HELDOUT48_TOKENS)
# held-out set 49, written and predicted (2026-12-06, before any of it ran): three Hugging Face
# architectures snsim never built before (BLOOM's ALiBi eager attention, Qwen3's per-head q/k
# norms, ALBERT's one layer shared by twelve), SuperNeurons' recompute and offload plans,
# fused AdamW, cpu_offload of a channels-last ConvNeXt in bf16, and torchvision networks run
# once or never at these batches
_HELDOUT49 = (
    ("torchvision:mvit_v1_b", 12, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_v2_l", 24, {"checkpoint": ["modules=MBConv,FusedMBConv"]},
     {"amp": "fp16"}),
    ("torchvision:regnet_y_128gf", 16, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:squeezenet1_0", 384, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:alexnet", 1024, {"superneurons": []}, {}),
    ("torchvision:mnasnet0_5", 384, {"plain": []}, {"optimizer": "sgd", "amp": "bf16"}),
    ("torchvision:resnet152", 48, {"checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "fp16"}),
    ("torchvision:convnext_large", 24, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet201", 48, {"recompute": []}, {}),
    ("torchvision:resnet34", 192, {"offload": []}, {}),
)
_HELDOUT49_TOKENS = (
    ("hf:bloom-560m", 8, (512,), {"checkpoint": ["modules=BloomBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:Qwen3-0.6B", 4, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:albert-base-v2", 32, (512,), {"superneurons": []}, {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT49 = _plan_set(_HELDOUT49, _HELDOUT49_TOKENS)
# held-out set 50 (2026-12-06), predicted with the h200 and h100 presets before its run: the
# wide-group rows (calibrate --only wide: RegNet-Y-32GF's 232 channels a group, X-8GF's 120),
# large fp32 batches beside the tables' largest (ResNet-18 b512, AlexNet b512), and plans
_HELDOUT50 = (
    ("torchvision:regnet_y_32gf", 24, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:regnet_x_8gf", 64, {"checkpoint": ["modules=ResBottleneckBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet18", 512, {"plain": []}, {}),
    ("torchvision:alexnet", 512, {"plain": []}, {"optimizer": "adamw"}),
    ("torchvision:vgg11", 128, {"superneurons": []}, {}),
    ("torchvision:mobilenet_v3_large", 256, {"cpu_offload": ["pin_memory=true"]},
     {"amp": "fp16"}),
    ("torchvision:efficientnet_b0", 128, {"checkpoint": ["modules=MBConv"]}, {"amp": "bf16"}),
    ("torchvision:convnext_small", 48, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:swin_v2_t", 24, {"superneurons": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet121", 96, {"offload": []}, {}),
)
_HELDOUT50_TOKENS = (
    ("hf:gpt2-medium", 4, (1024,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:pythia-160m", 8, (1024,), {"checkpoint": ["modules=GPTNeoXLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:roberta-base", 32, (256,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
)
PLAN_HELDOUT50 = _plan_set(_HELDOUT50, _HELDOUT50_TOKENS)
_HELDOUT51 = (
    ("torchvision:shufflenet_v2_x1_0", 384, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_x_16gf", 48, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:efficientnet_b4", 32, {"checkpoint": ["modules=MBConv"]}, {"amp": "bf16"}),
    ("torchvision:resnext101_32x8d", 48, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:vgg13", 96, {"plain": []}, {}),
    ("torchvision:mnasnet0_75", 256, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:wide_resnet101_2", 48, {"checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_tiny", 64, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:swin_s", 32, {"offload": []}, {"amp": "bf16"}),
    ("torchvision:vit_l_32", 48, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT51_TOKENS = (
    ("hf:bloom-560m", 4, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:albert-base-v2", 32, (256,), {"checkpoint": ["modules=AlbertLayer"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:opt-350m", 8, (512,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT51 = _plan_set(_HELDOUT51, _HELDOUT51_TOKENS)
# held-out set 52 (2026-12-06), predicted with the h200 and h100 presets before its run, after
# the optimizer phase's per-parameter host cost was refitted from profiled walls
# (scripts/host_innet_fit.py --phase-walls): host-bound steps with many parameter tensors
# (RegNet-Y-3.2GF b32, Swin-V2-S b16), foreach Adam and plain SGD, a Hugging Face model never
# run before (XLM-RoBERTa-base: a 250,002-token vocabulary), and every plan kind
_HELDOUT52 = (
    ("torchvision:regnet_y_3_2gf", 32, {"plain": []}, {}),
    ("torchvision:resnext50_32x4d", 80, {"checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vgg19_bn", 48, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:efficientnet_v2_s", 72, {"superneurons": []}, {"amp": "bf16"}),
    ("torchvision:swin_v2_s", 16, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet34", 160, {"cpu_offload": ["pin_memory=true"]}, {"optimizer": "sgd"}),
    ("torchvision:densenet169", 40, {"checkpoint": ["modules=_DenseLayer"]},
     {"optimizer": "adam"}),
    ("torchvision:mobilenet_v3_small", 384, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused"}),
    ("torchvision:wide_resnet50_2", 40, {"offload": []}, {"amp": "bf16"}),
    ("torchvision:shufflenet_v2_x2_0", 160, {"plain": []}, {"amp": "bf16"}),
)
_HELDOUT52_TOKENS = (
    ("hf:xlm-roberta-base", 8, (256,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:gpt2-medium", 6, (512,), {"checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:t5-small", 24, (256,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT52 = _plan_set(_HELDOUT52, _HELDOUT52_TOKENS)
# held-out set 53 (2026-12-07), predicted with the h200 and h100 presets before its run, after
# the math composite of attention kept its fp32 upcasts to the call's end: networks at
# batches, precisions, optimizers and plans never run with them (host-bound RegNetX-400MF,
# fp32 AdamW ViT-B/32, Swin-B checkpointed by block, Qwen2.5's decoder layers checkpointed)
_HELDOUT53 = (
    ("torchvision:regnet_x_400mf", 96, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b5", 12, {"checkpoint": ["modules=MBConv"]}, {"amp": "bf16"}),
    ("torchvision:vgg16_bn", 64, {"superneurons": []}, {"amp": "fp16"}),
    ("torchvision:googlenet", 96, {"cpu_offload": ["pin_memory=true"]}, {}),
    ("torchvision:densenet161", 32, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mnasnet1_3", 160, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:swin_b", 16, {"checkpoint": ["modules=SwinTransformerBlock"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:resnet152", 48, {"offload": []}, {"amp": "bf16"}),
    ("torchvision:convnext_base", 32, {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", "amp": "bf16"}),
    ("torchvision:vit_b_32", 96, {"plain": []}, {"optimizer": "adamw"}),
    ("torchvision:regnet_y_8gf", 40, {"plain": []}, {}),
)
_HELDOUT53_TOKENS = (
    ("hf:Qwen/Qwen2.5-0.5B", 4, (512,), {"checkpoint": ["modules=Qwen2DecoderLayer"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:bert-large-uncased", 8, (384,), {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "fp16"}),
    ("hf:distilgpt2", 16, (512,), {"superneurons": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT53 = _plan_set(_HELDOUT53, _HELDOUT53_TOKENS)
# held-out set 54 (2026-12-07): fp16 networks whose GradScaler's skipped steps no GPU run has
# counted, each predicted with the count estimated before its run (snsim predict's default
# since session 68, amp.estimate_skipped_steps: 2, 5, 1, 0, 2, 0, 0 in this order)
_HELDOUT54 = (
    ("torchvision:resnext50_32x4d", 64, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:wide_resnet101_2", 32, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:vgg13_bn", 64, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:densenet201", 32, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:regnet_x_16gf", 32, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:vgg11_bn", 96, {"plain": []}, {"amp": "fp16"}),
    ("torchvision:efficientnet_b3", 48, {"plain": []}, {"amp": "fp16"}),
)
PLAN_HELDOUT54 = _plan_set(_HELDOUT54)
# held-out set 55 (2026-12-07), predicted with the h200 and h100 presets before its run: issue
# 10's gate as written (plain steps of 17 networks, CNNs and transformers, batches from host-bound
# to GPU-bound, fp32 and bf16 autocast, SGD and AdamW), each (network, batch, precision,
# optimizer) never run before
_HELDOUT55 = (
    ("torchvision:resnet18", 64, {"plain": []}, {}),
    ("torchvision:resnet50", 96, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mobilenet_v3_large", 48, {"plain": []}, {}),
    ("torchvision:efficientnet_b1", 128, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:convnext_small", 64, {"plain": []}, {}),
    ("torchvision:densenet121", 96, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:regnet_y_1_6gf", 48, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vgg16", 48, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:shufflenet_v2_x1_0", 128, {"plain": []}, {"optimizer": "adamw"}),
    ("torchvision:wide_resnet50_2", 32, {"plain": []}, {"optimizer": "sgd"}),
    ("torchvision:vit_b_16", 48, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_t", 24, {"plain": []}, {"optimizer": "adamw"}),
    ("torchvision:maxvit_t", 48, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
)
_HELDOUT55_TOKENS = (
    ("hf:gpt2", 4, (512,), {"plain": []}, {"optimizer": "adamw"}),
    ("hf:bert-base-uncased", 16, (256,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-160m", 8, (512,), {"plain": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 2, (512,), {"plain": []}, {"optimizer": "sgd"}),
)
PLAN_HELDOUT55 = _plan_set(_HELDOUT55, _HELDOUT55_TOKENS)
# held-out set 56 (2026-12-07, session 71), predicted with the h100 and h200 presets before its
# run: the plans users write (checkpoint of a block class or every 2nd block, cpu_offload,
# superneurons) on 12 networks, CNNs and transformers, each (network, batch, precision,
# optimizer) never run before
_HELDOUT56 = (
    ("torchvision:resnet101", 48, {"plain": [], "checkpoint": ["modules=Bottleneck"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet169", 40, {"cpu_offload": ["pin_memory=true"], "superneurons": []},
     {}),
    ("torchvision:efficientnet_b0", 80, {"checkpoint": ["modules=MBConv"]}, {"amp": "bf16"}),
    ("torchvision:convnext_tiny", 40, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vit_b_32", 80, {"checkpoint": ["modules=EncoderBlock"], "superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:swin_s", 20, {"cpu_offload": ["pin_memory=true"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:regnet_y_3_2gf", 56, {"checkpoint": ["every=2"]}, {}),
    ("torchvision:mnasnet1_3", 96, {"superneurons": []}, {}),
    ("torchvision:resnet34", 96, {"cpu_offload": ["pin_memory=true"]}, {"amp": "bf16"}),
    ("snsim:gpt", 12, {"superneurons": []}, {"optimizer": "adamw"}),
)
_HELDOUT56_TOKENS = (
    ("hf:gpt2", 6, (384,), {"checkpoint": ["modules=GPT2Block"],
                            "cpu_offload": ["pin_memory=true"]}, {"optimizer": "adamw"}),
    ("hf:bert-base-uncased", 24, (192,), {"superneurons": []},
     {"optimizer": "adamw", "amp": "bf16"}),
)
PLAN_HELDOUT56 = _plan_set(_HELDOUT56, _HELDOUT56_TOKENS)
# held-out set 57 (session 72), predicted with the h100 and h200 presets before its run: issue
# 10's gate as written again (plain steps of 17 networks, CNNs and transformers, host-bound to
# GPU-bound, fp32 and bf16 autocast, SGD and AdamW), each (network, batch, precision,
# optimizer) never run before
_HELDOUT57 = (
    ("torchvision:resnet50", 48, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:resnet152", 32, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:mobilenet_v2", 96, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:efficientnet_b0", 64, {"plain": []}, {"optimizer": "sgd"}),
    ("torchvision:convnext_tiny", 56, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet169", 48, {"plain": []}, {}),
    ("torchvision:regnet_x_3_2gf", 64, {"plain": []}, {"amp": "bf16"}),
    ("torchvision:vgg19", 32, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:googlenet", 64, {"plain": []}, {}),
    ("torchvision:inception_v3", 48, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:squeezenet1_1", 128, {"plain": []}, {}),
    ("torchvision:swin_s", 28, {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:vit_b_32", 112, {"plain": []}, {"optimizer": "adamw"}),
)
_HELDOUT57_TOKENS = (
    ("hf:gpt2", 10, (256,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:roberta-base", 24, (256,), {"plain": []}, {"optimizer": "adamw"}),
    ("hf:Qwen/Qwen2.5-0.5B", 3, (512,), {"plain": []}, {"optimizer": "adamw", "amp": "bf16"}),
    ("hf:EleutherAI/pythia-410m", 3, (512,), {"plain": []}, {"optimizer": "adamw"}),
)
PLAN_HELDOUT57 = _plan_set(_HELDOUT57, _HELDOUT57_TOKENS)
# held-out set 58 (session 73), predicted with the h100 and h200 presets before its run: pure
# low-precision training (--param-dtype: model.to(bf16 or fp16), weights, gradients, optimizer
# state and input in that dtype, no autocast), new to snsim, plain and checkpointed
_BF16 = {"param_dtype": "bf16"}
_HELDOUT58 = (
    ("torchvision:resnet50", 64, {"plain": []}, {"optimizer": "adamw", **_BF16}),
    ("torchvision:convnext_tiny", 48, {"plain": [], "checkpoint": ["modules=CNBlock"]},
     {"optimizer": "adamw", **_BF16}),
    ("torchvision:efficientnet_b0", 96, {"plain": []}, _BF16),
    ("torchvision:vit_b_16", 48, {"plain": []}, {"optimizer": "sgd", "param_dtype": "fp16"}),
)
_HELDOUT58_TOKENS = (
    ("hf:gpt2", 8, (512,), {"plain": [], "checkpoint": ["modules=GPT2Block"]},
     {"optimizer": "adamw", **_BF16}),
    ("hf:HuggingFaceTB/SmolLM2-135M", 4, (512,), {"plain": []},
     {"optimizer": "adamw", "optimizer_impl": "fused", **_BF16}),
)
PLAN_HELDOUT58 = _plan_set(_HELDOUT58, _HELDOUT58_TOKENS)
# save_on_cpu's own default, pin_memory=false, never run on a GPU before (2026-11-30, branch
# robust): pageable copies hold the launching thread, and their step-time model
# (opcost.op_times_s: blocking copies, the preset's pageable bandwidths) has no measurement yet
_PAGEABLE = (
    ("torchvision:resnet50", 64, {"plain": [], "cpu_offload": ["pin_memory=false"]}, {}),
    ("torchvision:mobilenet_v2", 128, {"plain": [], "cpu_offload": ["pin_memory=false"]}, {}),
    ("torchvision:vgg16", 32, {"plain": [], "cpu_offload": ["pin_memory=false"]},
     {"optimizer": "adamw"}),
    ("torchvision:vit_b_16", 32, {"plain": [], "cpu_offload": ["pin_memory=false"]},
     {"optimizer": "adamw", "amp": "bf16"}),
    ("torchvision:densenet121", 32, {"cpu_offload": ["pin_memory=false"]}, {}),
)
PLAN_PAGEABLE = _plan_set(_PAGEABLE)
PLAN_SETS = {"standard": PLAN_RUNS, "heldout": PLAN_HELDOUT, "heldout2": PLAN_HELDOUT2,
             "heldout3": PLAN_HELDOUT3, "heldout4": PLAN_HELDOUT4,
             "heldout5": PLAN_HELDOUT5,
             "heldout6": PLAN_HELDOUT6, "heldout7": PLAN_HELDOUT7,
             "heldout8": PLAN_HELDOUT8, "heldout9": PLAN_HELDOUT9,
             "heldout10": PLAN_HELDOUT10, "heldout11": PLAN_HELDOUT11,
             "heldout12": PLAN_HELDOUT12, "heldout13": PLAN_HELDOUT13,
             "heldout14": PLAN_HELDOUT14, "heldout15": PLAN_HELDOUT15,
             "heldout16": PLAN_HELDOUT16, "heldout17": PLAN_HELDOUT17,
             "heldout18": PLAN_HELDOUT18, "heldout19": PLAN_HELDOUT19,
             "heldout20": PLAN_HELDOUT20, "heldout21": PLAN_HELDOUT21,
             "heldout22": PLAN_HELDOUT22, "heldout23": PLAN_HELDOUT23,
             "heldout24": PLAN_HELDOUT24, "heldout25": PLAN_HELDOUT25,
             "heldout26": PLAN_HELDOUT26, "heldout27": PLAN_HELDOUT27,
             "heldout28": PLAN_HELDOUT28, "heldout29": PLAN_HELDOUT29,
             "heldout30": PLAN_HELDOUT30, "heldout31": PLAN_HELDOUT31,
             "heldout32": PLAN_HELDOUT32, "heldout33": PLAN_HELDOUT33,
             "heldout34": PLAN_HELDOUT34, "heldout35": PLAN_HELDOUT35,
             "heldout36": PLAN_HELDOUT36, "heldout37": PLAN_HELDOUT37,
             "heldout38": PLAN_HELDOUT38, "heldout39": PLAN_HELDOUT39,
             "heldout40": PLAN_HELDOUT40, "heldout41": PLAN_HELDOUT41,
             "heldout42": PLAN_HELDOUT42, "heldout43": PLAN_HELDOUT43,
             "heldout44": PLAN_HELDOUT44, "heldout45": PLAN_HELDOUT45,
             "heldout46": PLAN_HELDOUT46, "heldout47": PLAN_HELDOUT47,
             "heldout48": PLAN_HELDOUT48, "heldout49": PLAN_HELDOUT49,
             "heldout50": PLAN_HELDOUT50, "heldout51": PLAN_HELDOUT51,
             "heldout52": PLAN_HELDOUT52, "heldout53": PLAN_HELDOUT53,
             "heldout54": PLAN_HELDOUT54, "heldout55": PLAN_HELDOUT55,
             "heldout56": PLAN_HELDOUT56, "heldout57": PLAN_HELDOUT57,
             "heldout58": PLAN_HELDOUT58,
             "pageable": PLAN_PAGEABLE}


def run_setup(run):
    """The run's :class:`~snsim.torchsim.amp.TrainSetup` (optimizer, implementation, amp,
    float32 matmul precision, parameters' dtype)."""
    from .amp import TrainSetup
    return TrainSetup.parse(run.get("optimizer", "sgd-momentum"),
                            run.get("optimizer_impl", "foreach"), run.get("amp"),
                            matmul_precision=run.get("matmul_precision", "highest"),
                            param_dtype=run.get("param_dtype", "fp32"))
SETUP_S = 3.0      # build, move to the GPU, first kernels [E]
PROCESS_START_S = 6.0   # a fresh process: spawn, import torch and torchvision, CUDA context [E]
PINNED_BYTES_PER_S = 4e9   # cudaHostAlloc of the first save_on_cpu iteration [E]


def run_name(run):
    """``resnet50_b128_checkpoint-modulesBottleneck``: a run's name."""
    from .models import resolve_model
    spec = resolve_model(run["model"], input_shape=run.get("input_shape"))
    plan = run_plan(run)
    return f"{spec.name}_b{run['batch']}{run_setup(run).slug}_{plan.slug}"


def run_plan(run):
    """The run's plan (:func:`~snsim.torchsim.zero.parse_plan`: a ``PlanSpec``, or a
    ``ZeroPlan`` for a ZeRO policy, which takes no options and fp32 only)."""
    from .zero import parse_plan
    return parse_plan(run["policy"], run.get("options", []), run_setup(run))


def estimate_s(pred, warmup, iters):
    """Seconds a run should take on the GPU, from its prediction."""
    if not pred:
        return SETUP_S
    step = pred.get("step_time_s") or 0.0
    return SETUP_S + (warmup + iters) * step + pred.get("host_copied_bytes", 0) / \
        PINNED_BYTES_PER_S


def predict_run(run, gpu="h200"):
    """The before-run prediction of one run with preset ``gpu``: ``(summary, None)`` or
    ``(None, error line)``.

    Module-level so that worker processes can run it.
    """
    import time
    t0 = time.perf_counter()
    try:
        from .zero import predict_policy
        pred, _ = predict_policy(run["model"], run["batch"], run_plan(run),
                                 input_shape=run.get("input_shape"), optimizer=run_setup(run),
                                 gpu=gpu)
        pred["predict_wall_s"] = round(time.perf_counter() - t0, 2)
        return pred, None
    except Exception as e:   # recorded with the run
        return None, f"{type(e).__name__}: " + (str(e).strip().splitlines() or [""])[0]


def _worker_init():
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = "1"
    # errors come back with the results; the workers' warnings would only bury the log
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    import torch
    torch.set_num_threads(1)


def _versions(device):
    if device != "cuda":
        import platform

        import torch
        return {"torch": torch.__version__, "python": platform.python_version(),
                "device": device}
    import torch
    from .capture import provenance
    return provenance(torch, tool="snsim suite --only plans")


def _write_bundle(path, docs, versions):
    import gzip
    import json
    tmp = f"{path}.tmp"
    with gzip.open(tmp, "wt") as f:
        json.dump({"suite": "snsim.torchsim.suite --only plans", "versions": versions,
                   "runs": docs}, f, separators=(",", ":"), default=str)
    os.replace(tmp, path)


_SUMMARY = ("name", "status", "network", "batch", "plan", "pred_allocated_bytes",
            "meas_allocated_bytes", "err_allocated_pct", "pred_reserved_bytes",
            "meas_reserved_bytes", "err_reserved_pct", "pred_step_time_s", "meas_step_time_s",
            "err_step_time_pct", "host_gauge_add_us_before", "host_gauge_add_us_after",
            "pred_host_issue_s", "meas_host_issue_s", "pred_feasible", "estimate_s", "wall_s",
            "error")


def _err(p, m):
    return round(100.0 * (p - m) / m, 3) if p is not None and m else None


def _summary_row(doc):
    pred = doc.get("prediction") or {}
    meas = doc.get("measured") or {}
    row = {"name": doc["name"], "status": doc["status"], "network": doc.get("network"),
           "batch": doc.get("batch"), "plan": doc.get("plan_label"),
           "pred_feasible": pred.get("feasible"), "estimate_s": doc.get("estimate_s"),
           "wall_s": doc.get("wall_s"), "error": doc.get("error") or "",
           "pred_host_issue_s": pred.get("host_issue_s"),
           "meas_host_issue_s": meas.get("host_issue_s")}
    for q, col in (("peak_allocated_bytes", "allocated"), ("peak_reserved_bytes", "reserved"),
                   ("step_time_s", "step_time")):
        p, m = pred.get(q), meas.get(q)
        row[f"pred_{col}_bytes" if col != "step_time" else "pred_step_time_s"] = p
        row[f"meas_{col}_bytes" if col != "step_time" else "meas_step_time_s"] = m
        row[f"err_{col}_pct"] = _err(p, m)
    for when in ("before", "after"):     # the run's process's host pace (hostpace.py)
        g = meas.get(f"host_gauge_add_s_{when}")
        row[f"host_gauge_add_us_{when}"] = round(g * 1e6, 3) if g is not None else None
    return row


def run_plans(runs, out, *, match="", warmup=2, iters=5, deadline_s=480.0, workers=None,
              mode="measure", dry_run=False, device="cuda", predict_first=True,
              fresh_process=None):
    """Predict, then execute, every run; write bundles and ``summary.csv`` under ``out``.

    Parameters
    ----------
    runs : list of dict
        ``{"model", "batch", "policy", "options"[, "input_shape", "optimizer"]}``.
    out : str
        Output directory (flat: ``PLAN.json.gz`` per plan, ``summary.csv``).
    workers : int, optional
        Prediction processes; 0 predicts in this process, just before each run.
    dry_run : bool
        Predict only (CPU), print estimates; write the bundles with predictions.
    device : {"cuda", "cpu"}
        ``"cpu"`` measures on the CPU (tests of this code; no peaks).
    predict_first : bool
        Wait for every prediction before the first run (default), so that the prediction
        workers do not share the CPU with measured runs.
    fresh_process : bool, optional
        Execute each run in a new process, as a user's run starts (:func:`_execute`);
        default: on CUDA only.

    Returns
    -------
    int
        0 if every run that was attempted succeeded, else 1.
    """
    import csv
    import time
    t_start = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    if fresh_process is None:
        fresh_process = device == "cuda"
    todo = []
    for run in runs:
        try:
            name = run_name(run)
        except Exception as e:
            name = f"{run['model']}_b{run['batch']}_{run['policy']}"
            todo.append((name, run, f"{type(e).__name__}: {e}"))
            continue
        if match and not any(m in name for m in match.split(",")):
            continue
        todo.append((name, run, None))
    print(f"suite: {len(todo)} runs, mode {mode}{' (dry run)' if dry_run else ''}, "
          f"deadline {deadline_s:.0f} s", flush=True)
    if workers is None:
        workers = max(1, min(10, (os.cpu_count() or 2) - 4))
    # with fresh processes this one never touches CUDA: its context would show in the runs'
    # device-wide memory figures
    versions = (_in_fresh_process(_versions, device) if fresh_process and not dry_run
                else _versions("cpu" if dry_run else device))
    print(f"suite: versions {versions}", flush=True)
    # the runs are predicted with the preset of the GPU that runs them (an H100 lease's with
    # h100's, whose figures differ from h200's: its bandwidths and its host's pace groups)
    gpu = versions.get("hardware") or "h200"
    pool = None
    futures = {}
    if workers > 0 and len(todo) > 1:
        import concurrent.futures as cf
        import multiprocessing as mp
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                      initializer=_worker_init)
        for name, run, bad in todo:
            if bad is None:
                futures[name] = pool.submit(predict_run, run, gpu)
    if futures and predict_first:
        # every prediction before the first GPU run: the workers' CPU load must not slow the
        # measured steps (eager PyTorch launches kernels from the CPU)
        import concurrent.futures as cf
        t0 = time.perf_counter()
        cf.wait(list(futures.values()), timeout=max(60.0, deadline_s / 3))
        print(f"suite: {sum(f.done() for f in futures.values())}/{len(futures)} predictions "
              f"in {time.perf_counter() - t0:.0f} s", flush=True)
    bundles = {}
    rows = []
    failures = 0
    try:
        for i, (name, run, bad) in enumerate(todo):
            doc = {"name": name, "model": run["model"], "batch": run["batch"],
                   "policy": run["policy"], "options": list(run.get("options", [])),
                   "status": "error", "error": bad, "prediction": None, "measured": None,
                   "provenance": versions}
            group = run["policy"]
            try:
                from .models import resolve_model
                if bad is None:
                    spec = resolve_model(run["model"], input_shape=run.get("input_shape"))
                    plan = run_plan(run)
                    doc.update(network=spec.name, input_shape=list(spec.input_shape),
                               input_dtype=spec.input_dtype, plan=plan.to_dict(),
                               plan_label=plan.label)
                    t0 = time.perf_counter()
                    pred, perr = _prediction(name, run, futures, gpu)
                    doc["prediction"] = pred
                    doc["prediction_error"] = perr
                    doc["prediction_wait_s"] = round(time.perf_counter() - t0, 2)
                    est = estimate_s(pred, warmup, iters) + (PROCESS_START_S if fresh_process
                                                             else 0.0)
                    doc["estimate_s"] = round(est, 1)
                    elapsed = time.perf_counter() - t_start
                    p_txt = (f"pred alloc {pred['peak_allocated_bytes'] / 2**30:.3f} GiB, "
                             f"reserved {pred['peak_reserved_bytes'] / 2**30:.3f} GiB, step "
                             f"{pred['step_time_s'] * 1e3:.1f} ms" if pred else f"no prediction "
                             f"({perr})")
                    print(f"[{i + 1}/{len(todo)}] {name}: {p_txt}; estimate {est:.1f} s "
                          f"(elapsed {elapsed:.0f} s)", flush=True)
                    if dry_run:
                        doc["status"] = "predicted" if pred else "error"
                        doc["error"] = perr
                    elif elapsed + est > deadline_s:
                        doc["status"] = "skipped"
                        doc["error"] = (f"skipped: {elapsed:.0f} s elapsed + estimate "
                                        f"{est:.0f} s > deadline {deadline_s:.0f} s")
                        print(f"   {doc['error']}", flush=True)
                    elif pred is not None and not pred["feasible"]:
                        doc["status"] = "skipped"
                        doc["error"] = "skipped: predicted not to fit the GPU"
                        print(f"   {doc['error']}", flush=True)
                    else:
                        t1 = time.perf_counter()
                        doc["measured"], extra = _execute(run, mode, warmup, iters, device,
                                                          fresh_process)
                        doc.update(extra)
                        doc["wall_s"] = round(time.perf_counter() - t1, 2)
                        doc["status"] = "ok"
                        doc["error"] = None
                        m = doc["measured"]
                        r = _summary_row(doc)
                        print(f"   measured alloc {_gib(m.get('peak_allocated_bytes'))}, reserved "
                              f"{_gib(m.get('peak_reserved_bytes'))}, step "
                              f"{m['step_time_s'] * 1e3:.1f} ms in {doc['wall_s']:.1f} s; err "
                              f"alloc {r['err_allocated_pct']}%, reserved "
                              f"{r['err_reserved_pct']}%, step {r['err_step_time_pct']}%",
                              flush=True)
            except Exception as e:    # one failing run must not stop the suite
                import traceback
                doc["status"] = "error"
                doc["error"] = f"{type(e).__name__}: " + (str(e).strip().splitlines() or [""])[0]
                doc["traceback"] = traceback.format_exc()[-4000:]
                print(f"   FAILED: {doc['error']}", flush=True)
            if doc["status"] == "error":
                failures += 1
            bundles.setdefault(group, []).append(doc)
            rows.append(_summary_row(doc))
            _write_bundle(os.path.join(out, f"{group}.json.gz"), bundles[group], versions)
            with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=_SUMMARY)
                w.writeheader()
                w.writerows(rows)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    ok = sum(1 for r in rows if r["status"] in ("ok", "predicted"))
    print(f"suite: {ok}/{len(rows)} runs ok, {failures} failed, "
          f"{sum(1 for r in rows if r['status'] == 'skipped')} skipped, "
          f"{time.perf_counter() - t_start:.0f} s; bundles in {out}", flush=True)
    return 1 if failures else 0


PREDICT_TIMEOUT_S = 240.0


def _prediction(name, run, futures, gpu):
    """The run's prediction (preset ``gpu``) from its worker, else (a broken pool) made
    here."""
    fut = futures.pop(name, None)
    if fut is None:
        return predict_run(run, gpu)
    import concurrent.futures as cf
    try:
        return fut.result(timeout=PREDICT_TIMEOUT_S)
    except cf.TimeoutError:
        return None, f"prediction timed out after {PREDICT_TIMEOUT_S:.0f} s"
    except Exception:      # a worker died: predict in this process
        return predict_run(run, gpu)


def _gib(v):
    return f"{v / 2**30:.3f} GiB" if isinstance(v, (int, float)) else "n/a"


def _execute(run, mode, warmup, iters, device, fresh_process):
    """The run measured (or captured) on ``device``: ``(measured, extra document keys)``.

    ``fresh_process``: in a new process of its own, as a user's run starts. Within one
    process, runs after the first find CUDA's virtual address space as the earlier ones left
    it: cudaMalloc returns addresses in another order, and the caching allocator's best fit
    breaks ties between equal free blocks by address, so the same plan's reserved peak moves.
    RegNetX-400MF b512 plain (traces/h200/plans_history/regnet_x_400mf_b512_plain_*):
    two fresh processes reserved 17,548,967,936 B each, cudaMalloc placing large segments
    top-down (the engine's ``segment_placement="driver"``); after the held-out-5 suite's 19
    earlier runs in one process it reserved 16,519,266,304 B, the suite's own figure, with
    the same requests and frees. Each stream replays to its own figure exactly with its own
    addresses."""
    if not fresh_process:
        return _execute_here(run, mode, warmup, iters, device)
    return _in_fresh_process(_execute_here, run, mode, warmup, iters, device)


def _in_fresh_process(fn, *args):
    """``fn(*args)`` in a new (spawned) process; its result or its exception."""
    import concurrent.futures as cf
    import multiprocessing as mp
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _execute_here(run, mode, warmup, iters, device):
    from .execute import measure
    from .models import resolve_model
    from .plans import make_transform
    spec = resolve_model(run["model"], input_shape=run.get("input_shape"))
    from .zero import ZeroPlan
    plan = run_plan(run)
    optimizer = run_setup(run)
    if isinstance(plan, ZeroPlan):
        if mode == "capture":
            raise ConfigError(f"{plan.policy}: the suite measures ZeRO runs (no capture)")
        from .zero import measure_zero
        return measure_zero(spec, run["batch"], plan.policy, optimizer=optimizer,
                            warmup_iters=warmup, iters=iters, device=device), {}
    if mode == "capture":
        from .capture import capture
        cap = capture(spec.text, run["batch"], optimizer=optimizer,
                      input_shape=run.get("input_shape"), transform=make_transform(plan),
                      timing_iters=iters, plain_iters=iters, warmup_iters=warmup,
                      device=device, extra_provenance={"policy": plan.policy,
                                                       "plan": plan.to_dict()})
        return cap["measured"], {"program": cap["program"],
                                 "capture_provenance": cap["provenance"]}
    return measure(spec, run["batch"], plan, optimizer=optimizer, warmup_iters=warmup,
                   iters=iters, device=device), {}


if __name__ == "__main__":
    sys.exit(main())
