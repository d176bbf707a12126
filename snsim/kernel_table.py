"""Measured kernel times of one GPU, interpolated in shape space (issue 10).

A kernel table is what ``snsim calibrate`` writes (``configs/kernels/<preset>.csv.gz``): one
row per timed op call with its family (an aten op name), dtype/math mode, shape class, FLOPs,
bytes, tensor count, GPU time and host issue time. :meth:`KernelTable.time_s` predicts the GPU
time of an op the table never saw:

* the time relative to a reference roofline, ``r = t / max(flops / P, bytes / B, 2 µs)``
  (a convolution's FLOPs its true count, :func:`conv_flops`, for rows and calls alike)
  (``P``, ``B`` a compute group's best measured FLOP and byte rates, else fixed), varies
  slowly in shape space; it is interpolated by inverse-distance weighting (a grouped or
  depthwise conv's weighted arithmetic mean of ``r``, others' geometric) over the ``k``
  nearest rows of the same family and math mode (a half type's own rows; the other half
  type's only where the table has none of the call's class: ``_OTHER_HALF``), in (ln flops,
  ln bytes, ln tensors) plus a penalty for another shape class (conv kernel, stride,
  grouping; a grouped conv's group count, a conv's channels, map size and channel alignment,
  a batch norm's channels and spatial size as distances).
  Within a factor ``FAR`` of a measurement this is ``"table"``;
* farther away, the fitted efficiency of the family (of its grouping: dense, grouped or
  depthwise convs, aligned or unaligned matmuls) -- the median ``r`` of its large calls --
  times the reference roofline: ``"fitted"``;
* an op whose family was not timed takes a bandwidth proxy family (``"proxy"``) or, when the
  table has nothing, the caller's roofline (``"roofline"``).

Every lookup says which of these it used, so a run can report how much time came from each.
The table never imports torch.
"""
from __future__ import annotations

import functools
import math
import re
from pathlib import Path

# numpy is imported in the functions that use it: loading it costs a CLI command that never
# calls them (maxdepth, run) 0.16 s

from .errors import ConfigError

REF_FLOPS_PER_S = 1e15
REF_BYTES_PER_S = 5e12
REF_FLOOR_S = 2e-6
K_NEAREST = 4
IDW_POWER = 2   # inverse-distance weights 1 / (d + 0.05) ** IDW_POWER
FAR = math.log(8.0)          # beyond a factor 8 in work from every row: fitted, not table
COMPUTE_FAMILIES = frozenset({"convolution", "convolution_backward", "convolution_cl",
                              "convolution_backward_cl", "mm", "addmm", "bmm", "sdpa_flash",
                              "sdpa_efficient", "sdpa_math", "sdpa_cudnn",
                              "sdpa_flash_backward", "sdpa_efficient_backward",
                              "sdpa_math_backward", "sdpa_cudnn_backward"})
# fp16 and bf16 rows are separate groups: cuDNN's fp16 and bf16 convolution engines differ
# (fp16 CNN steps ran 10-20% faster than bf16 ones on the H200: traces/h200/amp, and the
# table's fp16 and bf16 rows of the same network layers), so a lookup reads its own half type's
# rows. Where the table has none of the family (and of the call's class: :func:`_has_class`)
# in that type, the other half type's rows stand in -- the same tensor-core rate on sm80+
# (H100/H200: 989 TFLOPS dense for both) and 2-byte traffic -- before any proxy or roofline.
_OTHER_HALF = {"float16": "bfloat16", "bfloat16": "float16", "fp16": "bf16", "bf16": "fp16"}
# ... except where PyTorch dispatches the two half types to different implementations: batch
# norm (``torch._batch_norm_impl_index``) runs fp16 inputs with fp32 parameters (autocast's
# case) in cuDNN, as fp32, and bf16 inputs in ATen's native kernels (2-3x slower per byte on
# the H200: the table's rows). An fp16 call without fp16 rows reads the fp32 (cuDNN) rows of
# its shape (:data:`_BY_SHAPE`), a bf16 call without bf16 rows the fp32 ones by bytes (the
# other half type's rows, fp16's, are cuDNN's: no stand-in)
_FALLBACK = {fam: {"float16": "float32", "bfloat16": None} for fam in
             ("native_batch_norm", "native_batch_norm_backward")}
# fallbacks read at the call's shape, not its bytes (the rows' dtype's bytes of the same
# tensors): cuDNN's batch norm computes in fp32 whatever its input and is not bandwidth-bound
# (its fp32 rows run at 0.5-2.1 TB/s of the H200's 4.8), so an fp16 call is taken to cost
# what the same shape costs in fp32 -- an assumption, until the table has fp16 rows
# (``snsim calibrate --only bnfp16``)
_BY_SHAPE = {("native_batch_norm", "float16", "float32"),
             ("native_batch_norm_backward", "float16", "float32")}
# bytes per element of a dtype name (a recorded signature's, a table row's)
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
                 "int16": 2, "uint8": 1, "int8": 1, "bool": 1}
# a convolution whose input or weight is channels-last runs cuDNN's NHWC engines, and a
# depthwise one goes to cuDNN instead of ATen's NCHW depthwise kernels (``use_cudnn_depthwise``):
# timed apart (``snsim calibrate --only convcl``) as these families. A table without them reads
# the NCHW rows, as every lookup did before (ConvNeXt's 7x7 depthwise backward: NHWC 8x faster
# than NCHW in bf16, 2x slower in TF32 on the H200, traces/h200/profile).
LAYOUT_FAMILIES = {"convolution": "convolution_cl",
                   "convolution_backward": "convolution_backward_cl"}
_NCHW_FAMILY = {v: k for k, v in LAYOUT_FAMILIES.items()}
# a copy of a non-contiguous tensor (the recorder's ``copy_layout``: ``strided`` / ``permuted``)
# runs ATen's generic indexing kernels, not the vectorized ones the contiguous rows timed:
# timed apart (``snsim calibrate --only strided``) as these families, class ``perm`` for a
# permuted source. A table without them reads the contiguous rows.
STRIDED_FAMILIES = {"clone": "clone_strided", "cat": "cat_strided"}
# an elementwise op whose operands are not all dense in the output's shape and strides (a
# broadcast operand: squeeze-excitation's ``x * s[N, C, 1, 1]``, RMSNorm's ``x * rsqrt(var)``,
# rotary's ``q * cos``; the stride-0 gradient of a mean's backward) fails TensorIterator's
# ``is_contiguous()`` and runs ATen's generic ``elementwise_kernel<128, 4>`` with offset
# calculators instead of ``vectorized_elementwise_kernel``: element-rate bound, 1.6 TB/s for
# MobileNetV3-S's fp16 ``x * s`` where the contiguous ``mul`` of the same tensors reached 4.2
# (traces/h200/profile_heldout7). The recorder names the path (``record.elementwise_layout``:
# ``generic:<dtype>``); such calls read family ``elementwise_generic`` (``snsim calibrate
# --only generic``), in a table without it the generic kernel's copies (``clone_strided``
# rows of class ``""``: the same kernel template), else the contiguous rows.
ELEMENTWISE_FAMILIES = frozenset({"add", "add_", "mul", "mul_", "div", "relu", "relu_", "gelu",
                                  "gelu_backward", "threshold_backward"})
GENERIC_FAMILY = "elementwise_generic"
#: bytes per second of ATen's casting indexing kernel (``elementwise_kernel<128, 4>`` with
#: per-element casts: an operand broadcast and of another dtype than the output, e.g. an fp32
#: mask or position bias added to bf16/fp16 attention scores under autocast), which the
#: generic rows (one dtype) do not time: the median of 28 adds of 8 to 800 MB on an H100
#: (scripts/cast_elementwise_probe.py, traces/h100/cast_probe_s60: 0.97-2.55e12, 1.16e12 above
#: 64 MB, where the same adds in one dtype ran 1.9-2.5e12 in fp32 and 1.4-1.6e12 in bf16).
#: The kernel is bound by its per-element work, not by device memory (it streams at a third of
#: the H100's), so the figure stands for the H200's too: such a call takes at least its bytes
#: at this rate (``opcost.op_times_s``)
GENERIC_CAST_BYTES_PER_S = 1.172e12
GENERIC_FALLBACK = "clone_strided"


def generic_cast_time_s(time_s, nbytes):
    """A casting indexing kernel's seconds: the table's generic time of its ``nbytes``, but no
    faster than :data:`GENERIC_CAST_BYTES_PER_S`."""
    return max(time_s, nbytes / GENERIC_CAST_BYTES_PER_S)


# backward ops that ATen writes as zeros of the input's size and a copy of the gradient into
# the part the forward took (TensorShape.cpp: ``at::zeros(input_sizes)``, then
# ``grad_input.slice(...).copy_(grad)``): two kernels, a fill and a strided copy, which one
# lookup by the op's bytes priced as one contiguous copy (MViT-V2-S b8 bf16's 134 calls a
# step: 1.39 ms predicted, 3.84 ms profiled)
ZERO_SCATTER_OPS = frozenset({"slice_backward", "select_backward"})


def zero_scatter_calls(out_bytes, grad_bytes):
    """A :data:`ZERO_SCATTER_OPS` call's kernels as ``(family, bytes)``: a ``fill_`` of its
    output and a ``clone_strided`` copy of the gradient (read and written)."""
    return (("fill_", out_bytes), ("clone_strided", 2 * grad_bytes))


# ``Tensor.item()``: a synchronous copy of a scalar to pageable host memory; the host waits for
# the GPU there (:func:`host_stream`), then pays the copy's issue cost (copy_d2h_pageable)
HOST_READ_OPS = frozenset({"_local_scalar_dense"})
# aten ops that launch no kernel (views, metadata, profiler ranges): no GPU time, and the host
# cost per op that calibrate measures is per op outside this set (it absorbs their dispatch)
NO_KERNEL_OPS = frozenset({
    "detach", "t", "view", "_unsafe_view", "reshape", "expand", "permute", "transpose",
    "as_strided", "alias", "squeeze", "unsqueeze", "select", "slice", "split", "unbind",
    "split_with_sizes", "_reshape_alias", "lift_fresh", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "_foreach_empty", "device",
    "_record_function_enter_new", "_record_function_exit", "is_same_size", "sym_size",
    "sym_stride", "sym_numel", "_local_scalar_dense"})
# aten names a recording may use (CPU or CUDA spelling) -> the family calibrate timed
OP_FAMILY = {
    "_batch_norm_with_update": "native_batch_norm", "cudnn_batch_norm": "native_batch_norm",
    "_native_batch_norm_legit": "native_batch_norm",
    "_native_batch_norm_legit_functional": "native_batch_norm",
    "batch_norm_backward": "native_batch_norm_backward",
    "cudnn_batch_norm_backward": "native_batch_norm_backward",
    "layer_norm": "native_layer_norm", "native_group_norm": "native_layer_norm",
    "native_group_norm_backward": "native_layer_norm_backward",
    "baddbmm": "bmm", "matmul": "mm",
    # a Linear's addmm is cuBLAS's GEMM with the bias in its epilogue: the same kernels and
    # time as mm of its dimensions, so the two families' rows are one (3x the rows nearby)
    "addmm": "mm",
    "_adaptive_avg_pool2d": "mean", "_adaptive_avg_pool2d_backward": "div",
    "sigmoid": "relu", "tanh": "relu", "silu": "gelu", "hardswish": "gelu", "hardtanh": "relu",
    "relu6": "relu", "hardtanh_": "relu_", "silu_": "relu_", "hardswish_": "relu_",
    "sigmoid_backward": "threshold_backward", "tanh_backward": "threshold_backward",
    "silu_backward": "gelu_backward", "hardswish_backward": "gelu_backward",
    "hardtanh_backward": "threshold_backward",
    "sub": "add", "sub_": "add_", "div_": "mul_", "addcmul": "add", "where": "add",
    "rsub": "div", "neg": "div", "pow": "div", "sqrt": "div", "rsqrt": "div", "exp": "div",
    "zeros_like": "ones_like", "zero_": "fill_", "full_like": "ones_like", "new_zeros":
    "ones_like", "new_ones": "ones_like", "_to_copy": "clone", "contiguous": "clone",
    "amax": "sum", "var_mean": "sum", "mean": "mean", "stack": "cat",
    "embedding_backward": "embedding_dense_backward",
    "_scaled_dot_product_efficient_attention": "sdpa_efficient",
    "_scaled_dot_product_efficient_attention_backward": "sdpa_efficient_backward",
    "_scaled_dot_product_flash_attention": "sdpa_flash",
    "_scaled_dot_product_flash_attention_backward": "sdpa_flash_backward",
    "_scaled_dot_product_cudnn_attention": "sdpa_cudnn",
    "_scaled_dot_product_cudnn_attention_backward": "sdpa_cudnn_backward",
}
# a family the table lacks -> a timed family with the same memory behaviour
PROXY = ("clone", "add")
_TENSOR = re.compile(r"(\w+)\[([\d, ]*)\]")


def family_of(name):
    """The table family of aten op ``name``.

    Examples
    --------
    >>> family_of("_batch_norm_with_update"), family_of("convolution")
    ('native_batch_norm', 'convolution')
    """
    if name.startswith("_scaled_dot_product_flash_attention_for_cpu"):
        return "sdpa_efficient" + ("_backward" if name.endswith("_backward") else "")
    return OP_FAMILY.get(name, name)


def conv_class(sig):
    """Shape class of a recorded convolution signature, as ``snsim calibrate`` names it
    (``[dw|g]k<kh>x<kw>s<stride>``), with a grouped (not depthwise) convolution's group count
    after the ``g`` and, after ``:``, its input channels, output channels and input H*W.
    calibrate's rows carry the same in their ``shape`` (``x[N, C, H, W] w[Co, ...] ... g32``),
    and the lookup reads them as distances (:data:`GROUP_COUNT_WEIGHT`,
    :data:`CONV_SHAPE_WEIGHT`): layers of equal FLOPs and bytes run different kernels at
    different efficiencies (a 1x1 conv on a 7x7 map vs one on 14x14).

    Examples
    --------
    >>> conv_class("convolution float32[8, 3, 224, 224] float32[64, 3, 7, 7] None 2 2 3 3 1 1 "
    ...            "False 0 0 1")
    'k7x7s2:c3o64hw50176'
    >>> conv_class("convolution float32[8, 336, 28, 28] float32[336, 24, 3, 3] None 1 1 1 1 "
    ...            "1 1 False 0 0 14")
    'g14k3x3s1:c336o336hw784'

    A 3-D convolution (a video model's) names its three kernel sides, its strides where they
    differ, and the map's D*H*W:

    >>> conv_class("convolution float16[16, 64, 16, 56, 56] float16[128, 64, 3, 3, 3] None "
    ...            "1 2 2 1 1 1 1 1 1 False 0 0 0 1")
    'k3x3x3s1x2x2:c64o128hw50176'

    A dilated (atrous) one names its dilation:

    >>> conv_class("convolution float32[4, 256, 60, 60] float32[256, 256, 3, 3] None 1 1 2 2 "
    ...            "2 2 False 0 0 1")
    'k3x3s1d2:c256o256hw3600'
    """
    tensors = [(d, [int(v) for v in s.split(",") if v.strip()])
               for d, s in _TENSOR.findall(sig)]
    rest = _TENSOR.sub("", sig).split()[1:]
    toks = [t for t in rest if t != "None"]
    backward = sig.startswith("convolution_backward")
    if len(tensors) < (3 if backward else 2):
        return ""
    x = tensors[1][1] if backward else tensors[0][1]
    w = tensors[2][1] if backward else tensors[1][1]
    k = len(x) - 2
    if k not in (2, 3) or len(w) != len(x):
        return ""
    # stride, padding, dilation (k each), transposed, output padding (k), groups[, mask (3)]
    tail = toks[len(toks) - (4 * k + 2 + (3 if backward else 0)):]
    try:
        groups = int(tail[4 * k + 1])
        stride = [int(v) for v in tail[:k]]
        dilation = [int(v) for v in tail[2 * k:3 * k]]
    except (ValueError, IndexError):
        return ""
    g = "dw" if groups > 1 and groups == x[1] else (f"g{groups}" if groups > 1 else "")
    kernel = "x".join(map(str, w[2:]))
    # a 2-D class names its first stride (torchvision's are square); a 3-D one each stride
    # where they differ (a video model's (1, 2, 2)); a dilated one its dilation (segmentation
    # backbones' atrous layers run other kernels)
    s = str(stride[0]) if k == 2 or len(set(stride)) == 1 else "x".join(map(str, stride))
    d = "" if max(dilation) == 1 else f"d{max(dilation)}"
    return f"{g}k{kernel}s{s}{d}:c{x[1]}o{w[0]}hw{math.prod(x[2:])}"


