"""Measure the workspaces cuDNN takes for convolutions on this GPU: the table behind the
workspace of a convolution no capture has seen (``snsim predict``, :mod:`snsim.torchsim.hidden`).

Why: a CPU prediction sees every tensor but not the memory a cuDNN kernel takes for itself.
The captures' tables give it for the convolutions of the captured networks; a network with
other convolutions (RegNet's grouped 3x3 convolutions, group width 24, none captured) got no
workspace at all, and its peak sits on one: the H200 history of regnet_y_1_6gf b96
(traces/h200/plans_history) shows 385,425,424 B taken by the backward of a 48-channel 3x3
stride-2 convolution of 2 groups at 112x112, 1.67x its input, where the prediction had none
(allocated -12.6% under superneurons, -17.3% under cpu_offload).

What: each convolution of the calibration CNNs' layers (``snsim calibrate``'s NET_MODELS, at
the batches of NET_BATCHES) and, taking turns with them, of a seeded random sample (the
calibration sampler's kinds: dense, depthwise and grouped of several group widths; kernel
1..7, stride 1/2, batch 8..256, fp32, bf16, fp16, with and without bias) runs forward and
backward through autograd, exactly as a training step calls it (``F.conv2d``, then
``backward``; cudnn.benchmark off, TF32 as PyTorch's default for convolutions), with the
caching allocator's history on. Every allocation an op makes that is not one of its outputs
is a workspace; the table keeps their sizes in the order they were taken, and the calls that
took none (an empty list: known zero, not unknown).
Signatures are written by the recorder's own :func:`snsim.torchsim.record.signature`, so a
CPU recording looks them up as it looks up a capture's.

Output (one file, to commit as configs/kernels/h200_conv_workspaces.json.gz):

    $OUT/h200_conv_workspaces.json.gz  {"provenance": {torch, cuda, cudnn, gpu, settings,
                                         seed, date}, "rows": [[signature, [workspace bytes,
                                         ...]], ...]}

Usage (one H200, from the repository root; --minutes bounds the whole run, default 7: the
calibration CNNs' layers first, then random convolutions until the time is up):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT [--minutes 7]

3-D convolutions (torchvision's video models: Conv3d layers, none in the 2-D sampler; the H200
history of r3d_18 b16 fp16, traces/h200/plans_history, shows two workspaces of ~2x the
activation per 3-D convolution backward and one per forward, where the prediction had none):
each model's whole training forward and backward at its default clip, at several batches and
in every --net-dtypes dtype (a half-precision model: the dtypes autocast gives its convolutions;
the input takes no gradient, as a training batch):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 3 \
        --video-nets r3d_18,mc3_18,r2plus1d_18,s3d,mvit_v2_s,swin3d_t --skip-nets \
        --video-batches 1,2,4,8,16,32 --net-dtypes float32,bfloat16,float16 \
        --merge configs/kernels/h200_conv_workspaces.json.gz

More grouped convolutions for the table a grouped convolution's nearest probed neighbour
comes from (:func:`snsim.torchsim.hidden.probed_grouped_workspaces`), added to the committed
table (another seed: other shapes; the output replaces configs/kernels/h200_conv_workspaces.json.gz):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 8 --seed 1 \
        --kinds grouped --skip-nets --merge configs/kernels/h200_conv_workspaces.json.gz

Group widths the default sampler lacks (RegNetX-8GF's 120 channels per group took 1.07 to
1.29 x its transposed activations on the H200, traces/h200/plans_history/
regnet_x_8gf_b64_fp16_plain, where the nearest probed widths, 64 and 128, take ~1.0):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 8 --seed 2 \
        --kinds grouped --skip-nets --group-widths 40,56,72,80,96,112,120,144,160,168,192,232,256,264 \
        --merge configs/kernels/h200_conv_workspaces.json.gz

16-bit network layers and dtype pairs (the layers above ran in fp32 and bf16 only, so an fp16
network convolution took the bf16 row, and the H200 histories contradict it: a 3-channel stem
in fp16 pads x to 4 channels, bf16 to 8; 1x1 convolutions on 7x7 and 14x14 maps in fp16 took
none, x + y or the per-sample weight-gradient engine by batch): the calibration CNNs' and two
more networks' layers in fp16 at six batches, and random dense and depthwise convolutions each
in fp16 and bf16, with the output each workspace follows (``slots``):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 2.4 --seed 3 \
        --kinds dense,dw --net-dtypes float16 --net-batches 128,32,8,64,16,256 \
        --sample-dtypes float16,bfloat16 --merge configs/kernels/h200_conv_workspaces.json.gz \
        --nets resnet50,densenet121,inception_v3,vgg16,mobilenet_v2,efficientnet_b0,resnet18

1x1 convolutions on small maps by batch (session 29: held-out set 25's EfficientNet-B2 b96
bf16 checkpoint run reserved 12.8 % less than predicted, its 1x1 backward-filter passes read
as the per-sample engine's from EfficientNet-B0's neighbours, which ran it up to batch 96 and
not from 128): a grid of channel counts none of the calibration networks' 1x1 layers has, each
expanded and projected, at nine batches, fp16 and bf16:

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 4 --seed 6 \
        --skip-nets --pointwise-grid 96,160,224,448,640 --no-random \
        --net-batches 32,48,64,80,96,112,128,160,192 --net-dtypes bfloat16,float16 \
        --merge configs/kernels/h200_conv_workspaces.json.gz

Maps other than a 224x224 network's (segmentation crops, other input sizes: the default sampler
runs 7-112 pixel sides only), dense and depthwise, each shape in all three dtypes (seed 4,
2026-12-02: 21,042 calls in 6 minutes, configs/kernels/h200_conv_workspaces_seed4.log):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 6 --seed 4 \
        --kinds dense,dw --skip-nets --spatial 8,10,12,15,16,20,24,30,32,33,40,48,60,64,65,80,96,120 \
        --sample-dtypes bfloat16,float16,float32 --merge configs/kernels/h200_conv_workspaces.json.gz

Two more calibration networks' layers in fp32 and bf16 (seed 3 ran them in fp16 only; held-out
ResNet-18 b32 reserved 80 MiB more than predicted, its BasicBlocks' 3x3 stride-2 convolutions
read from a capture at another batch, scaled); the committed table kept those 1,706 rows and
left out the random dense convolutions the run went on to (their new nearest neighbours moved
the fresh held-out set's reserved peaks by up to 19 points:
configs/kernels/h200_conv_workspaces_seed5.log):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 2.5 --seed 5 \
        --kinds dense --net-dtypes float32,bfloat16 --nets resnet18,efficientnet_b0 \
        --merge configs/kernels/h200_conv_workspaces.json.gz

The segmentation models' layers, their atrous (dilated) convolutions included, at their
480 x 480 input: no classification network has their maps (60 x 60, 30 x 30) or dilations,
so without them a DeepLabV3-MobileNetV3 b24 prediction took 306 of its 420 workspaces from
probed neighbours (H200 held-out set 15: reserved +7.99 %, LR-ASPP -8.70 %):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 5 --no-random \
        --nets deeplabv3_mobilenet_v3_large,lraspp_mobilenet_v3_large,deeplabv3_resnet50,\
deeplabv3_resnet101,fcn_resnet50,fcn_resnet101 --net-batches 4,8,16,24,32 \
        --net-dtypes float32,bfloat16,float16 --merge configs/kernels/h200_conv_workspaces.json.gz

Channels-last inputs (``--layout channels_last``: each input made NHWC, as a network that
permutes NHWC activations back feeds its convolutions, ConvNeXt's blocks): ATen sends a
depthwise convolution whose input or weight suggests channels-last to cuDNN
(``use_cudnn_depthwise``, aten/src/ATen/native/Convolution.cpp), not to its own kernel, and
cuDNN's NHWC depthwise backward takes workspaces the contiguous rows above (none) do not
show. The rows go to their own table, ``h200_conv_workspaces_channels_last.json.gz``, which
a CPU prediction reads for the convolutions its recorder saw run channels-last
(:func:`snsim.torchsim.record.conv_layout`):

    PYTHONPATH=$PWD python3 scripts/conv_workspace_probe.py --out $OUT --minutes 6 --seed 5 \
        --kinds dw --skip-nets --sample-dtypes float32,bfloat16,float16 --layout channels_last
"""
import argparse
import datetime
import gzip
import json
import os
import random
import sys
import time

