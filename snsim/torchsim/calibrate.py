"""Measure the kernel table of a GPU (``snsim calibrate``): the ops a training step runs, timed.

One row per (op family, shape): the GPU time of one call (CUDA events around ``n`` calls that
are queued behind a ``torch.cuda._sleep`` kernel, so the host's launch gaps are not timed;
median of 3 groups after warm-up) and the host's issue cost of one call (wall time of issuing
the same ``n`` calls while the GPU is still asleep). Smoothly varying dimensions are sampled
sparsely (log-uniform, fixed seed) so one run fits in a few minutes; :mod:`snsim.costs`
interpolates between the rows (``KernelTable``).

Families are named as the CPU recording of ``snsim predict`` names its ops (aten op names;
:data:`snsim.costs.OP_FAMILY` maps CPU-only and CUDA-only spellings onto them). Features:
``flops`` (torch's flop counter formulas), ``bytes`` (every input and output tensor, as the
recorder counts them), ``ntensors`` (foreach lists), ``cls`` (conv kernel/stride/groups class,
SDPA backend).

Each row's ``host_s`` is the launching thread's tight-loop cost of issuing that call; what a
real step adds to it (per family, call, module, autograd node, parameter) is measured apart,
in real steps (``scripts/host_innet_probe.py``: :func:`snsim.kernel_table.load_host_costs`).

On a machine without CUDA the same code runs on the CPU (wall-clock timing), for tests only.
"""
from __future__ import annotations

import gzip
import io
import itertools
import math
import re
import statistics
import time

from ..kernel_table import (BIAS_FAMILIES, INDEX_FAMILIES, POOL2D_FAMILIES, POOL3D_FAMILIES,
                            ROW_FAMILIES, upsample_backward_work)

STRIDED_FAMILIES = ("clone_strided", "cat_strided")   # kernel_table.STRIDED_FAMILIES' rows

COLUMNS = ("family", "dtype", "math", "cls", "flops", "bytes", "ntensors", "time_s", "host_s",
           "shape", "ops")


#: torchvision's segmentation models whose dilated (atrous) Conv2d layers calibrate times
#: (``dilated`` rows): the ResNet backbones' layer3/layer4 at dilation 2 and 4, the ASPP head's
#: 12/24/36 and the MobileNetV3 backbone's last stage
SEGMENTATION_MODELS = ("fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large",
                       "lraspp_mobilenet_v3_large")


def traced_dilated_conv2d_calls(models=SEGMENTATION_MODELS):
    """``(model, input shape [C, H, W], conv)`` of every distinct dilated ``nn.Conv2d`` call of
    torchvision segmentation ``models`` at their default crop (:func:`traced_layer_calls`)."""
    import torch
    return traced_layer_calls(models, torch.nn.Conv2d, lambda mod: max(mod.dilation) > 1)


def traced_segmentation_conv2d_calls(models=SEGMENTATION_MODELS):
    """``(model, input shape [C, H, W], conv)`` of every distinct undilated ``nn.Conv2d`` call
    of torchvision segmentation ``models`` at their default crop (:func:`traced_layer_calls`):
    their backbones' layers at 2x the ImageNet maps (a 480x480 crop), where small channel
    counts meet large maps (LR-ASPP's 16 -> 64 1x1 at 240x240: a weight-gradient engine
    ~4x slower per FLOP than the neighbours the table interpolated)."""
    import torch
    return traced_layer_calls(models, torch.nn.Conv2d, lambda mod: max(mod.dilation) == 1)


#: torchvision networks whose patch embeddings and patch-wise downsampling calibrate times
#: (``patchify`` rows): non-overlapping convolutions, kernel = stride > 1 (ViT's 16x16, 32x32 and
#: 14x14, Swin's and ConvNeXt's 4x4 stems, ConvNeXt's 2x2 downsampling), which no other
#: calibrated class has: the table read them from the 1x1 and 3x3 rows by FLOPs and bytes, and
#: priced ViT-B/16's at batch 32 3-5x low on the GPU (measured: 503 us forward, 263 us backward
#: in TF32; configs/kernels/h200_calibrate_patchify.log)
PATCHIFY_MODELS = ("vit_b_16", "vit_l_32", "vit_h_14", "swin_t", "convnext_tiny")


def traced_patchify_conv2d_calls(models=PATCHIFY_MODELS):
    """``(model, input shape [C, H, W], conv)`` of every distinct non-overlapping
    ``nn.Conv2d`` call (kernel = stride, larger than 1) of torchvision ``models`` at their
    default input (:func:`traced_layer_calls`)."""
    import torch
    return traced_layer_calls(models, torch.nn.Conv2d, lambda mod: (
        tuple(mod.kernel_size) == tuple(mod.stride) and max(mod.kernel_size) > 1
        and max(mod.dilation) == 1))


#: torchvision's video models whose Conv3d layers calibrate times (``conv3d`` rows): the R(2+1)D
#: family's full, (1,k,k) and (k,1,1) kernels, S3D's separable ones, MViT's and Swin3D's patch
#: embeddings and MViT's depthwise pooling
VIDEO_MODELS = ("r3d_18", "r2plus1d_18", "mc3_18", "s3d", "mvit_v2_s", "swin3d_t")


def traced_conv3d_calls(models=VIDEO_MODELS):
    """``(model, input shape [C, D, H, W], conv)`` of every distinct ``nn.Conv3d`` call of
    torchvision video ``models`` at their default clips (:func:`traced_layer_calls`)."""
    import torch
    return traced_layer_calls(models, torch.nn.Conv3d)


def traced_layer_calls(models, conv_type, keep=lambda mod: True):
    """``(model, input shape without the batch, conv)`` of every distinct call of a
    ``conv_type`` module that ``keep`` accepts, in torchvision ``models`` (names; each at its
    default input, snsim.torchsim.models), traced at batch 1 on the meta device. Distinct: by
    input shape, output channels, kernel, stride, padding, dilation, groups and bias."""
    import torch
    from .models import resolve_model
    out, seen = [], set()
    for name in models:
        spec = resolve_model(f"torchvision:{name}")
        try:
            with torch.device("meta"):
                m = spec.build()
        except NotImplementedError:      # its constructor reads tensor values (RegNet's
            m = spec.build().to("meta")  # widths): built on the CPU, then moved

        def hook(mod, inp, _out, name=name):
            shape = tuple(int(v) for v in inp[0].shape[1:])
            key = (shape, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                   mod.dilation, mod.groups, mod.bias is not None)
            if keep(mod) and key not in seen:
                seen.add(key)
                out.append((name, shape, mod))
        hs = [mod.register_forward_hook(hook) for mod in m.modules()
              if isinstance(mod, conv_type)]
        with torch.no_grad():
            m.eval()(torch.empty(1, *spec.input_shape, device="meta"))
        for hd in hs:
            hd.remove()
    return out


class _Bench:
    """Time callables on ``device``: GPU time and host issue time per call."""

    def __init__(self, torch, device, *, target_s=2e-3, groups=3):
        self.torch = torch
        self.cuda = device == "cuda"
        self.target_s = target_s
        self.groups = groups

    def _sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def __call__(self, f, *, blocking=False):
        """``(gpu_s, host_s)`` per call of ``f``. The host's issue cost is timed while the
        GPU is kept busy by a sleep kernel queued first, so that the launches do not wait for
        it -- except for a ``blocking`` call (a copy to or from pageable memory: the host
        waits for the GPU in it), timed from an idle GPU, its host time the call's wall time."""
        torch = self.torch
        f()
        f()
        self._sync()
        t0 = time.perf_counter()
        f()
        self._sync()
        one = max(time.perf_counter() - t0, 1e-7)
        n = int(min(max(self.target_s / one, 3), 100))
        gpu, host = [], []
        for _ in range(self.groups):
            if self.cuda:
                if blocking:    # from an idle GPU: a queued sleep would hold the call
                    self._sync()
                else:
                    h0 = time.perf_counter()
                    f()
                    h1 = time.perf_counter() - h0     # issue cost of one call (GPU idle)
                    sleep_s = min(max(h1, 2e-5) * n * 2 + 1e-4, 0.05)
                    torch.cuda._sleep(int(sleep_s * 2.0e9))
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                h = time.perf_counter() - t0
                e1.record()
                torch.cuda.synchronize()
                gpu.append(e0.elapsed_time(e1) * 1e-3 / n)
                host.append(h / n)
            else:
                t0 = time.perf_counter()
                for _ in range(n):
                    f()
                dt = (time.perf_counter() - t0) / n
                gpu.append(dt)
                host.append(dt)
        return statistics.median(gpu), statistics.median(host)


def _node_call(torch, run_backward, family):
    """The aten call of family ``family`` that ``run_backward`` (one ``torch.autograd.grad``
    through one node) makes, as a function that makes that call alone.

    A real backward runs the node's op inside a graph task already under way; timing
    ``autograd.grad`` itself adds a graph task's setup and the hand-off to the device thread
    and back (~60-100 us of host per call on the H200: layer norm's backward read 76-201 us
    of issue against 11-19 us for its forward) to the op's own issue cost. The host model
    charges the engine per node (``per_node_s``), so the table times the op alone.
    """
    func, args, kwargs = _first_call(torch, run_backward, lambda fam: fam == family,
                                     f"the backward made no {family} call")
    return lambda: func(*args, **kwargs)