MATMUL_FAMILIES = frozenset({"mm", "addmm", "bmm"})


def matmul_class(sig, layout=""):
    """Shape class of a recorded matmul signature: ``"a8"`` when every operand's last two
    dimensions are multiples of 8 (16-byte rows in a 2-byte dtype: what cuBLAS's fastest
    tensor-core kernels need, and what model widths are), else ``""``. With the recorder's
    ``layout`` (:func:`snsim.torchsim.record.matmul_layout`: ``"aligned"`` /
    ``"unaligned"``) the class is the operands' leading dimensions' alignment, which is what
    cuBLAS needs: a ViT-H/14's 4 x 257 = 1028 tokens are no leading dimension of its Linears'
    GEMMs, which ran at 480-510 TFLOP/s in bf16 on the H200 (traces/h200/profile_heldout7)
    where the unaligned rows say 180. Calibrate's rows are contiguous, their leading
    dimensions k and n: of its 360 matmul rows one has them aligned and m not.

    Tables calibrated before 2026-11-30 sampled random dimensions (all ``""``; half-precision
    rows at 60-180 TFLOPS where aligned GEMMs of the same size run several times faster): an
    aligned half-precision call such a table has no row of takes the roofline (tensor cores'
    half peak); fp32/TF32 ones are looked up without classes.

    >>> matmul_class("addmm bfloat16[3072] bfloat16[12608, 768] bfloat16[768, 3072]")
    'a8'
    >>> matmul_class("mm bfloat16[775, 255] bfloat16[255, 6365]")
    ''
    >>> matmul_class("addmm bfloat16[5120] bfloat16[1028, 1280] bfloat16[1280, 5120]", "aligned")
    'a8'
    """
    layout = (layout or "").partition("/")[0]
    if layout == "aligned" or layout.startswith("unaligned"):
        return "a8" if layout == "aligned" else ""
    dims = [int(v) for _, shape in _TENSOR.findall(sig) for v in shape.split(",")[-2:]
            if v.strip()]
    return "a8" if dims and all(v % 8 == 0 for v in dims) else ""


# squared distance per (doubling of a matmul's operand alignment)^2 between an unaligned call
# and an unaligned row (:func:`matmul_align`, :func:`row_matmul_align`): cuBLAS's kernels load
# operands in vectors as wide as every leading dimension allows (8, 4, 2 or 1 half-precision
# elements), and the narrow ones run slower: explicit attention over 393 pooled tokens (MViT-V2-S
# fp16 b16, attn @ v [64, 1569, 393] x [64, 393, 96]: 114-178 us, traces/h200/profile_s19)
# read rows over 196 tokens (4-element vectors, 70-88 us for the same FLOPs)
MATMUL_ALIGN_WEIGHT = 1.0
# squared distances of a matmul call from a row in shape space (session 21, traces/h200/
# gemm_context: a network's GEMM runs as the same GEMM alone in the same operand form): per
# (e-fold of output size b*m*n)^2 and of the reduction k; per mismatched operand form (nn /
# nt / tn: 1297, 1441 and 1208 us for ViT-B/16 b64's fc2), half of it for a row of unknown
# form; per (doubling of matmul_tile_align)^2. Chosen among a few values against every
# profiled step's GEMMs (scripts/gemm_lookup_compare.py; docs/VALIDATION.md section 6)
MATMUL_SHAPE_WEIGHT = 0.25
# A batched GEMM (bmm: cuBLAS's strided-batched kernels, which do not split the reduction) whose
# output tiles all fit in one wave runs each tile's reduction serially: its time grows with k
# whatever its FLOPs (MViT-V2-S b4's relative-position weight gradient [8, 96, 3136] @
# [8, 3136, 8]: 104 us on the H200, where FLOPs and bytes read 4 us off dense rows;
# traces/h200/profile_s19). The rate per k is the table's own: the median seconds per k of its
# bmm rows of that kind (SERIAL_K_MIN_K, a batch of 2 or more, at most one wave of 64 x 64
# tiles), which bounds such a call from below. In bf16 and fp16 only where the operands are
# not aligned to 8 elements (the tensor cores' kernels need 16-byte vectors; the rate is the
# unaligned half rows'): the profiled MViT steps ran their aligned such calls at 1.3-2.3 ns per
# k (9.5 us at k 6,272) and their unaligned ones (outputs of 7, 14 or 393 columns) at 6-17
# (50 us at k 3,584; scripts/gemm_lookup_compare.py).
SERIAL_K_MIN_K = 1024
SERIAL_K_TILE = 64


def serial_k_call(b, m, k, n, sms):
    """Whether a bmm call of batch ``b`` and ``m x k @ k x n`` runs its reductions serially in
    one wave (:data:`SERIAL_K_MIN_K`)."""
    tiles = b * math.ceil(m / SERIAL_K_TILE) * math.ceil(n / SERIAL_K_TILE)
    return b >= 2 and k >= SERIAL_K_MIN_K and tiles <= sms
MATMUL_FORM_WEIGHT = 0.5
MATMUL_TILE_WEIGHT = 0.1
_ROW_MATMUL = re.compile(r"^(?:(attn|net|vocab) (\w+) )?b(\d+) m(\d+) k(\d+) n(\d+)")


def pow2_align(values, cap=8):
    """The largest power of two up to ``cap`` dividing every one of ``values``: the vector
    width, in elements, that leading dimensions and offsets of ``values`` allow.

    >>> pow2_align((393, 96)), pow2_align((196, 96)), pow2_align((768, 3072))
    (1, 4, 8)
    """
    a = cap
    while a > 1 and any(v % a for v in values):
        a //= 2
    return a


def _split_matmul_cls(family, cls):
    """A matmul call's lookup class, its operands' alignment and its dimensions
    (``":al2@b1m64k32n8"`` -> ``("", 2, (1, 64, 32, 8))``, :func:`matmul_lookup_class`);
    other families' classes as they are, with None and None."""
    if family not in MATMUL_FAMILIES:
        return cls, None, None
    cls, _, shape = (cls or "").partition("@")
    shape = _MATMUL_SHAPE.fullmatch(shape)
    shape = ((tuple(int(v) for v in shape.groups()[:4]), shape.group(5) or None) if shape
             else None)
    if ":al" not in cls:
        return cls, None, shape
    base, _, al = cls.partition(":al")
    return base, int(al) if al.isdigit() else None, shape


_MATMUL_SHAPE = re.compile(r"b(\d+)m(\d+)k(\d+)n(\d+)([nt]{2})?")


def matmul_dims(sig):
    """``(batch, m, k, n)`` of a recorded ``mm``/``addmm``/``bmm``/``baddbmm`` signature (the
    product ``[b,] m x k`` by ``[b,] k x n``), or None when it has no two matrix operands.

    >>> matmul_dims("addmm float32[3072] float32[1576, 768] float32[768, 3072]")
    (1, 1576, 768, 3072)
    >>> matmul_dims("bmm bfloat16[64, 197, 64] bfloat16[64, 64, 197]")
    (64, 197, 64, 197)
    """
    mats = [[int(v) for v in shape.split(",") if v.strip()]
            for _, shape in _TENSOR.findall(sig)]
    mats = [s for s in mats if len(s) >= 2]
    if len(mats) < 2:
        return None
    (a, b) = mats[-2:]
    return (math.prod(a[:-2]) or 1, a[-2], a[-1], b[-1])


#: the prefix of a recorded fp32 matmul's layout when ``torch.get_float32_matmul_precision()``
#: let cuBLAS run it on TF32 tensor cores (``high``, ``medium``:
#: :func:`snsim.torchsim.record.matmul_math`); such a call reads the table's ``tf32`` rows
TF32_PREFIX = "tf32:"


def matmul_lookup_class(sig, layout=""):
    """The class a recorded matmul is looked up by: :func:`matmul_class`, for an unaligned
    call whose recording says how far (:func:`matmul_align`) the vector width after ``:al``,
    and after ``@`` its batch, m, k and n (:func:`matmul_dims`) and, where the recording
    says, its operands' form (:func:`snsim.torchsim.record.matmul_layout`), which the lookup
    weighs as distances (:data:`MATMUL_ALIGN_WEIGHT`, :data:`MATMUL_SHAPE_WEIGHT`,
    :data:`MATMUL_FORM_WEIGHT`).

    >>> matmul_lookup_class("bmm bfloat16[64, 1569, 393] bfloat16[64, 393, 96]", "unaligned:1")
    ':al1@b64m1569k393n96'
    >>> matmul_lookup_class("mm bfloat16[64, 32] bfloat16[32, 16]", "aligned/nt")
    'a8@b1m64k32n16nt'
    """
    cls, align = matmul_class(sig, layout), matmul_align(layout)
    cls = cls if align is None else f"{cls}:al{align}"
    dims = matmul_dims(sig)
    if dims is None or 0 in dims:     # an empty product: no shape to place
        return cls
    return cls + "@b{}m{}k{}n{}".format(*dims) + (layout or "").partition("/")[2]


def matmul_tile_align(m, n):
    """The largest power of two up to 128 dividing both output dimensions of a GEMM: how
    evenly cuBLAS's 64- to 256-wide tiles can cover its output, which picks its kernel more
    than the rows a ragged tile wastes (ViT-B/16 b64's 12608-row FP32 Linears, 98.5 tiles
    of 128, ran at 36 TFLOP/s; 12288 and 16384 rows at 50). The lookup weighs the
    difference of its log2 as a distance (:data:`MATMUL_TILE_WEIGHT`).

    >>> matmul_tile_align(12608, 768), matmul_tile_align(12288, 768), matmul_tile_align(197, 64)
    (64, 128, 1)
    """
    return pow2_align((m, n), cap=128)


def linear_gemm_classes(rows, d_in, d_out):
    """Lookup classes (:func:`matmul_lookup_class`) of a Linear's three GEMMs over ``rows``
    tokens from ``d_in`` to ``d_out`` features, as a recorded step's calls get them: the
    forward ``x[rows, in] @ W.t()`` (``nt``), the input gradient ``dy @ W`` (``nn``) and the
    weight gradient ``dy.t() @ x`` (``tn``); every leading dimension is ``d_in`` or ``d_out``.

    >>> linear_gemm_classes(1576, 768, 3072)
    ('a8@b1m1576k768n3072nt', 'a8@b1m1576k3072n768nn', 'a8@b1m3072k1576n768tn')
    """
    al = pow2_align((d_in, d_out))
    lay = "aligned" if al == 8 else f"unaligned:{al}"
    f = "float32[{}, {}]".format
    return (matmul_lookup_class(f"addmm float32[{d_out}] {f(rows, d_in)} {f(d_in, d_out)}",
                                lay + "/nt"),
            matmul_lookup_class(f"mm {f(rows, d_out)} {f(d_out, d_in)}", lay + "/nn"),
            matmul_lookup_class(f"mm {f(d_out, rows)} {f(rows, d_in)}", lay + "/tn"))


def matmul_align(layout):
    """Elements per vector an unaligned matmul's operands allow (1, 2 or 4), from the
    recorder's layout (``"unaligned:2"``: :func:`snsim.torchsim.record.matmul_layout`); None
    for an aligned call or a recording that did not say.

    >>> matmul_align("unaligned:2"), matmul_align("aligned"), matmul_align("unaligned")
    (2, None, None)
    """
    head, _, n = (layout or "").partition("/")[0].partition(":")
    return int(n) if head == "unaligned" and n.isdigit() else None


def row_matmul_align(shape, cls=""):
    """Elements per vector a calibrate matmul row's operands allow (:func:`matmul_align`;
    8 for an aligned row), from its ``shape``: calibrate's operands are contiguous or
    transposed views of contiguous tensors, so the leading dimensions are k and n (a random
    or a Linear's forward and input-gradient GEMM, an attention's ``qk``, ``av``, ``dattn``,
    ``dq``), or m and n (a weight gradient, ``wgrad``; an attention's ``dv`` and ``dk``, whose
    first operand is a transposed view); None when the shape does not say.

    >>> row_matmul_align("attn av b64 m1569 k393 n96"), row_matmul_align("attn dk b8 m96 k50 n196")
    (1, 4)
    >>> row_matmul_align("net wgrad b1 m768 k1576 n3072", "a8"), row_matmul_align("b3 m5 k10 n6")
    (8, 2)
    """
    if cls == "a8":
        return 8
    m = _ROW_MATMUL.match(shape or "")
    if not m:
        return None
    form, mm, k, n = m.group(2), int(m.group(4)), int(m.group(5)), int(m.group(6))
    return pow2_align((mm, n) if form in ("wgrad", "dv", "dk") else (k, n))


# the operand forms of calibrate's matmul rows (:func:`snsim.torchsim.record.matmul_layout`):
# a Linear's forward reads its weight transposed, its weight gradient ``dy`` transposed; an
# attention's q @ k^T and dout @ v^T the second, attn^T @ dout and dattn^T @ q the first
_ROW_FORMS = {"fwd": "nt", "dgrad": "nn", "wgrad": "tn", "qk": "nt", "av": "nn",
              "dattn": "nt", "dv": "tn", "dq": "nn", "dk": "tn"}


def row_matmul_form(family, shape):
    """The operand form (``nn``, ``nt``, ``tn``) of a calibrate matmul row of ``family``
    from its ``shape``: a network row's by its name, a random row's by its trailing form
    (``b1 m5 k10 n6 nt``); before tables wrote that, a random ``addmm`` row read ``nt`` and
    a ``bmm`` row ``nn``, and an ``mm`` row either (``""``: unknown).

    >>> row_matmul_form("mm", "net fwd b1 m1576 k768 n3072"), row_matmul_form("bmm", "b3 m5 k10 n6")
    ('nt', 'nn')
    >>> row_matmul_form("mm", "b1 m5 k10 n6"), row_matmul_form("mm", "b1 m5 k10 n6 nt")
    ('', 'nt')
    """
    m = _ROW_MATMUL.match(shape or "")
    if not m:
        return ""
    if m.group(2):
        return _ROW_FORMS.get(m.group(2), "")
    tail = (shape or "")[m.end():].split()
    if tail and tail[0] in ("nn", "nt", "tn", "tt"):
        return tail[0]
    return {"addmm": "nt", "bmm": "nn"}.get(family, "")


# advanced indexing (``t[idx]``: a relative position bias table read by a window's
# position-pair index): the gather, and its backward's ``index_put`` with accumulate, which
# sorts the indices and sums each run, its time set by the indices more than the bytes (Swin3D's
# 2535 x 12 table at 153,664 indices: 94 us forward, 130 us backward on the H200,
# traces/h200/profile_s19; 2-4 us by the bandwidth proxy). Class ``acc`` for an accumulating
# index_put (:func:`index_class`)
INDEX_FAMILIES = frozenset({"index", "index_put"})


# torch 2.11's index (gather) takes vectorized_gather_kernel<16> when each gathered slice is a
# whole number of 16-byte vectors: one block per index, which a small slice leaves idle
GATHER_VECTOR_BYTES = 16


def index_class(sig):
    """``"acc"`` for an ``index_put`` that accumulates (its first boolean argument: autograd's
    backward of a gather), else ``""``; for an ``index`` (a gather), ``"vec16"`` where CUDA
    runs ``vectorized_gather_kernel<16>`` (aten/src/ATen/native/cuda/IndexKernel.cu,
    ``fast_gather_kernel_eligible``: one index tensor on the first dim, each gathered slice a
    multiple of 16 bytes), else ``""`` (TensorIterator's ``index_elementwise_kernel``). The
    vectorized kernel takes one block per index: Swin3D's relative-position bias, 153,664
    indices into a [2535, heads] fp32 table, ran 94 us at 12 and 24 heads (48 and 96-byte
    slices) and 8.6 us at 6 heads (24 bytes) on the H200 (traces/h200/profile_s19), as
    calibrate's index rows of those shapes did.

    >>> index_class("index_put float32[2535, 12] int64[153664] float32[153664, 12] True")
    'acc'
    >>> index_class("index float32[2535, 12] int64[153664]"), index_class(
    ...     "index float32[2535, 6] int64[153664]"), index_class("index bfloat16[2535, 12] int64[9]")
    ('vec16', '', '')
    >>> index_class("index float32[8, 2535, 12] None int64[153664]")   # not the first dim
    ''
    """
    sig = sig or ""
    if sig.startswith(("index_put", "_index_put_impl_")):
        bools = [t for t in sig.split() if t in ("True", "False")]
        return "acc" if bools and bools[0] == "True" else ""
    tensors = _gather_tensors(sig)
    if len(tensors) != 2 or tensors[1][0] not in ("int64", "int32") or " None " in f" {sig} ":
        return ""
    dtype, dims = tensors[0]
    return "vec16" if len(dims) >= 2 and _vector_slice(math.prod(dims[1:]), dtype) else ""