MARK_BYTES = 13      # a request size no convolution makes: separates one op's allocations
NET_BATCHES = (32, 64, 128, 16, 48, 96, 256, 192, 8, 24)


KINDS = {"dense": 4, "dw": 2, "grouped": 4}     # sampling weights
# channels per group of the grouped convolutions sampled by default
GROUP_WIDTHS = (4, 8, 16, 24, 32, 48, 64, 128)
# square input maps of the random convolutions by default: a 224x224 network's
SPATIAL = (7, 14, 28, 56, 112)


def _sample(rng, kinds=tuple(KINDS), group_widths=GROUP_WIDTHS, spatial=SPATIAL):
    """One random convolution of one of ``kinds``: (n, c, h, co, k, s, groups, bias, dtype
    name); a grouped one has one of ``group_widths`` channels per group, each an ``h x h``
    input map of one of ``spatial``."""
    n = rng.choice([8, 16, 32, 48, 64, 96, 128, 192, 256])
    kind = rng.choices(list(kinds), weights=[KINDS[k] for k in kinds])[0]
    k = rng.choice([1, 3, 3, 3, 5, 7]) if kind != "grouped" else rng.choice([1, 3, 3, 3, 5])
    s = rng.choice([1, 1, 2])
    h = rng.choice(list(spatial))
    if kind == "grouped":
        gw = rng.choice(list(group_widths))
        g = rng.choice([2, 3, 4, 5, 8, 14, 16, 32, 37, 64])
        c = co = gw * g
    elif kind == "dw":
        c = co = g = rng.choice([16, 32, 48, 72, 96, 144, 240, 480, 960])
    else:
        g = 1
        c = rng.choice([3, 16, 32, 48, 64, 96, 128, 256, 384, 512, 1024, 2048])
        co = rng.choice([16, 32, 64, 128, 256, 512, 1024, 2048])
    dtype = rng.choices(["float32", "bfloat16", "float16"], weights=[2, 1, 1])[0]
    return n, c, h, co, k, s, g, rng.random() < 0.3, dtype