def _first_call(torch, run, match, missing="no matching aten call"):
    """``(func, args, kwargs)`` of the first aten call ``run()`` makes whose family
    (:func:`snsim.kernel_table.family_of`) ``match`` accepts; RuntimeError(``missing``) when
    none does."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from ..kernel_table import family_of
    seen = []

    class Catch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not seen and match(family_of(func._overloadpacket.__name__)):
                seen.append((func, args, dict(kwargs or {})))
            return func(*args, **(kwargs or {}))

    with Catch():
        run()
    if not seen:
        raise RuntimeError(missing)
    return seen[0]


def _flops(torch, func, args, kwargs, out):
    from torch.utils.flop_counter import flop_registry
    rule = flop_registry.get(func._overloadpacket)
    if rule is None:
        return 0
    try:
        return int(rule(*args, **(kwargs or {}), out_val=out))
    except Exception:
        return 0


def _nbytes(torch, *trees):
    from torch.utils._pytree import tree_leaves
    return sum(t.numel() * t.element_size() for t in tree_leaves(trees)
               if isinstance(t, torch.Tensor))


def _loguniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


class Calibrator:
    """Collect rows; each family method appends to :attr:`rows` until the deadline."""

    def __init__(self, *, device="cuda", scale=1.0, max_seconds=420.0, seed=0, log=None):
        import random

        import torch
        self.torch = torch
        self.device = device
        self.scale = scale
        self.max_seconds = max_seconds
        self.deadline = time.perf_counter() + max_seconds
        self.family_deadline = self.deadline
        self.rng = random.Random(seed)
        self.rows = []
        self.skipped = {}
        self.bench = _Bench(torch, device)
        self.log = log or (lambda msg: None)

    def n(self, k):
        return max(1, int(round(k * self.scale)))

    def late(self):
        return time.perf_counter() > min(self.deadline, self.family_deadline)

    def guarded(self, family, fn, *args):
        """Run one shape's measurements; a shape the GPU rejects (or OOM) is counted, skipped."""
        try:
            fn(*args)
            return True
        except Exception as e:
            key = f"{family}: {type(e).__name__}"
            self.skipped[key] = self.skipped.get(key, 0) + 1
            if self.device == "cuda":
                self.torch.cuda.empty_cache()
            return False

    def add(self, family, dtype, math_, cls, f, *, flops=0, nbytes=0, ntensors=0, shape="",
            blocking=False):
        try:
            t, h = self.bench(f, blocking=blocking)
        except Exception as e:  # an unsupported shape/backend on this GPU: skip, count it
            key = f"{family}: {type(e).__name__}"
            self.skipped[key] = self.skipped.get(key, 0) + 1
            return
        finally:
            f = None
        self.rows.append({"family": family, "dtype": str(dtype).replace("torch.", ""),
                          "math": math_, "cls": cls, "flops": int(flops), "bytes": int(nbytes),
                          "ntensors": int(ntensors), "time_s": t, "host_s": h, "shape": shape,
                          "ops": ""})

    def t(self, *shape, dtype=None, grad=False):
        torch = self.torch
        x = torch.randn(*shape, device=self.device, dtype=dtype or torch.float32)
        return x.requires_grad_(grad)

    # -- convolutions ------------------------------------------------------------------------
    # batches beyond the grid's 256 (the ``big`` group, rows' shape starts with ``big``): the
    # largest batch a GPU trains is what maxbatch answers; AlexNet b1024's convolutions sat
    # 0.65-0.98 e-folds from every row, and its step ran 19 % longer than modelled (H100,
    # traces/h100/profile_s65)
    BIG_BATCHES = (512, 768, 1024, 1536, 2048)

    def convs(self, count, dtype, math_, max_flops, layout="", batches=None):
        """``count`` convolutions of random shape (batch 1-256, or from ``batches``: rows'
        shape then starts with ``big``), forward and backward."""
        torch = self.torch
        aten = torch.ops.aten
        rng = self.rng
        made = 0
        tries = 0
        while made < count and tries < count * 20 and not self.late():
            tries += 1
            n = rng.choice(batches or [1, 2, 4, 8, 16, 32, 64, 128, 256])
            if batches and self.device != "cuda":     # a smoke test: small shapes
                n = 2
            c = rng.choice([3, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048])
            k = rng.choice([1, 1, 1, 3, 3, 3, 3, 5, 7, 11, (1, 7), (7, 1), (1, 3), (3, 1)])
            kh, kw = (k, k) if isinstance(k, int) else k
            s = rng.choice([1, 1, 1, 2]) if max(kh, kw) < 11 else 4
            r = rng.random()
            if r < 0.15 and c >= 16:
                g, co, cls_g = c, c, "dw"
            elif r < 0.2 and c >= 64:
                g, co, cls_g = 32, c * rng.choice([1, 2]), "g"
            else:
                g, cls_g = 1, ""
                co = int(min(max(c * rng.choice([0.25, 0.5, 1, 1, 2, 4]), 16), 4096))
            h = rng.choice([7, 8, 14, 17, 28, 35, 56, 73, 112, 149, 224])
            w = h
            ho, wo = (h + 2 * (kh // 2) - kh) // s + 1, (w + 2 * (kw // 2) - kw) // s + 1
            if ho < 1 or wo < 1:
                continue
            el = torch.tensor([], dtype=dtype).element_size()
            in_b, out_b = n * c * h * w * el, n * co * ho * wo * el
            macs = n * co * ho * wo * (c // g) * kh * kw
            big = max(in_b, out_b) > 1.5e9 * min(max_flops / 1e11, 1)
            if big or 2 * macs > max_flops or 2 * macs < 1e5:
                continue
            self.guarded("convolution", self._conv, n, c, h, w, co, kh, kw, s, g, cls_g,
                         dtype, math_, None, "big " if batches else "", layout)
            made += 1

    # grouped and depthwise convolutions over a grid of group widths and counts: cuDNN's and
    # ATen's kernels for them differ from the dense ones (host cost per call: a per-group
    # engine issues several kernels per group; fp16 depthwise goes to cuDNN, bf16 and fp32 to
    # ATen's depthwise kernels), and the random grid above samples one group count (32)
    GROUP_WIDTHS = (2, 4, 8, 16, 24, 32, 48, 64, 128)
    GROUP_COUNTS = (2, 4, 8, 16, 32, 64)
    DW_CHANNELS = (16, 32, 48, 64, 96, 144, 192, 240, 384, 576, 768, 960)

    def grouped_convs(self, count, dtype, math_, *, max_bytes=1.5 * 2**31, layout=""):
        """``count`` grouped (``g``: co == c, kernels 3x3 and 1x1) and depthwise (``dw``:
        kernels 3x3, 5x5, 7x7) convolutions, forward and backward, sampled from the grid
        (:attr:`GROUP_WIDTHS` x :attr:`GROUP_COUNTS`, :attr:`DW_CHANNELS`; batch 16-256,
        spatial 7-112); rows' shape starts with ``grouped``."""
        rng = self.rng
        el = self.torch.tensor([], dtype=dtype).element_size()
        made = tries = 0
        while made < count and tries < count * 20 and not self.late():
            tries += 1
            n = rng.choice([16, 32, 64, 128, 256])
            h = rng.choice([7, 14, 28, 56, 112])
            if self.device != "cuda":     # a smoke test: small shapes
                n, h = 1, 7
            if rng.random() < 0.5:
                c = rng.choice(self.DW_CHANNELS)
                g, cls_g = c, "dw"
                k = rng.choice([3, 3, 5, 7])
            else:
                g = rng.choice(self.GROUP_COUNTS)
                c, cls_g = g * rng.choice(self.GROUP_WIDTHS), "g"
                k = rng.choice([3, 3, 3, 1])
                if c > 4096:
                    continue
            s = rng.choice([1, 1, 2])
            ho = (h + 2 * (k // 2) - k) // s + 1
            if max(n * c * h * h, n * c * ho * ho) * el > max_bytes:
                continue
            self.guarded("convolution", self._conv, n, c, h, h, c, k, k, s, g, cls_g,
                         dtype, math_, None, "grouped ", layout)
            made += 1

    # channels-last depthwise convolutions on a grid (ConvNeXt's blocks: 7x7 over 96-1536
    # channels at 56..7; cuDNN's NHWC engines, whose choice for the backward changes with
    # the batch: ConvNeXt-T's 384-channel 14x14 wgrad at batch 64 ran a direct kernel at
    # 36 GB/s, the 96- and 192-channel ones implicit GEMMs, traces/h200/profile)
    DW_CL_CHANNELS = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536)
    DW_CL_MAPS = (7, 14, 28, 56)
    DW_CL_BATCHES = {7: (8, 32, 64, 128), 3: (32,), 5: (32,)}

    def dw_cl_convs(self, dtype, math_, *, max_bytes=1.5 * 2**31):
        """Depthwise convolutions of every :attr:`DW_CL_CHANNELS` x :attr:`DW_CL_MAPS` at the
        kernels and batches of :attr:`DW_CL_BATCHES`, stride 1, channels-last input
        (:meth:`_conv` ``layout="_cl"``), forward and backward; rows' shape starts with
        ``dwcl``. The order is shuffled so that a run cut short by its deadline still spans
        the grid."""
        el = self.torch.tensor([], dtype=dtype).element_size()
        grid = [(k, c, h, n) for k, batches in self.DW_CL_BATCHES.items()
                for c in self.DW_CL_CHANNELS for h in self.DW_CL_MAPS for n in batches
                if n * c * h * h * el <= max_bytes]
        if self.device != "cuda":     # a smoke test: small shapes
            grid = [(7, 64, 7, 1), (3, 96, 7, 1)]
        self.rng.shuffle(grid)
        for k, c, h, n in grid:
            if self.late():
                return
            self.guarded("convolution", self._conv, n, c, h, h, c, k, k, 1, c, "dw",
                         dtype, math_, None, "dwcl ", "_cl")

    # convolutions as CNNs lay them out, stage by stage: (input H = W, channel range) of the
    # stages of ImageNet CNNs (stem output 112 .. last stage 7; RegNet's stage widths 24-7392,
    # ResNeXt's 128-2048, MobileNet/EfficientNet/ShuffleNet's 16-1280)
    LAYOUT_STAGES = ((112, 16, 256), (56, 24, 768), (28, 48, 1536), (14, 96, 3072),
                     (7, 192, 4096))
    # channels per group of grouped 3x3 convs: RegNet's group widths (8-256: X-200MF 8,
    # X-400MF 16, X-1.6GF 24, Y-1.6GF 24, Y-8GF 56, Y-32GF 232), ResNeXt's 4-8 (x its stage)
    LAYOUT_GROUP_WIDTHS = (4, 8, 16, 24, 40, 56, 112, 168, 256)
    # the channels of dense 1x1 / 3x3 convs at small widths (SqueezeNet's fire modules,
    # ShuffleNet's branches, MobileNet's projections) and the maps they run at
    LAYOUT_DENSE_CHANNELS = (16, 24, 32, 48, 64, 96, 128, 176, 256)
    LAYOUT_DENSE_MAPS = (13, 27, 28, 54, 56, 112)
    LAYOUT_BATCHES = (16, 32, 64, 128, 256, 512)

    # wide groups (the ``wide`` group, rows' shape starts with ``wide``): RegNet-Y-32GF's 232
    # and -128GF's 264 channels per group sat between LAYOUT_GROUP_WIDTHS' 168 and 256, and
    # cuDNN's half-precision grouped backward at 256 (a power of two) ran 8.5x its forward
    # where RegNet-Y-128GF's width-264 one did not (H100 set 49: +43 % step, +35 % in H200
    # set 40); widths on both sides of the powers of two, and the powers themselves again
    WIDE_GROUP_WIDTHS = (96, 120, 128, 144, 192, 200, 232, 240, 256, 264, 288, 320, 384)

    def layout_convs(self, count, dtype, math_, *, max_bytes=1.5 * 2**31, layout="",
                     widths=None):
        """``count`` convolutions sampled the way CNNs lay them out (rows' shape starts with
        ``stage``): the region of shape space where cuDNN's engine choice changes and the
        :meth:`grouped_convs` grid (group counts 2-64, batch at most 256) is sparse.

        * 60%: grouped 3x3 convs (``g``): a stage (:attr:`LAYOUT_STAGES`: input map and
          channel range), a group width (:attr:`LAYOUT_GROUP_WIDTHS`), channels log-uniform in
          the stage's range rounded to a multiple of the width (at least 2 groups), stride 2
          for a third (a stage's first block: its input map twice the stage's) -- TF32 grouped
          convs of few wide groups at large maps run a transposing NCHW engine 2-10x slower
          than the dense rate (RegNetX-1.6GF's 72-channel g3 stride-2 conv at 112x112, batch
          128: 9.2 ms on the H200, traces/h200/profile/heldout5_*);
        * 15%: depthwise 3x3 / 5x5 (``dw``) at a stage's channels;
        * 25%: dense 1x1 and 3x3 convs of :attr:`LAYOUT_DENSE_CHANNELS` in and out at
          :attr:`LAYOUT_DENSE_MAPS`, stride 1 (or 2 for a third of the 3x3s).

        Batches from :attr:`LAYOUT_BATCHES`, halved until the tensors fit ``max_bytes``.
        With ``widths``, only grouped 3x3 convs of those group widths (rows' shape starts
        with ``wide``)."""
        rng = self.rng
        el = self.torch.tensor([], dtype=dtype).element_size()
        made = tries = 0
        while made < count and tries < count * 20 and not self.late():
            tries += 1
            n = rng.choice(self.LAYOUT_BATCHES)
            r = rng.random() * (0.6 if widths else 1.0)
            if r < 0.75:
                h, lo, hi = rng.choice(self.LAYOUT_STAGES)
                s = 2 if h > 7 and rng.random() < 1 / 3 else 1
                h = min(h * s, 224)
                c = math.exp(rng.uniform(math.log(lo), math.log(hi)))
                if r < 0.6:
                    width = rng.choice(widths or self.LAYOUT_GROUP_WIDTHS)
                    # channels a multiple of 8, as networks round them (16-byte rows in a
                    # half type: cuDNN's fast grouped engines need them; an unaligned C ran
                    # 5x slower in bf16 on the H200, RegNet-like widths 4 x odd counts)
                    step = 8 // math.gcd(width, 8)
                    g = int(round(c / width / step)) * step
                    if g < 2:
                        continue
                    c, co, k, cls_g = g * width, g * width, 3, "g"
                else:
                    c = int(round(c / 8)) * 8 or 8
                    g, co, k, cls_g = c, c, rng.choice([3, 3, 5]), "dw"
            else:
                c = rng.choice(self.LAYOUT_DENSE_CHANNELS)
                co = rng.choice(self.LAYOUT_DENSE_CHANNELS)
                h = rng.choice(self.LAYOUT_DENSE_MAPS)
                k = rng.choice([1, 3])
                s = 2 if k == 3 and rng.random() < 1 / 3 else 1
                g, cls_g = 1, ""
            if self.device != "cuda":     # a smoke test: small shapes
                n, h = 1, 7
            ho = (h + 2 * (k // 2) - k) // s + 1
            while n > 1 and max(n * c * h * h, n * co * ho * ho) * el > max_bytes:
                n //= 2
            self.guarded("convolution", self._conv, n, c, h, h, co, k, k, s, g, cls_g,
                         dtype, math_, None, "wide " if widths else "stage ", layout)
            made += 1

    # dense 1x1 and 3x3 convolutions at the channels CNN stages run (the ``dense`` group, rows'
    # shape starts with ``dense``): the random grid's channels stop at 2048 in and 4096 out and
    # the stage rows' dense convs at 256, where RegNet-Y-128GF's 1x1 convs (2904 to 2904 at
    # 14x14, batch 16) sat 0.82 e-folds from any row and their backward read 2.3x the time
    # profiled on an H100 (0.69 ms against 0.30, traces/h100/profile_s65)
    DENSE_BATCHES = (8, 16, 32, 64, 128, 256, 512)
    DENSE_OUT_RATIOS = (0.25, 0.5, 1, 1, 2, 4)

    def dense_stage_convs(self, count, dtype, math_, *, max_bytes=1.5 * 2**31):
        """``count`` dense convolutions sampled as CNN stages lay them out: a stage of
        :attr:`LAYOUT_STAGES` (input map, channel range), input channels log-uniform in the
        range rounded to a multiple of 8, output channels a bottleneck's ratio of them
        (:attr:`DENSE_OUT_RATIOS`, at most 8192), kernel 1x1 (two thirds) or 3x3, stride 2 for
        a sixth (a stage's first block: its input map twice the stage's); batches from
        :attr:`DENSE_BATCHES`, halved until the tensors fit ``max_bytes``. Forward and
        backward; rows' shape starts with ``dense``."""
        rng = self.rng
        el = self.torch.tensor([], dtype=dtype).element_size()
        made = tries = 0
        while made < count and tries < count * 20 and not self.late():
            tries += 1
            h, lo, hi = rng.choice(self.LAYOUT_STAGES)
            c = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi))) / 8)) * 8 or 8
            co = min(max(int(round(c * rng.choice(self.DENSE_OUT_RATIOS) / 8)) * 8, 8), 8192)
            k = rng.choice([1, 1, 3])
            s = 2 if h > 7 and rng.random() < 1 / 6 else 1
            h = min(h * s, 224)
            n = rng.choice(self.DENSE_BATCHES)
            if self.device != "cuda":     # a smoke test: small shapes
                n, h, c, co = 1, 7, min(c, 64), min(co, 64)
            ho = (h + 2 * (k // 2) - k) // s + 1
            while n > 1 and max(n * c * h * h, n * co * ho * ho) * el > max_bytes:
                n //= 2
            self.guarded("convolution", self._conv, n, c, h, h, co, k, k, s, 1, "",
                         dtype, math_, None, "dense ", "")
            made += 1

    # the CNN layers of torchvision models (conv shapes by network, not sampled at random)
    NET_MODELS = ("resnet50", "densenet121", "inception_v3", "vgg16", "mobilenet_v2")
    NET_BATCHES = (128, 64, 256, 32)

    def net_conv_shapes(self):
        """The distinct ``nn.Conv2d`` layers of :attr:`NET_MODELS` at batch 1, traced on the
        meta device: ``(c, h, w, co, kh, kw, s, ph, pw, g, model)`` (a bias is timed apart:
        :meth:`conv_biases`)."""
        seen, out = set(), []
        import torch
        for name, (c, h, w), mod in traced_layer_calls(self.NET_MODELS, torch.nn.Conv2d):
            if mod.dilation != (1, 1) or mod.stride[0] != mod.stride[1]:
                continue
            f = (c, h, w, mod.out_channels, *mod.kernel_size, mod.stride[0], *mod.padding,
                 mod.groups)
            if f not in seen:
                seen.add(f)
                out.append(f + (name,))
        return out

    def net_convs(self, dtype, math_, *, models=None, max_bytes=1.5 * 2**31):
        """Forward and backward of every layer of :meth:`net_conv_shapes` (of ``models``
        only, if given) at :attr:`NET_BATCHES` (rows' shape starts with ``net``)."""
        torch = self.torch
        try:
            shapes, batches = self.net_conv_shapes(), self.NET_BATCHES
        except ImportError:      # no torchvision: nothing to trace
            self.skipped["conv net: ImportError"] = 1
            return
        if models is not None:
            shapes = [sh for sh in shapes if sh[-1] in models]
        if self.device != "cuda":    # a smoke test: the smallest layer at batch 1
            shapes = sorted(shapes, key=lambda sh: sh[0] * sh[1] * sh[2] * sh[3] * sh[4]
                            * sh[5] / (sh[6] ** 2 * sh[9]))[:1]
            batches = (1,)
        el = torch.tensor([], dtype=dtype).element_size()
        for n in batches:
            for c, h, w, co, kh, kw, s, ph, pw, g, model in shapes:
                if self.late():
                    return
                ho, wo = (h + 2 * ph - kh) // s + 1, (w + 2 * pw - kw) // s + 1
                if max(n * c * h * w, n * co * ho * wo) * el > max_bytes:
                    continue
                cls_g = "dw" if g > 1 and g == c else ("g" if g > 1 else "")
                self.guarded("convolution", self._conv, n, c, h, w, co, kh, kw, s, g, cls_g,
                             dtype, math_, (ph, pw), f"net {model} ")

    #: batches the video models' 3-D convolutions are timed at
    NET3D_BATCHES = (1, 4, 16)

    #: batches the segmentation models' dilated convolutions are timed at
    NET_DILATED_BATCHES = (2, 8, 16)

    def net_convs_dilated(self, dtype, math_, *, max_bytes=1.5 * 2**31):
        """Forward and backward of every distinct dilated ``nn.Conv2d`` layer of
        :data:`SEGMENTATION_MODELS` at :attr:`NET_DILATED_BATCHES`, without bias (rows' shape
        starts with ``dilated``, their class names the dilation: ``k3x3s1d2``)."""
        self._net_layers(traced_dilated_conv2d_calls, self.NET_DILATED_BATCHES, dtype, math_,
                         "dilated", max_bytes)

    def net_convs_segmentation(self, dtype, math_, *, max_bytes=1.5 * 2**31):
        """Forward and backward of every distinct undilated ``nn.Conv2d`` layer of
        :data:`SEGMENTATION_MODELS` at :attr:`NET_DILATED_BATCHES`, without bias (rows' shape
        starts with ``segnet``)."""
        self._net_layers(traced_segmentation_conv2d_calls, self.NET_DILATED_BATCHES, dtype,
                         math_, "segnet", max_bytes)

    def _net_layers(self, trace, batches, dtype, math_, tag, max_bytes):
        torch = self.torch
        try:
            layers = trace()
        except ImportError:
            self.skipped[f"{tag}: ImportError"] = 1
            return
        if self.device != "cuda":     # a smoke test: the smallest layer at batch 1
            layers = sorted(layers, key=lambda ly: math.prod(ly[1]))[:1]
            batches = (1,)
        el = torch.tensor([], dtype=dtype).element_size()
        for n in batches:
            for model, shape, mod in layers:
                if self.late():
                    return
                if n * math.prod(shape) * el * 4 > max_bytes:
                    continue
                self.guarded("convolution", self._conv_module, n, shape, mod, dtype, math_,
                             f"{tag} {model} ")

    #: batches the patch embeddings are timed at (a transformer's batches, small to large).
    #: cuDNN changes engine with the batch, not smoothly: bf16 ViT-B/32's weight gradient ran
    #: 3.0 ms at batch 256 (``wgrad_alg1_engine``, traces/h200/profile_s28) where the batch-128
    #: row of ViT-L/32's wider one read 0.66 ms, so the grid spans the batches users train at
    PATCHIFY_BATCHES = (2, 8, 32, 64, 128, 256, 512)

    def net_convs_patchify(self, dtype, math_, *, max_bytes=1.5 * 2**31):
        """Forward and backward of every distinct non-overlapping ``nn.Conv2d`` layer of
        :data:`PATCHIFY_MODELS` at :attr:`PATCHIFY_BATCHES`, without bias (rows' shape starts
        with ``patchify``, their class ``k16x16s16`` and the like)."""
        self._net_layers(traced_patchify_conv2d_calls, self.PATCHIFY_BATCHES, dtype, math_,
                         "patchify", max_bytes)

    def net_convs3d(self, dtype, math_, *, max_bytes=1.5 * 2**31):
        """Forward and backward of every distinct ``nn.Conv3d`` layer of :data:`VIDEO_MODELS`
        at :attr:`NET3D_BATCHES`, without bias (rows' shape starts with ``net3d``, their class
        :func:`snsim.kernel_table.conv_class`'s for a 3-D call: ``k3x3x3s1``, ``k1x3x3s1x2x2``)."""
        self._net_layers(traced_conv3d_calls, self.NET3D_BATCHES, dtype, math_, "net3d",
                         max_bytes)

    def _conv_module(self, n, shape, mod, dtype, math_, tag):
        """One ``nn.Conv2d``/``nn.Conv3d`` layer's convolution forward and backward at batch
        ``n`` (its stride, padding, dilation and groups; no bias), as :meth:`_conv` times one
        of the sampled grid."""
        from ..kernel_table import conv_class
        from .record import signature
        torch = self.torch
        aten = torch.ops.aten
        x = self.t(n, *shape, dtype=dtype)
        c, g = shape[0], mod.groups
        wt = self.t(mod.out_channels, c // g, *mod.kernel_size, dtype=dtype)
        zeros = [0] * len(mod.kernel_size)
        args = (x, wt, None, list(mod.stride), list(mod.padding), list(mod.dilation), False,
                zeros, g)
        y = aten.convolution.default(*args)
        cls = conv_class(signature("convolution", args, {})).partition(":")[0]
        shape_s = (f"{tag}x{list(x.shape)} w{list(wt.shape)} s{list(mod.stride)} "
                   f"p{list(mod.padding)} d{list(mod.dilation)} g{g} bias0")
        self.add("convolution", dtype, math_, cls, lambda: aten.convolution.default(*args),
                 flops=_flops(torch, aten.convolution.default, args, {}, y),
                 nbytes=_nbytes(torch, args, y), shape=shape_s)
        dy = torch.randn_like(y)
        mask = [c != 3, True, False]
        bargs = (dy, x, wt, None, list(mod.stride), list(mod.padding), list(mod.dilation),
                 False, zeros, g, mask)
        bo = aten.convolution_backward.default(*bargs)
        self.add("convolution_backward", dtype, math_, cls,
                 lambda: aten.convolution_backward.default(*bargs),
                 flops=_flops(torch, aten.convolution_backward.default, bargs, {}, bo),
                 nbytes=_nbytes(torch, bargs, bo), shape=shape_s + f" mask{mask}")

    def _conv(self, n, c, h, w, co, kh, kw, s, g, cls_g, dtype, math_, pad=None, tag="",
              layout=""):
        """Forward and backward of one convolution, without bias: ATen's cuDNN path adds a
        bias in a kernel of its own after the convolution and reduces grad_bias outside the
        backend (:meth:`conv_biases` times those); a conv row's time is the convolution's.

        ``layout="_cl"``: the input (and so grad_output) channels-last, the weight as
        ``nn.Conv2d`` makes it (contiguous): a network that permutes its activations to NHWC
        (ConvNeXt's blocks) or converts its input. cuDNN then runs NHWC engines -- and every
        depthwise call goes to cuDNN, not ATen's NCHW depthwise kernels
        (``use_cudnn_depthwise``) -- 8x faster than NCHW in bf16 and 2x slower in TF32 for
        ConvNeXt's 7x7 depthwise backward on the H200 (traces/h200/profile). Its rows are the
        families ``convolution_cl`` / ``convolution_backward_cl``; the shape says
        ``channels_last``."""
        torch = self.torch
        aten = torch.ops.aten
        x = self.t(n, c, h, w, dtype=dtype)
        if layout:
            x = x.contiguous(memory_format=torch.channels_last)
        wt = self.t(co, c // g, kh, kw, dtype=dtype)
        pad = list(pad) if pad is not None else [kh // 2, kw // 2]
        args = (x, wt, None, [s, s], pad, [1, 1], False, [0, 0], g)
        y = aten.convolution.default(*args)
        cls = f"{cls_g}k{kh}x{kw}s{s}"
        tag += "channels_last " if layout else ""
        shape = f"{tag}x{list(x.shape)} w{list(wt.shape)} s{s} p{pad} g{g} bias0"
        self.add("convolution" + layout, dtype, math_, cls,
                 lambda: aten.convolution.default(*args),
                 flops=_flops(torch, aten.convolution.default, args, {}, y),
                 nbytes=_nbytes(torch, args, y), shape=shape)
        dy = torch.randn_like(y)       # y's layout: cuDNN returns the input's
        mask = [c != 3, True, False]
        bargs = (dy, x, wt, None, [s, s], pad, [1, 1], False, [0, 0], g, mask)
        bo = aten.convolution_backward.default(*bargs)
        self.add("convolution_backward" + layout, dtype, math_, cls,
                 lambda: aten.convolution_backward.default(*bargs),
                 flops=_flops(torch, aten.convolution_backward.default, bargs, {}, bo),
                 nbytes=_nbytes(torch, bargs, bo), shape=shape + f" mask{mask}")

    # -- a convolution's bias ------------------------------------------------------------------
    # output positions per channel (N*H*W) and channels of the bias grid; H*W of the map the
    # positions are laid out on (the add's and the reduction's kernels index by it)
    BIAS_POSITIONS = tuple(int(round(10 ** (3 + 0.5 * i))) for i in range(10))   # 1e3 .. 3e7
    BIAS_CHANNELS = (3, 16, 64, 192, 512, 2048)
    BIAS_MAPS = (49, 196, 784, 3025, 12544, 50176)      # 7x7 .. 224x224

    def conv_biases(self, dtypes=None, *, max_elements=3e8):
        """What ATen runs for a convolution's bias on its cuDNN path, over a grid of output
        sizes (:attr:`BIAS_POSITIONS` x :attr:`BIAS_CHANNELS`, outputs of at most
        ``max_elements``) in fp32, bf16 and fp16, on contiguous (NCHW) and channels-last
        outputs (cuDNN returns channels-last for a channels-last input:
        ``cudnn_conv_suggest_memory_format``):

        * ``conv_bias_add`` (``_cl``): ``output.add_(reshape_bias(input.dim(), bias))``, the
          broadcast in-place add after ``at::cudnn_convolution`` (aten/src/ATen/native/
          Convolution.cpp, ``_convolution``, case ``ConvBackend::Cudnn``; cuDNN convolutions
          take no bias: cudnn/ConvShared.cpp); bytes: the output read and written, the bias
          read;
        * ``conv_bias_grad`` (``_cl``): ``grad_output.sum({0, 2, 3})``, the grad_bias of
          ``convolution_backward`` for backends that return none (cuDNN and ATen's depthwise
          kernels: Convolution.cpp, "Calculate bias gradients outside of the backend"), in the
          output's dtype (a half type accumulates in fp32 inside ATen's reduction); bytes:
          grad_output read, grad_bias written.

        Rows' ``cls`` is ``c<C>hw<H*W>`` (:func:`snsim.kernel_table.bn_class`, the channels
        and map size are lookup distances), their ``shape`` ``bias y[N, C, H, W]``."""
        torch = self.torch
        dtypes = dtypes or (torch.float32, torch.bfloat16, torch.float16)
        positions, channels = self.BIAS_POSITIONS, self.BIAS_CHANNELS
        if self.device != "cuda":      # a smoke test: small outputs
            positions, channels = positions[:2], channels[:2]
        for i, m in enumerate(positions):
            # the map cycles through the BIAS_MAPS that make a batch of 1 .. 1024
            maps = [hw for hw in self.BIAS_MAPS if 1 <= m / hw <= 1024] or [
                min(self.BIAS_MAPS, key=lambda hw: abs(math.log(m / hw)))]
            for j, c in enumerate(channels):
                hw = maps[(i * len(channels) + j) % len(maps)]
                side, n = int(round(math.sqrt(hw))), max(1, int(round(m / hw)))
                if n * c * side * side > max_elements:
                    continue
                for dtype in dtypes:
                    for layout in ("", "_cl"):
                        if self.late():
                            return
                        self.guarded("conv bias", self._conv_bias_one, n, c, side, dtype,
                                     layout)

    def _conv_bias_one(self, n, c, side, dtype, layout):
        torch = self.torch
        aten = torch.ops.aten
        y = self.t(n, c, side, side, dtype=dtype)
        if layout:
            y = y.contiguous(memory_format=torch.channels_last)
        b = self.t(c, dtype=dtype).reshape(1, c, 1, 1)     # reshape_bias: a view
        el = y.element_size()
        dn = str(dtype)[6:]
        cls = f"c{c}hw{side * side}"
        shape = f"bias y{list(y.shape)}" + (" channels_last" if layout else "")
        self.add("conv_bias_add" + layout, dtype, dn, cls, lambda: aten.add_.Tensor(y, b),
                 nbytes=2 * y.numel() * el + c * el, shape=shape)
        self.add("conv_bias_grad" + layout, dtype, dn, cls,
                 lambda: aten.sum.dim_IntList(y, [0, 2, 3]),
                 nbytes=y.numel() * el + c * el, shape=shape)
        del y, b

    # -- matmuls -----------------------------------------------------------------------------
    # a Linear's GEMMs as networks lay them out: tokens (batch x sequence or patches, aligned
    # or not: ViT's 197 and 257 per image) by model widths
    # A GEMM's time moves with its shape in steps no flop or byte count shows (which kernel
    # and tile cuBLAS picks, how many waves of tiles the SMs run): ViT-B/16 b64's forward
    # fc2, 12608 x 3072 x 768 FP32, ran 1436 us in its step and 1441 us alone in the same
    # layout, where the 40 rows of the table then had read 1211 (traces/h200/gemm_context).
    # So the grid is dense and log-spaced (ratio 1.33-1.5), not network shapes: token counts
    # and widths between its points are interpolated as unseen networks' are.
    NET_TOKENS = (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
                  24576, 32768, 49152, 65536)
    NET_WIDTHS = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 5120,
                  6144)

    # a language model's head: a bias-free Linear from the model width to the vocabulary
    # (BERT's 30522, Llama-2's 32000, SmolLM2's 49152, GPT-2's 50257 -- no multiple of 8, so
    # its GEMMs' leading dimensions are unaligned --, Llama-3's 128256, Qwen2's 151936), by
    # token counts; the widest GEMMs of a small LM's step. Not 50304 (GPT-NeoX's padded
    # vocabulary): Pythia-410M is in held-out set 9, whose head must be interpolated
    VOCABS = (30522, 32000, 49152, 50257, 128256, 151936)
    HEAD_TOKENS = (256, 512, 1024, 2048, 4096, 8192, 16384)
    HEAD_WIDTHS = (512, 576, 768, 896, 1024, 1280, 1536, 2048, 2560, 4096)

    def _add_matmul(self, fn, args, dtype, math_, shape):
        """Time matmul ``fn(*args)`` as a row of the class a recorded call of the same operands
        gets (:func:`snsim.kernel_table.matmul_class` of
        :func:`snsim.torchsim.record.matmul_layout`: their leading dimensions' alignment)."""
        from ..kernel_table import matmul_class
        from .record import matmul_layout
        torch = self.torch
        name = fn._overloadpacket.__name__
        out = fn(*args)
        self.add(name, dtype, math_, matmul_class("", matmul_layout(name, args, [out])),
                 lambda: fn(*args), flops=_flops(torch, fn, args, {}, out),
                 nbytes=_nbytes(torch, args, out), shape=shape)
        del out

    def net_matmuls(self, count, dtype, math_, max_flops, *, tokens=None, widths_in=None,
                    widths_out=None, bias=True, tag="net"):
        """A Linear's three GEMMs at ``count`` (tokens, in, out) drawn without repeats from
        ``tokens`` x ``widths_in`` x ``widths_out`` (default :attr:`NET_TOKENS` x
        :attr:`NET_WIDTHS` x :attr:`NET_WIDTHS`) under ``max_flops``: the forward
        ``addmm(b, x[T, in], W[out, in].t())`` (``bias``; else ``mm(x, W.t())``, as a
        bias-free Linear such as an LM head calls it), the input gradient ``mm(dy[T, out], W)``
        and the weight gradient ``mm(dy.t(), x)`` (rows' shape ``<tag> <form> b1 m.. k..
        n..``). The class is the operands' leading dimensions' alignment, as a recorded call's
        (:func:`snsim.torchsim.record.matmul_layout`): the tokens are no leading dimension, an
        unaligned vocabulary is."""
        aten = self.torch.ops.aten
        tokens = tokens or self.NET_TOKENS
        widths_in = widths_in or self.NET_WIDTHS
        widths_out = widths_out or self.NET_WIDTHS
        grid = [(t, din, dout) for t in tokens for din in widths_in for dout in widths_out
                if 2 * t * din * dout <= max_flops]
        for t, din, dout in self.rng.sample(grid, min(count, len(grid))):
            if self.late():
                break
            # token counts are batch x sequence (ViT's 197 per image): cuBLAS tiles the rows
            # by 64-256, and a count that no tile divides runs other kernels (ViT-B/16 b64's
            # 12608 rows at 36 TFLOP/s in FP32 where 12288 and 16384 ran at 50): a share of
            # the rows is off the grid's multiples of 128, by 8 or by any count
            u = self.rng.random()
            t = t if u < 0.4 else t + (8 * self.rng.randint(1, 15) if u < 0.8
                                      else self.rng.randint(1, 127))

            def one(t=t, din=din, dout=dout):
                x, w = self.t(t, din, dtype=dtype), self.t(dout, din, dtype=dtype)
                dy = self.t(t, dout, dtype=dtype)
                fwd = ((aten.addmm.default, (self.t(dout, dtype=dtype), x, w.t())) if bias
                       else (aten.mm.default, (x, w.t())))
                for form, fn, args, (m, k, n) in (
                        ("fwd", *fwd, (t, din, dout)),
                        ("dgrad", aten.mm.default, (dy, w), (t, dout, din)),
                        ("wgrad", aten.mm.default, (dy.t(), x), (dout, t, din))):
                    self._add_matmul(fn, args, dtype, math_, f"{tag} {form} b1 m{m} k{k} n{n}")
            self.guarded(f"{tag} matmul", one)

    def vocab_matmuls(self, count, dtype, math_, max_flops):
        """An LM head's three GEMMs (:meth:`net_matmuls` without bias) at ``count`` sampled
        (tokens, width, vocabulary) of :attr:`HEAD_TOKENS` x :attr:`HEAD_WIDTHS` x
        :attr:`VOCABS`; rows' shape ``vocab <form> b1 m.. k.. n..``."""
        self.net_matmuls(count, dtype, math_, max_flops, tokens=self.HEAD_TOKENS,
                         widths_in=self.HEAD_WIDTHS, widths_out=self.VOCABS, bias=False,
                         tag="vocab")

    # an explicit attention's batched GEMMs (MultiheadAttention's math path, MViT's pooled
    # attention, Swin's windows: q @ k^T and attn @ v as torch.matmul calls them) at token
    # counts that are and are not multiples of 8 (a class token, a window of 7 x 7): cuBLAS
    # runs an unaligned half-precision one on slower kernels (MViT-V2-S's [32, 1569, 393] x
    # [32, 393, 96] bf16: 93 us on the H200, traces/h200/profile_heldout11, 40 TFLOP/s)
    ATTN_TOKENS = (49, 50, 64, 196, 197, 256, 257, 392, 393, 577, 784, 785, 1024, 1569,
                   3136, 3137, 6272, 6273)
    ATTN_HEAD_DIMS = (32, 64, 80, 96, 128)
    ATTN_BATCH_HEADS = (8, 16, 32, 64, 96, 128, 192, 384, 768, 1536)

    def attention_matmuls(self, count, dtype, math_, max_flops):
        """An explicit attention's six batched GEMMs at ``count`` sampled (batch x heads,
        queries S, keys S' <= S, head dim d) of :attr:`ATTN_BATCH_HEADS` x :attr:`ATTN_TOKENS`
        x :attr:`ATTN_HEAD_DIMS`: forward ``bmm(q, k^T)`` and ``bmm(attn, v)``, and their
        gradients as autograd's bmm backward calls them (``bmm(g, b^T)``, ``bmm(a^T, g)``),
        the transposed operands as views. Rows' shape ``attn <form> b.. m.. k.. n..``; the
        class is the operands' leading dimensions' alignment, as a recorded call's
        (:func:`snsim.torchsim.record.matmul_layout`)."""
        aten = self.torch.ops.aten
        rng = self.rng
        made = tries = 0
        while made < count and tries < count * 20 and not self.late():
            tries += 1
            bh, d = rng.choice(self.ATTN_BATCH_HEADS), rng.choice(self.ATTN_HEAD_DIMS)
            s = rng.choice(self.ATTN_TOKENS)
            s2 = s if rng.random() < 0.5 else rng.choice([v for v in self.ATTN_TOKENS
                                                           if v <= s])
            if 2 * bh * s * s2 * d > max_flops or bh * s * s2 * 2 * 4 > 2.5e9:
                continue
            made += 1

            def one(bh=bh, s=s, s2=s2, d=d):
                q, k, v = (self.t(bh, n, d, dtype=dtype) for n in (s, s2, s2))
                attn, dattn = self.t(bh, s, s2, dtype=dtype), self.t(bh, s, s2, dtype=dtype)
                dout = self.t(bh, s, d, dtype=dtype)
                for form, a, b in (("qk", q, k.transpose(1, 2)), ("av", attn, v),
                                   ("dattn", dout, v.transpose(1, 2)),
                                   ("dv", attn.transpose(1, 2), dout),
                                   ("dq", dattn, k), ("dk", q.transpose(1, 2), dattn)):
                    self._add_matmul(aten.bmm.default, (a, b), dtype, math_,
                                     f"attn {form} b{bh} m{a.shape[1]} k{a.shape[2]} "
                                     f"n{b.shape[2]}")
            self.guarded("attention matmul", one)

    def matmuls(self, count, dtype, math_, max_flops):
        from .record import matmul_layout
        torch = self.torch
        aten = torch.ops.aten
        rng = self.rng
        made = 0
        while made < count and not self.late():
            op = rng.choice(["mm", "mm", "addmm", "bmm"])
            m, k, n = (int(_loguniform(rng, 1, 32768)) for _ in range(3))
            if op != "bmm" and rng.random() < 0.5:
                # a Linear's tokens (batch x sequence, or batch x H x W of a channels-last
                # Linear: ConvNeXt's 64 x 56 x 56 = 200704) up to 2^18: the rows of its forward
                # and input-gradient GEMMs, the reduction of its weight-gradient GEMM
                tokens = int(_loguniform(rng, 32768, 2**18))
                m, k = (tokens, k) if op == "addmm" or rng.random() < 0.5 else (m, tokens)
            if rng.random() < 0.5:   # model widths: multiples of 64 (of 8 below 64)
                m, k, n = (max(8, (v + 32) // 64 * 64 if v >= 64 else (v + 4) // 8 * 8)
                           for v in (m, k, n))
            cls = "a8" if all(v % 8 == 0 for v in (m, k, n)) else ""   # kernel_table.matmul_class
            bt = int(_loguniform(rng, 1, 512)) if op == "bmm" else 1
            if 2 * bt * m * k * n > max_flops or bt * (m * k + k * n + m * n) * 4 > 3e9:
                continue
            if op == "bmm":
                a, b = self.t(bt, m, k, dtype=dtype), self.t(bt, k, n, dtype=dtype)
                fn, args = aten.bmm.default, (a, b)
            elif op == "addmm":
                a, b = self.t(m, k, dtype=dtype), self.t(n, k, dtype=dtype).t()
                fn, args = aten.addmm.default, (self.t(n, dtype=dtype), a, b)
            else:
                a, b = self.t(m, k, dtype=dtype), self.t(k, n, dtype=dtype)
                if rng.random() < 0.5:   # backward's transposed operands
                    b = self.t(n, k, dtype=dtype).t()
                fn, args = aten.mm.default, (a, b)

            def one():
                out = fn(*args)
                # the operands' form as a recorded call's (kernel_table.row_matmul_form reads
                # it back): cuBLAS's kernel follows it
                form = matmul_layout(op, args, [out]).partition("/")[2]
                self.add(op, dtype, math_, cls, lambda: fn(*args),
                         flops=_flops(torch, fn, args, {}, out),
                         nbytes=_nbytes(torch, args, out),
                         shape=f"b{bt} m{m} k{k} n{n} {form}")
            self.guarded(op, one)
            made += 1

    # -- attention ---------------------------------------------------------------------------
    def sdpa(self, count):
        torch = self.torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        rng = self.rng
        backends = [("flash", SDPBackend.FLASH_ATTENTION, torch.bfloat16),
                    ("efficient", SDPBackend.EFFICIENT_ATTENTION, torch.float32),
                    ("efficient", SDPBackend.EFFICIENT_ATTENTION, torch.bfloat16),
                    ("math", SDPBackend.MATH, torch.float32)]
        for i in range(count):
            if self.late():
                return
            name, be, dtype = backends[i % len(backends)]
            b = rng.choice([1, 2, 4, 8, 16, 32, 64])
            hds = rng.choice([1, 4, 8, 12, 16])
            s = rng.choice([64, 128, 197, 256, 512, 1024, 2048])
            d = rng.choice([32, 64, 128])
            if b * hds * s * s * 4 > (2e9 if name == "math" else 2e11):
                continue
            q, k, v = (self.t(b, hds, s, d, dtype=dtype, grad=True) for _ in range(3))
            causal = rng.random() < 0.3
            flops = 4 * b * hds * s * s * d // (2 if causal else 1)
            nb = 4 * q.numel() * q.element_size()
            shape = f"b{b} h{hds} s{s} d{d} causal{int(causal)}"
            try:
                with sdpa_kernel([be]):
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    dout = torch.randn_like(out)

                    def fwd():
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    def bwd():
                        torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
                    if name != "math":   # math's backward is many nodes: no one op to time
                        bwd = _node_call(torch, bwd, f"sdpa_{name}_backward")
                    mth = "bf16" if dtype == torch.bfloat16 else "fp32"
                    cls = "causal" if causal else ""    # causal kernels: rows of their own
                    self.add(f"sdpa_{name}", dtype, mth, cls, fwd, flops=flops,
                             nbytes=nb, shape=shape)
                    self.add(f"sdpa_{name}_backward", dtype, mth, cls, bwd,
                             flops=int(2.5 * flops), nbytes=2 * nb, shape=shape)
            except RuntimeError as e:
                key = f"sdpa_{name}: {type(e).__name__}"
                self.skipped[key] = self.skipped.get(key, 0) + 1

    # attention as a training step runs it: the backend CUDA picks by default for each dtype
    # (fp32: memory-efficient; bf16 and fp16 on Hopper: cuDNN's), on a grid of sequence
    # lengths, head sizes and batch x heads (GPT-2 medium's causal b4 h16 s1024 d64 fp32
    # backward, 0.83 ms measured, read 1.51 ms from the 15 random efficient rows; ViT-B's
    # b64 h12 s197 d64 1.01 ms read 0.57: traces/h200/profile_s15)
    SDPA_HEADS = ((1, 8), (4, 12), (8, 16), (16, 12), (32, 16), (64, 12))
    SDPA_LENGTHS = (128, 197, 256, 512, 1024, 2048)
    SDPA_HEAD_DIMS = (64, 128)

    def sdpa_grid(self, dtype, *, max_flops=1.5e12):
        """``F.scaled_dot_product_attention`` forward and backward at the backend CUDA
        dispatches to by default (no ``sdpa_kernel`` restriction), over :attr:`SDPA_HEADS` x
        :attr:`SDPA_LENGTHS` x :attr:`SDPA_HEAD_DIMS`, causal and not (forward FLOPs at most
        ``max_flops``). Each row's family is the aten op that ran (:func:`snsim.kernel_table.
        family_of`: ``sdpa_efficient``, ``sdpa_cudnn``, ``sdpa_flash``), timed alone (the
        backward's op through :func:`_node_call`); FLOPs and bytes as
        :meth:`snsim.torchsim.record.Recorder` counts a recorded call (halved for a causal
        one); shape ``sdpagrid b.. h.. s.. d.. causal..``."""
        grid = [(b, h, s, d, causal) for b, h in self.SDPA_HEADS for s in self.SDPA_LENGTHS
                for d in self.SDPA_HEAD_DIMS for causal in (False, True)]
        if self.device != "cuda":     # a smoke test: small shapes
            grid = [(1, 2, 16, 8, False), (1, 2, 16, 8, True)]
        for b, h, s, d, causal in grid:
            if self.late():
                return
            if 4 * b * h * s * s * d > max_flops:
                continue
            self.guarded("sdpa", self._sdpa_one, b, h, s, d, causal, dtype)

    def _sdpa_one(self, b, h, s, d, causal, dtype):
        torch = self.torch
        import torch.nn.functional as F

        from ..kernel_table import family_of
        q, k, v = (self.t(b, h, s, d, dtype=dtype, grad=True) for _ in range(3))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        func = _first_call(torch, lambda: F.scaled_dot_product_attention(
            q, k, v, is_causal=causal), lambda fam: fam.startswith("sdpa"),
            "no fused attention kernel for this shape")[0]
        fam = family_of(func._overloadpacket.__name__)
        flops = 4 * b * h * s * s * d // (2 if causal else 1)
        nb = 4 * q.numel() * q.element_size()
        mth = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")
        shape = f"sdpagrid b{b} h{h} s{s} d{d} causal{int(causal)}"
        dout = torch.randn_like(out)

        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        cls = "causal" if causal else ""    # causal kernels skip tiles: rows of their own
        self.add(fam, dtype, mth, cls, fwd, flops=flops, nbytes=nb, shape=shape)
        bwd = _node_call(torch, lambda: torch.autograd.grad(out, (q, k, v), dout,
                                                            retain_graph=True),
                         fam + "_backward")
        self.add(fam + "_backward", dtype, mth, cls, bwd, flops=int(2.5 * flops),
                 nbytes=2 * nb, shape=shape)
        del q, k, v, out, dout

    # -- batch norm, over channels x spatial size x batch ----------------------------------------
    # few channels on large maps included: cuDNN's NCHW kernels give each channel its own
    # blocks, so with fewer channels than the GPU has SMs the time follows N*H*W per channel,
    # not bytes (the H200 profile of mnasnet0_5 b256: [256, 8|16|24, 112, 112] all ~1.7 ms
    # forward, ~4.5 ms backward; traces/h200/profile/heldout3_profile_ops.csv.gz)
    BN_CHANNELS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048)
    BN_SIDES = (7, 14, 28, 56, 112, 149)
    # 512 and 1024: cuDNN's batch norm changes kernels past batch 256 (ShuffleNet v2 at
    # batch 512 on the H200: c96 7x7 backward 44.6 us a call where batch 256 takes 10.8,
    # traces/h200/profile/heldout4_profile_ops.csv.gz), which no interpolation from below can say
    BN_BATCHES = (16, 64, 256, 512, 1024)
    BN_LARGE = 512         # the ``bnlarge`` group: the batches from here on

    def batch_norms(self, dtype=None, *, max_bytes=2**31, batches=None):
        """Training-mode batch norm forward and backward on a grid of ``[N, C, H, H]`` inputs,
        timing the aten ops CUDA dispatches ``F.batch_norm`` to (``cudnn_batch_norm`` /
        ``cudnn_batch_norm_backward`` with cuDNN, else ``native_batch_norm(_backward)``; the
        choice is ``torch._batch_norm_impl_index``'s, as in a training step), the backward
        called directly with the forward's saved statistics (no autograd). Rows are
        ``native_batch_norm(_backward)`` (the recorder's family) with class ``c<C>hw<H*W>``
        (:func:`snsim.kernel_table.bn_class`) and bytes of every input and output tensor, as
        the recorder counts them. ``batches``: these of :attr:`BN_BATCHES` only."""
        torch = self.torch
        dtype = dtype or torch.float32
        el = torch.tensor([], dtype=dtype).element_size()
        chans, sides, batches = self.BN_CHANNELS, self.BN_SIDES, batches or self.BN_BATCHES
        if self.device != "cuda":    # a smoke test: a few small shapes
            chans, sides, batches = (32, 64), (7, 14), (2,)
        for c in chans:
            for h in sides:
                for n in batches:
                    if self.late():
                        return
                    if n * c * h * h * el > max_bytes or (h > 112 and c > 256):
                        continue
                    self.guarded("batch_norm", self._batch_norm_one, n, c, h, dtype)

    def _batch_norm_one(self, n, c, h, dtype):
        torch = self.torch
        aten = torch.ops.aten
        dn = str(dtype)[6:]
        x = self.t(n, c, h, h, dtype=dtype)
        dy = torch.randn_like(x)
        w, b = self.t(c), self.t(c)                      # parameters stay float32
        rm, rv = torch.zeros(c, device=self.device), torch.ones(c, device=self.device)
        eps, mom = 1e-5, 0.1
        impl = int(torch._batch_norm_impl_index(x, w, b, rm, rv, True, mom, eps,
                                                torch.backends.cudnn.enabled)[-1])
        cls = f"c{c}hw{h * h}"
        if impl == 1:
            fargs = (x, w, b, rm, rv, True, mom, eps)
            out = aten.cudnn_batch_norm.default(*fargs)
            bargs = (x, dy, w, rm, rv, out[1], out[2], eps, out[3])
            fwd = lambda: aten.cudnn_batch_norm.default(*fargs)            # noqa: E731
            bwd = lambda: aten.cudnn_batch_norm_backward.default(*bargs)   # noqa: E731
            bop, name = aten.cudnn_batch_norm_backward.default, "cudnn"
        else:
            fargs = (x, w, b, rm, rv, True, mom, eps)
            out = aten.native_batch_norm.default(*fargs)
            bargs = (dy, x, w, rm, rv, out[1], out[2], True, eps, [True, True, True])
            fwd = lambda: aten.native_batch_norm.default(*fargs)             # noqa: E731
            bwd = lambda: aten.native_batch_norm_backward.default(*bargs)    # noqa: E731
            bop, name = aten.native_batch_norm_backward.default, "native"
        shape = f"x[{n}, {c}, {h}, {h}] {name}"
        self.add("native_batch_norm", dtype, dn, cls, fwd,
                 nbytes=_nbytes(torch, fargs, out), shape=shape)
        bout = bop(*bargs)
        self.add("native_batch_norm_backward", dtype, dn, cls, bwd,
                 nbytes=_nbytes(torch, bargs, bout), shape=shape)
        del x, dy, out, bout, fargs, bargs

    # -- pooling, by window and stride ----------------------------------------------------------
    # (mode, window, stride, padding) of CNNs' pools: ResNet's stem (3/2 p1), Inception's and
    # VGG's/AlexNet's (3/2, 2/2), Inception's and GoogLeNet's branch pools (3/1 p1), DenseNet's
    # transitions (avg 2/2), and maps / channels of their stages
    POOL_KINDS = (("max", 3, 2, 1), ("max", 3, 2, 0), ("max", 2, 2, 0), ("max", 3, 1, 1),
                  ("avg", 3, 1, 1), ("avg", 2, 2, 0), ("avg", 3, 2, 0))
    POOL_MAPS = (7, 13, 17, 27, 35, 56, 73, 112, 147)
    POOL_CHANNELS = (32, 64, 128, 256, 512, 1024)
    POOL_BATCHES = (16, 128)

    def pools(self, dtype, *, max_bytes=2**30):
        """Max and average pooling, forward and backward (``max_pool2d_with_indices(_backward)``,
        ``avg_pool2d(_backward)``), for each of :attr:`POOL_KINDS` over :attr:`POOL_MAPS` x
        :attr:`POOL_CHANNELS` (batches alternating over :attr:`POOL_BATCHES`, inputs of at
        most ``max_bytes``). Rows' class is ``k<k>x<k>s<stride>`` (:func:`snsim.kernel_table.
        pool_class`), bytes every input and output tensor's (the max pool's int64 indices
        included), as the recorder counts them; shape ``pool <mode> x[N, C, H, W] ...``."""
        grid = [(kind, h, c) for kind in self.POOL_KINDS for h in self.POOL_MAPS
                for c in self.POOL_CHANNELS]
        if self.device != "cuda":     # a smoke test: small shapes
            grid = [(kind, 9, 8) for kind in self.POOL_KINDS]
        el = self.torch.tensor([], dtype=dtype).element_size()
        for i, ((mode, k, st, pad), h, c) in enumerate(grid):
            if self.late():
                return
            n = self.POOL_BATCHES[i % len(self.POOL_BATCHES)] if self.device == "cuda" else 2
            while n > 1 and n * c * h * h * el > max_bytes:
                n //= 2
            self.guarded("pool", self._pool_one, mode, k, st, pad, n, c, h, dtype)

    def _pool_one(self, mode, k, st, pad, n, c, h, dtype):
        x = self.t(n, c, h, h, dtype=dtype)
        self._pool_pair(mode, x, [k, k], [st, st], [pad, pad], dtype,
                        f"pool {mode} x[{n}, {c}, {h}, {h}] k{k} s{st} p{pad}")
        del x

    def _pool_pair(self, mode, x, kk, ss, pp, dtype, shape):
        """A max (``mode`` ``"max"``) or average pool of ``x`` (2-D or 3-D, by its window
        ``kk``), forward and backward, timed as rows of class
        :func:`snsim.kernel_table.pool_class` (what a recorded call of it gets)."""
        from ..kernel_table import pool_class
        from .record import signature
        torch = self.torch
        aten = torch.ops.aten
        dn = str(dtype)[6:]
        nd = len(kk)
        fam = f"max_pool{nd}d_with_indices" if mode == "max" else f"avg_pool{nd}d"
        fop, bop = getattr(aten, fam).default, getattr(aten, fam + "_backward").default
        fargs = (x, kk, ss, pp)
        cls = pool_class(signature(fam, fargs, {}))
        out = fop(*fargs)        # the max pool's: (output, indices)
        self.add(fam, dtype, dn, cls, lambda: fop(*fargs), nbytes=_nbytes(torch, fargs, out),
                 shape=shape)
        dy = torch.randn_like(out[0] if mode == "max" else out)
        bargs = ((dy, x, kk, ss, pp, [1] * nd, False, out[1]) if mode == "max"
                 else (dy, x, kk, ss, pp, False, True, None))
        gx = bop(*bargs)
        self.add(fam + "_backward", dtype, dn, cls, lambda: bop(*bargs),
                 nbytes=_nbytes(torch, bargs, gx), shape=shape)
        del out, dy, gx

    # (mode, window, stride, padding) of video models' 3-D pools: S3D's stem (1x3x3/1x2x2) and
    # stage pools (3x3x3/2, 2x2x2/2), its Inception branches' (3x3x3/1), MViT's pool skip
    # (1x3x3/1x2x2), a per-frame 3x3/1 pool, S3D's final average (2x7x7/1); by (frames, side)
    # of their stages, channels and batches
    POOL3D_KINDS = (("max", (1, 3, 3), (1, 2, 2), (0, 1, 1)),
                    ("max", (3, 3, 3), (2, 2, 2), (1, 1, 1)),
                    ("max", (2, 2, 2), (2, 2, 2), (0, 0, 0)),
                    ("max", (3, 3, 3), (1, 1, 1), (1, 1, 1)),
                    ("max", (1, 3, 3), (1, 1, 1), (0, 1, 1)),
                    ("avg", (2, 7, 7), (1, 1, 1), (0, 0, 0)),
                    ("avg", (3, 3, 3), (1, 1, 1), (1, 1, 1)))
    POOL3D_MAPS = ((2, 7), (4, 7), (8, 14), (8, 28), (16, 28), (16, 56), (32, 112))
    POOL3D_CHANNELS = (64, 96, 192, 480, 832)
    POOL3D_BATCHES = (2, 8, 16)

    def pools3d(self, dtype, *, max_bytes=2**30):
        """3-D max and average pooling, forward and backward (``max_pool3d_with_indices
        (_backward)``, ``avg_pool3d(_backward)``), for each of :attr:`POOL3D_KINDS` over
        :attr:`POOL3D_MAPS` x :attr:`POOL3D_CHANNELS` (batches cycling over
        :attr:`POOL3D_BATCHES`, inputs of at most ``max_bytes``; windows larger than the map
        left out). Rows' class is :func:`snsim.kernel_table.pool_class`'s
        (``k1x3x3s1x2x2``), bytes every input and output tensor's (the max pool's int64
        indices included), as the recorder counts them; shape ``pool3d <mode> x[N, C, D, H,
        W] ...``."""
        grid = [(kind, dh, c) for kind in self.POOL3D_KINDS for dh in self.POOL3D_MAPS
                for c in self.POOL3D_CHANNELS
                if all(w <= m + 2 * p for w, m, p in zip(kind[1], (dh[0], dh[1], dh[1]),
                                                          kind[3]))]
        if self.device != "cuda":     # a smoke test: small shapes
            grid = [(kind, (4, 9), 8) for kind in self.POOL3D_KINDS]
        el = self.torch.tensor([], dtype=dtype).element_size()
        for i, ((mode, k, st, pad), (d, h), c) in enumerate(grid):
            if self.late():
                return
            n = self.POOL3D_BATCHES[i % len(self.POOL3D_BATCHES)] if self.device == "cuda" else 2
            while n > 1 and n * c * d * h * h * el > max_bytes:
                n //= 2
            self.guarded("pool3d", self._pool3d_one, mode, k, st, pad, n, c, d, h, dtype)

    def _pool3d_one(self, mode, k, st, pad, n, c, d, h, dtype):
        x = self.t(n, c, d, h, h, dtype=dtype)
        kk, ss, pp = list(k), list(st), list(pad)
        self._pool_pair(mode, x, kk, ss, pp, dtype,
                        f"pool3d {mode} x[{n}, {c}, {d}, {h}, {h}] k{kk} s{ss} p{pp}")
        del x

    # -- advanced indexing ---------------------------------------------------------------------
    # a table read by an index (a relative position bias: Swin's 7 x 7 window, 49^2 = 2401 pairs
    # into 169 rows; Swin-V2's 8 x 8, 4096 into 225; Swin3D's 8 x 7 x 7, 153,664 into 2535; a
    # batch's gather of rows), by index count, table rows and columns (heads, features)
    INDEX_COUNTS = (256, 2401, 4096, 9604, 38416, 153664, 614656, 2458624)
    INDEX_ROWS = (169, 2535, 65536)
    INDEX_COLS = (1, 3, 12, 32, 96, 768)

    def indexing(self, dtype, *, max_bytes=2**30):
        """``index`` (``table[idx]``, a gather of rows) and ``index_put`` into a zeroed table,
        accumulating (autograd's backward of the gather: class ``acc``,
        :func:`snsim.kernel_table.index_class`) and not (``t[idx] = v``), over
        :attr:`INDEX_COUNTS` x :attr:`INDEX_ROWS` x :attr:`INDEX_COLS` (random int64 indices
        into the table's rows; gathered values of at most ``max_bytes``). Bytes every input
        and output tensor's, as the recorder counts them; shape ``index n.. rows.. cols..``."""
        counts, rows, cols = self.INDEX_COUNTS, self.INDEX_ROWS, self.INDEX_COLS
        if self.device != "cuda":     # a smoke test: small shapes
            counts, rows, cols = (256,), (169,), (3,)
        el = self.torch.tensor([], dtype=dtype).element_size()
        for n, r, c in itertools.product(counts, rows, cols):
            if self.late():
                return
            if n * c * el <= max_bytes:
                self.guarded("index", self._index_one, n, r, c, dtype)

    def _index_one(self, n, r, c, dtype):
        from ..kernel_table import index_class
        from .record import signature
        torch = self.torch
        aten = torch.ops.aten
        dn = str(dtype)[6:]
        table = self.t(r, c, dtype=dtype)
        idx = torch.randint(0, r, (n,), device=self.device)
        shape = f"index n{n} rows{r} cols{c}"
        fargs = (table, [idx])
        out = aten.index.Tensor(*fargs)
        self.add("index", dtype, dn, "", lambda: aten.index.Tensor(*fargs),
                 nbytes=_nbytes(torch, fargs, out), shape=shape)
        for acc in (True, False):
            pargs = (torch.zeros_like(table), [idx], out, acc)
            got = aten.index_put.default(*pargs)
            cls = index_class(signature("index_put", pargs, {}))
            self.add("index_put", dtype, dn, cls,
                     lambda pargs=pargs: aten.index_put.default(*pargs),
                     nbytes=_nbytes(torch, pargs, got), shape=shape)
            del got
        del table, idx, out

    # -- row-wise ops, by row length and row count ---------------------------------------------
    # the elements per row (a layer norm's normalized size, the dims a sum keeps: ConvNeXt's and
    # Swin's 96-1536 channels, transformers' 256-8192 hidden sizes) and the rows (tokens,
    # N*H*W positions: 16 .. 2^18)
    ROW_LENGTHS = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1280, 1536, 2048, 3072,
                   4096, 8192)
    ROW_COUNTS = tuple(2 ** k for k in range(4, 19))

    def row_ops(self, dtype, *, max_elements=2**27):
        """Layer norm forward and backward and ``sum_rows`` over :attr:`ROW_LENGTHS` x
        :attr:`ROW_COUNTS` (``R * D`` at most ``max_elements``), on ``[R, D]`` inputs of
        ``dtype`` (weights of the same dtype, as ``nn.LayerNorm`` in a model cast to it;
        autocast runs layer norm in fp32): the aten calls autograd makes
        (``native_layer_norm``, ``native_layer_norm_backward`` with the forward's saved
        statistics, ``sum.dim_IntList(x, [0])``: a Linear's grad_bias), each timed alone.
        Rows' class is ``d<D>r<R>`` (:func:`snsim.kernel_table.ln_class`,
        :func:`snsim.kernel_table.sum_rows_class`), bytes those of every input and output
        tensor, as the recorder counts them; shape ``rows x[R, D]``."""
        lengths, counts = self.ROW_LENGTHS, self.ROW_COUNTS
        if self.device != "cuda":     # a smoke test: a few small shapes
            lengths, counts = (64, 768), (16, 256)
        for d in lengths:
            for r in counts:
                if self.late():
                    return
                if r * d <= max_elements:
                    self.guarded("row ops", self._row_ops_one, r, d, dtype)

    def _row_ops_one(self, r, d, dtype):
        torch = self.torch
        aten = torch.ops.aten
        dn = str(dtype)[6:]
        x, w, b = self.t(r, d, dtype=dtype), self.t(d, dtype=dtype), self.t(d, dtype=dtype)
        cls, shape = f"d{d}r{r}", f"rows x[{r}, {d}]"
        fargs = (x, [d], w, b, 1e-5)
        out = aten.native_layer_norm.default(*fargs)
        self.add("native_layer_norm", dtype, dn, cls,
                 lambda: aten.native_layer_norm.default(*fargs),
                 nbytes=_nbytes(torch, fargs, out), shape=shape)
        dy = torch.randn_like(x)
        bargs = (dy, x, [d], out[1], out[2], w, b, [True, True, True])
        bout = aten.native_layer_norm_backward.default(*bargs)
        self.add("native_layer_norm_backward", dtype, dn, cls,
                 lambda: aten.native_layer_norm_backward.default(*bargs),
                 nbytes=_nbytes(torch, bargs, bout), shape=shape)
        sout = aten.sum.dim_IntList(x, [0])
        self.add("sum_rows", dtype, dn, cls, lambda: aten.sum.dim_IntList(x, [0]),
                 nbytes=_nbytes(torch, x, sout), shape=shape)
        del x, w, b, dy, out, bout, sout

    # -- memory-bound ops, by bytes ------------------------------------------------------------
    def bandwidth_ops(self, sizes, dtype=None):
        torch = self.torch
        dtype = dtype or torch.float32
        el = torch.tensor([], dtype=dtype).element_size()
        dn = str(dtype)[6:]
        for nb in sizes:
            if self.late():
                return
            self.guarded("bandwidth", self._bandwidth_one, nb, el, dtype, dn)

    # copies of non-contiguous tensors (snsim.torchsim.record.copy_layout), by elements moved
    STRIDED_NUMELS = tuple(int(round(10 ** (4 + 0.5 * i))) for i in range(10))  # 1e4 .. 3e8
    STRIDED_MAPS = (7, 14, 28, 56)
    STRIDED_CHANNELS = (64, 176, 352)

    def strided_copies(self, dtypes=None, *, max_elements=3e8):
        """Copies whose source is not contiguous, over :attr:`STRIDED_NUMELS` elements in
        fp32, bf16 and fp16 (rows' shape ``strided <variant> x[N, C, H, W]``):

        * ``clone_strided``: ShuffleNet's channel shuffle, ``x.view(N, 2, C/2, H, W)
          .transpose(1, 2).contiguous()`` (outer dims swapped, inner runs of H*W: class
          ``""``), and ``x.permute(0, 2, 3, 1).contiguous()`` and back (NCHW <-> NHWC: class
          ``perm``, the innermost stride is not 1) -- ATen's generic indexing copy kernel;
        * ``cat_strided``: ``cat([x.chunk(2, 1)[0], y], 1)``, a chunk view and a contiguous
          tensor (ShuffleNetV2's blocks) -- ``CatArrayBatchedCopy`` without its contiguous
          fast path.

        Bytes as the recorder counts them: the inputs' elements read, the output's written."""
        self._over_strided_grid("strided copy", self._strided_one, dtypes, max_elements)

    def _over_strided_grid(self, what, one, dtypes, max_elements):
        """``one(n, c, hw, dtype)`` over :attr:`STRIDED_NUMELS` (the first two on a CPU),
        each size's channels and map from :attr:`STRIDED_CHANNELS` / :attr:`STRIDED_MAPS`,
        in fp32, bf16 and fp16 unless ``dtypes``; sizes above ``max_elements`` skipped."""
        torch = self.torch
        dtypes = dtypes or (torch.float32, torch.bfloat16, torch.float16)
        numels = self.STRIDED_NUMELS if self.device == "cuda" else self.STRIDED_NUMELS[:2]
        for i, m in enumerate(numels):
            if m > max_elements:
                continue
            c = self.STRIDED_CHANNELS[i % len(self.STRIDED_CHANNELS)]
            hw = self.STRIDED_MAPS[i % len(self.STRIDED_MAPS)]
            n = max(1, int(round(m / (c * hw * hw))))
            for dtype in dtypes:
                if self.late():
                    return
                self.guarded(what, one, n, c, hw, dtype)

    def _strided_one(self, n, c, hw, dtype):
        torch = self.torch
        aten = torch.ops.aten
        dn = str(dtype)[6:]
        x = self.t(n, c, hw, hw, dtype=dtype)
        shuffle = x.view(n, 2, c // 2, hw, hw).transpose(1, 2)
        nhwc = x.permute(0, 2, 3, 1)
        nchw = self.t(n, hw, hw, c, dtype=dtype).permute(0, 3, 1, 2)
        half, _ = x.chunk(2, 1)
        y = self.t(n, c // 2, hw, hw, dtype=dtype)
        shape = f"x[{n}, {c}, {hw}, {hw}]"
        for fam, cls, variant, f, ins in (
                ("clone_strided", "", "shuffle", lambda: aten.clone.default(
                    shuffle, memory_format=torch.contiguous_format), (shuffle,)),
                ("clone_strided", "perm", "nchw_to_nhwc", lambda: aten.clone.default(
                    nhwc, memory_format=torch.contiguous_format), (nhwc,)),
                ("clone_strided", "perm", "nhwc_to_nchw", lambda: aten.clone.default(
                    nchw, memory_format=torch.contiguous_format), (nchw,)),
                ("cat_strided", "", "chunk_cat", lambda: aten.cat.default([half, y], 1),
                 (half, y))):
            out = f()
            self.add(fam, dtype, dn, cls, f, nbytes=_nbytes(torch, ins, out),
                     shape=f"strided {variant} {shape}")

    # upsampling as segmentation and detection heads call it: (channels, input side, scale);
    # the logits' 8x (output stride 8: FCN, DeepLabV3, LR-ASPP) and 4x/16x, features' 2x/4x
    UPSAMPLE_GRID = ((21, 60, 8), (21, 30, 16), (19, 64, 8), (21, 120, 4), (128, 30, 2),
                     (256, 28, 4), (64, 56, 2), (256, 14, 2), (40, 60, 8),
                     # pooled branches brought back to the map (DeepLabV3's ASPP pooling at
                     # output stride 8 and 16, pyramid pooling's 2x2, 3x3 and 6x6 bins): up to
                     # 3600 outputs per input element, the backward's atomics all on a few
                     # addresses (kernel_table.upsample_backward_work)
                     (256, 1, 60), (256, 1, 30), (512, 2, 30), (512, 3, 20), (512, 6, 10))
    UPSAMPLE_MAX_WORK = 1.2e11   # skip calls beyond (a bf16 backward of 1e11: ~0.3 s)
    UPSAMPLE_BATCHES = (1, 4, 8, 16, 32)

    def upsamples(self, dtypes=None, *, max_bytes=1.5 * 2**30):
        """``F.interpolate``'s kernels, forward and backward (families ``upsample_bilinear2d``,
        ``upsample_nearest2d`` and their ``_backward``), over :attr:`UPSAMPLE_GRID` x
        :attr:`UPSAMPLE_BATCHES` in fp32, bf16 and fp16 (rows' shape ``upsample <mode>
        x[N, C, H, W] x<scale>``). The bilinear backward scatters each grad_output element
        into four grad_input ones with atomic adds (ATen's upsample_bilinear2d_backward_out_frame,
        after zeroing grad_input): an 8x upsample of 21-class logits to 480x480 took 3.18 ms at
        batch 16 on the H200 (traces/h200/profile_heldout11), ~100 GB/s of grad_output, where a
        bandwidth proxy says 0.1 ms. Bytes as the recorder counts them: input read, output
        written."""
        torch = self.torch
        aten = torch.ops.aten
        dtypes = dtypes or (torch.float32, torch.bfloat16, torch.float16)
        grid, batches = self.UPSAMPLE_GRID, self.UPSAMPLE_BATCHES
        if self.device != "cuda":      # a smoke test
            grid, batches = grid[:1], batches[:1]
        for dtype in dtypes:
            dn = str(dtype)[6:]
            el = torch.tensor([], dtype=dtype).element_size()
            for c, side, scale in grid:
                for n in batches:
                    if self.late():
                        return
                    out = n * c * (side * scale) ** 2
                    if out * el > max_bytes or upsample_backward_work(
                            out, n * c * side * side) > self.UPSAMPLE_MAX_WORK:
                        continue
                    for mode in ("bilinear", "nearest"):
                        self.guarded("upsample", self._upsample_one, aten, n, c, side, scale,
                                     mode, dtype, dn)

    # roll's rows: channels-last maps of shifted-window attention (Swin: [N, H, W, C], Swin3D:
    # [N, D, H, W, C]) from 1 MiB to 1 GiB, rolled along one dim (a recorded roll over k dims
    # is k such passes: snsim.kernel_table.roll_passes)
    ROLL_SHAPES = ((56, 96), (28, 192), (14, 384), (7, 768), (64, 128), (32, 256), (16, 512))
    ROLL_BATCHES = (1, 4, 16, 64, 256)

    def rolls(self, dtypes=None, *, max_bytes=2**30):
        """``torch.roll`` along one dim (family ``roll``; rows' shape ``roll x[...] dim d``):
        ``roll_cuda_kernel`` moves one element per thread at an index it computes with 64-bit
        division, 1.5-1.8 TB/s of read and write per pass in the H200 profiles of Swin and
        Swin3D, where the strided copy the table read it as runs 2.3 (snsim.kernel_table.
        NEW_FAMILY_FALLBACK). Bytes as the recorder counts them: input read, output written."""
        torch = self.torch
        aten = torch.ops.aten
        dtypes = dtypes or (torch.float32, torch.bfloat16, torch.float16)
        shapes, batches = self.ROLL_SHAPES, self.ROLL_BATCHES
        if self.device != "cuda":      # a smoke test
            shapes, batches = shapes[:1], batches[:1]
        for dtype in dtypes:
            dn = str(dtype)[6:]
            el = torch.tensor([], dtype=dtype).element_size()
            for side, c in shapes:
                for n in batches:
                    for dims in ((n, side, side, c), (max(1, n // 8), 8, side, side, c)):
                        numel = math.prod(dims)
                        if self.late():
                            return
                        if not 2**20 <= numel * el <= max_bytes:
                            continue
                        self.guarded("roll", self._roll_one, aten, dims, dtype, dn)

    def _roll_one(self, aten, dims, dtype, dn):
        x = self.t(*dims, dtype=dtype)
        d = len(dims) - 2                  # the last spatial dim: W
        self.add("roll", dtype, dn, "", lambda: aten.roll.default(x, [-(dims[d] // 2)], [d]),
                 nbytes=2 * x.numel() * x.element_size(),
                 shape=f"roll x[{', '.join(map(str, dims))}] dim {d}")

    def _upsample_one(self, aten, n, c, side, scale, mode, dtype, dn):
        x = self.t(n, c, side, side, dtype=dtype)
        size, in_size = [side * scale] * 2, [n, c, side, side]
        if mode == "bilinear":
            def fwd():
                return aten.upsample_bilinear2d.default(x, size, False)
        else:
            def fwd():
                return aten.upsample_nearest2d.default(x, size)
        y = fwd()
        dy = self.torch.randn_like(y)
        if mode == "bilinear":
            def bwd():
                return aten.upsample_bilinear2d_backward.default(dy, size, in_size, False)
        else:
            def bwd():
                return aten.upsample_nearest2d_backward.default(dy, size, in_size)
        shape = f"upsample {mode} x{in_size} x{scale}"
        fam = f"upsample_{mode}2d"
        self.add(fam, dtype, dn, "", fwd, nbytes=_nbytes(self.torch, x, y), shape=shape)
        self.add(fam + "_backward", dtype, dn, "", bwd, nbytes=_nbytes(self.torch, dy, x),
                 flops=upsample_backward_work(dy.numel(), x.numel()), shape=shape)

    def generic_elementwise(self, dtypes=None, *, max_elements=3e8):
        """Elementwise ops on TensorIterator's generic (non-vectorized) kernel
        (:func:`snsim.torchsim.record.elementwise_layout`), family ``elementwise_generic``,
        over :attr:`STRIDED_NUMELS` output elements in fp32, bf16 and fp16 (rows' shape
        ``generic <variant> x[N, C, H, W]``): a channel scale ``x * s[N, C, 1, 1]``
        (squeeze-excitation), a row scale ``x * r[N, C, H, 1]`` (RMSNorm's ``x *
        rsqrt(var)`` over the last dim), a weight over the last dim ``w[W] * x``, and a mean's
        backward, a stride-0 expand divided by a number. Bytes as the recorder counts them:
        the operands' elements (an expand's logical ones) and the output's."""
        self._over_strided_grid("generic elementwise", self._generic_one, dtypes, max_elements)

    def _generic_one(self, n, c, hw, dtype):
        torch = self.torch
        aten = torch.ops.aten
        dn = str(dtype)[6:]
        x = self.t(n, c, hw, hw, dtype=dtype)
        s = self.t(n, c, 1, 1, dtype=dtype)
        r = self.t(n, c, hw, 1, dtype=dtype)
        w = self.t(hw, dtype=dtype)
        g = s.expand(n, c, hw, hw)
        shape = f"x[{n}, {c}, {hw}, {hw}]"
        for variant, f, ins in (
                ("channel_scale", lambda: aten.mul.Tensor(x, s), (x, s)),
                ("row_scale", lambda: aten.mul.Tensor(x, r), (x, r)),
                ("last_dim_weight", lambda: aten.mul.Tensor(w, x), (w, x)),
                ("expand_div", lambda: aten.div.Scalar(g, hw * hw), (g,))):
            out = f()
            self.add("elementwise_generic", dtype, dn, "", f, nbytes=_nbytes(torch, ins, out),
                     shape=f"generic {variant} {shape}")

    def _bandwidth_one(self, nb, el, dtype, dn):
        torch = self.torch
        aten = torch.ops.aten
        numel = max(int(nb // el), 64)
        c = 64
        hw = max(int(math.sqrt(numel / (32 * c))), 4)
        n4 = max(numel // (c * hw * hw), 1)
        x = self.t(numel, dtype=dtype)
        y = self.t(numel, dtype=dtype)
        x4 = self.t(n4, c, hw, hw, dtype=dtype)
        dy4 = torch.randn_like(x4)
        w, b = self.t(c), self.t(c)
        rm, rv = torch.zeros(c, device=self.device), torch.ones(c, device=self.device)
        mask = x > 0
        sz = f"numel{numel}"
        ops = [
            ("relu_", lambda: aten.relu_.default(x), (x,), x),
            ("relu", lambda: aten.relu.default(x), (x,), y),
            ("threshold_backward", lambda: aten.threshold_backward.default(y, x, 0.0),
             (x, y), y),
            ("add", lambda: aten.add.Tensor(x, y), (x, y), y),
            ("add_", lambda: aten.add_.Tensor(x, y), (x, y), None),
            ("mul", lambda: aten.mul.Tensor(x, y), (x, y), y),
            ("mul_", lambda: aten.mul_.Tensor(x, 0.5), (x,), None),
            ("div", lambda: aten.div.Scalar(x, 3.0), (x,), y),
            ("clone", lambda: aten.clone.default(x), (x,), y),
            ("copy_", lambda: aten.copy_.default(y, x), (x, y), None),
            ("fill_", lambda: aten.fill_.Scalar(y, 0.0), (y,), None),
            ("ones_like", lambda: aten.ones_like.default(x), (x,), y),
            ("gelu", lambda: aten.gelu.default(x), (x,), y),
            ("gelu_backward", lambda: aten.gelu_backward.default(y, x), (x, y), y),
            ("native_dropout", lambda: aten.native_dropout.default(x, 0.5, True), (x,),
             (y, mask)),
            ("native_dropout_backward",
             lambda: aten.native_dropout_backward.default(y, mask, 2.0), (y, mask), y),
            ("sum", lambda: aten.sum.default(x), (x,), None),
            ("sum_dim", lambda: aten.sum.dim_IntList(x4, [0, 2, 3]), (x4,), None),
            ("mean", lambda: aten.mean.dim(x4, [-1, -2], True), (x4,), None),
            ("cat", lambda: aten.cat.default([x4, x4], 1), (x4, x4), (x4, x4)),
            ("_softmax", lambda: aten._softmax.default(x4.view(-1, hw * hw), -1, False),
             (x4,), x4),
            ("_log_softmax",
             lambda: aten._log_softmax.default(x4.view(-1, hw * hw), -1, False), (x4,), x4),
        ]
        for name, f, ins, outs in ops:
            if name in ("mean", "sum_dim"):
                try:
                    outs = f()
                except RuntimeError:
                    self.skipped[name] = self.skipped.get(name, 0) + 1
                    continue
            fam = "sum" if name == "sum_dim" else name
            self.add(fam, dtype, dn, "", f, nbytes=_nbytes(torch, ins, outs), shape=sz)
        # backward ops of softmax, via their aten calls (batch norm, layer norm and pooling
        # have their own grids: batch_norms, row_ops, pools)
        self.guarded("bandwidth backward", self._bandwidth_backward, x4, dy4, w, b, rm, rv,
                     hw, dtype, dn, sz)

    def _bandwidth_backward(self, x4, dy4, w, b, rm, rv, hw, dtype, dn, sz):
        torch = self.torch
        aten = torch.ops.aten
        sm = aten._softmax.default(x4.view(-1, hw * hw), -1, False)
        self.add("_softmax_backward_data", dtype, dn, "",
                 lambda: aten._softmax_backward_data.default(sm, sm, -1, dtype),
                 nbytes=3 * _nbytes(torch, sm), shape=sz)
        self.add("_log_softmax_backward_data", dtype, dn, "",
                 lambda: aten._log_softmax_backward_data.default(sm, sm, -1, dtype),
                 nbytes=3 * _nbytes(torch, sm), shape=sz)

    def embedding_and_loss(self, count):
        torch = self.torch
        aten = torch.ops.aten
        rng = self.rng
        for _ in range(count):
            if self.late():
                return
            v = int(_loguniform(rng, 1000, 250000))
            d = rng.choice([128, 256, 512, 768, 1024, 4096])
            n = int(_loguniform(rng, 64, 65536))
            if v * d * 4 > 2e9 or n * d * 4 > 1e9 or n * v * 4 > 4e9:
                continue
            self.guarded("embedding", self._embedding_one, v, d, n)

    def _embedding_one(self, v, d, n):
        torch = self.torch
        aten = torch.ops.aten
        wt = self.t(v, d)
        idx = torch.randint(0, v, (n,), device=self.device)
        e = aten.embedding.default(wt, idx)
        self.add("embedding", "float32", "fp32", "", lambda: aten.embedding.default(wt, idx),
                 nbytes=_nbytes(torch, idx, e), shape=f"v{v} d{d} n{n}")
        de = torch.randn_like(e)
        self.add("embedding_dense_backward", "float32", "fp32", "",
                 lambda: aten.embedding_dense_backward.default(de, idx, v, -1, False),
                 nbytes=_nbytes(torch, de, idx, wt), shape=f"v{v} d{d} n{n}")
        logits = self.t(n, min(v, 50000))
        lp = aten._log_softmax.default(logits, -1, False)
        tgt = torch.randint(0, lp.shape[1], (n,), device=self.device)
        lo = aten.nll_loss_forward.default(lp, tgt, None, 1, -100)
        self.add("nll_loss_forward", "float32", "fp32", "",
                 lambda: aten.nll_loss_forward.default(lp, tgt, None, 1, -100),
                 nbytes=_nbytes(torch, lp, tgt), shape=f"n{n} c{lp.shape[1]}")
        g = torch.ones((), device=self.device)
        self.add("nll_loss_backward", "float32", "fp32", "",
                 lambda: aten.nll_loss_backward.default(g, lp, tgt, None, 1, -100, lo[1]),
                 nbytes=2 * _nbytes(torch, lp), shape=f"n{n} c{lp.shape[1]}")
        del wt, idx, e, de, logits, lp, tgt, lo

    def foreach(self):
        torch = self.torch
        aten = torch.ops.aten
        totals = (2**20, 2**24, 2**27, 2**29) if self.device == "cuda" else (2**16, 2**20)
        for nt in (1, 4, 16, 64, 161, 400):
            for total in totals:
                if self.late():
                    return
                per = max(total // 4 // nt, 1)
                a = [self.t(per) for _ in range(nt)]
                b = [self.t(per) for _ in range(nt)]
                c = [self.t(per) for _ in range(nt)]
                nb = sum(t.numel() * 4 for t in a)
                sh = f"n{nt} x {per}"
                ops = [("_foreach_add_", lambda: aten._foreach_add_.List(a, b, alpha=1e-4), 2),
                       ("_foreach_add", lambda: aten._foreach_add.List(a, b, alpha=1e-4), 3),
                       ("_foreach_mul_", lambda: aten._foreach_mul_.Scalar(a, 0.9), 1),
                       ("_foreach_lerp_", lambda: aten._foreach_lerp_.Scalar(a, b, 0.1), 2),
                       ("_foreach_addcmul_",
                        lambda: aten._foreach_addcmul_.Scalar(a, b, c, 0.1), 3),
                       ("_foreach_addcdiv_",
                        lambda: aten._foreach_addcdiv_.Scalar(a, b, c, 0.1), 3),
                       ("_foreach_sqrt", lambda: aten._foreach_sqrt.default(a), 2),
                       ("_foreach_div_", lambda: aten._foreach_div_.List(a, b), 2)]
                for name, f, k in ops:
                    self.add(name, "float32", "fp32", "", f, nbytes=k * nb, ntensors=k * nt,
                             shape=sh)
                del a, b, c

    def fused_optimizers(self):
        """The fused optimizers' kernels (``fused=True``) and GradScaler's unscale/inf-check
        and scale update, by tensor count and bytes (fp32 parameters, as AMP keeps them)."""
        torch = self.torch
        aten = torch.ops.aten
        totals = (2**20, 2**24, 2**27, 2**29) if self.device == "cuda" else (2**16, 2**20)
        for nt in (1, 16, 161, 400):
            for total in totals:
                if self.late():
                    return
                per = max(total // 4 // nt, 1)
                p, g, m, v = ([self.t(per) for _ in range(nt)] for _ in range(4))
                steps = [torch.zeros((), device=self.device) for _ in range(nt)]
                scale = torch.ones((), device=self.device)
                found = torch.zeros((), device=self.device)
                growth = torch.zeros((), dtype=torch.int32, device=self.device)
                nb = sum(t.numel() * 4 for t in p)
                sh = f"n{nt} x {per}"
                adam = dict(lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=1e-2, eps=1e-8,
                            amsgrad=False, maximize=False)
                ops = [("_fused_adamw_", lambda: aten._fused_adamw_.default(
                            p, g, m, v, [], steps, **adam), 4, 5),
                       ("_fused_adam_", lambda: aten._fused_adam_.default(
                            p, g, m, v, [], steps, **adam), 4, 5),
                       ("_fused_sgd_", lambda: aten._fused_sgd_.default(
                            p, g, m, weight_decay=1e-4, momentum=0.9, lr=0.01, dampening=0.0,
                            nesterov=False, maximize=False, is_first_step=False), 3, 3),
                       ("_amp_foreach_non_finite_check_and_unscale_",
                        lambda: aten._amp_foreach_non_finite_check_and_unscale_.default(
                            g, found, scale), 1, 1)]
                # bytes and tensors as the recorder counts an op: its tensor arguments (these
                # kernels update in place and return nothing), one storage per tensor
                for name, f, k, kt in ops:
                    self.add(name, "float32", "fp32", "", f, nbytes=k * nb,
                             ntensors=kt * nt + (2 if name.startswith("_amp") else 0),
                             shape=sh)
                if nt == 1 and total == totals[0]:
                    self.add("_amp_update_scale_", "float32", "fp32", "",
                             lambda: aten._amp_update_scale_.default(scale, growth, found,
                                                                    2.0, 0.5, 2000),
                             nbytes=12, ntensors=3, shape="scalar")
                del p, g, m, v, steps

    # host bytes the pageable pattern holds at once (a step's offloaded activations: 1-10 GB)
    PAGEABLE_HELD_BYTES = 3 << 30
    PAGEABLE_ROUNDS = 4

    def copies(self, sizes):
        """Host<->device copies by size: ``copy_`` between a device buffer and a host buffer,
        pinned and pageable, timed in a tight loop (what ``save_on_cpu(pin_memory=True)``
        and the offloaders issue: a copy into a pinned buffer the caching host allocator hands
        out again), and ``save_on_cpu()``'s pageable pattern into new host memory
        (:meth:`pageable_pattern`)."""
        torch = self.torch
        for numel, d in self._device_buffers(sizes):
            for pinned in (True, False):
                h = torch.empty(numel, pin_memory=pinned)
                kind = "pinned" if pinned else "pageable"
                self.add(f"copy_h2d_{kind}", "float32", "", "",
                         lambda: d.copy_(h, non_blocking=pinned), nbytes=numel * 4,
                         shape=f"{numel * 4}", blocking=not pinned)
                self.add(f"copy_d2h_{kind}", "float32", "", "",
                         lambda: h.copy_(d, non_blocking=pinned), nbytes=numel * 4,
                         shape=f"{numel * 4}", blocking=not pinned)
                del h
            self.pageable_pattern(d)
            del d     # before the next size's buffer

    def _device_buffers(self, sizes):
        """``(numel, device fp32 buffer of that many elements)`` per size in bytes, on CUDA
        only, until the run's time is up."""
        if self.device != "cuda":
            return
        for nb in sizes:
            if self.late():
                return
            numel = max(nb // 4, 1)
            yield numel, self.torch.empty(numel, device="cuda")

    def pinned_packs(self, sizes):
        """``save_on_cpu(pin_memory=True)``'s pack beyond its copy, by size: the pinned host
        tensor it allocates for each saved tensor (``torch.empty(size, dtype=..., layout=...,
        pin_memory=True)``, a block the caching host allocator hands out again: the
        ``host_alloc_pinned`` rows, host seconds only), and the blocking D2H copy into it that
        torch before 2.12 makes (``sync_d2h_pinned``: the call's wall from an idle GPU,
        the copy's run and the thread's return after it included). The model charges each
        pinned pack the allocation, and each blocking copy the round trip beyond the
        non-blocking copy's issue and run (:meth:`snsim.kernel_table.KernelTable.sync_wake_s`).
        ``scripts/pack_probe.py`` (traces/h200/pack_probe_s29) measured both in real forwards
        first: a median 11 us per allocation over 12 forwards of six networks, near the
        table's tight loop at its in-network ratio (9.2 us)."""
        torch = self.torch
        for numel, d in self._device_buffers(sizes):
            h = torch.empty(numel, pin_memory=True)
            size, dt, lay = d.size(), d.dtype, d.layout
            self.add("host_alloc_pinned", "float32", "", "",
                     lambda: torch.empty(size, dtype=dt, layout=lay, pin_memory=True),
                     nbytes=numel * 4, shape=f"{numel * 4}")
            self.add("sync_d2h_pinned", "float32", "", "", lambda: h.copy_(d),
                     nbytes=numel * 4, shape=f"{numel * 4}", blocking=True)
            del d, h

    def pageable_pattern(self, d):
        """``save_on_cpu()``'s pageable copies of device tensors like ``d``: the pack
        ``d.cpu()`` makes a new host tensor per saved activation, all held until backward,
        whose unpack ``x.to("cuda")`` brings each back (last packed first) and frees it. New
        host memory above glibc's mmap threshold is fresh pages from the kernel, faulted in as
        the copy writes them, so these copies run slower than the tight loop's into one buffer
        (``copy_d2h_pageable_new`` / ``copy_h2d_pageable_new`` rows; the model reads them for
        copies above the threshold: :data:`snsim.torchsim.opcost.FRESH_PAGES_BYTES`). Timed
        with the host clock (both calls are synchronous) over :attr:`PAGEABLE_ROUNDS` rounds of
        :attr:`PAGEABLE_HELD_BYTES` held (at least 2 tensors): the median per call of the
        rounds after the first (which warms the allocator as a step's first iterations do)."""
        torch = self.torch
        nb = d.numel() * d.element_size()
        k = int(min(max(self.PAGEABLE_HELD_BYTES // nb, 2), 512))
        pack, unpack = [], []
        for _ in range(self.PAGEABLE_ROUNDS):
            torch.cuda.synchronize()
            held = []
            t0 = time.perf_counter()
            for _ in range(k):
                held.append(d.cpu())
            t1 = time.perf_counter()
            while held:
                held.pop().to(d.device)      # the device copy and the host tensor freed
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            pack.append((t1 - t0) / k)
            unpack.append((t2 - t1) / k)
            if self.late():
                break
        for name, t in (("copy_d2h_pageable_new", pack), ("copy_h2d_pageable_new", unpack)):
            self.rows.append({"family": name, "dtype": "float32", "math": "", "cls": "",
                              "flops": 0, "bytes": int(nb), "ntensors": 0,
                              "time_s": statistics.median(t[1:] or t),
                              "host_s": statistics.median(t[1:] or t), "shape": f"{nb}",
                              "ops": ""})

    def _sleep(self, s):
        if self.device == "cuda":
            self.torch.cuda._sleep(int(s * 2.0e9))

    def _sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()


# the Calibrator.NET_MODELS whose convolutions have a bias (torchvision's VGG; the others' convs
# feed a batch norm and have none): the convbias group re-times their layers bias-free
NET_BIAS_MODELS = ("vgg16",)

# ``--only`` groups: (steps of run() they keep, families, rows of the base table a --merge
# replaces: all of the families' rows, or only those an earlier run of the group wrote)
_AMP_KERNELS = ("_fused_adamw_", "_fused_adam_", "_fused_sgd_",
                "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_")
_AMP_FAMILIES = _AMP_KERNELS + ("convolution", "convolution_backward", "mm", "addmm", "bmm")
ONLY = {"bn": ("batch norm", ("native_batch_norm", "native_batch_norm_backward"), "all"),
        "conv": ("conv net", ("convolution", "convolution_backward"), lambda r: (
            str(r.get("shape", "")).startswith("net ") and r.get("math") == "tf32")),
        # mixed precision and the fused optimizers (--amp, --optimizer-impl fused): the steps
        # whose names start with "amp "; their rows are the fp16 ones, the bf16 convolutions
        # of real networks' shapes and the fused/scaler kernels
        "amp": ("amp ", _AMP_FAMILIES, lambda r: (
            (r.get("math") == "fp16"
             and not str(r.get("shape", "")).startswith(("grouped ", "stage ")))
            or r.get("family") in _AMP_KERNELS
            or (r.get("math") == "bf16" and str(r.get("shape", "")).startswith("net ")))),
        # every matmul row again (fp32, tf32, bf16, fp16), half of them at model widths
        # (class a8: kernel_table.matmul_class); tables before 2026-11-30 had none
        "matmul": (("matmul ", "amp matmul "), ("mm", "addmm", "bmm"), "all"),
        # fp16 convolutions of real networks' shapes: cuDNN's fp16 and bf16 engines differ
        # (fp16 CNN steps ran 10-20% faster than bf16 ones on the H200, traces/h200/amp)
        "netfp16": ("amp conv net fp16", ("convolution", "convolution_backward"), lambda r: (
            r.get("math") == "fp16" and str(r.get("shape", "")).startswith("net "))),
        # grouped and depthwise convs over a grid of group widths and counts (TF32, bf16,
        # fp16): Calibrator.grouped_convs; a --merge replaces an earlier run's rows
        # fp16 batch norm (autocast: fp16 input, fp32 parameters): cuDNN's kernels, where
        # bf16 runs ATen's (torch._batch_norm_impl_index); the bn group re-measures it too
        "bnfp16": ("batch norm fp16", ("native_batch_norm", "native_batch_norm_backward"),
                   lambda r: r.get("dtype") == "float16"),
        # save_on_cpu()'s pageable copies into new host memory (Calibrator.pageable_pattern;
        # tables before 2026-11-30 22:00 UTC timed only the tight loop into one reused buffer),
        # and the tight loop's pageable copies, whose host time tables before then timed behind
        # the sleep kernel _Bench queues (a pageable copy waits for it: 2-3x its real time)
        "pageable": ("copies", ("copy_d2h_pageable", "copy_h2d_pageable",
                                "copy_d2h_pageable_new", "copy_h2d_pageable_new"), "all"),
        # save_on_cpu(pin_memory=True)'s pack beyond its copy (Calibrator.pinned_packs): the
        # pinned host allocation and the blocking copy's round trip; tables before 2026-12-04
        # had neither, and charged a pack its copy's issue and run only
        "pack": ("pinned pack", ("host_alloc_pinned", "sync_d2h_pinned"), "all"),
        "grouped": ("grouped conv", ("convolution", "convolution_backward"), lambda r: (
            str(r.get("shape", "")).startswith("grouped "))),
        # convolutions sampled as CNNs lay them out (Calibrator.layout_convs: grouped 3x3 at
        # every stage and group width, depthwise, dense 1x1/3x3 at small widths), TF32, bf16
        # and fp16; a --merge replaces an earlier run's rows
        # copies of non-contiguous tensors (Calibrator.strided_copies): the channel
        # shuffle's, NCHW<->NHWC permutes, cat of a chunk view; fp32/bf16/fp16
        "strided": ("strided copy", STRIDED_FAMILIES, "all"),
        # elementwise ops on TensorIterator's generic kernel (a broadcast or strided operand:
        # Calibrator.generic_elementwise); tables before 2026-12-01 03:00 had none and read
        # the strided copies' rows for them (kernel_table.GENERIC_FALLBACK)
        "generic": ("generic elementwise", ("elementwise_generic",), "all"),
        # a Linear's three GEMMs on a grid of token counts by widths (Calibrator.net_matmuls),
        # fp32/bf16/fp16, added to the matmul rows (tables before 2026-12-01 03:30 had only
        # random shapes: fp32 ones 1-1.5 e-folds from GPT-2's and ViT's GEMMs; before
        # 2026-12-03 40 sampled network shapes, ViT-B/16's FP32 Linears read 15-25 % short)
        "matnet": ("matmul net ", ("mm", "addmm"), lambda r: str(r.get("shape", "")).startswith(
            "net ")),
        # an LM head's three GEMMs against vocabularies (Calibrator.vocab_matmuls),
        # fp32/bf16/fp16: tables before 2026-12-01 06:00 had no GEMM of a vocabulary's width
        # (GPT-2's 8192 x 768 x 50257, unaligned, sat 1.4 e-folds from the nearest fp16 row)
        # an explicit attention's six batched GEMMs at aligned and unaligned token counts
        # (Calibrator.attention_matmuls), fp32/bf16/fp16: tables before 2026-12-02 23:30 had
        # 13 unaligned half-precision bmm rows, of random shapes
        "attnmm": ("matmul attn ", ("bmm",), lambda r: str(r.get("shape", "")).startswith(
            "attn ")),
        "lmhead": ("matmul vocab ", ("mm",), lambda r: str(r.get("shape", "")).startswith(
            "vocab ")),
        # every TF32 matmul row (fp32 operands, --matmul-precision high): random shapes, a
        # Linear's grid, attention's and an LM head's GEMMs; tables before 2026-12-06 had 19
        # random-shape rows
        "tf32mm": (("matmul tf32", "matmul net tf32", "matmul attn tf32", "matmul vocab tf32"),
                   ("mm", "addmm", "bmm"), lambda r: r.get("math") == "tf32"),
        "stage": ("stage conv", ("convolution", "convolution_backward"), lambda r: (
            str(r.get("shape", "")).startswith("stage "))),
        # grouped 3x3 convs of wide groups (Calibrator.WIDE_GROUP_WIDTHS), TF32, bf16 and
        # fp16; tables before 2026-12-06 had no group width between 168 and 256
        "wide": ("wide group conv", ("convolution", "convolution_backward"), lambda r: (
            str(r.get("shape", "")).startswith("wide "))),
        # dense 1x1 / 3x3 convs at CNN stages' channels (Calibrator.dense_stage_convs) and
        # random convs at batches 512-2048 (Calibrator.BIG_BATCHES), TF32, bf16 and fp16;
        # tables before 2026-12-06 had no dense conv row of more than 256 channels sampled by
        # stage, and none beyond batch 512
        "dense": ("dense stage conv", ("convolution", "convolution_backward"), lambda r: (
            str(r.get("shape", "")).startswith("dense "))),
        "big": ("big batch conv", ("convolution", "convolution_backward"), lambda r: (
            str(r.get("shape", "")).startswith("big "))),
        # the backward ops calibrate timed through torch.autograd.grad before 2026-11-30, whose
        # host cost then included a graph task's (_node_call): layer norm's and attention's
        "nodes": ("sdpa", ("sdpa_flash_backward", "sdpa_efficient_backward"), "all"),
        # layer norm forward and backward and sum_rows over row lengths x row counts
        # (Calibrator.row_ops), fp32/bf16/fp16; tables before 2026-12-02 08:30 timed layer norm
        # at one row length (1024) by bytes and had no sum_rows (ConvNeXt-T b64's layer norms
        # 2.0 ms predicted, 5.4 measured: traces/h200/profile)
        "rows": ("row ops", ROW_FAMILIES, "all"),
        # pooling by window and stride (Calibrator.pools), fp32/bf16/fp16; tables before
        # 2026-12-02 09:00 timed one max pool (3/2) and one average pool (2/2) by bytes, and
        # read the average pool's backward as the max pool's
        "pool": ("pool ", POOL2D_FAMILIES, "all"),
        # 3-D pooling by window and stride (Calibrator.pools3d), fp32/bf16/fp16; tables
        # before 2026-12-02 23:00 had none and read 2-D pools' rows by bytes
        "pool3d": ("pool3d ", POOL3D_FAMILIES, "all"),
        # advanced indexing (Calibrator.indexing), fp32/bf16: tables before 2026-12-02 23:00
        # had none and read a bandwidth proxy's rows
        "index": ("index ", INDEX_FAMILIES, "all"),
        # attention at CUDA's default backend on a grid (Calibrator.sdpa_grid), fp32/bf16/fp16;
        # tables before 2026-12-02 09:00 had 15 random rows per backend and none of cuDNN's
        # attention, which bf16 and fp16 steps run on the H200
        "sdpagrid": ("sdpa grid", ("sdpa_efficient", "sdpa_efficient_backward", "sdpa_cudnn",
                                   "sdpa_cudnn_backward", "sdpa_flash", "sdpa_flash_backward"),
                     lambda r: str(r.get("shape", "")).startswith("sdpagrid ")),
        # a convolution's bias add (forward) and grad_bias reduction (backward), by output
        # size, fp32/bf16/fp16, NCHW and channels-last (Calibrator.conv_biases), and the
        # conv layers of NET_BIAS_MODELS re-timed bias-free (TF32, bf16, fp16), replacing
        # their rows timed with the bias
        # batch norm at batches 512 and 1024 (Calibrator.BN_LARGE on), added to a table whose
        # BN grid stopped at 256 (before 2026-11-30 19:00)
        "bnlarge": ("bn large batch", ("native_batch_norm", "native_batch_norm_backward"),
                    lambda r: _row_batch(r) >= Calibrator.BN_LARGE),
        # channels-last convolutions, grouped/depthwise over the grid and dense sampled, in
        # TF32, bf16 and fp16 (Calibrator._conv's layout); tables before 2026-11-30 19:00 had
        # none and read the NCHW rows for them
        "convcl": ("conv cl ", ("convolution_cl", "convolution_backward_cl"), lambda r: not str(
            r.get("shape", "")).startswith("dwcl ")),
        # channels-last depthwise convolutions on a grid (Calibrator.dw_cl_convs), TF32, bf16
        # and fp16; tables before 2026-12-02 08:30 had 9 TF32 7x7 rows, none near ConvNeXt's
        # (its 14x14 stage's wgrad read 5x5 rows: 0.42 ms predicted, 1.59 measured)
        "dwcl": ("dwcl conv ", ("convolution_cl", "convolution_backward_cl"), lambda r: str(
            r.get("shape", "")).startswith("dwcl ")),
        # the segmentation backbones' dilated convolutions (Calibrator.net_convs_dilated),
        # TF32, bf16 and fp16; tables before 2026-12-02 read undilated rows for them
        # (segmentation steps -10..-40 % in held-out set 12)
        "dilated": ("dilated conv ", ("convolution", "convolution_backward"), lambda r: str(
            r.get("shape", "")).startswith("dilated ")),
        # the segmentation models' undilated convolutions at their 480x480 crops
        # (Calibrator.net_convs_segmentation), TF32, bf16 and fp16: small channel counts on
        # large maps, which the ImageNet-sized rows interpolated (2026-12-02)
        "segnet": ("segnet conv ", ("convolution", "convolution_backward"), lambda r: str(
            r.get("shape", "")).startswith("segnet ")),
        # non-overlapping convolutions, kernel = stride (Calibrator.net_convs_patchify), TF32,
        # bf16 and fp16; tables before 2026-12-02 16:00 UTC had none and read the 1x1/3x3
        # classes for them (ViT-B/16's patch embedding 3-5x low on the GPU)
        "patchify": ("patchify conv ", ("convolution", "convolution_backward"), lambda r: str(
            r.get("shape", "")).startswith("patchify ")),
        # F.interpolate's bilinear and nearest kernels, forward and backward
        # (Calibrator.upsamples); tables before 2026-12-02 had none and timed them as a
        # bandwidth proxy (the bilinear backward's atomic adds run ~30x slower)
        "upsample": ("upsample", ("upsample_bilinear2d", "upsample_bilinear2d_backward",
                                  "upsample_nearest2d", "upsample_nearest2d_backward"), "all"),
        # torch.roll along one dim (Calibrator.rolls); tables before 2026-12-05 had none and
        # read it as the strided copy (snsim.kernel_table.NEW_FAMILY_FALLBACK)
        "roll": ("roll", ("roll",), "all"),
        # the video models' 3-D convolutions (Calibrator.net_convs3d), TF32, bf16 and fp16;
        # tables before 2026-12-02 had none and read 2-D rows for them by FLOPs and bytes
        # (r3d_18 b16 fp16 forward convs 3.5 ms predicted, 5.3 measured: profile_heldout11)
        "conv3d": ("conv3d ", ("convolution", "convolution_backward"), lambda r: str(
            r.get("shape", "")).startswith("net3d ")),
        "convbias": ("conv bias", BIAS_FAMILIES + ("convolution", "convolution_backward"),
                     lambda r: r.get("family") in BIAS_FAMILIES or str(
                         r.get("shape", "")).startswith(tuple(f"net {m} "
                                                              for m in NET_BIAS_MODELS)))}


def _row_batch(row):
    """The batch of a row whose shape starts ``x[N, ...`` (0 when it has none)."""
    m = re.match(r"x\[(\d+),", str(row.get("shape", "")))
    return int(m.group(1)) if m else 0


def _only_groups(only):
    groups = [g for g in str(only).split(",") if g]
    bad = [g for g in groups if g not in ONLY]
    if bad or not groups:
        raise ValueError(f"only={only!r}: a comma list of {sorted(ONLY)}")
    return groups


def run(*, device=None, scale=1.0, max_seconds=420.0, seed=0, log=None, checkpoint=None,
        only=None):
    """Measure every family (or only the group ``only`` of :data:`ONLY`); returns
    ``(rows, provenance)``.

    ``scale`` multiplies the number of sampled shapes (``0.02`` for a CPU smoke test).
    ``checkpoint(rows, provenance)`` is called after each family (a partial table survives a
    killed run).
    """
    import torch
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.benchmark = False
    cal = Calibrator(device=device, scale=scale, max_seconds=max_seconds, seed=seed, log=log)
    log = cal.log
    t0 = time.perf_counter()
    sizes = [int(4096 * 3.2 ** i) for i in range(12)]          # 4 KiB .. ~1.5 GB
    cap = 1.0
    vocab_cap = 1.0
    if device != "cuda":   # a smoke test: small shapes only
        sizes = sizes[:2]
        cap = 1e-3
        # an LM head's smallest GEMM on the grid takes gigaflops, and a CPU runs fp16 GEMMs
        # without a fast kernel (three heads: 194 s, torch 2.14): only heads made small
        # (tests/test_calibrate.py) are timed
        vocab_cap = 1e-5
    steps = [
        ("conv tf32", 0.24, lambda: _with_tf32(torch, True, lambda: cal.convs(
            cal.n(360), torch.float32, "tf32", 3e12 * cap))),
        ("conv net tf32", 0.10, lambda: _with_tf32(torch, True, lambda: cal.net_convs(
            torch.float32, "tf32"))),
        ("bandwidth fp32", 0.06, lambda: cal.bandwidth_ops(sizes)),
        ("batch norm fp32", 0.05, lambda: cal.batch_norms(torch.float32)),
        ("matmul fp32", 0.07, lambda: _with_tf32(torch, False, lambda: cal.matmuls(
            cal.n(160), torch.float32, "fp32", 1e12 * cap))),
        ("foreach", 0.05, lambda: cal.foreach()),
        ("embedding/loss", 0.03, lambda: cal.embedding_and_loss(cal.n(24))),
        ("copies", 0.10, lambda: cal.copies([2**p for p in range(12, 31, 2)])),
        ("pinned pack", 0.01, lambda: cal.pinned_packs([2**p for p in range(12, 29, 2)])),
        ("conv bf16", 0.14, lambda: cal.convs(cal.n(140), torch.bfloat16, "bf16", 6e12 * cap)),
        ("matmul bf16", 0.05, lambda: cal.matmuls(cal.n(100), torch.bfloat16, "bf16", 4e12 * cap)),
        ("sdpa", 0.06, lambda: cal.sdpa(cal.n(60))),
        ("bandwidth bf16", 0.03, lambda: cal.bandwidth_ops(sizes[::2], torch.bfloat16)),
        ("batch norm bf16", 0.02, lambda: cal.batch_norms(torch.bfloat16)),
        # autocast's fp16 batch norm (fp32 parameters) runs in cuDNN, bf16 in ATen's kernels
        ("batch norm fp16", 0.02, lambda: cal.batch_norms(torch.float16)),
        # pooling by window and stride (Calibrator.pools)
        ("pool fp32", 0.015, lambda: cal.pools(torch.float32)),
        ("pool bf16", 0.01, lambda: cal.pools(torch.bfloat16)),
        ("pool fp16", 0.01, lambda: cal.pools(torch.float16)),
        # advanced indexing (Calibrator.indexing)
        ("index fp32", 0.01, lambda: cal.indexing(torch.float32)),
        ("index bf16", 0.01, lambda: cal.indexing(torch.bfloat16)),
        # 3-D pooling by window and stride (Calibrator.pools3d)
        ("pool3d fp32", 0.01, lambda: cal.pools3d(torch.float32)),
        ("pool3d bf16", 0.01, lambda: cal.pools3d(torch.bfloat16)),
        ("pool3d fp16", 0.01, lambda: cal.pools3d(torch.float16)),
        # attention at CUDA's default backend on a grid (Calibrator.sdpa_grid)
        ("sdpa grid fp32", 0.02, lambda: cal.sdpa_grid(torch.float32)),
        ("sdpa grid bf16", 0.015, lambda: cal.sdpa_grid(torch.bfloat16)),
        ("sdpa grid fp16", 0.015, lambda: cal.sdpa_grid(torch.float16)),
        # layer norm and sum_rows by row length and count (Calibrator.row_ops)
        ("row ops fp32", 0.02, lambda: cal.row_ops(torch.float32)),
        ("row ops bf16", 0.015, lambda: cal.row_ops(torch.bfloat16)),
        ("row ops fp16", 0.015, lambda: cal.row_ops(torch.float16)),
        ("amp conv fp16", 0.06, lambda: cal.convs(cal.n(80), torch.float16, "fp16",
                                                  6e12 * cap)),
        ("amp matmul fp16", 0.03, lambda: cal.matmuls(cal.n(60), torch.float16, "fp16",
                                                      4e12 * cap)),
        ("amp optimizer kernels", 0.03, lambda: cal.fused_optimizers()),
        ("amp conv net bf16", 0.08, lambda: cal.net_convs(torch.bfloat16, "bf16")),
        ("amp conv net fp16", 0.08, lambda: cal.net_convs(torch.float16, "fp16")),
        ("conv fp32", 0.08, lambda: _with_tf32(torch, False, lambda: cal.convs(
            cal.n(80), torch.float32, "fp32", 4e11 * cap))),
        ("matmul tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.matmuls(
            cal.n(40), torch.float32, "tf32", 3e12 * cap))),
        ("grouped conv tf32", 0.05, lambda: _with_tf32(torch, True, lambda: cal.grouped_convs(
            cal.n(300), torch.float32, "tf32"))),
        ("grouped conv bf16", 0.04, lambda: cal.grouped_convs(cal.n(300), torch.bfloat16,
                                                              "bf16")),
        ("grouped conv fp16", 0.04, lambda: cal.grouped_convs(cal.n(300), torch.float16,
                                                              "fp16")),
        ("conv bias", 0.06, lambda: cal.conv_biases()),
        ("strided copy", 0.02, lambda: cal.strided_copies()),
        ("generic elementwise", 0.02, lambda: cal.generic_elementwise()),
        ("matmul net fp32", 0.02, lambda: _with_tf32(torch, False, lambda: cal.net_matmuls(
            cal.n(40), torch.float32, "fp32", 1e12 * cap))),
        ("matmul net bf16", 0.02, lambda: cal.net_matmuls(cal.n(40), torch.bfloat16, "bf16",
                                                          4e12 * cap)),
        ("matmul net fp16", 0.01, lambda: cal.net_matmuls(cal.n(20), torch.float16, "fp16",
                                                          4e12 * cap)),
        ("matmul attn fp32", 0.01, lambda: _with_tf32(
            torch, False, lambda: cal.attention_matmuls(cal.n(30), torch.float32, "fp32",
                                                        1e12 * cap))),
        ("matmul attn bf16", 0.01, lambda: cal.attention_matmuls(cal.n(40), torch.bfloat16,
                                                                 "bf16", 4e12 * cap)),
        ("matmul attn fp16", 0.01, lambda: cal.attention_matmuls(cal.n(30), torch.float16,
                                                                 "fp16", 4e12 * cap)),
        ("matmul vocab fp32", 0.01, lambda: _with_tf32(torch, False, lambda: cal.vocab_matmuls(
            cal.n(12), torch.float32, "fp32", 2e12 * vocab_cap))),
        ("matmul vocab bf16", 0.01, lambda: cal.vocab_matmuls(cal.n(16), torch.bfloat16,
                                                              "bf16", 1e13 * vocab_cap)),
        ("matmul vocab fp16", 0.01, lambda: cal.vocab_matmuls(cal.n(16), torch.float16,
                                                              "fp16", 1e13 * vocab_cap)),
        # fp32 operands on TF32 tensor cores (--matmul-precision high): a Linear's GEMMs,
        # an explicit attention's and an LM head's, as the fp32 rows above
        ("matmul net tf32", 0.02, lambda: _with_tf32(torch, True, lambda: cal.net_matmuls(
            cal.n(40), torch.float32, "tf32", 3e12 * cap))),
        ("matmul attn tf32", 0.01, lambda: _with_tf32(
            torch, True, lambda: cal.attention_matmuls(cal.n(30), torch.float32, "tf32",
                                                       3e12 * cap))),
        ("matmul vocab tf32", 0.01, lambda: _with_tf32(torch, True, lambda: cal.vocab_matmuls(
            cal.n(12), torch.float32, "tf32", 6e12 * vocab_cap))),
        ("stage conv tf32", 0.05, lambda: _with_tf32(torch, True, lambda: cal.layout_convs(
            cal.n(1200), torch.float32, "tf32"))),
        ("stage conv bf16", 0.03, lambda: cal.layout_convs(cal.n(500), torch.bfloat16, "bf16")),
        ("stage conv fp16", 0.03, lambda: cal.layout_convs(cal.n(500), torch.float16, "fp16")),
        ("dense stage conv tf32", 0.03, lambda: _with_tf32(
            torch, True, lambda: cal.dense_stage_convs(cal.n(300), torch.float32, "tf32"))),
        ("dense stage conv bf16", 0.02, lambda: cal.dense_stage_convs(
            cal.n(300), torch.bfloat16, "bf16")),
        ("dense stage conv fp16", 0.02, lambda: cal.dense_stage_convs(
            cal.n(300), torch.float16, "fp16")),
        ("big batch conv tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.convs(
            cal.n(150), torch.float32, "tf32", 3e12 * cap, batches=cal.BIG_BATCHES))),
        ("big batch conv bf16", 0.02, lambda: cal.convs(
            cal.n(100), torch.bfloat16, "bf16", 6e12 * cap, batches=cal.BIG_BATCHES)),
        ("big batch conv fp16", 0.02, lambda: cal.convs(
            cal.n(100), torch.float16, "fp16", 6e12 * cap, batches=cal.BIG_BATCHES)),
        ("wide group conv tf32", 0.02, lambda: _with_tf32(torch, True, lambda: cal.layout_convs(
            cal.n(250), torch.float32, "tf32", widths=cal.WIDE_GROUP_WIDTHS))),
        ("wide group conv bf16", 0.02, lambda: cal.layout_convs(
            cal.n(250), torch.bfloat16, "bf16", widths=cal.WIDE_GROUP_WIDTHS)),
        ("wide group conv fp16", 0.02, lambda: cal.layout_convs(
            cal.n(250), torch.float16, "fp16", widths=cal.WIDE_GROUP_WIDTHS)),
        # channels-last convolutions (Calibrator._conv's layout): grouped and depthwise over
        # the grid, dense ones sampled as above
        ("conv cl grouped tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.grouped_convs(
            cal.n(300), torch.float32, "tf32", layout="_cl"))),
        ("conv cl grouped bf16", 0.03, lambda: cal.grouped_convs(cal.n(300), torch.bfloat16,
                                                                 "bf16", layout="_cl")),
        ("conv cl grouped fp16", 0.02, lambda: cal.grouped_convs(cal.n(300), torch.float16,
                                                                 "fp16", layout="_cl")),
        ("conv cl tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.convs(
            cal.n(200), torch.float32, "tf32", 3e12 * cap, layout="_cl"))),
        ("conv cl bf16", 0.03, lambda: cal.convs(cal.n(200), torch.bfloat16, "bf16", 6e12 * cap,
                                                 layout="_cl")),
        ("conv cl fp16", 0.02, lambda: cal.convs(cal.n(150), torch.float16, "fp16", 6e12 * cap,
                                                 layout="_cl")),
        ("upsample", 0.02, lambda: cal.upsamples()),
        ("roll", 0.01, lambda: cal.rolls()),
        # channels-last depthwise convolutions on a grid (Calibrator.dw_cl_convs)
        ("dwcl conv tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.dw_cl_convs(
            torch.float32, "tf32"))),
        ("dwcl conv bf16", 0.02, lambda: cal.dw_cl_convs(torch.bfloat16, "bf16")),
        ("dwcl conv fp16", 0.02, lambda: cal.dw_cl_convs(torch.float16, "fp16")),
        # dilated convolutions of the segmentation backbones (Calibrator.net_convs_dilated)
        ("dilated conv tf32", 0.02, lambda: _with_tf32(torch, True, lambda: cal.net_convs_dilated(
            torch.float32, "tf32"))),
        ("dilated conv bf16", 0.02, lambda: cal.net_convs_dilated(torch.bfloat16, "bf16")),
        ("dilated conv fp16", 0.02, lambda: cal.net_convs_dilated(torch.float16, "fp16")),
        # the segmentation models' undilated convolutions (Calibrator.net_convs_segmentation)
        ("segnet conv tf32", 0.02, lambda: _with_tf32(torch, True, lambda: (
            cal.net_convs_segmentation(torch.float32, "tf32")))),
        ("segnet conv bf16", 0.02, lambda: cal.net_convs_segmentation(torch.bfloat16, "bf16")),
        ("segnet conv fp16", 0.02, lambda: cal.net_convs_segmentation(torch.float16, "fp16")),
        # the transformers' and ConvNeXt's patch embeddings (Calibrator.net_convs_patchify)
        ("patchify conv tf32", 0.02, lambda: _with_tf32(torch, True, lambda: (
            cal.net_convs_patchify(torch.float32, "tf32")))),
        ("patchify conv bf16", 0.02, lambda: cal.net_convs_patchify(torch.bfloat16, "bf16")),
        ("patchify conv fp16", 0.02, lambda: cal.net_convs_patchify(torch.float16, "fp16")),
        # 3-D convolutions of the video models (Calibrator.net_convs3d)
        ("conv3d tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.net_convs3d(
            torch.float32, "tf32"))),
        ("conv3d bf16", 0.02, lambda: cal.net_convs3d(torch.bfloat16, "bf16")),
        ("conv3d fp16", 0.02, lambda: cal.net_convs3d(torch.float16, "fp16")),
    ]
    if only is not None:
        # --only bnlarge: the BN grid's batches from BN_LARGE on (a full run's batch norm steps
        # time every batch)
        large = tuple(b for b in Calibrator.BN_BATCHES if b >= Calibrator.BN_LARGE)
        steps = steps[:1] + [
            ("bn large batch fp32", 0.06, lambda: cal.batch_norms(torch.float32,
                                                                  batches=large)),
            ("bn large batch bf16", 0.03, lambda: cal.batch_norms(torch.bfloat16,
                                                                  batches=large)),
            ("bn large batch fp16", 0.03, lambda: cal.batch_norms(torch.float16,
                                                                  batches=large))] + steps[1:]
        # --only convbias: the layers of NET_BIAS_MODELS again, bias-free (tables before
        # 2026-11-30 timed them with their bias; a full run times them in its conv net steps)
        steps += [
            ("conv bias net tf32", 0.03, lambda: _with_tf32(torch, True, lambda: cal.net_convs(
                torch.float32, "tf32", models=NET_BIAS_MODELS))),
            ("conv bias net bf16", 0.02, lambda: cal.net_convs(torch.bfloat16, "bf16",
                                                               models=NET_BIAS_MODELS)),
            ("conv bias net fp16", 0.02, lambda: cal.net_convs(torch.float16, "fp16",
                                                               models=NET_BIAS_MODELS))]
    if device != "cuda":
        # torch 2.14.1's CPU backend crashed (SIGSEGV) in a channels-last fp32 convolution
        # backward of these steps (seed 3, after earlier steps; not in isolation): a smoke test
        # on a CPU leaves them out
        cl = [st for st in steps if st[0].startswith(("conv cl ", "dwcl conv "))]
        steps = [st for st in steps if st not in cl]
        log(f"calibrate: on a CPU, {len(cl)} channels-last convolution steps left out")
    if only is not None:
        keep = tuple(p for g in _only_groups(only)
                     for p in ((ONLY[g][0],) if isinstance(ONLY[g][0], str) else ONLY[g][0]))
        steps = [st for st in steps if st[0].startswith(keep)]
    done = []
    for name, share, fn in steps:
        # each family gets its share of the time and whatever earlier ones left unused
        left = sum(sh for _, sh, _ in steps[len(done):])
        cal.family_deadline = time.perf_counter() + (cal.deadline - time.perf_counter()) * (
            share / left if left else 1.0)
        if time.perf_counter() > cal.deadline:
            log(f"calibrate: out of time before {name}")
            break
        n0 = len(cal.rows)
        s0 = time.perf_counter()
        fn()
        done.append(name)
        log(f"calibrate: {name}: {len(cal.rows) - n0} rows in {time.perf_counter() - s0:.1f} s")
        if device == "cuda":
            torch.cuda.empty_cache()
        if checkpoint is not None:
            checkpoint(cal.rows, _prov(torch, device, scale, seed, done, cal, t0))
    return cal.rows, _prov(torch, device, scale, seed, done, cal, t0)


def read_table(path):
    """The rows (dicts of strings) and ``# key=value`` header of a table :func:`write_table`
    wrote."""
    import csv

    from ..kernel_table import read_table_text
    text, meta = read_table_text(path)
    lines = text.splitlines()
    return list(csv.DictReader(itertools.dropwhile(lambda line: line.startswith("#"),
                                                   lines))), meta


def group_rows(only):
    """A predicate of a table row: whether it belongs to one of the ``--only`` groups ``only``
    (:data:`ONLY`: its family, and all of the family's rows, a shape prefix or a predicate of
    the row)."""
    groups = [ONLY[g][1:] for g in _only_groups(only)]

    def member(r):
        return any(r.get("family") in gf and (
            which == "all" or (which(r) if callable(which)
                               else str(r.get("shape", "")).startswith(which)))
            for gf, which in groups)
    return member


def merge_rows(base_rows, base_meta, new_rows, new_prov, only, host_scale=1.0):
    """``base_rows`` with the rows the groups ``only`` (:data:`ONLY`) replace dropped and
    ``new_rows``'s of their families added, their ``host_s`` times ``host_scale`` (the base
    table's host pace over the new run's: :func:`host_scale`); the header is the base's, plus
    ``remeasured_*`` keys saying what was re-measured, when and with what."""
    fams = {f for g in _only_groups(only) for f in ONLY[g][1]}
    replaced = group_rows(only)
    rows = [r for r in base_rows if not replaced(r)] + [
        dict(r, host_s=float(r["host_s"]) * host_scale) if host_scale != 1.0 else r
        for r in new_rows if replaced(r)]
    meta = dict(base_meta)
    meta["remeasured_families"] = ",".join(sorted(fams))
    for k in ("date", "torch", "cuda", "cudnn", "driver", "gpu", "wall_s", "skipped",
              "families_done", "kind", "host_gauge_add_s", "host_scale"):
        if k in new_prov:
            meta[f"remeasured_{k}"] = new_prov[k]
    return rows, meta


def host_scale(base, gauges_s):
    """What a ``--merge`` multiplies the new rows' ``host_s`` by: the base table's own ``add``
    issue cost (:attr:`snsim.kernel_table.KernelTable.aten_host`, the pace its host costs are
    in) over the median of this run's host gauges (:func:`snsim.torchsim.hostpace.gauge_add_s`,
    read before and after it). The host's pace moves between leases of a machine (on the
    H200 lent here 6.5-12 us a gauge against the table's 8.2), and rows merged at another
    pace skewed one group against the rest: the networks' fp16 convolutions, merged
    2026-11-30, cost 1.38x their bf16 twins to issue where one process times 1.10x
    (``scripts/relevel_host.py``). 1 where either figure is missing. ``base``: the base
    table (:class:`snsim.kernel_table.KernelTable`), read once before the run, or None."""
    ref = base.aten_host.get("add") if base is not None else None
    gauges = [g for g in gauges_s if g and g > 0]
    return ref / statistics.median(gauges) if ref and gauges else 1.0


def _prov(torch, device, scale, seed, done, cal, t0):
    from .capture import provenance
    prov = provenance(torch, tool="snsim calibrate", device=device, scale=scale, seed=seed,
                      families_done=",".join(done), skipped=repr(cal.skipped),
                      wall_s=round(time.perf_counter() - t0, 1))
    if device != "cuda":
        prov["kind"] = "cpu-smoke-test"
    return prov


def _with_tf32(torch, on, fn):
    c, m = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on
    try:
        return fn()
    finally:
        torch.backends.cudnn.allow_tf32 = c
        torch.backends.cuda.matmul.allow_tf32 = m


def write_table(rows, prov, path):
    """Write rows as a CSV (gzip if ``path`` ends in .gz) with ``# key=value`` header lines."""
    buf = io.StringIO()
    for k, v in sorted(prov.items()):
        buf.write(f"# {k}={v}\n")
    buf.write(",".join(COLUMNS) + "\n")
    for r in rows:
        vals = []
        for c in COLUMNS:
            v = r.get(c, "")
            if isinstance(v, float):
                v = f"{v:.4g}"
            v = str(v)
            if "," in v or '"' in v:
                v = '"' + v.replace('"', "'") + '"'
            vals.append(v)
        buf.write(",".join(vals) + "\n")
    data = buf.getvalue().encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    with open(path, "wb") as f:
        f.write(data)


# -- the command line (registered by snsim.torchsim.cli) ---------------------------------------
def cmd_calibrate(args):
    from ..errors import ConfigError
    try:
        import torch
    except ImportError:
        raise ConfigError("snsim calibrate needs torch (pip install 'snsim[torch]')") from None
    device = args.device or ("cuda" if torch.cuda.is_available() else "")
    if not device:
        raise ConfigError("snsim calibrate times kernels on a CUDA GPU and none is visible; "
                          "--device cpu runs a smoke test of the code only")
    import sys

    if args.only:
        try:
            _only_groups(args.only)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if args.merge and not args.only:
        raise ConfigError("--merge replaces the rows of the families --only re-measures; "
                          "give --only too")
    base = None
    if args.merge:
        try:
            base = read_table(args.merge)
        except OSError as e:
            raise ConfigError(f"--merge {args.merge}: {e}") from None

    gauges, base_table = [], None
    if base is not None and device == "cuda":
        from ..kernel_table import KernelTable
        from .hostpace import gauge_add_s
        base_table = KernelTable.read(args.merge)    # its pace, before a save can rewrite it
        gauges.append(gauge_add_s())

    def save(rows, prov):
        prov["gpu_preset"] = args.gpu
        if base is not None:
            scale = host_scale(base_table, gauges)
            prov = dict(prov, host_gauge_add_s=repr(gauges), host_scale=f"{scale:.4f}")
            rows, prov = merge_rows(base[0], base[1], rows, prov, args.only, scale)
        write_table(rows, prov, args.out)
        return rows, prov

    rows, prov = run(device=device, scale=args.scale, max_seconds=args.max_seconds,
                     seed=args.seed, log=lambda m: print(m, file=sys.stderr, flush=True),
                     checkpoint=save, only=args.only)
    if gauges:
        gauges.append(gauge_add_s())
    n_new = len(rows)
    rows, prov = save(rows, prov)
    if base is not None:
        print(f"{args.out}: {n_new} new rows ({args.only}) merged into "
              f"{args.merge} ({len(base[0])} rows -> {len(rows)})")
        prov = {**prov, **{k[len('remeasured_'):]: v for k, v in prov.items()
                           if k.startswith("remeasured_")}}
    print(f"{args.out}: {len(rows)} rows ({prov.get('gpu') or device}, torch {prov['torch']}, "
          f"CUDA {prov['cuda']}, cuDNN {prov['cudnn']}, driver {prov['driver']}; "
          f"{prov['wall_s']} s)")
    return 0


def _add_calibrate(sub):
    p = sub.add_parser("calibrate", help="time the kernels of a training step on this GPU and "
                       "write the kernel table the cost model interpolates (snsim.costs)")
    p.add_argument("--out", default="configs/kernels/h200.csv.gz",
                   help="table path (default configs/kernels/h200.csv.gz)")
    p.add_argument("--gpu", default="h200", help="the preset this table belongs to")
    p.add_argument("--max-seconds", type=float, default=420.0,
                   help="stop sampling new shapes after this long (default 420)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply the number of sampled shapes (default 1)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the shape sampling (default 0): the same seed, the same grid")
    p.add_argument("--only", default=None, metavar="GROUPS",
                   help="re-measure only these groups (comma list): bn (batch norm forward "
                   "and backward over channels x H*W x batch), conv (the conv layers of "
                   "torchvision CNNs at batches 32-256), amp (fp16, the bf16 network convs, "
                   "fused optimizers and GradScaler kernels), matmul (every matmul row, half "
                   "of them at model widths), netfp16 (the fp16 convs of torchvision CNNs), "
                   "grouped (grouped and depthwise convs over a grid of group widths and "
                   "counts, TF32/bf16/fp16), stage (convs sampled as CNN stages lay them "
                   "out: grouped 3x3 by group width, depthwise, dense at small widths; "
                   "TF32/bf16/fp16), wide (stage's grouped 3x3 at group widths 96-384), "
                   "dense (dense 1x1/3x3 at CNN stages' channels, batch 8-512), big (random "
                   "convs at batch 512-2048), strided (copies of non-contiguous tensors: channel "
                   "shuffle, NCHW<->NHWC permutes, cat of a chunk view), generic "
                   "(elementwise ops on the generic kernel: broadcast operands), matnet (a "
                   "Linear's three GEMMs on a log-spaced grid of token counts and widths, part "
                   "of the token counts off the multiples of 128), lmhead (an LM head's "
                   "three GEMMs against vocabularies, aligned and not), bnfp16 (fp16 "
                   "batch norm: cuDNN's), convbias (a convolution's bias add and grad_bias "
                   "reduction by output size), convcl "
                   "(channels-last convolutions: grouped, depthwise and dense; TF32/bf16/fp16), "
                   "bnlarge (batch norm at batches 512 and 1024, added to the BN rows), "
                   "rows (layer norm and column sums by row length and row count), dwcl "
                   "(channels-last depthwise convs on a grid), pool (max and average pooling "
                   "by window and stride), pool3d (3-D pooling by window and stride), index "
                   "(a gather by an index and index_put, accumulating and not), attnmm (an "
                   "explicit attention's batched GEMMs at aligned and unaligned token counts), "
                   "sdpagrid (attention at CUDA's default backend, causal and not), pack "
                   "(save_on_cpu's pinned host allocation and blocking copy by size), roll "
                   "(torch.roll along one dim of channels-last maps). Every "
                   "group: " + ", ".join(sorted(ONLY)))
    p.add_argument("--merge", default=None, metavar="TABLE",
                   help="with --only: write TABLE with the new rows merged in (bn replaces "
                   "all BN rows; conv adds its rows, replacing an earlier conv run's; the "
                   "other rows and the header kept); on a GPU the host is gauged before and "
                   "after, and the new rows' host costs are put at TABLE's pace")
    p.add_argument("--device", default=None, help="cuda (default when present) or cpu (a "
                   "smoke test of the code; its times mean nothing)")
    p.set_defaults(func=cmd_calibrate)


def register():
    from ..cli import command
    command("calibrate")(_add_calibrate)