def index_count(sig):
    """How many indices a recorded gather (``index``) reads: its index tensor's elements,
    which set the vectorized kernel's blocks (:func:`index_class`); 0 when the signature does
    not say. A calibrate row's is its ``n`` (:func:`index_row`); the lookup reads it where
    other families read their tensor count.

    >>> index_count("index float32[2535, 12] int64[153664]"), index_count("")
    (153664, 0)
    """
    tensors = _gather_tensors(sig)
    return math.prod(tensors[1][1]) if len(tensors) >= 2 else 0


def _gather_tensors(sig):
    """The tensors ``(dtype, dims)`` of a recorded gather's signature (the input, then the
    indices); ``[]`` for another op's."""
    if not (sig or "").startswith("index "):
        return []
    return [(dt, [int(v) for v in dims.split(",") if v.strip()])
            for dt, dims in _TENSOR.findall(sig.split(" ", 1)[1])]


def _vector_slice(numel, dtype):
    """Whether a gathered slice of ``numel`` elements of ``dtype`` is whole 16-byte vectors."""
    return numel * ELEMENT_BYTES.get(dtype, 4) % GATHER_VECTOR_BYTES == 0


_INDEX_ROW = re.compile(r"index n(\d+) rows\d+ cols(\d+)")


def index_row(shape, dtype):
    """``(index count, class)`` of a calibrate ``index`` row (``index n<N> rows<R> cols<C>``:
    N indices into an [R, C] table), as :func:`index_count` and :func:`index_class` give them
    for a call; ``(0, "")`` for other rows."""
    m = _INDEX_ROW.match(str(shape))
    if not m:
        return 0, ""
    return int(m.group(1)), "vec16" if _vector_slice(int(m.group(2)), dtype) else ""


BN_FAMILIES = frozenset({"native_batch_norm", "native_batch_norm_backward"})
# a convolution's bias, timed apart from it (``snsim calibrate --only convbias``): the
# broadcast add after cuDNN's convolution and the grad_bias reduction, on NCHW outputs and
# (``_cl``) channels-last ones; read like batch norm, by bytes, channels and map size
BIAS_FAMILIES = ("conv_bias_add", "conv_bias_grad", "conv_bias_add_cl", "conv_bias_grad_cl")
# a table without them (made before the group, or none: the preset's roofline) charges each
# as the elementwise op it is, by bytes
BIAS_FALLBACK = {"conv_bias_add": "add_", "conv_bias_grad": "sum",
                 "conv_bias_add_cl": "add_", "conv_bias_grad_cl": "sum"}
# row-wise normalizations and reductions, read by their two dims: layer norm over the last
# ``D`` elements of ``R`` rows (ATen's kernel takes a block per row: ConvNeXt's D = 96 on
# 200k rows ran at 490 GB/s in fp32 on the H200, GPT-2's D = 768 at 1.8 TB/s,
# traces/h200/profile), and ``sum_rows``, a sum over the leading (slowest-varying) dims
# that keeps the innermost ``D`` -- a Linear's grad_bias, a channels-last tensor summed over
# all but its channels -- whose reduce kernel splits the rows across blocks (``[50176, 192]``
# at 0.4 TB/s, ``[200704, 384]`` at 2.3 TB/s). Their class is ``d<D>r<R>`` (:func:`ln_class`,
# :func:`sum_rows_class`); a table without ``sum_rows`` times those sums as ``sum``
ROW_FAMILIES = frozenset({"native_layer_norm", "native_layer_norm_backward", "sum_rows"})
SHAPE_FAMILIES = BN_FAMILIES | frozenset(BIAS_FAMILIES) | ROW_FAMILIES
# a shape class's two dims: ``c<C>hw<H*W>`` (batch norm, a conv bias) or ``d<D>r<R>``
_SHAPE_CLS = re.compile(r"^(?:c(\d+)hw|d(\d+)r)(\d+)$")
BN_SHAPE_WEIGHT = 1.0    # squared distance per (e-fold in channels)^2 and (e-fold in H*W)^2
BN_MAP_WEIGHT = 0.25     # a batch norm's: per (e-fold in H*W)^2 at equal channels and N x H*W


def bn_class(sig):
    """Shape class of a recorded batch-norm signature: ``c<channels>hw<H*W>`` (its first
    tensor, the input or grad_output, is ``[N, C, *spatial]``), as ``snsim calibrate`` names
    its BN rows; ``""`` when the signature has no such tensor.

    Examples
    --------
    >>> bn_class("native_batch_norm float32[8, 64, 112, 112] float32[64] float32[64] "
    ...          "float32[64] float32[64] True 0.1 1e-05")
    'c64hw12544'
    """
    t = sig_tensor(sig)
    if not t or len(t[1]) < 2:
        return ""
    dims = t[1]
    return f"c{dims[1]}hw{math.prod(dims[2:])}"


def _sig_tensor_ints(sig, skip=0):
    """The dims of the first tensor of signature ``sig`` and the bare integers that follow
    its ``skip + 1``-th tensor up to the next non-integer token (a list argument, as
    :func:`snsim.torchsim.record.signature` flattens it); None without such a tensor."""
    seen, dims, ints = 0, None, []
    for tok in re.findall(r"\w+\[[\d, ]*\]|\S+", sig or "")[1:]:
        m = _TENSOR.fullmatch(tok)
        if seen == skip + 1:           # after that tensor: its run of integers
            if m or not re.fullmatch(r"-?\d+", tok):
                break
            ints.append(int(tok))
        elif m:
            dims = dims or [int(v) for v in m.group(2).split(",") if v.strip()]
            seen += 1
    return (dims, ints) if dims is not None else None


# pooling, read by its window and stride (class ``k<kh>x<kw>s<stride>``: :func:`pool_class`):
# a 3x3 window at stride 1 (Inception's and GoogLeNet's branch pools) reads each input nine
# times where a 2x2 at stride 2 reads it once, at the same bytes (Inception-v3 b128's pools
# 9.3 ms predicted by bytes from 3x3/2 and 2x2/2 rows, 16.2 measured: traces/h200/profile_s15)
POOL2D_FAMILIES = frozenset({"max_pool2d_with_indices", "max_pool2d_with_indices_backward",
                             "avg_pool2d", "avg_pool2d_backward"})
# a video model's (S3D's stem and branch pools, MViT's pool skip): ATen's own kernels, whose
# backward scatters per window (traces/h200/profile_s19: S3D b16 bf16's 8.3 ms of max-pool
# backward, 0.67 ms priced by bytes from the 2-D rows' proxy)
POOL3D_FAMILIES = frozenset({"max_pool3d_with_indices", "max_pool3d_with_indices_backward",
                             "avg_pool3d", "avg_pool3d_backward"})
POOL_FAMILIES = POOL2D_FAMILIES | POOL3D_FAMILIES
# families newer than some tables -> what a table without them reads instead, and whether
# the call's class carries over: sum_rows as a plain sum (tables before 2026-12-02 08:30), an
# average pool's backward as the max pool's (before 09:00), cuDNN's attention as flash's
NEW_FAMILY_FALLBACK = {"sum_rows": ("sum", False),
                       "avg_pool2d_backward": ("max_pool2d_with_indices_backward", True),
                       "sdpa_cudnn": ("sdpa_flash", True),
                       "sdpa_cudnn_backward": ("sdpa_flash_backward", True),
                       # no table has roll rows yet: its kernel (roll_cuda_kernel, one element
                       # per thread at an index computed per element) is read as the nearest
                       # one timed, the strided copy's indexing kernel (see roll_passes)
                       "roll": ("clone_strided", False)}