#: the calibration CNNs (``snsim calibrate``'s NET_MODELS), each at its default input
NET_MODELS = ("resnet50", "densenet121", "inception_v3", "vgg16", "mobilenet_v2")


def _net_layers(models=NET_MODELS):
    """(c, h, co, k, s, pad, groups, bias, dilation) of the distinct square ``nn.Conv2d``
    layers of ``models`` (torchvision names, each at its default input), traced at batch 1 on
    the meta device. Dilated layers count (the segmentation models' atrous convolutions:
    DeepLabV3's ASPP at dilations 12, 24 and 36)."""
    import torch
    from snsim.torchsim.calibrate import traced_layer_calls
    seen, out = set(), []
    for _name, (c, h, w), mod in traced_layer_calls(models, torch.nn.Conv2d):
        if (mod.kernel_size[0] == mod.kernel_size[1] and h == w
                and mod.padding[0] == mod.padding[1] and mod.stride[0] == mod.stride[1]
                and mod.dilation[0] == mod.dilation[1]):
            f = (c, h, mod.out_channels, mod.kernel_size[0], mod.stride[0], mod.padding[0],
                 mod.groups, mod.bias is not None, mod.dilation[0])
            if f not in seen:
                seen.add(f)
                out.append(f)
    return out


class _Probe:
    def __init__(self, torch, device="cuda"):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves
        from snsim.torchsim.record import signature
        probe = self
        self.calls = []        # (signature, [output sizes]) in order
        self.torch = torch

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                name = func._overloadpacket.__name__
                if name not in ("convolution", "convolution_backward"):
                    return func(*args, **kwargs)
                m0 = torch.empty(MARK_BYTES, dtype=torch.uint8, device=device)
                out = func(*args, **kwargs)
                m1 = torch.empty(MARK_BYTES, dtype=torch.uint8, device=device)
                del m0, m1
                sizes = [t.untyped_storage().nbytes() for t in tree_leaves(out)
                         if isinstance(t, torch.Tensor)]
                probe.calls.append((signature(name, args, kwargs), sizes))
                return out
        self.mode = Mode