def roll_passes(sig):
    """Kernel passes a recorded ``roll`` makes on CUDA, from its signature's integers (the
    shifts, then the dims): ATen's ``roll_common`` (aten/src/ATen/native/
    TensorTransformations.h) rolls the first dim and calls ``roll`` again on the result for
    the rest, so ``torch.roll(x, (-4, -3, -3), (1, 2, 3))`` (Swin3D's shifted windows) is three
    ``roll_cuda_kernel`` passes, each reading and writing the whole tensor; a roll without
    dims flattens and rolls once. 1 for a signature without integers (a recording made before
    roll kept one).

    In the H200 profiles every multi-dim roll takes its passes' time: Swin's 2-dim rolls and
    Swin3D's 3-dim ones ran 1.5-1.8 TB/s per pass counting each pass's read and write
    (traces/h200/profile_s19, profile_s20, profile_s28, profile_s30).

    Examples
    --------
    >>> roll_passes("roll float32[4, 8, 56, 56, 96] -4 -3 -3 1 2 3")
    3
    >>> roll_passes("roll bfloat16[32, 56, 56, 96] 3 3 1 2"), roll_passes("roll float32[10] 2")
    (2, 1)
    >>> roll_passes("")
    1
    """
    got = _sig_tensor_ints(sig)
    return max(1, len(got[1]) // 2) if got else 1


def table_family(table, family, cls):
    """``(family, cls)`` as ``table`` can answer a call: a family it lacks read as its
    :data:`NEW_FAMILY_FALLBACK`; the one rule for recorded calls (:func:`snsim.torchsim.
    opcost._lookup_args`) and the zoo (:func:`snsim.costs.table_layer_times`)."""
    if family not in NEW_FAMILY_FALLBACK or family in table.families():
        return family, cls
    fallback, keep_cls = NEW_FAMILY_FALLBACK[family]
    return fallback, (cls if keep_cls else "")


def pool_class(sig):
    """Shape class ``k<kh>x<kw>s<stride>`` of a recorded pooling call (its window and its
    stride along H; a stride left out is the window's); ``""`` without them.

    Examples
    --------
    >>> pool_class("avg_pool2d float32[128, 192, 35, 35] 3 3 1 1 1 1")
    'k3x3s1'
    >>> pool_class("max_pool2d_with_indices_backward float32[2, 8, 9, 9] float32[2, 8, 17, 17] "
    ...            "3 3 2 2 1 1 1 1 False int64[2, 8, 9, 9]")
    'k3x3s2'

    A 3-D pool names its three window sides and its strides where they differ (as
    :func:`conv_class` a 3-D convolution):

    >>> pool_class("max_pool3d_with_indices bfloat16[16, 64, 32, 112, 112] 1 3 3 1 2 2 0 1 1 "
    ...            "1 1 1 False")
    'k1x3x3s1x2x2'
    """
    name = (sig or "").split(" ", 1)[0]
    got = _sig_tensor_ints(sig, skip=1 if name.endswith("_backward") else 0)
    if not got or len(got[1]) < 2:
        return ""
    dims, ints = got
    if len(dims) == 5:       # a 3-D pool: its three window sides, its strides where they differ
        if len(ints) < 3:
            return ""
        win = ints[:3]
        stride = ints[3:6] if len(ints) >= 6 else win
        st = str(stride[0]) if len(set(stride)) == 1 else "x".join(map(str, stride))
        return f"k{'x'.join(map(str, win))}s{st}"
    stride = ints[2] if len(ints) >= 4 else ints[0]
    return f"k{ints[0]}x{ints[1]}s{stride}"


def ln_class(sig):
    """Shape class ``d<D>r<R>`` of a recorded layer-norm call (``native_layer_norm`` or its
    backward): ``D`` the elements normalized together (the product of ``normalized_shape``),
    ``R`` the rows; ``""`` for another op (group norm) or a signature without them.

    Examples
    --------
    >>> ln_class("native_layer_norm float32[64, 56, 56, 96] 96 float32[96] float32[96] 1e-06")
    'd96r200704'
    >>> ln_class("native_layer_norm_backward float32[8, 197, 768] float32[8, 197, 768] 768 "
    ...          "float32[8, 197, 1] float32[8, 197, 1] float32[768] float32[768] True True True")
    'd768r1576'
    """
    name = (sig or "").split(" ", 1)[0]
    if name not in ("native_layer_norm", "native_layer_norm_backward", "layer_norm"):
        return ""
    got = _sig_tensor_ints(sig, skip=1 if name.endswith("_backward") else 0)
    if not got or not got[1] or min(got[1]) < 1:
        return ""
    dims, norm = got
    d, n = math.prod(norm), math.prod(dims)
    return f"d{d}r{n // d}" if d and n % d == 0 else ""


def sum_rows_class(sig):
    """Shape class ``d<D>r<R>`` of a recorded ``sum`` over some dims of its input: ``D`` the
    elements kept (the dims not summed), ``R`` those summed into each; ``""`` for a sum of
    every element or a signature without its dims. Which dims are innermost in memory is the
    recorder's ``rows`` layout (:func:`snsim.torchsim.record.reduction_layout`).

    Examples
    --------
    >>> sum_rows_class("sum float32[12544, 1536] 0 True")
    'd1536r12544'
    >>> sum_rows_class("sum float32[64, 96, 56, 56] 0 2 3 True")
    'd96r200704'
    """
    got = _sig_tensor_ints(sig)
    if not got or not got[1]:
        return ""
    dims, red = got
    red = {r % len(dims) for r in red} if dims else set()
    kept = math.prod(v for i, v in enumerate(dims) if i not in red)
    n = math.prod(dims)
    if not red or len(red) == len(dims) or not kept:
        return ""
    return f"d{kept}r{n // kept}"


def _conv_dims(sig):
    """(input, weight, output sizes, groups, transposed, output mask) of a recorded
    ``convolution`` / ``convolution_backward`` signature (output: grad_output's for the
    backward); None when it cannot be read."""
    tensors = [[int(v) for v in s.split(",") if v.strip()] for _, s in _TENSOR.findall(sig)]
    toks = [t for t in _TENSOR.sub("", sig).split()[1:] if t != "None"]
    backward = sig.startswith("convolution_backward")
    if len(tensors) < (3 if backward else 2):
        return None
    x, w = (tensors[1], tensors[2]) if backward else (tensors[0], tensors[1])
    k = len(x) - 2
    if k < 1 or len(w) != len(x):
        return None
    tail = toks[len(toks) - (4 * k + 2 + (3 if backward else 0)):]
    try:
        s, p, d = ([int(v) for v in tail[i * k:(i + 1) * k]] for i in range(3))
        transposed = tail[3 * k] == "True"
        op = [int(v) for v in tail[3 * k + 1:4 * k + 1]]
        groups = int(tail[4 * k + 1])
    except (ValueError, IndexError):
        return None
    mask = [v == "True" for v in tail[4 * k + 2:]]
    if backward:
        return x, w, tensors[0], groups, transposed, mask
    if transposed:
        spatial = [(x[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (w[2 + i] - 1) + op[i] + 1
                   for i in range(k)]
        co = w[1] * groups
    else:
        spatial = [(x[2 + i] + 2 * p[i] - d[i] * (w[2 + i] - 1) - 1) // s[i] + 1
                   for i in range(k)]
        co = w[0]
    return x, w, [x[0], co, *spatial], groups, transposed, mask


def conv_flops(x, w, out, transposed=False, mask=None):
    """FLOPs of a convolution call, two per multiply-add: the forward's ``2 * N * C_out *
    H_out * W_out * (C_in / groups) * kh * kw`` (``mask`` None), a backward's that many for
    each of grad_input and grad_weight its ``mask`` asks for (each is one convolution of the
    same multiply-adds). torch's formula (``torch.utils.flop_counter``), which the recorder
    and calibrate store, counts a backward's grad_weight as a dense convolution (x the group
    count: 960x for a 960-channel depthwise layer, whose time is its bytes') and a strided
    backward's grad_input over the input map (x stride^2); the table's distances and reference
    roofline read this count instead.

    Examples
    --------
    >>> conv_flops([8, 96, 56, 56], [96, 1, 7, 7], [8, 96, 56, 56])        # depthwise 7x7
    236027904
    >>> conv_flops([8, 96, 56, 56], [96, 1, 7, 7], [8, 96, 56, 56], mask=[True, True, False])
    472055808
    """
    per = math.prod(x if transposed else out) * w[1] * math.prod(w[2:]) * 2
    return per if mask is None else per * (bool(mask[0]) + bool(mask[1]))


def call_conv_flops(sig):
    """:func:`conv_flops` of a recorded ``convolution`` / ``convolution_backward`` signature;
    None when it cannot be read."""
    dims = _conv_dims(sig or "")
    if dims is None:
        return None
    x, w, out, _, transposed, mask = dims
    return conv_flops(x, w, out, transposed,
                      mask if sig.startswith("convolution_backward") else None)


# F.interpolate's backward kernels (ATen's upsample_bilinear2d_backward_out_frame, one thread
# per grad_output element adding into grad_input with atomics; the nearest kernel sums each
# input's window in one thread): the time follows how many outputs land on one input element,
# not bytes. A DeepLabV3 ASPP pooling branch's 1x1 -> 60x60 upsample of 8 x 256 channels took
# 13.5 ms of backward on the H200 for 29 MB (traces/h200/profile_heldout11), calibrate's 8x
# upsample of 8 x 21 x 60 x 60 1.6 ms for 157 MB. Their work feature ("flops" in the table)
# is grad_output's elements times the outputs per input element.
UPSAMPLE_BACKWARD_FAMILIES = frozenset({"upsample_bilinear2d_backward",
                                        "upsample_nearest2d_backward"})
_ROW_UPSAMPLE = re.compile(r"x\[(\d+), (\d+), (\d+), (\d+)\] x(\d+)")


def upsample_backward_work(out_numel, in_numel):
    """The table's work feature of an upsample backward call: grad_output's ``out_numel``
    elements times the outputs per input element (``out_numel / in_numel``).

    >>> upsample_backward_work(8 * 256 * 60 * 60, 8 * 256)   # ASPP pooling: 1x1 -> 60x60
    26542080000
    """
    return int(out_numel * out_numel // in_numel) if in_numel else 0


def call_upsample_work(sig):
    """:func:`upsample_backward_work` of a recorded ``upsample_*2d_backward`` signature
    (``name dtype[grad_output shape] Ho Wo N C Hi Wi ...``); None when it cannot be read.

    >>> call_upsample_work("upsample_bilinear2d_backward float32[8, 256, 60, 60] 60 60 8 256 "
    ...                    "1 1 False None None")
    26542080000
    """
    m = _TENSOR.search(sig or "")
    if not m or sig.split(" ", 1)[0] not in UPSAMPLE_BACKWARD_FAMILIES:
        return None
    grad = [int(v) for v in m.group(2).split(",")] if m.group(2).strip() else []
    ints = [int(v) for v in sig[m.end():].split() if v.isdigit()]
    if len(grad) != 4 or len(ints) < 6:
        return None
    return upsample_backward_work(math.prod(grad), math.prod(ints[2:6]))


def row_upsample_work(shape):
    """:func:`upsample_backward_work` of a calibrate upsample row from its ``shape``
    (``upsample <mode> x[N, C, H, W] x<scale>``); None when the shape does not say.

    >>> row_upsample_work("upsample bilinear x[16, 21, 60, 60] x8")   # 16 x 21 x 480 x 480 x 64
    4954521600
    """
    m = _ROW_UPSAMPLE.search(shape or "")
    if not m:
        return None
    n, c, h, w, s = (int(v) for v in m.groups())
    return upsample_backward_work(n * c * h * w * s * s, n * c * h * w)


_ROW_CONV = re.compile(r"x\[([\d, ]+)\] w\[([\d, ]+)\] s(?:\[([\d, ]+)\]|(\d+))"
                       r"(?: p\[([\d, ]+)\])?(?: d\[([\d, ]+)\])?")
_ROW_MASK = re.compile(r"mask\[(\w+), (\w+), (\w+)\]")


def row_conv_dims(shape):
    """``(x, w, stride, padding, dilation)`` of a calibrate convolution row's ``shape``, as
    lists of ints, for 1-, 2- or 3-D convolutions: ``x[N, C, *spatial] w[Co, C/g, *kernel]``
    then the stride (``s2``, one for every spatial dim, or ``s[1, 2, 2]``), the padding
    (``p[...]``; none written: calibrate's default ``k // 2``) and the dilation (``d[...]``;
    default 1); None when the shape does not say.

    >>> row_conv_dims("net3d mvit_v2_s x[4, 96, 8, 14, 14] w[96, 1, 3, 3, 3] s[1, 2, 2] "
    ...               "p[1, 1, 1] g96 bias0")
    ([4, 96, 8, 14, 14], [96, 1, 3, 3, 3], [1, 2, 2], [1, 1, 1], [1, 1, 1])
    >>> row_conv_dims("x[32, 64, 56, 56] w[64, 64, 3, 3] s2 g1")[2:]
    ([2, 2], [1, 1], [1, 1])
    """
    m = _ROW_CONV.search(shape or "")
    if not m:
        return None
    x, w = ([int(v) for v in m.group(i).split(",")] for i in (1, 2))
    k = len(x) - 2
    if k < 1 or len(w) != len(x):
        return None
    stride = ([int(v) for v in m.group(3).split(",")] if m.group(3)
              else [int(m.group(4))] * k)
    pad = [int(v) for v in m.group(5).split(",")] if m.group(5) else [kk // 2 for kk in w[2:]]
    dil = [int(v) for v in m.group(6).split(",")] if m.group(6) else [1] * k
    if not len(stride) == len(pad) == len(dil) == k:
        return None
    return x, w, stride, pad, dil


def row_conv_flops(shape, backward):
    """:func:`conv_flops` of a calibrate convolution row from its ``shape``
    (:func:`row_conv_dims`; no mask written: grad_input unless C is 3, and grad_weight), the
    count a recorded call gets (:func:`call_conv_flops`), so rows and calls are compared on
    one formula; None when the shape does not say.

    >>> row_conv_flops("grouped x[32, 96, 56, 56] w[96, 1, 7, 7] s1 p[3, 3] g96 bias0 "
    ...                "mask[True, True, False]", True)   # 2 x the forward's 944111616
    1888223232
    >>> row_conv_flops("net3d mvit_v2_s x[4, 96, 8, 14, 14] w[96, 1, 3, 3, 3] s[1, 2, 2] "
    ...                "p[1, 1, 1] g96 bias0 mask[True, True, False]", True)  # 2 x 4*96*8*7*7*27*2
    16257024
    """
    dims = row_conv_dims(shape)
    if dims is None:
        return None
    x, w, s, p, d = dims
    out = [x[0], w[0], *((x[2 + i] + 2 * p[i] - d[i] * (w[2 + i] - 1) - 1) // s[i] + 1
                         for i in range(len(s)))]
    mask = None
    if backward:
        mm = _ROW_MASK.search(shape)
        mask = [v == "True" for v in mm.groups()] if mm else [x[1] != 3, True, False]
    return conv_flops(x, w, out, mask=mask)


def conv_bias_calls(sig, layout=""):
    """The kernels ATen runs for a recorded convolution call's bias besides the convolution
    itself, as ``(family, bytes, class, dtype)`` (:data:`BIAS_FAMILIES`):

    * forward, with a bias tensor: ``output.add_(bias.reshape(1, C, 1, 1))`` after cuDNN's
      convolution (``_convolution``, aten/src/ATen/native/Convolution.cpp: cuDNN takes no
      bias), the output read and written and the bias read -- but not for a depthwise
      convolution (``groups == C_in``, not transposed) on NCHW tensors, whose ATen kernel
      (``_conv_depthwise2d``/``conv_depthwise3d``) adds the bias as it writes (fp16 inputs
      of some shapes go to cuDNN's depthwise engine instead, ``use_cudnn_depthwise``: not
      modelled, as in :mod:`snsim.torchsim.hidden`); a channels-last one (``layout``, the
      recorder's :func:`snsim.torchsim.record.conv_layout`) always runs in cuDNN, and its
      bias is the separate add;
    * backward, when its output mask asks for grad_bias (third entry): ``grad_output.sum(
      {0, 2, 3})``, which ``convolution_backward`` computes outside every CUDA backend;
      grad_output read, grad_bias written.

    The kernels of a ``channels_last`` call are the ``_cl`` families: cuDNN returns an
    output in its input's layout.

    Examples
    --------
    >>> conv_bias_calls("convolution bfloat16[256, 3, 224, 224] bfloat16[64, 3, 11, 11] "
    ...                 "bfloat16[64] 4 4 2 2 1 1 False 0 0 1")   # AlexNet's first conv: 55x55
    [('conv_bias_add', 198246528, 'c64hw3025', 'bfloat16')]
    >>> conv_bias_calls("convolution_backward float32[8, 96, 56, 56] float32[8, 96, 56, 56] "
    ...                 "float32[96, 1, 7, 7] 96 1 1 3 3 1 1 False 0 0 96 True True True")
    [('conv_bias_grad', 9634176, 'c96hw3136', 'float32')]
    >>> conv_bias_calls("convolution float32[8, 96, 56, 56] float32[96, 1, 7, 7] "
    ...                 "float32[96] 1 1 3 3 1 1 False 0 0 96")   # depthwise: in the kernel
    []
    >>> conv_bias_calls("convolution float32[8, 96, 56, 56] float32[96, 1, 7, 7] "
    ...                 "float32[96] 1 1 3 3 1 1 False 0 0 96", "channels_last")  # cuDNN's
    [('conv_bias_add_cl', 19267968, 'c96hw3136', 'float32')]
    """
    dims = _conv_dims(sig or "")
    if dims is None:
        return []
    x, w, out, groups, transposed, mask = dims
    backward = sig.startswith("convolution_backward")
    bias = mask[2:3] == [True] if backward else len(_TENSOR.findall(sig)) >= 3
    return bias_calls(out, x[1], groups, bias, backward=backward, transposed=transposed,
                      dtype=sig_dtype(sig), layout=layout)


def bias_calls(out_shape, in_channels, groups, bias, *, backward, transposed=False,
               dtype="float32", layout=""):
    """:func:`conv_bias_calls` of a convolution given by its output shape (grad_output's in
    backward), input channels, groups and whether it has a bias (backward: whether its mask
    asks for grad_bias): the zoo's layers name them so.

    Examples
    --------
    >>> bias_calls((8, 64, 55, 55), 3, 1, True, backward=True)
    [('conv_bias_grad', 6195456, 'c64hw3025', 'float32')]
    """
    if not bias:
        return []
    el = ELEMENT_BYTES.get(dtype, 4)
    numel, c = math.prod(out_shape), out_shape[1]
    cls = f"c{c}hw{math.prod(out_shape[2:])}"
    cl = "_cl" if layout == "channels_last" else ""
    if backward:
        return [("conv_bias_grad" + cl, (numel + c) * el, cls, dtype)]
    if not cl and not transposed and groups > 1 and groups == in_channels:
        return []
    return [("conv_bias_add" + cl, (2 * numel + c) * el, cls, dtype)]


def bias_time_s(table, family, nbytes, cls, dtype):
    """GPU time of one of a convolution's bias kernels (:func:`bias_calls`) from ``table``:
    its ``conv_bias_add`` / ``conv_bias_grad`` rows (``snsim calibrate --only convbias``) by
    bytes, channels and map size; a table without them (made before that group) charges it as
    the elementwise op it is, ``add_`` / ``sum`` by bytes (:data:`BIAS_FALLBACK`). Returns
    ``(seconds, source)`` as :meth:`KernelTable.time_s`: ``(None, "roofline")`` where the
    table has neither (the caller's roofline)."""
    if family in table.families():
        return table.time_s(family, nbytes=nbytes, cls=cls, dtype=dtype, math_="")
    return table.time_s(BIAS_FALLBACK[family], nbytes=nbytes, dtype=dtype, math_="")


def _bn_feats(classes):
    """(ln C, ln H*W) of each ``c<C>hw<HW>`` class, (ln D, ln R) of each ``d<D>r<R>``; NaN
    where a row has none (an old table)."""
    import numpy as np
    out = np.full((len(classes), 2), np.nan)
    for i, c in enumerate(classes):
        m = _SHAPE_CLS.match(str(c))
        if m:
            out[i] = (math.log(int(m.group(1) or m.group(2))),
                      math.log(max(int(m.group(3)), 1)))
    return out


def sig_tensor(sig):
    """``(dtype, dims)`` of a signature's first tensor; None when it has none.

    >>> sig_tensor("slice_backward bfloat16[8, 4, 1568, 96] 8 4 1569 96 2 1")
    ('bfloat16', [8, 4, 1568, 96])
    """
    m = _TENSOR.search(sig or "")
    return (m.group(1), [int(v) for v in m.group(2).split(",") if v.strip()]) if m else None


def sig_dtype(sig):
    """The dtype of a signature's first tensor (``float32`` when there is none)."""
    t = sig_tensor(sig)
    return t[0] if t else "float32"


EMBEDDING_BACKWARD = "embedding_dense_backward"
_EMBEDDING_ROW = re.compile(r"^v(\d+) d(\d+) n(\d+)$")     # calibrate's shape of its rows


def embedding_backward_call(sig):
    """``(indices, dim, rows, dtype)`` of a recorded ``embedding_dense_backward`` call's
    signature (its gradient, its indices and the table's row count), or None.

    >>> embedding_backward_call("embedding_dense_backward float32[4, 512, 768] "
    ...                         "int64[4, 512] 30522 -1 False")
    (2048, 768, 30522, 'float32')
    """
    if not (sig or "").startswith(EMBEDDING_BACKWARD + " "):
        return None
    tensors = [(d, [int(v) for v in s.split(",") if v.strip()])
               for d, s in _TENSOR.findall(sig)]
    rest = _TENSOR.sub("", sig).split()[1:]
    if len(tensors) < 2 or not tensors[0][1] or not rest or not rest[0].isdigit():
        return None
    (dtype, grad), (_, ids) = tensors[:2]
    return math.prod(ids), grad[-1], int(rest[0]), dtype


_CONV_CLS = re.compile(r"^(dw|g)?(\d*)(k.*)?$")
# squared distance per (e-fold in a grouped convolution's group count)^2: how many groups a
# cuDNN engine runs (some issue kernels per group: host costs of 0.2-2 ms per call at 32 groups
# in TF32 on the H200, 20-130 us dense)
GROUP_COUNT_WEIGHT = 1.0


def _group_prefix(cls):
    # "dw", "g" or "" (dense): another grouping is far (distance 3), another kernel/stride near
    # (1); a class of another family (a matmul's "a8") is its own grouping
    m = _CONV_CLS.match(cls or "")
    return (m.group(1) or "") if m else (cls or "").split("k")[0]


# squared distance per (e-fold in input channels, output channels, input H*W)^2 of a conv
CONV_SHAPE_WEIGHT = 1.0
# squared distance per (e-fold in a grouped convolution's group width, C_in / groups)^2. cuDNN
# picks a grouped convolution's engine by the channels each group holds: in the table's TF32
# stage rows, 16 channels a group run at 15-18 TFLOP/s at 2 to 58 groups, 24 at 1.4 (2-3
# groups) or 14-18 (6-10 groups), 40 at 2.3 whatever the count. Channels and count weighed
# apart put a 64-channel 4-group call (16 a group) as near the 72-channel 3-group rows (24) as
# its own width's: RegNetY-800MF's first grouped conv at b128 was priced 4.76 ms, measured
# 0.43 (traces/h200/probe_s18/profile). Leave-one-out over the table's 3956 grouped rows
# (scripts/conv_table_loo.py --grouping g): median |err| 25.0 % without this term, 19.2 % at
# weight 4, 13.8 % at 16, 12.7 % at 32; 16, where more weight buys little and more calls fall
# beyond FAR to the fitted efficiency (146 rows at 0, 363 at 16, 413 at 32).
GROUP_WIDTH_WEIGHT = 16.0
# squared distance per (log2 step in a grouped convolution's group-width alignment)^2
# (:func:`group_width_align`): cuDNN's grouped engines run a group width that is a multiple
# of 64 on other kernels than its neighbours: in the H200 table's 3x3 rows of widths 88-176,
# fp16 forward 128 a group at 3.5x the reference roofline, 112 at 3.8, 120 at 5.0, 144 at 5.4,
# 96 at 7.1 (bf16: 3.4 against 5.3-6.9), a width's log distance (GROUP_WIDTH_WEIGHT) barely
# telling 120 from 128. Leave-one-out over the table's 5472 grouped rows (scripts/
# conv_table_loo.py --grouping g): median |err| 16.0 % without this term, 14.8 % at weight
# 0.5, 14.4 % at 1, 14.0 % at 2, 13.9 % at 4; p90 79.5, 78.3, 77.7, 78.1, 79.4 %; 1, the
# lowest p90, with the sum of predicted over measured time at 1.005 (rows beyond FAR: 357 ->
# 464)
GROUP_ALIGN_WEIGHT = 1.0
#: the alignment a group's channels are counted to: cuDNN's grouped engines tile channels per
#: group in blocks of up to 64
GROUP_ALIGN_CAP = 64


def group_width_align(width):
    """log2 of the largest power of two, at most :data:`GROUP_ALIGN_CAP`, dividing a grouped
    convolution's channels per group.

    >>> [group_width_align(w) for w in (128, 120, 112, 96, 144, 7)]
    [6, 3, 4, 5, 4, 0]
    """
    w = int(width)
    if w <= 0:
        return 0
    return min((w & -w).bit_length() - 1, GROUP_ALIGN_CAP.bit_length() - 1)


_CONV_DIMS = re.compile(r"^c(\d+)o(\d+)hw(\d+)$")
_SHAPE_DIMS = re.compile(r"x\[\d+, (\d+), ((?:\d+, )*\d+)\] w\[(\d+),")


def _conv_base(cls):
    """A conv class without its group count and dimensions (``g14k3x3s1:c336o336hw784`` ->
    ``gk3x3s1``), the count (NaN when it has none) and (ln C_in, ln C_out, ln H*W) (None)."""
    import numpy as np
    cls, _, dims = (cls or "").partition(":")
    d = _CONV_DIMS.match(dims)
    dims = (np.log([float(v) for v in d.groups()]) if d else None)
    m = _CONV_CLS.match(cls)
    if not m or not m.group(2):
        return cls, math.nan, dims
    return (m.group(1) or "") + (m.group(3) or ""), float(m.group(2)), dims


# squared distance between a conv whose channels are 16-byte aligned and one whose are not
# (:func:`conv_aligned`): other kernels (bf16 grouped convs of 204 and 332 channels ran 5x the
# time per FLOP of their aligned neighbours on the H200, ``stage`` rows)
CONV_ALIGN_WEIGHT = 4.0


def conv_aligned(c_in, c_out, dtype):
    """Whether a convolution's input and output channels fill whole 16-byte vectors in
    ``dtype`` (multiples of 8 in a half type, of 4 in fp32): what cuDNN's vectorized NHWC and
    tensor-core engines need; a first layer's 3 channels, or an odd width, are not.

    >>> conv_aligned(256, 256, "bfloat16"), conv_aligned(204, 204, "bfloat16")
    (True, False)
    >>> conv_aligned(204, 204, "float32"), conv_aligned(3, 64, "float32")
    (True, False)
    """
    per = 16 // ELEMENT_BYTES.get(dtype, 4)
    return round(c_in) % per == 0 and round(c_out) % per == 0


def _shape_dims(shape):
    """(ln C_in, ln C_out, ln H*W) of a calibrate conv row's ``shape``; NaN if it has none."""
    m = _SHAPE_DIMS.search(shape or "")
    if not m:
        return [math.nan] * 3
    c, spatial, co = int(m.group(1)), m.group(2), int(m.group(3))
    return [math.log(c), math.log(co), math.log(math.prod(int(v) for v in spatial.split(", ")))]


_SHAPE_GROUPS = re.compile(r"\bg(\d+)\b")


def read_table_text(path):
    """``(text, meta)``: a kernel table's whole text (gunzipped if the name ends in .gz) and
    its leading ``# key=value`` header lines as a dict, the one reader of both for
    :meth:`KernelTable.read` and :func:`snsim.torchsim.calibrate.read_table`."""
    from .trace import open_text    # snsim.trace's own imports reach this module
    with open_text(path, encoding="utf-8") as f:
        text = f.read()
    meta = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        k, _, v = line[1:].strip().partition("=")
        meta[k] = v
    return text, meta


class KernelTable:
    """Rows of a kernel table, grouped for lookup (see the module docstring).

    Parameters
    ----------
    rows : pandas.DataFrame
        The columns of :data:`snsim.torchsim.calibrate.COLUMNS`.
    meta : dict
        The ``# key=value`` header (torch, CUDA, cuDNN, driver versions, ...).
    """

    def __init__(self, rows, meta=None, *, source=""):
        import numpy as np
        self.meta = dict(meta or {})
        self.source = source
        self.aten_host = {}       # family -> host seconds to issue one small call
        self._groups = {}
        self._fitted = {}
        rows = rows[rows["time_s"] > 0]
        # calibrate's host_step rows (tables before 2026-12-01: a per-phase average host cost
        # per op, the zoo's host model before the in-network one) are no kernel
        ops = rows[rows["family"] != "host_step"].fillna({"cls": "", "math": ""})
        if "shape" in ops:
            # a convolution row timed with a bias (``bias1``: tables before 2026-11-30) timed
            # the add and grad_bias reduction too (:func:`conv_bias_calls`), which a call's
            # lookup charges apart from the table's BIAS_FAMILIES rows: conv rows are read
            # bias-free
            ops = ops[~(ops["family"].map(family_of).str.startswith("convolution")
                        & ops["shape"].astype(str).str.contains(r"\bbias1\b"))]
        self._gcount = {}         # conv key -> ln(group count) of its grouped rows, else NaN
        self._cdims = {}          # conv key -> (ln C_in, ln C_out, ln H*W) per row, else NaN
        self._calign = {}         # conv key -> 1 / 0 channels aligned (conv_aligned), else NaN
        self._malign = {}         # matmul key -> log2 of row_matmul_align, else NaN
        self._mshape = {}         # matmul key -> (ln(batch m n), ln k) per row, else NaN
        self._mform = {}          # matmul key -> its rows' operand forms (row_matmul_form)
        self._mtile = {}          # matmul key -> log2 of matmul_tile_align per row, else NaN
        # dtype -> (rows, dim, indices, seconds) of the embedding_backward rows
        # (:meth:`embedding_backward_s`), and their scatter seconds once computed
        self._embedding = {}
        self._scatter = {}
        if "shape" in ops:
            emb = ops[ops["family"].map(family_of) == EMBEDDING_BACKWARD]
            for dt, sh, t in zip(emb["dtype"], emb["shape"].astype(str), emb["time_s"]):
                if m := _EMBEDDING_ROW.match(sh):
                    v, d, n = (int(x) for x in m.groups())
                    self._embedding.setdefault(str(dt), []).append((v, d, n, float(t)))
        from .torchsim.reduce_buffers import DEVICE_PROPERTIES   # SM counts (no torch)
        self._sms = DEVICE_PROPERTIES.get(str(self.meta.get("gpu_preset", "")), (None,))[0]
        serial = {}               # bmm key -> seconds per k of its one-wave long-k rows
        for (fam, dt, mth), g in ops.groupby(["family", "dtype", "math"]):
            fam = family_of(fam)
            key = (fam, mth if fam in COMPUTE_FAMILIES else dt)
            flops = g["flops"].to_numpy(float)
            if fam.startswith("convolution") and "shape" in g:
                flops = np.array([f if (t := row_conv_flops(sh, "backward" in fam)) is None
                                  else t for f, sh in zip(flops, g["shape"].astype(str))],
                                 dtype=float)
            elif fam in UPSAMPLE_BACKWARD_FAMILIES and "shape" in g:
                flops = np.array([f if (t := row_upsample_work(sh)) is None else t
                                  for f, sh in zip(flops, g["shape"].astype(str))], dtype=float)
            nbytes = g["bytes"].to_numpy(float)
            lr = np.log(g["time_s"].to_numpy(float))    # made relative below
            ntensors = g["ntensors"].to_numpy(float)
            classes = g["cls"].astype(str)
            if fam == "index" and "shape" in g:   # a gather's index count and kernel class
                gathers = [index_row(sh, dt) for sh in g["shape"].astype(str)]
                ntensors = np.array([n for n, _ in gathers], dtype=float)
                classes = np.array([c for _, c in gathers], dtype=object)
            feats = np.stack([np.log1p(flops), np.log1p(nbytes), np.log1p(ntensors)], axis=1)
            host = g["host_s"].to_numpy(float)
            # an attention row's class is "causal" or "" (tables before 2026-12-02 09:00 wrote
            # the direction, "fwd"/"bwd", which the family already says: no class then)
            if fam.startswith("sdpa"):
                classes = classes.where(classes == "causal", "")
            grp = (feats, lr, np.array(classes, dtype=object), host)
            shapes = g["shape"].astype(str) if "shape" in g else [""] * len(g)
            gcount = np.array([math.log(int(m.group(1))) if _group_prefix(c) == "g" and (
                m := _SHAPE_GROUPS.search(sh)) else math.nan
                for c, sh in zip(grp[2], shapes)])
            cdims = np.array([_shape_dims(sh) if fam.startswith("convolution")
                              else [math.nan] * 3 for sh in shapes]).reshape(-1, 3)
            calign = np.array([float(conv_aligned(*np.exp(cd[:2]), dt)) if np.isfinite(
                cd[:2]).all() else math.nan for cd in cdims])
            malign = np.array([math.log2(a) if fam in MATMUL_FAMILIES and (
                a := row_matmul_align(sh, c)) else math.nan for c, sh in zip(grp[2], shapes)])
            bmkn = [tuple(int(v) for v in m.groups()[2:])
                    if fam in MATMUL_FAMILIES and (m := _ROW_MATMUL.match(sh)) else None
                    for sh in shapes]
            mshape = np.array([(math.log(d[0] * d[1] * d[3]), math.log(d[2])) if d
                               else (math.nan, math.nan) for d in bmkn]).reshape(-1, 2)
            mform = np.array([row_matmul_form(fam, sh) for sh in shapes], dtype=object)
            mtile = np.array([math.log2(matmul_tile_align(d[1], d[3])) if d else math.nan
                              for d in bmkn])
            if fam == "bmm" and self._sms:
                serial.setdefault(key, []).extend(
                    t / d[2] for d, t, a in zip(bmkn, g["time_s"].to_numpy(float), malign)
                    if d and serial_k_call(*d, self._sms)
                    and (key[1] == "fp32" or a < math.log2(8)))
            if key in self._groups:   # a compute family's math mode from two dtypes: merge
                f0, l0, c0, h0 = self._groups[key]
                grp = (np.vstack([f0, feats]), np.concatenate([l0, lr]),
                       np.concatenate([c0, grp[2]]), np.concatenate([h0, host]))
                gcount = np.concatenate([self._gcount[key], gcount])
                cdims = np.vstack([self._cdims[key], cdims])
                calign = np.concatenate([self._calign[key], calign])
                malign = np.concatenate([self._malign[key], malign])
                mshape = np.vstack([self._mshape[key], mshape])
                mform = np.concatenate([self._mform[key], mform])
                mtile = np.concatenate([self._mtile[key], mtile])
            self._groups[key] = grp
            self._malign[key] = malign
            self._mshape[key] = mshape
            self._mform[key] = mform
            self._mtile[key] = mtile
            self._gcount[key] = gcount
            self._cdims[key] = cdims
            self._calign[key] = calign
        # the reference roofline's FLOP and byte rates of a compute group are its best
        # measured ones (FP32 GEMMs peak near 50 TFLOP/s on the H200, bf16 ones near 700):
        # against a fixed 1 PFLOP/s an FP32 call's reference was its bytes, and its time read
        # from rows of another arithmetic intensity (ConvNeXt's FP32 Linears at 200-275
        # TFLOP/s)
        # Dense rows only where the group has them: torch's FLOP formula for a grouped
        # convolution's backward counts it as dense (x the group count: 6.6 PFLOP/s "measured"
        # for bf16 depthwise rows); grouped rows are read against the same reference as the
        # calls that look them up, with the same formula, so their ratios stay consistent.
        self._peak = {}
        for key, (feats, logt, classes, host) in self._groups.items():
            flops, nbytes = np.expm1(feats[:, 0]), np.expm1(feats[:, 1])
            peak = (REF_FLOPS_PER_S, REF_BYTES_PER_S)
            dense = (flops > 0) & np.array([_group_prefix(c) not in ("g", "dw")
                                            for c in classes], dtype=bool)
            # (an upsample backward's: its best rate of work, outputs times outputs per
            # input, UPSAMPLE_BACKWARD_FAMILIES)
            if (key[0] in COMPUTE_FAMILIES or key[0] in UPSAMPLE_BACKWARD_FAMILIES) \
                    and dense.any():   # and its best byte rate
                peak = (float(np.max(flops[dense] / np.exp(logt[dense]))),
                        float(np.max(nbytes[dense] / np.exp(logt[dense]))))
            self._peak[key] = peak
            self._groups[key] = (feats, logt - np.log(self._ref(flops, nbytes, *peak)),
                                 classes, host)
        self._prefix = {key: np.array([_group_prefix(c) for c in grp[2]], dtype=object)
                        for key, grp in self._groups.items()}
        # conv key -> group_width_align of its grouped rows' channels per group, else NaN
        self._galign = {key: np.array([group_width_align(round(w)) if np.isfinite(w)
                                       else math.nan
                                       for w in np.exp(self._cdims[key][:, 0] - gcount)])
                        for key, gcount in self._gcount.items()}
        self._serial_k_s = {key: float(np.median(v)) for key, v in serial.items() if len(v) >= 2}
        # batch norm: channels and spatial size are distances, not a class to match exactly
        self._bn = {key: _bn_feats(grp[2]) for key, grp in self._groups.items()
                    if key[0] in SHAPE_FAMILIES}
        for (fam, _), (feats, _, _, host) in self._groups.items():
            small = host[np.argsort(feats[:, 1], kind="stable")[:3]]
            if len(small) and np.all(small > 0):
                h = float(np.median(small))
                self.aten_host[fam] = min(h, self.aten_host.get(fam, h))
        for key, (feats, lr, _, _) in self._groups.items():
            big = (np.exp(feats[:, 0]) / REF_FLOPS_PER_S + np.exp(feats[:, 1]) /
                   REF_BYTES_PER_S > 20 * REF_FLOOR_S)
            self._fitted[key] = float(np.median(lr[big] if big.any() else lr))
            if key[0] in MATMUL_FAMILIES or key[0].startswith("convolution"):
                # per grouping (dense / g / dw convolutions, aligned / unaligned matmuls):
                # their kernels' efficiencies differ several-fold
                for prefix in set(self._prefix[key]):
                    sel = self._prefix[key] == prefix
                    self._fitted[(key, prefix)] = float(np.median(
                        lr[sel & big] if (sel & big).any() else lr[sel]))

    def _aten_host(self, family):
        import numpy as np
        if family in self.aten_host:
            return self.aten_host[family]
        plain = [v for k, v in self.aten_host.items() if not k.startswith("_foreach")]
        return float(np.median(plain)) if plain else 0.0

    @staticmethod
    def _ref(flops, nbytes, peak_flops_per_s=REF_FLOPS_PER_S, peak_bytes_per_s=REF_BYTES_PER_S):
        import numpy as np
        return np.maximum(np.maximum(flops / peak_flops_per_s, nbytes / peak_bytes_per_s),
                          REF_FLOOR_S)

    @classmethod
    def read(cls, path):
        """Read a table written by ``snsim calibrate`` (CSV, gzip if the name ends in .gz)."""
        import io

        import pandas as pd
        text, meta = read_table_text(path)
        rows = pd.read_csv(io.StringIO(text), comment="#", keep_default_na=False,
                           na_values={"flops": [""], "time_s": [""]})
        missing = {"family", "flops", "bytes", "time_s"} - set(rows.columns)
        if missing:
            raise ConfigError(f"kernel table {path} lacks columns {sorted(missing)}")
        for c in ("ntensors", "host_s"):
            if c not in rows:
                rows[c] = 0
        if "ops" not in rows:
            rows["ops"] = ""
        return cls(rows, meta, source=str(path))

    def families(self):
        return sorted({k[0] for k in self._groups})

    def _has_class(self, key, cls):
        """Whether group ``key`` has rows of shape class ``cls``: a matmul's exact class
        (:func:`matmul_class`), a convolution's grouping (dense, ``g``, ``dw``); any row for
        other families and for a call without a class."""
        if not cls or key[0] in SHAPE_FAMILIES:
            return True
        classes = self._groups[key][2]
        if key[0] in MATMUL_FAMILIES:
            return bool((classes == cls).any())
        if key[0].startswith("convolution"):
            return bool((self._prefix[key] == _group_prefix(cls)).any())
        return True

    def _key(self, family, dtype, math_, cls=""):
        """The group a call reads (see ``_OTHER_HALF``): its own dtype's (compute families:
        math mode's) when it has rows of the call's class, else the other half type's when
        that one has, else its own (read across classes) or the other's; None if neither
        exists."""
        own = (family, math_ if family in COMPUTE_FAMILIES else dtype)
        other = _FALLBACK.get(family, _OTHER_HALF).get(own[1], _OTHER_HALF.get(own[1]))
        keys = [k for k in (own, (family, other))
                if k[1] is not None and k in self._groups]
        if not keys and family in _NCHW_FAMILY:     # no channels-last rows: the NCHW ones
            return self._key(_NCHW_FAMILY[family], dtype, math_, cls)
        return next((k for k in keys if self._has_class(k, cls)), keys[0] if keys else None)

    def _neighbours(self, family, flops, nbytes, ntensors, cls, dtype, math_):
        """(key, nearest rows, their weights or None when farther than FAR, source, the
        call's bytes as the rows count them) of a lookup, or None when the table has no rows
        for ``family`` nor a proxy."""
        import numpy as np
        cls, align, mcall = _split_matmul_cls(family, cls)
        key = self._key(family, dtype, math_, cls)
        if key is not None and (family, dtype, key[1]) in _BY_SHAPE:
            nbytes = nbytes * ELEMENT_BYTES[key[1]] / ELEMENT_BYTES[dtype]
        src = "table"
        if key is None:
            if family in COMPUTE_FAMILIES or family.startswith("sdpa"):
                return None
            # an untimed dtype of a bandwidth family reads its fp32 rows; an untimed family,
            # a proxy's rows of the same dtype (or the other half type's), else fp32
            key = self._key(family, "float32", "")
            for p in PROXY:
                if key is None:
                    key = self._key(p, dtype, "") or self._key(p, "float32", "")
                    src = "proxy"
            if key is None:
                return None
        feats, lr, classes, _ = self._groups[key]
        if cls and family in MATMUL_FAMILIES and not (classes == cls).any():
            # neither half type has rows of this class (see matmul_class): in half precision
            # the unaligned rows timed another kernel path than the tensor cores' fast one,
            # so the table cannot place the call (the caller's roofline); fp32 and TF32 rows
            # are read without classes
            if key[1] in _OTHER_HALF:
                return None
            cls = ""
        q = np.array([math.log1p(flops), math.log1p(nbytes), math.log1p(ntensors)])
        d2 = ((feats - q) ** 2).sum(axis=1)
        same = None
        bn = self._bn.get(key)
        qbn = _bn_feats([cls])[0] if bn is not None else None
        if bn is not None:
            # a table (or query) without shape classes: bytes alone, as before
            shaped = np.isfinite(bn).all() and np.isfinite(qbn).all()
            if shaped and key[0] in BN_FAMILIES:
                # batch norm: its kernels give each channel its blocks and reduce over
                # N x H*W, and cuDNN picks its kernel by that length (fp16 at 4 x 3,600 px: a
                # single-read kernel, 8.5 us for 256 channels; at 4 x 14,400 a multi-pass one,
                # 97 us), so the time per byte goes as 1 / channels and steps with the
                # reduction length (bf16 backward at 3,136 px: 32 channels 50.8x the reference
                # roofline, 48 34.1x, 64 25.6x). The distance is in (ln channels,
                # ln N x H*W = bytes / channels), the map's size alone weighing little: a
                # bytes-and-map distance put DeepLabV3's 60 x 60 b4 batch norms next to b16
                # rows at 56 x 56 (+104 % backward)
                lr_row, lr_q = feats[:, 1] - bn[:, 0], q[1] - qbn[0]
                d2 = (d2 - (feats[:, 1] - q[1]) ** 2 + (lr_row - lr_q) ** 2
                      + BN_SHAPE_WEIGHT * (bn[:, 0] - qbn[0]) ** 2
                      + BN_MAP_WEIGHT * (bn[:, 1] - qbn[1]) ** 2)
                # its own channels and map where they were measured near (other batches):
                # another channel count is another reduction; weighed in, 48- and 32-channel
                # rows at the call's bytes put ResNet-50 b192 bf16's batch norms 17 % above
                # the line through its own class's b64 and b256 rows
                same = classes == cls
            elif shaped:
                d2 = d2 + BN_SHAPE_WEIGHT * ((bn - qbn) ** 2).sum(axis=1)
        elif cls or classes.any():
            base, count, dims = _conv_base(cls)
            same = classes == base
            d2 = d2 + np.where(same, 0.0, np.where(self._prefix[key] == _group_prefix(base),
                                                   1.0, 9.0))
            if math.isfinite(count):   # a grouped call: how far its group count is from a row's
                d2 = d2 + GROUP_COUNT_WEIGHT * np.nan_to_num(
                    (self._gcount[key] - math.log(count)) ** 2, nan=0.0)
            if dims is not None:       # a conv call: how far its channels and map are
                d2 = d2 + CONV_SHAPE_WEIGHT * np.nan_to_num(
                    ((self._cdims[key] - dims) ** 2).sum(axis=1), nan=0.0)
                if math.isfinite(count):   # and how far its channels per group are
                    d2 = d2 + GROUP_WIDTH_WEIGHT * np.nan_to_num(
                        ((self._cdims[key][:, 0] - self._gcount[key])
                         - (dims[0] - math.log(count))) ** 2, nan=0.0)
                    d2 = d2 + GROUP_ALIGN_WEIGHT * np.nan_to_num(
                        (self._galign[key] - group_width_align(
                            round(math.exp(dims[0]) / count))) ** 2, nan=0.0)
                aligned = float(conv_aligned(*np.exp(dims[:2]), dtype))
                d2 = d2 + CONV_ALIGN_WEIGHT * np.nan_to_num(
                    (self._calign[key] - aligned) ** 2, nan=0.0)
        if align is not None and key in self._malign:   # an unaligned matmul's vectors
            d2 = d2 + MATMUL_ALIGN_WEIGHT * np.nan_to_num(
                (self._malign[key] - math.log2(align)) ** 2, nan=0.0)
        if mcall is not None and key in self._mshape:
            # how far the call's output (batch x m x n) and reduction (k) are from a row's,
            # and whether its operands are read as the row's (a transposed view or not)
            (b, m, k, n), form = mcall
            d2 = d2 + MATMUL_SHAPE_WEIGHT * np.nan_to_num(
                ((self._mshape[key] - [math.log(b * m * n), math.log(k)]) ** 2).sum(axis=1),
                nan=1.0)
            # how evenly tiles cover the output (matmul_tile_align): another kernel
            d2 = d2 + MATMUL_TILE_WEIGHT * np.nan_to_num(
                (self._mtile[key] - math.log2(matmul_tile_align(m, n))) ** 2, nan=1.0)
            if form is not None:    # a row of unknown form: half the distance
                rf = self._mform[key]
                d2 = d2 + MATMUL_FORM_WEIGHT * np.where(rf == "", 0.5, rf != form)
        d = np.sqrt(d2)
        if same is not None and same.any() and d[same].min() <= FAR:
            # the call's own kernel/stride class where it was measured near: another class
            # runs other kernels (TF32 channels-last depthwise backward: 7x7 0.3 ns per element
            # and tap, 3x3 and 5x5 several times less), which a distance penalty only dilutes
            d = np.where(same, d, np.inf)
        order = np.argsort(d, kind="stable")[:K_NEAREST]
        if d[order[0]] > FAR:
            return key, order, None, src, nbytes
        return key, order, 1.0 / (d[order] + 0.05) ** IDW_POWER, src, nbytes

    def embedding_backward_s(self, indices, dim, rows, dtype="float32"):
        """``(seconds, source)`` of ``embedding_dense_backward`` for ``indices`` looked-up rows
        of width ``dim`` in a table of ``rows`` rows, or ``(None, "roofline")`` for a table
        without its rows. Its CUDA kernels zero the whole gradient table (a ``fill_`` of
        ``rows x dim`` elements, timed by the table's ``fill_`` rows) and then scatter the
        gradient's rows into it, a time that follows the index count (one kernel up to 3,072
        indices, a sort of the indices beyond) and the width, not the table. Each calibrate
        row (``v d n``) less its own fill is a scatter time, interpolated in (ln indices,
        ln dim) as :meth:`time_s` interpolates (its ``K_NEAREST`` rows, inverse-distance
        weighted). Bytes alone, the lookup mixed the two: against the 15 calls of the H200
        profiles (GPT-2, GPT, Pythia-410M, SmolLM2-135M, GPT-2 medium, the transformer
        encoder) median |err| 41 %, max 107 %; this way 23 %, 69 %.

        >>> t, src = load_kernel_table("h200").embedding_backward_s(2048, 768, 50257)
        >>> 50e-6 < t < 200e-6, src
        (True, 'table')
        """
        import numpy as np

        def fill_s(elements, dt):    # zeroing a gradient table: the table's fill_ rows
            return self.time_s("fill_", nbytes=elements * ELEMENT_BYTES.get(dt, 4), dtype=dt,
                               math_="")[0]
        dt = dtype if dtype in self._embedding else "float32"
        if dt not in self._embedding:
            return None, "roofline"
        if dt not in self._scatter:
            fills = [fill_s(v * d, dt) for v, d, _, _ in self._embedding[dt]]
            if None in fills:
                return None, "roofline"
            self._scatter[dt] = np.array([(math.log(n), math.log(d), math.log(max(t - f, 1e-7)))
                                          for (v, d, n, t), f in zip(self._embedding[dt], fills)])
        fill = fill_s(rows * dim, dtype)
        if fill is None:
            return None, "roofline"
        pts = self._scatter[dt]
        dist = np.sqrt((pts[:, 0] - math.log(max(indices, 1))) ** 2
                       + (pts[:, 1] - math.log(max(dim, 1))) ** 2)
        order = np.argsort(dist, kind="stable")[:K_NEAREST]
        w = 1.0 / (dist[order] + 0.05) ** IDW_POWER
        return fill + float(np.exp((w * pts[order, 2]).sum() / w.sum())), "table"

    def time_s(self, family, *, flops=0, nbytes=0, ntensors=0, cls="", dtype="float32",
               math_="tf32"):
        """GPU seconds of one call and where they came from.

        Returns
        -------
        (float, str) or (None, "roofline")
            The time and its source: ``"table"``, ``"fitted"`` or ``"proxy"``; None when the
            table cannot say (the caller's roofline applies).
        """
        near = self._neighbours(family, flops, nbytes, ntensors, cls, dtype, math_)
        if near is None:
            return None, "roofline"
        t, src = self._time_near(family, near, flops, cls)
        _, align, mcall = _split_matmul_cls(family, cls) if family == "bmm" else (0, 0, None)
        rate = self._serial_k_s.get(near[0])
        if mcall is not None and rate and serial_k_call(*mcall[0], self._sms) and (
                near[0][1] == "fp32" or (align is not None and align < 8)):
            t = max(t, mcall[0][2] * rate)
        return t, src

    def _time_near(self, family, near, flops, cls):
        """:meth:`time_s` from the neighbours :meth:`_neighbours` found."""
        import numpy as np
        key, order, w, src, nbytes = near
        ref = float(self._ref(np.array(flops, float), np.array(nbytes, float),
                              *self._peak.get(key, (REF_FLOPS_PER_S, REF_BYTES_PER_S))))
        if w is None:
            cls = _split_matmul_cls(family, cls)[0]
            fitted = self._fitted.get((key, _group_prefix(cls)), self._fitted[key])
            return ref * math.exp(fitted), ("fitted" if src == "table" else src)
        # a grouped or depthwise convolution's neighbours: the weighted arithmetic mean of
        # their ratios, not the geometric. cuDNN picks its engine by heuristics whose
        # thresholds no axis shows (TF32 grouped 3x3 convs at 52 GB/s and at 900 GB/s of
        # input side by side, stage rows); where neighbours straddle one, the geometric mean
        # is below the expected time and a step's sum of such calls falls short (leave-one-
        # out, scripts/conv_table_loo.py: the grouped and stage rows' time-weighted sum 0.90
        # and 0.80 of the measured with the geometric mean, ~0.95 with the arithmetic).
        # Dense convolutions' rows of network layers (net rows: 1.03 geometric, 1.05
        # arithmetic) and other families, one kernel whose ratio varies smoothly (steeply
        # near the launch floor), keep the geometric mean.
        lr = self._groups[key][1]
        if key[0].startswith("convolution") and _group_prefix(cls) in ("g", "dw"):
            return ref * float((w * np.exp(lr[order])).sum() / w.sum()), src
        return ref * math.exp(float((w * lr[order]).sum() / w.sum())), src

    def copy_time_s(self, family, nbytes):
        """GPU seconds of one host<->device copy of ``nbytes`` (a ``copy_*`` family), and its
        source; ``(None, "roofline")`` for a family the table has no rows of.

        A copy's time is a function of its bytes alone, ``latency + bytes / bandwidth`` with
        a bandwidth that rises to the link's peak: linear between the rows calibrate
        measured (sizes a factor 4 apart), at the smallest row's time below it (the latency
        floor: a 4 KiB copy already takes no longer than the launch) and the last two rows'
        slope above the largest. (The nearest-rows lookup of :meth:`time_s` averages ratios
        of rows a factor 4-16 apart and, below 512 B, falls back to a fitted curve: 181 us
        for a 256 B pinned copy of the H200 table, 1.8 us measured at 4 KiB.)

        Examples
        --------
        >>> t = load_kernel_table("h200")
        >>> s, src = t.copy_time_s("copy_d2h_pinned", 8 << 20)   # between the 4 and 16 MiB rows
        >>> src, 140e-6 < s < 160e-6
        ('table', True)
        >>> t.copy_time_s("copy_d2h_pinned", 256) == t.copy_time_s("copy_d2h_pinned", 4096)
        True
        """
        import numpy as np
        key = self._key(family, "float32", "")
        if key is None:
            return None, "roofline"
        feats, lr, _, _ = self._groups[key]
        sizes = np.expm1(feats[:, 1])
        times = np.exp(lr) * self._ref(np.zeros_like(sizes), sizes)
        order = np.argsort(sizes, kind="stable")
        sizes, times = sizes[order], times[order]
        if nbytes <= sizes[0] or len(sizes) == 1:
            return float(times[0]), "table"
        if nbytes >= sizes[-1]:
            slope = (times[-1] - times[-2]) / (sizes[-1] - sizes[-2])
            return float(times[-1] + slope * (nbytes - sizes[-1])), "table"
        return float(np.interp(nbytes, sizes, times)), "table"

    def issue_s(self, family, *, flops=0, nbytes=0, ntensors=0, cls="", dtype="float32",
                math_="tf32"):
        """Host seconds to issue one call, from the same nearest rows as :meth:`time_s`: what
        calibrate measured the launching thread spend per call of that shape (a cuDNN
        convolution's host cost grows with its algorithm's kernel count: 15-130 us on the
        H200). Beyond every row, the family's median; an untimed family, the median aten call."""
        import numpy as np
        near = self._neighbours(family, flops, nbytes, ntensors, cls, dtype, math_)
        if near is None:
            return self._aten_host(family)
        key, order, w, _, _ = near
        host = self._groups[key][3]
        if w is None or not np.all(host[order] > 0):
            pos = host[host > 0]
            return float(np.median(pos)) if len(pos) else self._aten_host(family)
        return float(np.exp((w * np.log(host[order])).sum() / w.sum()))

    def pinned_alloc_s(self):
        """Host seconds of the pinned host tensor ``save_on_cpu(pin_memory=True)`` allocates
        for each saved tensor: the median of calibrate's ``host_alloc_pinned`` rows (a block
        the caching host allocator hands out again; the H200's rows, 4 KiB to 256 MiB, lie
        within 6.0-6.6 us: the cost does not grow with the size). 0 for a table without them.

        >>> 3e-6 < load_kernel_table("h200").pinned_alloc_s() < 12e-6
        True
        """
        import numpy as np
        key = self._key("host_alloc_pinned", "float32", "")
        if key is None:
            return 0.0
        host = self._groups[key][3]
        return float(np.median(host)) if len(host) else 0.0

    def sync_wake_s(self, nbytes):
        """Seconds a blocking pinned D2H copy of ``nbytes`` holds the launching thread beyond
        the non-blocking copy's issue and the copy's run (calibrate's ``sync_d2h_pinned`` round
        trips from an idle GPU, less the ``copy_d2h_pinned`` rows' issue and time): the copy
        starting on the idle GPU and the thread returning once it has run. 0 for a table
        without those rows, and where the round trip is within the two.

        >>> t = load_kernel_table("h200")
        >>> 0.0 <= t.sync_wake_s(4 << 20) < 50e-6
        True
        """
        if self._key("sync_d2h_pinned", "float32", "") is None:
            return 0.0
        kw = {"nbytes": nbytes, "dtype": "float32", "math_": ""}
        run = self.copy_time_s("copy_d2h_pinned", nbytes)[0] or 0.0
        return max(0.0, self.issue_s("sync_d2h_pinned", **kw) - run
                   - self.issue_s("copy_d2h_pinned", **kw))

    def copy_model(self):
        """Host<->device copy rates fitted to the table's ``copy_*`` rows, in the hardware
        preset's terms (SPEC §9): per ``h2d_pinned`` / ``d2h_pinned`` / ``h2d_pageable`` /
        ``d2h_pageable``, the peak ``bytes_per_s`` and ``efficiency_by_bytes``
        (``[[bytes, efficiency], ...]``, the preset's ``copy_efficiency_by_bytes``)."""
        import numpy as np
        out = {}
        for (fam, _), (feats, lr, _, _) in self._groups.items():
            if not fam.startswith(("copy_h2d", "copy_d2h")):
                continue
            nbytes = np.expm1(feats[:, 1])
            t = np.exp(lr) * self._ref(np.zeros_like(nbytes), nbytes)
            order = np.argsort(nbytes)
            rate = nbytes[order] / t[order]
            peak = float(rate.max())
            out[fam[len("copy_"):]] = {
                "bytes_per_s": peak,
                "efficiency_by_bytes": [[int(b), round(float(r / peak), 4)]
                                        for b, r in zip(nbytes[order], rate)]}
        return out


#: presets with no measured tables of their own that read those of another preset of the same
#: chip: the H100 SXM and the H200 are both GH100 (sm_90, 132 SMs) and run the same cuDNN and
#: cuBLAS heuristics, so the H200's kernel table, host model, copy slowdown and convolution
#: workspaces stand for the H100's. Held-out set 33 on an H100 (traces/h100/plans_heldout33),
#: predicted with the H200's tables before it ran: allocated max 0.24 %, reserved max 3.05 %,
#: step median -10.2 % (the H100's memory is 0.7x as fast; its convolutions ran 1.06x the
#: table's times, traces/h100/calibrate_net_amp), where the h100 preset's roofline and
#: modelled workspaces read reserved max 28.5 % and step median -58.3 %.
#: Each borrowed kernel time is scaled by the slowdown ``snsim calibrate`` measured on both
#: GPUs for its family and size (:func:`load_sibling_ratios`; the H100 against the H200: 1.0-1.1
#: for convolutions, norms, pooling and GEMMs at every size, and for elementwise kernels up to
#: 32 MiB, 1.3-1.4 for elementwise kernels beyond the L2 -- HBM3 3.35 TB/s against HBM3e 4.8).
#: ``snsim calibrate`` on the GPU itself replaces the borrowed table.
TABLES_OF = {"h100": "h200"}


def load_sibling_ratios(name):
    """The measured slowdowns of preset ``name``'s GPU against the sibling whose kernel table
    it reads (:data:`TABLES_OF`): ``<name>_over_<sibling>.csv`` beside the tables
    (``scripts/sibling_ratios.py`` from ``snsim calibrate`` run on both; columns family,
    bytes_lo, bytes_hi, ratio, rows), as ``{family: [(bytes_lo, bytes_hi or None, ratio),
    ...]}`` with ``*`` for any family; ``{}`` where ``name`` reads its own table or no such
    file exists (the sibling's times unscaled).

    Raises
    ------
    ConfigError
        A row whose ratio is not a positive number or whose band is not ordered.
    """
    sibling = tables_of(name)
    if sibling == name:
        return {}
    return _read_sibling_ratios(name, sibling)


@functools.lru_cache(maxsize=8)
def _read_sibling_ratios(name, sibling):
    import csv
    for folder in dict.fromkeys(p.parent for p in _own_table_paths(sibling)):
        path = folder / f"{name}_over_{sibling}.csv"
        if not path.exists():
            continue
        out = {}
        with open(path, newline="") as f:
            for i, row in enumerate(csv.DictReader(f), start=2):
                try:
                    lo, ratio = int(row["bytes_lo"]), float(row["ratio"])
                    hi = int(row["bytes_hi"]) if row["bytes_hi"] else None
                except (KeyError, TypeError, ValueError):
                    raise ConfigError(f"{path}: line {i}: bytes_lo, bytes_hi and ratio must "
                                      f"be numbers") from None
                if not ratio > 0 or lo < 0 or (hi is not None and hi <= lo):
                    raise ConfigError(f"{path}: line {i}: ratio must be > 0 and bytes_lo < "
                                      f"bytes_hi")
                out.setdefault(row["family"], []).append((lo, hi, ratio))
        return out
    return {}


def sibling_ratio_of(ratios, family, nbytes):
    """The ratio :func:`load_sibling_ratios` holds for ``family`` at ``nbytes`` (its band's, else
    the band's ``*``), 1.0 where none covers it.

    >>> r = {"add": [(0, 64, 1.1), (64, None, 1.4)], "*": [(0, None, 1.05)]}
    >>> sibling_ratio_of(r, "add", 1000), sibling_ratio_of(r, "mm", 1000)
    (1.4, 1.05)
    >>> sibling_ratio_of({}, "add", 1)
    1.0
    """
    for fam in (family, "*"):
        for lo, hi, ratio in ratios.get(fam, ()):
            if nbytes > lo and (hi is None or nbytes <= hi) or (lo == 0 and nbytes <= 0):
                return ratio
    return 1.0


def tables_of(name):
    """The preset whose measured tables ``name`` reads: its own, or :data:`TABLES_OF`'s
    sibling where it has none of its own."""
    if name not in TABLES_OF or any(p.exists() for p in _own_table_paths(name)):
        return name
    return TABLES_OF[name]


def _own_table_paths(name):
    here = Path(__file__).resolve().parent
    return [here / "presets" / "kernels" / f"{name}.csv.gz",
            here.parent / "configs" / "kernels" / f"{name}.csv.gz"]


def table_paths(name):
    """Where preset ``name``'s kernel table lives (package, then repository): its own, or
    its sibling's (:func:`tables_of`)."""
    return _own_table_paths(tables_of(name))


@functools.lru_cache(maxsize=16)
def load_kernel_table(name):
    """The kernel table of hardware preset ``name``, or None if it has none (or a path)."""
    p = Path(name)
    if p.suffix in (".gz", ".csv") and p.exists():
        return _read_cached(p)
    for path in table_paths(name):
        if path.exists():
            return _read_cached(path)
    return None


def _read_cached(path):
    """:meth:`KernelTable.read`, kept in the user cache per table version and this module's
    source (:func:`snsim.usercache.load_derived`): reading the CSV with pandas and grouping it
    cost seconds of every ``snsim predict``."""
    from .usercache import load_derived
    return load_derived("kernels", path, __file__, KernelTable.read,
                        valid=lambda t: isinstance(t, KernelTable))


@functools.lru_cache(maxsize=16)
def load_host_costs(name):
    """The launching thread's costs beyond the GPU, for hardware preset ``name``, next to its
    kernel table (:func:`table_paths`), or ``{}``:

    * ``innet``: the in-network host model (:func:`read_host_innet` of
      ``<name>_host_innet.csv``, ``scripts/host_innet_probe.py`` and ``host_innet_fit.py``):
      what the thread spends per aten call, module call, autograd node, parameter and host
      read in a real step. Recorded programs (:func:`snsim.torchsim.opcost.host_issue_s`) and
      the zoo's (:func:`snsim.program_torch.build_torch_program`) both charge it. A preset
      without this file has no host model: its steps take their GPU time alone (a user's own
      ``snsim calibrate`` table needs the probe run on that machine to model the host).
    * ``checkpoint_call_s``, ``checkpoint_saved_s``, ``hook_saved_s``: ``{phase: seconds}``
      per checkpoint call, per tensor a checkpoint saves, per saved-tensor hook call, fitted
      (:func:`fit_plan_host_costs`) to ``<name>_checkpoint_costs.csv``
      (``scripts/steptime_probe.py ckpt``), when the preset has it; also ``conv_hook_call_s``
      and ``offloader_saved_s`` where that probe timed the SuperNeurons executor's hooks.
    * ``pinned_pack_s``: ``{"F": seconds}`` per pinned host tensor ``save_on_cpu(pin_memory=
      True)``'s pack allocates (:meth:`KernelTable.pinned_alloc_s` at the in-network ratio of
      every call, ``innet``'s ``*``), where the table has calibrate's ``pack`` rows.
    * ``checkpoint_innet``: ``{phase: ratio}`` of ``<name>_checkpoint_innet.csv``
      (:func:`read_innet_ratio`, ``scripts/ckpt_parts_analyse.py --write-ratios``): a
      checkpoint call in a real network costs the launching thread more than in the probe's
      synthetic chains (the H200, three real blocks at tiny inputs, three measurements each:
      median 1.31x in forward, 1.48x beyond the recomputation's ops in backward), as an aten
      call does in a step against a tight loop (``innet``'s ratios); ``checkpoint_call_s``,
      ``checkpoint_saved_s`` and ``checkpoint_arg_s`` are the chain's fit times these.
    * ``offload_innet``: ``{phase: ratio}`` of ``<name>_offload_innet.csv`` (the same format,
      ``scripts/offload_innet.py``): the SuperNeurons offloader's extra backward in four
      calibration networks against the chain's costs (the H200: 2.84x, summed; the forward's
      walls hold its waits for copies and do not measure it); ``offload_copy_s`` and
      ``offloader_saved_s`` of that phase are the chain's fit times it.

    Examples
    --------
    >>> c = load_host_costs("h200")
    >>> sorted(c["innet"])[:3], load_host_costs("k40c")
    (['per_accumulate_s', 'per_call_s', 'per_cat_input_s'], {})
    """
    out = {}
    name = tables_of(name)
    for folder in dict.fromkeys(p.parent for p in _own_table_paths(name)):
        ipath = folder / f"{name}_host_innet.csv"
        if "innet" not in out and ipath.exists():
            out["innet"] = read_host_innet(ipath)
        cpath = folder / f"{name}_checkpoint_costs.csv"
        if "checkpoint_call_s" not in out and cpath.exists():
            out.update(fit_plan_host_costs(read_plan_host_rows(cpath)))
            for ratio, keys in INNET_RATIOS.items():
                rpath = folder / f"{name}_{ratio}.csv"
                if rpath.exists():
                    out[ratio] = read_innet_ratio(rpath)
                    out.update(scale_plan_costs(out, out[ratio], keys))
    table = load_kernel_table(name) if "innet" in out else None
    alloc = table.pinned_alloc_s() if table is not None else 0.0
    if alloc:
        # save_on_cpu's pinned host allocation, a call in the step's sequence like an aten
        # call's: the tight loop's cost at the in-network ratio of every call
        out["pinned_pack_s"] = {"F": alloc * out["innet"]["ratio"]["*"]}
    return out


#: ``{ratio file: plan host costs it scales}``: the in-network ratios :func:`load_host_costs`
#: reads from ``<preset>_<ratio file>.csv`` and the chain-fitted costs each multiplies -- a
#: checkpoint call's (selective checkpointing's and the bare hooks' are the chain's as fitted)
#: and the SuperNeurons offloader's
INNET_RATIOS = {"checkpoint_innet": ("checkpoint_call_s", "checkpoint_saved_s",
                                     "checkpoint_arg_s"),
                "offload_innet": ("offload_copy_s", "offloader_saved_s")}


def scale_plan_costs(costs, ratio, keys):
    """``{key: {phase: seconds}}`` of ``keys`` in ``costs``, each phase's seconds times
    ``ratio[phase]`` (1 where absent).

    >>> scale_plan_costs({"checkpoint_call_s": {"F": 2.0, "B": 3.0}}, {"F": 1.5},
    ...                  INNET_RATIOS["checkpoint_innet"])
    {'checkpoint_call_s': {'F': 3.0, 'B': 3.0}}
    """
    return {key: {ph: v * ratio.get(ph, 1.0) for ph, v in costs[key].items()}
            for key in keys if key in costs}


def read_innet_ratio(path):
    """``{phase: ratio}`` of a ``<preset>_checkpoint_innet.csv`` or ``_offload_innet.csv``
    (columns ``phase``, F or B, and ``ratio``, a positive number; :func:`load_host_costs`).

    Raises
    ------
    ConfigError
        A row whose phase is not F or B or whose ratio is not a positive number.
    """
    import csv
    out = {}
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), 2):
            try:
                phase, v = r["phase"], float(r["ratio"])
            except (KeyError, TypeError, ValueError):
                v, phase = float("nan"), None
            if phase not in ("F", "B") or not v > 0 or math.isinf(v):
                raise ConfigError(f"{path}:{i}: needs phase F or B and ratio a positive "
                                  f"number")
            out[phase] = v
    return out


def innet_call_s(innet, family, phase, issue_s, before_s=0.0):
    """In-network host seconds of one aten call that launches a kernel: ``before_s`` (the
    module calls and autograd nodes entered before it), plus its tight-loop issue cost
    ``issue_s`` (:meth:`KernelTable.issue_s` at its shape) times its family's in-network
    ratio (``"*"`` for a family the probe did not see), plus the phase's per-call cost (the
    views and metadata calls around it; none in the optimizer step, whose per-parameter cost
    holds them). ``innet`` is :func:`read_host_innet`'s.

    Examples
    --------
    >>> inn = {"ratio": {"*": 1.5, "mm": 1.25}, "per_call_s": {"F": 8e-6, "B": 4e-6}}
    >>> round(innet_call_s(inn, "mm", "F", 10e-6) * 1e6, 6)       # 10 * 1.25 + 8
    20.5
    >>> round(innet_call_s(inn, "relu_", "U", 10e-6, 1e-6) * 1e6, 6)   # 1 + 10 * 1.5 + 0
    16.0
    """
    ratio = innet["ratio"]
    return before_s + issue_s * ratio.get(family, ratio["*"]) + innet["per_call_s"].get(phase,
                                                                                        0.0)


INNET_OVERHEADS = (("per_module", "F"), ("per_call", "F"), ("per_node", "B"),
                   ("per_call", "B"), ("per_param", "U"), ("per_read", "U"),
                   # the autograd engine's own calls (scripts/engine_host_probe.py): a sum of
                   # two gradients, CatBackward0's per input
                   ("per_accumulate", "B"), ("per_cat_input", "B"))
# overheads a file may lack (0 then): GradScaler's per parameter (scripts/host_innet_fit.py
# --optstep, from scripts/optstep_host_probe.py's fp16 configurations)
INNET_OPTIONAL = (("per_param_scaler", "U"),)


def read_host_innet(path):
    """A preset's in-network host costs (``scripts/host_innet_fit.py`` from
    ``scripts/host_innet_probe.py``'s measurements), as :func:`snsim.torchsim.opcost.
    host_issue_s` reads them: ``ratio`` ``{family: in-sequence / table cost}`` (``"*"``:
    every call), and the seconds ``per_module_s`` (forward module call), ``per_call_s``
    ``{phase: s}`` (every aten call with a kernel), ``per_node_s`` (backward node),
    ``per_param_s`` (optimizer step and ``zero_grad``, per parameter), ``per_read_s`` (a
    read of a host tensor in the optimizer step, ``.item()`` of a step counter) and
    ``per_param_scaler_s`` (GradScaler's ``unscale_``, per parameter; 0 when the file has
    no such row), ``per_accumulate_s`` (autograd's engine sums two gradients, an ``add_``
    from C++ whatever its size) and ``per_cat_input_s`` (``CatBackward0`` per input, the
    ``slice`` it hands on).

    Raises
    ------
    ConfigError
        A row without kind, name or a number as value, or a file without ``ratio,*`` or one
        of the overheads (:data:`INNET_OVERHEADS`)."""
    import csv
    out = {"ratio": {}, "per_call_s": {}}
    over = {}
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), 2):
            try:
                kind, fam, phase, v = r["kind"], r["name"], r["phase"], float(r["value"])
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"{path}:{i}: needs kind, name, phase and a numeric value") \
                    from None
            if kind == "ratio":
                out["ratio"][fam] = v
            elif kind == "overhead" and (fam, phase) in INNET_OVERHEADS + INNET_OPTIONAL:
                over[(fam, phase)] = v
            else:
                known = ", ".join("/".join(k) for k in INNET_OVERHEADS + INNET_OPTIONAL)
                raise ConfigError(f"{path}:{i}: kind must be ratio or overhead (one of "
                                  f"{known})")
    missing = ["ratio *"] if "*" not in out["ratio"] else []
    missing += [f"overhead {n} {p}" for n, p in INNET_OVERHEADS if (n, p) not in over]
    if missing:
        raise ConfigError(f"{path}: lacks {', '.join(map(str, missing))}")
    out["per_module_s"] = over[("per_module", "F")]
    out["per_node_s"] = over[("per_node", "B")]
    out["per_param_s"] = over[("per_param", "U")]
    out["per_read_s"] = over[("per_read", "U")]
    out["per_param_scaler_s"] = over.get(("per_param_scaler", "U"), 0.0)
    out["per_accumulate_s"] = over[("per_accumulate", "B")]
    out["per_cat_input_s"] = over[("per_cat_input", "B")]
    out["per_call_s"] = {"F": over[("per_call", "F")], "B": over[("per_call", "B")]}
    return out


# the ways scripts/steptime_probe.py ckpt times its chain of blocks
PLAN_PROBE_VARIANTS = ("plain", "hooks", "checkpoint", "conv_hook", "offloader",
                       "offloader_copies", "selective", "checkpoint_args")


def read_plan_host_rows(path):
    """The rows of a ``<preset>_checkpoint_costs.csv`` (``scripts/steptime_probe.py ckpt``:
    host seconds per block, ``name`` plain / hooks / checkpoint, ``phase`` F / B, per
    ``source`` run and ``layers_per_block``, with the block's ``saved_tensors``)."""
    import csv
    rows = []
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), 2):
            try:
                rows.append({"source": r.get("source", ""), "name": r["name"],
                             "phase": r["phase"], "layers": int(r["layers_per_block"]),
                             "saved": float(r["saved_tensors"]),
                             "ops": float(r["ops"]) if r.get("ops") else None,
                             # tensor arguments of the checkpointed call (rows before the
                             # column: the probe's blocks took one)
                             "args": float(r["args"]) if r.get("args") else 1.0,
                             "host_s": float(r["host_s"])})
            except (KeyError, ValueError, TypeError):
                raise ConfigError(f"{path}:{i}: needs name, phase, layers_per_block, "
                                  f"saved_tensors and host_s") from None
            if r["name"] not in PLAN_PROBE_VARIANTS or r["phase"] not in ("F", "B"):
                raise ConfigError(f"{path}:{i}: name must be one of "
                                  f"{', '.join(PLAN_PROBE_VARIANTS)} and phase F or B")
    return rows