def _rounded(nbytes):
    """The caching allocator's block size for a request of ``nbytes``."""
    return 512 if nbytes <= 512 else (nbytes + 511) // 512 * 512


def _workspaces(events, calls):
    """Split the allocator history at the markers; drop each call's outputs (first
    allocation of each output size, in order); what is left are its workspaces. Returns
    ``[signature, sizes, slots]`` per call: ``slots[j]`` is how many of the call's outputs
    were allocated before its j-th workspace (a ``convolution_backward`` on cuDNN allocates
    grad_input, takes the backward-data workspace, allocates grad_weight, takes the
    backward-filter workspace: which pass took a lone workspace)."""
    segments, cur, inside = [], [], False
    for action, size in events:
        if action != "alloc":
            continue
        if size == MARK_BYTES:
            if inside:
                segments.append(cur)
            cur, inside = [], not inside
        elif inside:
            cur.append(size)
    if len(segments) != len(calls):
        raise RuntimeError(f"{len(segments)} marked spans for {len(calls)} calls")
    rows = []
    for (sig, outs), allocs in zip(calls, segments):
        # the history may list a block's size rounded up to 512 B
        want = [o for o in outs]
        rest, slots, made = [], [], 0
        for size in allocs:
            same = [k for k in range(made, len(want)) if size in (want[k], _rounded(want[k]))]
            if same and same[0] == made:
                made += 1
            elif same:                     # an output allocated out of the listed order
                del want[same[0]]
            else:
                rest.append(size)
                slots.append(made)
        rows.append([sig, rest, slots])
    return rows


def _restart(torch, probe):
    probe.calls = []
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.empty_cache()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=200_000)


def _flush(torch, probe):
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    events = [(e["action"], int(e.get("size", 0)))
              for tr in snap.get("device_traces", []) for e in tr]
    rows = _workspaces(events, probe.calls)
    _restart(torch, probe)
    return rows