def fit_plan_host_costs(rows):
    """Host costs of the mechanisms memory plans add, fitted to the checkpoint probe's rows.

    Each (``source``, ``layers_per_block``) group is one chain of blocks timed three ways; per
    block of ``n`` saved tensors (what the plain forward's ops save):

    * ``torch.utils.checkpoint`` (non-reentrant), forward: ``checkpoint_F - plain_F =
      a_F + b_F n`` -- per call (RNG and autocast state, the frame, the hook context) and per
      saved tensor (the pack hook's holder and its shape/dtype/device record);
    * backward: ``checkpoint_B - plain_B - plain_F = a_B + b_B n`` -- the recomputation's own
      ops (``plain_F``) are charged as ops, the rest is the recompute's set-up (RNG fork,
      autocast, hooks) per call and the unpack and the determinism check per saved tensor;
    * ``saved_tensors_hooks`` (a Python pack/unpack pair, as ``save_on_cpu`` and the
      SuperNeurons offloader install them once around the forward): ``hooks_P - plain_P =
      c_P n`` per phase P, no per-call term.

    * where the probe timed the SuperNeurons executor's hooks (``snsim.torchsim.plans.
      Offloader``): ``conv_hook_P - plain_P = d_P k`` per convolution's forward hook call
      (``k`` convolutions per block) and ``offloader_P - plain_P = e_P n`` per call of its
      pack/unpack;
    * where it timed selective checkpointing and counted the ops its dispatch mode asks its
      policy about per block ``m``: ``selective_P - checkpoint_P = r_P + s_P m`` -- per call
      (making the two dispatch modes and entering one) and per op (the mode's Python
      ``__torch_dispatch__`` and, in forward, the policy call); through the origin (``r = 0``)
      where every block has one op count;
    * where it timed the ``Offloader`` copying every convolution's output out in forward and
      back in backward (``offloader_copies``, hooks on the convolutions too):
      ``offloader_copies_P - offloader_P - (conv_hook_P - plain_P) = f_P k`` per offloaded
      tensor (``k`` convolutions per block, each output saved): forward, the copy's issue on
      its stream, the event recorded and the retiring wait; backward, the prefetch's device
      buffer, its stream and event and the compute stream's wait;
    * where it timed checkpoint calls given ``A`` tensor arguments (``checkpoint_args``,
      against ``checkpoint``'s one): ``checkpoint_args_P - checkpoint_P = t_P (A - 1)`` (an
      RNG state per argument, stashed in forward, got and set twice around the
      recomputation; the argument saved for backward).

    Ordinary least squares over all groups (``numpy.linalg.lstsq``); a negative coefficient
    (noise: the hooks' backward) is 0.

    Returns
    -------
    dict
        ``checkpoint_call_s`` ``{F, B}`` (a), ``checkpoint_saved_s`` ``{F, B}`` (b),
        ``hook_saved_s`` ``{F, B}`` (c), and where timed ``conv_hook_call_s`` (d),
        ``offloader_saved_s`` (e), ``offload_copy_s`` (f), ``selective_call_s`` (r),
        ``selective_op_s`` (s) and ``checkpoint_arg_s`` (t).

    Examples
    --------
    >>> rows = [dict(source="r", layers=k, saved=10.0 * k, name=nm, phase=ph, host_s=v)
    ...         for k, base in ((1, 1e-4), (2, 2e-4))
    ...         for nm, ph, v in (("plain", "F", base), ("plain", "B", base),
    ...                           ("hooks", "F", base + 10 * k * 1e-6),
    ...                           ("hooks", "B", base),
    ...                           ("checkpoint", "F", base + 1e-4 + 10 * k * 2e-5),
    ...                           ("checkpoint", "B", 2 * base + 3e-4 + 10 * k * 1e-5))]
    >>> c = fit_plan_host_costs(rows)
    >>> [round(c["checkpoint_call_s"][p] * 1e6, 3) for p in "FB"]
    [100.0, 300.0]
    >>> [round(c["checkpoint_saved_s"][p] * 1e6, 3) for p in "FB"]
    [20.0, 10.0]
    >>> [round(c["hook_saved_s"][p] * 1e6, 3) for p in "FB"]
    [1.0, 0.0]
    """
    import numpy as np
    groups = {}
    for r in rows:
        g = groups.setdefault((r["source"], r["layers"]),
                              {"saved": r["saved"], "layers": float(r["layers"]),
                               "ops": r.get("ops")})
        g[(r["name"], r["phase"])] = r["host_s"]
        if r["name"] == "checkpoint_args":
            g["args"] = r.get("args", 1.0) - 1.0
    need = [(n, p) for n in ("plain", "hooks", "checkpoint") for p in "FB"]
    full = [g for g in groups.values() if all(k in g for k in need)]
    if not full:
        raise ConfigError("the checkpoint cost table has no block timed plain, hooks and "
                          "checkpoint in both phases")
    n = np.array([g["saved"] for g in full])
    out = {"checkpoint_call_s": {}, "checkpoint_saved_s": {}, "hook_saved_s": {}}
    for phase in "FB":
        extra = np.array([g[("checkpoint", phase)] - g[("plain", phase)]
                          - (g[("plain", "F")] if phase == "B" else 0.0) for g in full])
        if len(set(n.tolist())) > 1:
            (a, b), *_ = np.linalg.lstsq(np.stack([np.ones_like(n), n], 1), extra, rcond=None)
        else:                      # one block size: no way to split; all of it per call
            a, b = float(extra.mean()), 0.0
        hooks = np.array([g[("hooks", phase)] - g[("plain", phase)] for g in full])
        (c,), *_ = np.linalg.lstsq(n[:, None], hooks, rcond=None)
        out["checkpoint_call_s"][phase] = max(0.0, float(a))
        out["checkpoint_saved_s"][phase] = max(0.0, float(b))
        out["hook_saved_s"][phase] = max(0.0, float(c))
        for name, key, per, base in (("conv_hook", "conv_hook_call_s", "layers", "plain"),
                                     ("offloader", "offloader_saved_s", "saved", "plain"),
                                     ("selective", "selective_op_s", "ops", "checkpoint"),
                                     ("checkpoint_args", "checkpoint_arg_s", "args",
                                      "checkpoint")):
            sel = [(k, g) for k, g in groups.items()
                   if (name, phase) in g and (base, phase) in g and g.get(per) is not None]
            if sel:
                x = np.array([g[per] for _, g in sel])
                y = np.array([g[(name, phase)] - g[(base, phase)] for _, g in sel])
                if name == "selective" and len(set(x.tolist())) > 1:
                    (r, d), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], 1), y,
                                                 rcond=None)
                    out.setdefault("selective_call_s", {})[phase] = max(0.0, float(r))
                else:
                    (d,), *_ = np.linalg.lstsq(x[:, None], y, rcond=None)
                out.setdefault(key, {})[phase] = max(0.0, float(d))
        need = [(v, phase) for v in ("offloader_copies", "offloader", "conv_hook", "plain")]
        sel = [g for g in groups.values() if all(k in g for k in need)]
        if sel:
            x = np.array([g["layers"] for g in sel])
            y = np.array([g[need[0]] - g[need[1]] - (g[need[2]] - g[need[3]]) for g in sel])
            (f,), *_ = np.linalg.lstsq(x[:, None], y, rcond=None)
            out.setdefault("offload_copy_s", {})[phase] = max(0.0, float(f))
    return out


def host_stream(gpu_s, host_s, iterations=None, blocking=None, syncs=(), side=None,
                waits=None, host_waits=None, slowdown=None, synchronous=None):
    """Each op's share of a schedule where the host issues ops in order and the GPU runs them.

    Op ``i`` is issued at ``H_i = H_{i-1} + host_s[i]`` and runs from
    ``max(G_{i-1}, H_i)`` to ``G_i``; its share is ``G_i - G_{i-1}``, so the shares of an
    iteration sum to its makespan. Both clocks restart at every new ``iterations`` value (a
    measured iteration starts from an idle GPU: the timing loop synchronises). An op marked in
    ``blocking`` (a pageable copy: the host stages the data itself and returns when it has
    moved) starts when both the host and the stream are free and holds both until it ends:
    ``max(gpu_s, host_s)`` later. An op in ``syncs`` (indices: a ``.item()`` read) waits for
    the GPU to finish before it is issued, ``H_i = max(H_{i-1}, G_{i-1}) + host_s[i]``: the
    host then issues the next kernels to an idle GPU. An op in ``synchronous`` (a copy the
    host waits for: ``save_on_cpu``'s pinned pack on torch before 2.12) is issued and queued
    as any op, and the host returns only when it has run, plus its seconds in ``synchronous``
    ``{i: seconds}`` (the thread's return after the copy: :meth:`KernelTable.sync_wake_s`),
    ``H_i = G_i + synchronous[i]``.

    Copies on side streams (the SuperNeurons offloader's): ``side`` ``{i: direction}`` marks
    op ``i`` as a copy on that direction's stream, issued after the compute stream's queued
    work (``wait_stream``): it runs from ``max(H_i, G_{i-1}, end of the stream's previous
    copy)`` for ``gpu_s[i]`` and takes no share of the compute stream. ``waits`` ``{i: j}``:
    op ``i`` starts on the compute stream only after copy ``j`` ends (``wait_event``; the
    wait is op ``i``'s share); ``host_waits`` ``{i: j}``: the host issues op ``i`` only after
    copy ``j`` ends (``Event.synchronize``). While a side copy runs, compute kernels progress
    at ``1 / (1 + k)`` of their speed, ``k`` from ``slowdown`` ``{direction: k}``
    (:func:`snsim.engine.contention.slowed_duration_s`).

    Examples
    --------
    >>> host_stream([1.0, 1.0, 1.0], [0.5, 0.5, 0.5])      # GPU-bound: the GPU never waits
    [1.5, 1.0, 1.0]
    >>> host_stream([0.1, 0.1], [1.0, 1.0])                 # CPU-bound: the host's pace
    [1.1, 1.0]
    >>> host_stream([1.0, 0.0, 1.0], [0.5, 0.25, 0.5], syncs={1})   # the host waits at op 1
    [1.5, 0.25, 1.5]
    >>> host_stream([1.0, 2.0, 0.25], [0.5, 3.0, 0.5], blocking=[False, True, False])
    [1.5, 3.0, 0.75]
    >>> host_stream([1.0, 0.5, 1.0], [0.5, 0.25, 0.5], synchronous={1: 0.0})  # issued at 0.75,
    [1.5, 0.5, 1.5]
    >>> host_stream([1.0, 0.5, 1.0], [0.5, 0.25, 0.5], synchronous={1: 0.25})  # back at 1.75
    [1.5, 0.5, 1.75]

    A D2H copy of 2 s after a 1 s kernel (it runs 1.0-3.0); the next kernel overlaps it, the
    host then waits for the copy (op 3, issued at 3.0), issues an H2D copy (3.0-4.0) and a
    kernel that waits for it on the compute stream (idle 2.0-4.0, runs 4.0-5.0):

    >>> host_stream([1.0, 2.0, 1.0, 0.0, 1.0, 1.0], [0.0] * 6, side={1: "d2h", 4: "h2d"},
    ...             host_waits={3: 1}, waits={5: 4})
    [1.0, 0.0, 1.0, 0.0, 0.0, 3.0]
    >>> host_stream([1.0, 2.0, 1.0], [0.0] * 3, side={1: "d2h"}, slowdown={"d2h": 0.25})
    [1.0, 0.0, 1.25]
    """
    from .engine.contention import slowed_duration_s
    out = []
    syncs = set(syncs)
    synchronous = synchronous or {}
    side, waits, host_waits = side or {}, waits or {}, host_waits or {}
    slowdown = slowdown or {}
    h = g = 0.0
    busy, copy_end = {}, {}
    prev_it = None
    for i, (t, c) in enumerate(zip(gpu_s, host_s)):
        it = iterations[i] if iterations is not None else None
        if it != prev_it:
            h = g = 0.0
            busy, copy_end = {}, {}
            prev_it = it
        if i in syncs:
            h = max(h, g)
        if i in host_waits:
            h = max(h, copy_end.get(host_waits[i], 0.0))
        if i in side:
            h += c
            start = max(h, g, busy.get(side[i], 0.0))
            busy[side[i]] = copy_end[i] = start + t
            out.append(0.0)
            continue
        g0 = g
        if i in waits:
            g = max(g, copy_end.get(waits[i], 0.0))
        if blocking is not None and blocking[i]:
            end = max(g, h) + max(t, c)
            h = end
        else:
            h += c
            start = max(g, h)
            if t and slowdown and busy:
                t = slowed_duration_s(t, start, busy, slowdown)
            end = start + t if (t or c) else g
        if i in synchronous:
            h = max(h, end) + synchronous[i]
        out.append(end - g0)
        g = end
    return out