def run_one(torch, F, probe, n, c, h, co, k, s, pad, g, bias, dtype, device="cuda",
            layout="", dilation=1):
    dt = getattr(torch, dtype)
    x = torch.randn(n, c, h, h, device=device, dtype=dt)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_(c != 3)
    w = torch.randn(co, c // g, k, k, device=device, dtype=dt, requires_grad=True)
    b = torch.randn(co, device=device, dtype=dt, requires_grad=True) if bias else None
    with probe.mode():
        y = F.conv2d(x, w, b, stride=s, padding=pad, dilation=dilation, groups=g)
        y.backward(torch.ones_like(y))
    del x, w, b, y


def run_video_net(torch, probe, name, n, dtype, device="cuda"):
    """One training forward and backward of torchvision video model ``name`` at batch ``n``
    in ``dtype`` (its default clip: snsim.torchsim.models), under the probe."""
    from snsim.torchsim.models import resolve_model
    spec = resolve_model(f"torchvision:{name}")
    dt = getattr(torch, dtype)
    net = spec.build().to(device=device, dtype=dt).train()
    x = torch.randn(n, *spec.input_shape, device=device, dtype=dt)
    with probe.mode():
        out = net(x)
        out.float().sum().backward()
    del net, x, out


def _positive_ints(flag, text):
    """``text``'s comma-separated positive integers; else exit with one line naming ``flag``."""
    try:
        values = tuple(int(v) for v in text.split(",") if v)
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        sys.exit(f"conv_workspace_probe: {flag} (={text!r}) must be comma-separated positive "
                 f"integers")
    return values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--minutes", type=float, default=7.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-bytes", type=float, default=1.5 * 2**30,
                    help="skip a convolution whose input or output is larger")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="random convolutions of these kinds only (comma-separated: "
                         "dense, dw, grouped)")
    ap.add_argument("--group-widths", default=",".join(map(str, GROUP_WIDTHS)),
                    help="channels per group of the random grouped convolutions "
                         "(comma-separated positive integers)")
    ap.add_argument("--spatial", default=",".join(map(str, SPATIAL)),
                    help="side of the random convolutions' square input maps "
                         "(comma-separated positive integers)")
    ap.add_argument("--skip-nets", action="store_true",
                    help="random convolutions only (the calibration CNNs' layers are in the "
                         "table already)")
    ap.add_argument("--net-dtypes", default="float32,bfloat16",
                    help="dtypes the calibration CNNs' layers run in (comma-separated)")
    ap.add_argument("--net-batches", default=",".join(map(str, NET_BATCHES)),
                    help="batches the calibration CNNs' layers run at (comma-separated)")
    ap.add_argument("--nets", default=",".join(NET_MODELS),
                    help="torchvision CNNs whose layers are probed, each at its default "
                         "input (comma-separated names)")
    ap.add_argument("--sample-dtypes", default=None,
                    help="run each random convolution in every one of these dtypes "
                         "(comma-separated; pairs of one shape: does the engine, so the "
                         "workspace, depend on the dtype?); default one random dtype each")
    ap.add_argument("--pointwise-grid", default="",
                    help="also 1x1 stride-1 dense convolutions on a grid, at --net-batches "
                         "in --net-dtypes: these input channel counts (comma-separated), "
                         "each expanded 4x and 6x and projected back (c -> 4c, 6c and 4c, 6c "
                         "-> c), on 7x7 and 14x14 maps: where cuDNN's weight-gradient engine "
                         "changes with the batch (per-sample partial sums or not)")
    ap.add_argument("--no-random", action="store_true",
                    help="the network layers and grid only, no random convolutions between "
                         "them (stop when those are done)")
    ap.add_argument("--dry-run", action="store_true",
                    help="list what would run and run a few calls on the CPU (no history)")
    ap.add_argument("--merge", default=None,
                    help="a table written before (configs/kernels/<gpu>_conv_workspaces."
                         "json.gz): the output holds its rows first, then the new "
                         "signatures")
    ap.add_argument("--video-nets", default="",
                    help="torchvision video models whose 3-D convolutions are probed, whole "
                         "training steps (comma-separated names), before anything else")
    ap.add_argument("--video-batches", default="1,2,4,8,16,32",
                    help="batches the --video-nets run at (comma-separated)")
    ap.add_argument("--layout", default="", choices=("", "channels_last"),
                    help="channels_last: every input NHWC, the rows written to "
                         "h200_conv_workspaces_channels_last.json.gz (default: NCHW)")
    args = ap.parse_args(argv)
    video_nets = tuple(v for v in args.video_nets.split(",") if v)
    video_batches = _positive_ints("--video-batches", args.video_batches)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        sys.exit(f"conv_workspace_probe: --kinds (={args.kinds!r}) must name some of "
                 f"{', '.join(KINDS)}")
    widths = _positive_ints("--group-widths", args.group_widths)
    spatial = _positive_ints("--spatial", args.spatial)
    dtypes = ("float32", "bfloat16", "float16")
    net_dtypes = tuple(d for d in args.net_dtypes.split(",") if d)
    sample_dtypes = tuple(d for d in (args.sample_dtypes or "").split(",") if d)
    for flag, got in (("--net-dtypes", net_dtypes), ("--sample-dtypes", sample_dtypes)):
        if any(d not in dtypes for d in got):
            sys.exit(f"conv_workspace_probe: {flag} (={','.join(got)!r}) must name some of "
                     f"{', '.join(dtypes)}")
    nets = tuple(v for v in args.nets.split(",") if v)
    if not nets or any(not v.isidentifier() for v in nets):
        sys.exit(f"conv_workspace_probe: --nets (={args.nets!r}) must be comma-separated "
                 f"torchvision model names")
    net_batches = _positive_ints("--net-batches", args.net_batches)
    old_rows, old_prov, old_slots = [], None, {}
    if args.merge:
        try:
            with gzip.open(args.merge, "rt") as f:
                doc = json.load(f)
            old_rows, old_prov = doc["rows"], doc.get("provenance")
            old_slots = doc.get("slots", {})
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"conv_workspace_probe: --merge {args.merge}: {e}")
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available() and not args.dry_run:
        sys.exit("conv_workspace_probe: needs a CUDA device")
    torch.backends.cudnn.benchmark = False
    rng = random.Random(args.seed)
    deadline = time.perf_counter() + 60 * args.minutes
    # cuDNN picks its algorithm (so its workspace) by shape, batch included, and not
    # smoothly: a VGG 3x3 512-channel layer at 28x28 takes 112,197,779 B at batch 32,
    # 214,958,227 B at 64 and 179,306,915 B at 48 (H200 captures and history), neither the
    # batch-scaled 168,296,668 nor the interpolated 163,578,003. So the common layers are
    # measured at every batch a user is likely to train with.
    layers = [] if args.skip_nets else _net_layers(nets)   # traced once, not per batch
    for c in _positive_ints("--pointwise-grid", args.pointwise_grid) \
            if args.pointwise_grid else ():
        for e in (4, 6):
            for h in (7, 14):
                layers += [(c, h, c * e, 1, 1, 0, 1, False, 1),
                           (c * e, h, c, 1, 1, 0, 1, False, 1)]
    # (n, c, h, co, k, s, pad, groups, bias, dtype, dilation) per call
    configs = [(n, c, h, co, k, s, p, g, bias, dt, d)
               for n in net_batches for dt in net_dtypes
               for c, h, co, k, s, p, g, bias, d in layers]
    pending = []       # the other dtypes of the last random sample (--sample-dtypes)
    if args.dry_run:
        print(f"{len(configs)} network-layer calls ({len(layers)} layers x "
              f"{len(net_batches)} batches x {len(net_dtypes)} dtypes), then random "
              f"{','.join(kinds)} convolutions in {','.join(sample_dtypes) or 'one dtype'} "
              f"each until {args.minutes} min")
        probe = _Probe(torch, device="cpu")
        if video_nets:
            run_video_net(torch, probe, video_nets[0], 1, "float32", device="cpu")
            print(f"{video_nets[0]}: {len(probe.calls)} convolution calls per step, e.g. "
                  f"{probe.calls[0][0]}")
            probe.calls = []
        n, c, h, co, k, s, g, bias, _ = _sample(random.Random(args.seed), kinds, widths, spatial)
        dilated = [cfg for cfg in configs if cfg[-1] > 1][:1]
        for n, c, h, co, k, s, pad, g, bias, _, d in configs[:2] + dilated + [
                (n, c, h, co, k, s, k // 2, g, bias, None, 1)]:
            # tiny batch and map: the dispatch records signatures on the CPU in seconds (a
            # dilated layer keeps the map its dilation needs)
            hd = max(min(h, 16), d * (k - 1) + 1 - 2 * pad)
            run_one(torch, F, probe, 2, c, hd, co, k, s, pad, g, bias, "float32",
                    device="cpu", dilation=d)
        for sig, sizes in probe.calls:
            print("  would record:", sig)
        return
    probe = _Probe(torch)
    rows, skipped = [], {}
    for dtype in ("float32", "bfloat16", "float16"):   # handles and lazy buffers made here
        run_one(torch, F, probe, 2, 8, 8, 8, 3, 1, 1, 1, True, dtype)
    _restart(torch, probe)
    for name in video_nets:
        for dtype in net_dtypes:
            for n in video_batches:
                if time.perf_counter() > deadline:
                    break
                try:
                    run_video_net(torch, probe, name, n, dtype)
                except torch.OutOfMemoryError:
                    skipped["oom"] = skipped.get("oom", 0) + 1
                    _restart(torch, probe)
                    continue
                rows += _flush(torch, probe)
    if video_nets and args.skip_nets:
        deadline = time.perf_counter()      # the video models' rows only
    i = 0
    while time.perf_counter() < deadline:
        if args.no_random:
            if i >= len(configs):
                break
            cfg = configs[i]
        elif i % 2 == 0 and i // 2 < len(configs):
            cfg = configs[i // 2]
        elif pending:
            cfg = pending.pop()
        else:
            n, c, h, co, k, s, g, bias, dtype = _sample(rng, kinds, widths, spatial)
            if sample_dtypes:
                dtype = sample_dtypes[0]
                pending = [(n, c, h, co, k, s, k // 2, g, bias, d, 1)
                           for d in sample_dtypes[1:]]
            cfg = (n, c, h, co, k, s, k // 2, g, bias, dtype, 1)
        n, c, h, co, k, s, pad, g, bias, dtype, dil = cfg
        i += 1
        el = 4 if dtype == "float32" else 2
        ho = (h + 2 * pad - dil * (k - 1) - 1) // s + 1
        if ho < 1 or max(n * c * h * h, n * co * ho * ho) * el > args.max_bytes:
            continue
        try:
            run_one(torch, F, probe, n, c, h, co, k, s, pad, g, bias, dtype,
                    layout=args.layout, dilation=dil)
        except torch.OutOfMemoryError:
            # a call cut short leaves an unpaired marker: drop this stretch of the history
            skipped["oom"] = skipped.get("oom", 0) + 1
            _restart(torch, probe)
            continue
        if len(probe.calls) >= 400:     # read this stretch of the history, start another
            rows += _flush(torch, probe)
    rows += _flush(torch, probe)
    torch.cuda.memory._record_memory_history(enabled=None)
    prov = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "seed": args.seed,
            "configs_tried": i, "skipped": skipped, "kinds": list(kinds),
            "group_widths": list(widths), "spatial": list(spatial),
            "nets": not args.skip_nets, "net_models": list(nets),
            "net_dtypes": list(net_dtypes),
            "net_batches": list(net_batches), "sample_dtypes": list(sample_dtypes),
            "video_nets": list(video_nets), "video_batches": list(video_batches),
            "layout": args.layout or "contiguous",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    # slots: per signature, how many outputs each workspace followed (see _workspaces); a
    # separate key so that readers of [signature, sizes] rows stay as they are
    # one row per signature: a network calls the same layer shape many times a step
    unique = {}
    for r in rows:
        unique.setdefault(r[0], r)
    rows = list(unique.values())
    slots = {r[0]: r[2] for r in rows if r[1]}
    rows = [r[:2] for r in rows]
    if args.merge:
        seen = {r[0] for r in old_rows}
        rows = old_rows + [r for r in rows if r[0] not in seen]
        slots = {**{k: v for k, v in slots.items() if k not in seen}, **old_slots}
        prov = {**prov, "merged_into": old_prov}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "h200_conv_workspaces" + (f"_{args.layout}" if args.layout
                                                            else "") + ".json.gz")
    with gzip.open(path, "wt") as f:
        json.dump({"provenance": prov, "rows": rows, "slots": slots}, f)
    print(f"{len(rows)} calls, {sum(1 for r in rows if r[1])} with a workspace -> {path}")


if __name__ == "__main__":
    main()
