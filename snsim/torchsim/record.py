"""Record PyTorch training iterations at the aten-op level.

Three pieces work together:

:class:`Recorder`
    A ``TorchDispatchMode`` client that sees every aten op below autograd (forward, backward
    and the optimizer). It tracks device storages by identity: ``t.untyped_storage()`` returns
    the same Python object for the same storage while it lives (PyTorch preserves storage
    PyObjects), so a ``WeakIdKeyDictionary`` keyed on it names each storage once, in-place ops
    and views resolve to the storage they alias, and a ``weakref.finalize`` on it fires exactly
    when the allocator gets the memory back. The result is the exact ordered alloc/free event
    sequence of the iteration, each event tied to a *mark* (a step) and an op.
:class:`Instrument`
    Calls ``marker.mark(label, phase, kind)`` at every module forward boundary (global forward
    pre-/post-hooks), at every autograd node of the backward (node pre-hooks registered after
    the forward) and around the optimizer. The marks split the iteration into steps. With a
    :class:`Recorder` as marker the steps get their ops and storages; with an
    :class:`EventTimer` the same steps get CUDA-event times. Backward nodes are attributed to
    the forward step that created them through autograd sequence numbers.
:func:`train_step`
    The one training iteration every capture, prediction and execution runs: forward, cross
    entropy, backward, ``optimizer.step()``, ``optimizer.zero_grad(set_to_none=True)``. Between
    iterations only parameters, buffers, optimizer state and the input batch stay allocated.
"""
from __future__ import annotations

import bisect
import functools
import math
import weakref
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

from ..kernel_table import TF32_PREFIX, pow2_align
from ..program import ROOT_MODULE
from ..program_torch import CUDNN_SDPA_BACKWARD_EXTRA_BYTES
from .capture import OP_TAG
from .plans import modelled_release

try:
    from torch.autograd import _get_sequence_nr
except ImportError:  # pragma: no cover - very old torch
    _get_sequence_nr = None

try:
    from torch.utils.flop_counter import flop_registry as _FLOP_REGISTRY
except ImportError:  # pragma: no cover
    _FLOP_REGISTRY = {}


def leaves(tree):
    """The leaves of an aten call's arguments or outputs, in ``torch.utils._pytree.
    tree_leaves``'s order for the containers aten uses (tuples, ``torch.Size`` and return
    types included, lists, dicts by insertion order; ``None`` is a leaf): a plain recursion,
    several times faster than the registry walk on the recorder's path (every op of a fake
    run).

    >>> leaves(((1, None), [2, (3,)], {"a": 4}))
    [1, None, 2, 3, 4]
    """
    out = []
    stack = [tree]
    while stack:
        t = stack.pop()
        if isinstance(t, (tuple, list)):
            stack.extend(reversed(t))
        elif isinstance(t, dict):
            stack.extend(reversed(list(t.values())))
        else:
            out.append(t)
    return out


SETUP_MARK = -1
# ops whose CUDA kernels may take memory no tensor owns (cuDNN/cuBLAS workspaces, buffers):
# the recorder keeps their full signature so a capture's hidden allocations can be looked up
SIGNATURE_OPS = frozenset({"convolution", "convolution_backward", "mm", "addmm", "bmm",
                           "_batch_norm_with_update", "batch_norm_backward",
                           "native_batch_norm", "native_batch_norm_backward",
                           "cudnn_batch_norm", "cudnn_batch_norm_backward", "sum", "mean",
                           "nll_loss_forward", "nll_loss_backward", "_log_softmax",
                           "_log_softmax_backward_data", "max_pool2d_with_indices",
                           "max_pool2d_with_indices_backward", "avg_pool2d",
                           "avg_pool2d_backward", "max_pool3d_with_indices",
                           "max_pool3d_with_indices_backward", "avg_pool3d",
                           "avg_pool3d_backward", "index", "index_put", "_index_put_impl_",
                           "_adaptive_avg_pool2d",
                           "_adaptive_avg_pool2d_backward", "cat", "native_dropout",
                           "native_dropout_backward", "native_layer_norm",
                           "native_layer_norm_backward", "embedding_dense_backward",
                           "_scaled_dot_product_efficient_attention",
                           "_scaled_dot_product_efficient_attention_backward",
                           "_scaled_dot_product_flash_attention",
                           "_scaled_dot_product_flash_attention_backward",
                           "_scaled_dot_product_cudnn_attention",
                           "_scaled_dot_product_cudnn_attention_backward",
                           "_efficient_attention_forward", "_efficient_attention_backward",
                           "_flash_attention_forward", "_flash_attention_backward",
                           "_scaled_dot_product_flash_attention_for_cpu",
                           "_scaled_dot_product_flash_attention_for_cpu_backward",
                           "upsample_bilinear2d_backward", "upsample_nearest2d_backward",
                           "roll", "slice_backward", "select_backward"})


def cpu_attention_flops(name, args, causal=False):
    """FLOPs of a CPU recording's attention call (``_scaled_dot_product_flash_attention_for_cpu``
    and its backward, which torch's flop counter has no formula for), as calibrate counts its
    attention rows (``Calibrator.sdpa``): the flop counter's count of the CUDA kernels
    (``sdpa_flop_count``, its backward's), halved for a causal call (the kernels skip the
    masked tiles). Grouped-query keys and values count at the query's heads (each query head
    attends over the shared ones). ``causal``: :func:`causal_attention` of the call. 0 for
    other ops."""
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count
    if not name.startswith("_scaled_dot_product_flash_attention_for_cpu"):
        return 0
    backward = name.endswith("_backward")
    ts = args[:4] if backward else args[:3]
    if len(ts) < (4 if backward else 3) or not all(
            isinstance(t, torch.Tensor) and t.dim() == 4 for t in ts):
        return 0
    q = ts[1] if backward else ts[0]
    k, v = ts[-2], ts[-1]
    heads = [concrete_int(d) for d in q.shape]
    key = (heads[0], heads[1], concrete_int(k.shape[2]), concrete_int(k.shape[3]))
    value = (heads[0], heads[1], concrete_int(v.shape[2]), concrete_int(v.shape[3]))
    if backward:
        flops = sdpa_backward_flop_count(tuple(heads[:3]) + (value[3],), tuple(heads), key,
                                         value)
    else:
        flops = sdpa_flop_count(tuple(heads), key, value)
    return int(flops) // (2 if causal else 1)


def causal_attention(func, args, kwargs=None):
    """Whether CUDA attention call ``func(*args)`` (efficient, flash or cuDNN, forward or
    backward) has ``is_causal`` set: its kernels skip the masked tiles, so its FLOPs count
    half of torch's flop-counter formula, as calibrate counts its rows (``Calibrator.sdpa``,
    ``sdpa_grid``) and :func:`cpu_attention_flops` a CPU recording's. GPT-2 medium's causal
    backward (b4 h16 s1024 d64) read the table at the full count: 1.34 ms a call predicted,
    0.83 measured (traces/h200/profile_s15)."""
    names = [a.name for a in func._schema.arguments]
    if "is_causal" not in names:
        return False
    i = names.index("is_causal")
    value = (kwargs or {}).get("is_causal", args[i] if len(args) > i else False)
    return value is True


# ops whose CUDA kernel allocates its outputs in another order than it returns them: the
# output indices in allocation order. A recording of CPU (fake) tensors standing in for a CUDA
# run allocates them in this order; a CUDA recording is matched to the allocator's own trace.
# native_dropout: dropout_cuda (aten/src/ATen/native/cuda/Dropout.cu) makes the mask before
# the output
CUDA_ALLOC_ORDER = {"native_dropout": (1, 0)}

# ops whose CUDA kernel returns some outputs in host memory: the output indices. A recording of
# fake tensors standing in for a CUDA run does not count them as device storages.
# _scaled_dot_product_efficient_attention: _efficient_attention_forward
# (aten/src/ATen/native/transformers/cuda/attention.cu) makes the philox seed and offset with
# at::scalar_tensor / at::empty of dtype long and no device -- CPU tensors -- outside CUDA graph
# capture; no H200 capture or allocator history shows the two 8-byte device blocks per call a
# fake run made
CUDA_HOST_OUTPUTS = {"_scaled_dot_product_efficient_attention": (2, 3)}

def cudnn_grad_output_copy(args):
    """Bytes of the contiguous copy of ``grad_output`` that each cuDNN backward pass of a
    ``convolution_backward`` call (its aten args) makes, 0 when it makes none: cuDNN's
    backward-data and backward-filter (aten/src/ATen/native/cudnn/ConvShared.cpp) take
    ``grad_output.contiguous(memory_format)`` in the layout cuDNN suggests for the input and
    weight. DenseNet's convolutions get a channel slice of the concatenation's gradient (not
    contiguous): the H200 history of densenet161 b48 superneurons (traces/h200/plans_history)
    shows each pass of a dense layer's conv2 backward taking a 28,901,376 B copy of
    [48, 48, 56, 56] before its workspace and freeing it after. Depthwise convolutions run
    ATen's own kernels: none."""
    operands = _conv_backward_operands(args)
    if operands is None or operands[3]:     # a depthwise one runs ATen's own kernels
        return 0
    dy, x, w, _ = operands
    fmt = torch.channels_last if (x.is_contiguous(memory_format=torch.channels_last)
                                  and not x.is_contiguous()) or (
        w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous()) \
        else torch.contiguous_format
    if dy.is_contiguous(memory_format=fmt):
        return 0
    return concrete_int(dy.numel()) * dy.element_size()


def cudnn_grad_output_conversion(args):
    """Bytes of the copy cuDNN's convolution backward (``cudnn_convolution_backward``,
    aten/src/ATen/native/cudnn/ConvShared.cpp) makes of ``grad_output`` as it starts,
    ``grad_output.to(input.suggest_memory_format())``: one copy into the input's layout when
    grad_output suggests another (``to`` aliases when the suggested formats agree), held until
    both passes are done (the bias gradient then sums the original); 0 when it makes none.
    ConvNeXt's downsampling convolutions take channels-last inputs and a gradient with NCHW
    strides, its stem an NCHW image and a channels-last gradient: the H100 allocator history
    of convnext_small b48 bf16 (traces/h100/plans_history) shows each taking one copy of
    grad_output before grad_input, freed before grad_bias, where the per-pass model
    (:func:`cudnn_grad_output_copy`) placed one after each pass's gradient.

    A depthwise convolution makes the same one copy where grad_output's layout is not its
    backend's: ATen's own kernel (an NCHW input and weight) takes grad_output
    ``expect_contiguous()``, cuDNN's NHWC one (an input or weight that suggests channels-last,
    ``use_cudnn_depthwise``) converts it to channels-last. ``save_on_cpu(pin_memory=True)``
    hands ConvNeXt's depthwise backward an NCHW input beside a channels-last gradient:
    ``scripts/conv_layout_probe.py`` (traces/h100/conv_layout) shows one grad_output-sized
    block before its gradients in every such call (ConvNeXt-S's 7x7 at 192 channels, 28 x 28,
    batch 32: 9,633,792 B in fp16, 19,267,584 B in fp32), as the H200 history of ConvNeXt-S
    b32 fp16 ``cpu_offload`` (traces/h200/plans_history) shows in each block, and none where
    the layouts agree."""
    from torch._prims_common import suggest_memory_format
    operands = _conv_backward_operands(args)
    if operands is None or operands[0].numel() == 0:
        return 0
    dy, x, w, depthwise = operands
    if depthwise:
        nhwc = any(t.dim() == 4 and suggest_memory_format(t) == torch.channels_last
                   for t in (x, w))
        copied = not dy.is_contiguous(
            memory_format=torch.channels_last if nhwc else torch.contiguous_format)
    else:
        copied = suggest_memory_format(dy) != suggest_memory_format(x)
    return concrete_int(dy.numel()) * dy.element_size() if copied else 0


def conv_bias_sum_geometry(args):
    """:func:`snsim.torchsim.reduce_buffers.reduce_geometry` of the bias gradient of a
    ``convolution_backward`` call (its aten args) whose grad_output is not contiguous, else
    None. ``convolution_backward`` (aten/src/ATen/native/Convolution.cpp) sums grad_output
    over every dim but the channels with ATen's reduction, whatever backend ran the passes; on
    a channels-last grad_output that reduction splits each channel's inputs across blocks and
    takes a staging buffer and semaphores (:func:`~snsim.torchsim.reduce_buffers.
    reduction_buffers`). ``scripts/conv_layout_probe.py`` on the H100 (traces/h100/
    conv_layout): every call with a channels-last grad_output and a bias, over 96 calls of
    eight shapes (ConvNeXt's stem, depthwise and downsampling layers, a MobileNet depthwise,
    a dense 3x3), two batches and three dtypes, ended with exactly those two blocks (the stem
    at batch 36: 21,676,032 + 8 B), whatever the input's layout; a contiguous grad_output's
    sum took none at those shapes. The workspace tables end with them as workspaces where
    their calls were measured with a channels-last grad_output (the channels-last probe,
    captures); the NCHW probe's rows, measured with contiguous ones, lack them
    (:func:`snsim.torchsim.hidden.add_hidden` places them as the reduction either way)."""
    from .reduce_buffers import reduce_geometry
    if len(args) < 11 or not isinstance(args[0], torch.Tensor) or args[0].dim() < 3:
        return None
    mask = args[10]
    if not isinstance(mask, (list, tuple)) or len(mask) < 3 or not mask[2]:
        return None
    dy = args[0]
    if dy.numel() == 0 or dy.is_contiguous():
        return None
    return reduce_geometry(dy, [0] + list(range(2, dy.dim())), as_int=concrete_int)


def _conv_backward_operands(args):
    """``(grad_output, input, weight, depthwise)`` of a 2-D ``convolution_backward`` call (its
    aten args), else None; ``depthwise``: one input channel per group."""
    if len(args) < 10 or not all(isinstance(t, torch.Tensor) for t in args[:3]):
        return None
    dy, x, w = args[:3]
    if dy.dim() != 4 or x.dim() != 4 or not isinstance(args[9], int):
        return None
    return dy, x, w, 1 < args[9] == x.shape[1]


# reductions whose CUDA kernel (gpu_reduce_kernel) may take global-memory buffers
_REDUCTIONS = frozenset({"sum", "mean"})

#: ops whose kernel reads only some rows of an argument (by position): an embedding gathers
#: the looked-up rows of its table, never the whole table, so its bytes are the ids and the
#: rows (read and written as the output): what ``snsim calibrate`` keys its ``embedding`` rows
#: by (``Calibrator._embedding_one``). Counting GPT-2's 154 MB word table priced the lookup
#: of a 10 x 256 batch at 83 us on the H200 table; its kernel took 7 us on an H100
#: (traces/h100/profile_s73)
GATHERED_ARGS = {"embedding": 0}


@dataclass(frozen=True, slots=True)
class TempFree:
    """In :func:`cuda_temporaries`' ``before`` or ``after`` list: the kernel frees its
    ``index``-th temporary (0-based, in allocation order: ``before`` then ``after``) here,
    before it returns; the ones never freed this way are freed when it returns, the last made
    first."""
    index: int


#: rows a thread of CUDA's embedding backward sums (``NROWS_PER_THREAD``,
#: aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu), and the largest index count its
#: one-kernel path takes (``embedding_dense_backward_cuda``: ``num_indices <= 3072``)
_EMBEDDING_ROWS_PER_THREAD = 10
_EMBEDDING_DIRECT_MAX = 3072
#: cub's temporary storage as the H200 capture tables hold it (traces/h200: GPT-2's and the
#: GPT zoo's ``embedding_dense_backward`` rows, torch 2.11): ``DeviceRadixSort::SortPairs``
#: takes an alternate keys and values buffer and 20,991 B more at 16,384 indices, and 3,584 B
#: in all where 4,096 pairs sort on one tile (Swin-V2-T's ``index_put`` backward, its H200
#: allocator history: traces/h200/plans_history); its
#: ``DeviceSelect::UniqueByKey`` 1,279 B at 4,096 to 16,384 items, its ``DeviceScan::
#: ExclusiveSum`` 1,279 B at 4,096 and 8,192 items and 1,535 B at 16,384
_CUB_SORT_EXTRA_BYTES = 20_991
_CUB_ONE_TILE_SORT = (4096, 3_584)
_CUB_SMALL_BYTES = (1_279, 1_535)


def _cub_sort_pairs_bytes(n, item_bytes):
    """cub's storage for a ``radix_sort_pairs`` of ``n`` key/value pairs of ``item_bytes``
    each: one tile's, or an alternate keys and values buffer and the rest (above)."""
    if n <= _CUB_ONE_TILE_SORT[0]:
        return _CUB_ONE_TILE_SORT[1]
    return 2 * n * item_bytes + _CUB_SORT_EXTRA_BYTES


def embedding_backward_temporaries(args):
    """``(before, after)`` of ``embedding_dense_backward`` on CUDA (:func:`cuda_temporaries`),
    from torch 2.11's source: with more than 3,072 indices (or ``scale_grad_by_freq``)
    ``embedding_dense_backward_cuda`` sorts them -- ``sorted_indices``, ``orig_indices``, an
    ``arange`` of them and cub's radix-sort storage, the last two freed after the sort,
    before grad_weight is made -- and ``embedding_backward_cuda_kernel`` takes, after
    grad_weight, ``segment_offsets`` (one index each), a count, cub's ``unique_by_key``
    output keys and storage (freed at once), ``partials_per_segment`` and its offsets
    (``min(indices, rows)`` each), cub's exclusive-sum storage (freed at once), a count,
    ``partial_segment_offset`` and ``grad_weight_per_segment`` (``indices // 10 +
    min(indices, rows)`` of them, a float32 row each for 16-bit gradients). The H200 capture
    table of the GPT zoo at 16,384 indices (32,000 rows of 512) holds exactly these sizes in
    this order; GPT-2's, at 4,096 and 8,192 indices, exactly the kernel's part (its rows hold
    no sort: that capture gave those blocks to no call).

    >>> t = torch.empty(4, 4096, 512, device="meta")
    >>> i = torch.empty(4, 4096, dtype=torch.int64, device="meta")
    >>> before, after = embedding_backward_temporaries((t, i, 32000, -1, False))
    >>> [b for b in before if isinstance(b, int)], after[-2:]
    ([131072, 131072, 131072, 283135], [144176, 36909056])
    """
    grad, indices = args[0], args[1]
    if not (isinstance(grad, torch.Tensor) and isinstance(indices, torch.Tensor)) \
            or len(args) < 3:
        return (), ()
    n = concrete_int(indices.numel())
    by_freq = bool(args[4]) if len(args) > 4 else False
    if n <= _EMBEDDING_DIRECT_MAX and not by_freq:
        return (), ()
    ie = indices.element_size()
    width = concrete_int(grad.shape[-1]) if grad.dim() else 1
    segments = min(n, concrete_int(args[2]))
    partials = n // _EMBEDDING_ROWS_PER_THREAD + segments
    acc = 8 if grad.element_size() == 8 else 4
    scan = _CUB_SMALL_BYTES[0] if segments <= 8192 else _CUB_SMALL_BYTES[1]
    before = [n * ie, n * ie, n * ie, _cub_sort_pairs_bytes(n, ie), TempFree(3), TempFree(2)] + \
        ([n * ie] if by_freq else [])
    k = 4 + by_freq          # the index of the first temporary after grad_weight
    after = [n * ie, 8, n * ie, _CUB_SMALL_BYTES[0],
             TempFree(k + 3), TempFree(k + 2),
             segments * ie, segments * ie, scan, TempFree(k + 6), 8,
             partials * ie, partials * width * acc]
    return before, after


def index_put_temporaries(args):
    """``(before, after)`` of an accumulating ``index_put`` on CUDA (:func:`cuda_temporaries`;
    ``index_put_with_sort_kernel``, aten/src/ATen/native/cuda/Indexing.cu, torch 2.11): per
    index tensor its ``remainder`` by the dim's size and that times the dim's stride (the
    first product is the linear index; the remainder, and a later product once added into
    it, freed at once), the values copied contiguous unless they are, then the sorted and
    original indices, an ``arange`` of them and cub's radix-sort storage (freed at once); the
    rest freed when the call returns. autograd's ``IndexBackward0`` makes one (Swin's and
    MaxViT's relative position bias): the H200 history of Swin-V2-T b24 bf16 superneurons
    (traces/h200/plans_history) shows, in each window attention's backward, 32,768 B twice
    (4,096 int64), the values' 196,608 B copy ([4096, 24] bf16), 32,768 B three times and
    3,584 B. A non-accumulating call (TensorIterator's kernel) and a boolean mask (a
    data-dependent ``nonzero``) take none here.

    >>> t = torch.empty(225, 24, dtype=torch.bfloat16, device="meta")
    >>> i = torch.empty(4096, dtype=torch.int64, device="meta")
    >>> v = torch.empty(24, 4096, dtype=torch.bfloat16, device="meta").t()
    >>> before, after = index_put_temporaries((t, [i], v, True))
    >>> [a for a in after if isinstance(a, int)]
    [32768, 32768, 196608, 32768, 32768, 32768, 3584]
    """
    if len(args) < 4 or not args[3]:
        return (), ()
    self, indices, value = args[0], args[1], args[2]
    if not isinstance(self, torch.Tensor) or not isinstance(value, torch.Tensor):
        return (), ()
    idx = [(d, t) for d, t in enumerate(indices) if t is not None]
    if not idx or any(not isinstance(t, torch.Tensor) or t.dtype in (torch.bool, torch.uint8)
                      for _, t in idx):
        return (), ()
    n = math.prod(torch.broadcast_shapes(*(tuple(concrete_int(s) for s in t.shape)
                                          for _, t in idx)))
    if n == 0:
        return (), ()
    after = []

    def take(nbytes):       # an allocation: its index among the call's temporaries
        after.append(nbytes)
        return sum(1 for a in after if not isinstance(a, TempFree)) - 1

    for k, (_, t) in enumerate(idx):
        if t.dtype == torch.int32:
            take(concrete_int(t.numel()) * 8)       # to(kLong), kept with the indices
        rem = take(n * 8)                           # remainder by the dim's size
        prod = take(n * 8)                          # times the dim's stride
        after.append(TempFree(rem))
        if k:                                       # added into the first: the linear index
            after.append(TempFree(prod))
    indexed = {d for d, _ in idx}
    vals = n * math.prod(concrete_int(s) for d, s in enumerate(self.shape) if d not in indexed)
    if not (value.is_contiguous() and concrete_int(value.numel()) == vals):
        take(vals * value.element_size())
    for _ in range(3):                              # sorted, original indices, arange
        take(n * 8)
    after.append(TempFree(take(_cub_sort_pairs_bytes(n, 8))))
    return (), after


def efficient_attention_backward_temporaries(args):
    """``(before, after)`` of ``_scaled_dot_product_efficient_attention_backward`` on a CUDA
    fp32 call (:func:`cuda_temporaries`), from torch 2.11's source
    (aten/src/ATen/native/transformers/cuda/attention_backward.cu, ``_efficient_attention_
    backward``; mem_eff_attention/kernel_backward.h):

    * ``grad_out = grad_out_.contiguous()`` of the [B, M, H, K] view of the incoming gradient,
      made before grad_q/k/v and held to the end: a copy when that view is not contiguous
      (``nn.MultiheadAttention``'s ``attn_output.permute(2, 0, 1, 3).contiguous()`` gives such
      a gradient; GPT's ``y.transpose(1, 2).contiguous()`` does not);
    * the fp32 kernels do not compute delta themselves (``kKernelComputesDelta`` needs a
      16-bit dtype): ``(grad_out * out).sum(-1).transpose(-2, -1).contiguous()`` makes the
      product [B, M, H, Kv], its sum [B, M, H] and delta [B, H, M] (fp32), then frees the sum
      and the product (temporaries, last made first);
    * the kernel's workspace (``p.workspace_size()``), held while delta lives: fp32 output
      needs no gK/gV staging, only grad_q's, per batch and head ``ceil(M / BI) * ceil(K / BJ)``
      tiles of ``BI * BJ`` floats plus a 4-int lock header, where torch 2.11's sm80 fp32
      kernels (cutlassB dispatch order) are BI x BJ = 64 x 64 up to K = 64 and 128 x 64
      above (K > 64 read from the dispatch list only: no H200 run had such heads);
    * delta freed when the kernel has run (the launch lambda's local), then the workspace,
      then the grad_out copy.

    The H200 history of transformer_encoder b32 (traces/h200/plans_history) shows exactly
    this order and these sizes (32 MiB copy, 32 MiB product, 512 KiB sum and delta,
    33,587,200 B workspace); the workspace formula gives every fp32 efficient-attention
    backward of the H200 captures (ViT-B/16 M=197: 50,380,800 B; GPT M=512/1024). 16-bit
    calls (the kernel computes delta, and its gK/gV staging depends on the kernel picked)
    keep the capture tables' workspaces: ``((), ())``.
    """
    import torch
    grad_out, query, value = args[0], args[1], args[3]
    if not all(isinstance(t, torch.Tensor) and t.dim() == 4 for t in (grad_out, query, value)) \
            or query.dtype != torch.float32:
        return (), ()
    b, heads, m, k = (concrete_int(v) for v in query.shape)
    kv = concrete_int(value.shape[-1])
    fp32 = 4
    before = [] if grad_out.transpose(1, 2).is_contiguous() else [
        concrete_int(grad_out.numel()) * grad_out.element_size()]
    first = len(before)
    block_i = 64 if max(k, kv) <= 64 else 128
    block_j = 64
    tiles = -(-m // block_i) * -(-k // block_j)
    per_head = -(-tiles * (block_i * block_j + 4) // 4) * 4   # aligned to 128 bits
    product, row_sums, delta = b * m * heads * kv * fp32, b * m * heads * fp32, b * heads * m * fp32
    workspace = b * heads * per_head * fp32
    after = [product, row_sums, delta, TempFree(first + 1), TempFree(first), workspace,
             TempFree(first + 2)]
    return before, after




def cudnn_attention_backward_temporaries(args):
    """``(before, after)`` of ``_scaled_dot_product_cudnn_attention_backward`` on CUDA
    (:func:`cuda_temporaries`): the cuDNN graph's workspace, taken after dQ, dK and dV and
    freed before the call returns (aten/src/ATen/native/cudnn/MHA.cpp, ``run_cudnn_SDP_bprop``:
    ``at::empty`` of the graph's ``get_workspace_size()``). cuDNN's flash-attention backward
    accumulates dQ in fp32 and keeps fp32 row sums of dO * O, so the workspace is
    ``B * H * S_q * (D + 1) * 4`` bytes plus :data:`CUDNN_SDPA_BACKWARD_EXTRA_BYTES`, for
    query ``[B, H, S_q, D]``. The H200 allocator histories (torch 2.11, cuDNN 9.19;
    traces/h200/plans_history) hold exactly that after the three gradients in every
    attention backward: ViT-B/16 b64 bf16 (12 x 64 x 197 x 65 x 4 + 256 = 39,337,216 B),
    ViT-B/32 b128 bf16 (19,968,256 B) and GPT-2 b16 s512 fp16 (causal: 25,559,296 B).
    No fake kernel makes it and no capture's table held it."""
    import torch
    query = args[1] if len(args) > 1 else None
    if not isinstance(query, torch.Tensor) or query.dim() != 4:
        return (), ()
    b, heads, m, d = (concrete_int(v) for v in query.shape)
    if b * heads * m * d == 0:
        return (), ()
    fp32 = 4
    workspace = b * heads * m * (d + 1) * fp32 + CUDNN_SDPA_BACKWARD_EXTRA_BYTES
    return (), [workspace, TempFree(0)]


def kernel_copies(name, args):
    """The contiguous copies op ``name``'s CUDA kernel makes of its non-contiguous tensor
    arguments, each as a call of its own: ``((tensor, passes), ...)``. A copy is a kernel (a
    strided clone's) and a dispatcher call from C++, which a fake (meta) kernel never makes
    and the kernel table, timed on contiguous tensors, does not hold.

    * LayerNorm (aten/src/ATen/native/cuda/layer_norm_kernel.cu): ``layer_norm_cuda`` copies
      a non-contiguous input (``input.expect_contiguous()``); ``layer_norm_backward_cuda`` a
      non-contiguous input and dY. torchvision's ViT adds its attention's output, transposed
      back to batch-first, to its residual: the sum keeps the transposed strides and 24 of
      ViT-B's 25 LayerNorms copy their input (``layer_norm>native_layer_norm>contiguous>clone``
      on the H200, traces/h200/probe_s16/profile_ops.csv.gz); Swin's and ConvNeXt's run on
      permuted tensors.
    * cuDNN's convolution backward: a grad_output whose suggested memory format is not its
      input's is converted once, before any gradient (:func:`cudnn_grad_output_conversion`);
      else each pass (data, weight) copies a non-contiguous grad_output
      (:func:`cudnn_grad_output_copy`).

    Each entry is ``(tensor, count, when)``: ``when`` ``"call"`` for one copy made as the call
    starts and freed when cuDNN's passes are done, ``"pass"`` for one per pass, each after
    that pass's gradient (:func:`snsim.torchsim.hidden.add_hidden` places them).
    """
    if name in ("native_layer_norm", "native_layer_norm_backward"):
        idx = (0,) if name == "native_layer_norm" else (1, 0)
        return tuple((args[i], 1, "pass") for i in idx if _copied_arg(args, i))
    if name != "convolution_backward":
        return ()
    mask = args[10] if len(args) > 10 and isinstance(args[10], (list, tuple)) else (1, 1)
    passes = sum(1 for m in mask[:2] if m)
    if passes and cudnn_grad_output_conversion(args):
        return ((args[0], 1, "call"),)
    if passes and cudnn_grad_output_copy(args):
        return ((args[0], passes, "pass"),)
    return ()


def _copied_arg(args, i):
    """Whether a kernel that makes its ``i``-th argument contiguous copies it: a tensor with
    elements, not contiguous."""
    t = args[i] if i < len(args) else None
    return isinstance(t, torch.Tensor) and not t.is_contiguous() and t.numel() > 0


def copy_calls(name, args):
    """:func:`kernel_copies` as the recorder keeps them with the op (its ninth field): one
    ``(signature, bytes read and written, layout, when)`` per copy call, the layout as
    :func:`copy_layout` names a clone of that tensor, ``when`` as :func:`kernel_copies` says
    (a recording made before it has three fields: ``"pass"``)."""
    out = []
    for t, count, when in kernel_copies(name, args):
        call = (signature("clone", (t,), {}), 2 * concrete_int(t.numel()) * t.element_size(),
                copy_layout("clone", (t,)), when)
        out += [call] * count
    return tuple(out)


# the first torch release whose ``_safe_softmax`` writes ``where`` into the softmax it made
# (pytorch PR #139613, fixing #139612, reported on 2.6.0a0): :func:`cuda_temporaries`
SAFE_SOFTMAX_IN_PLACE_FROM = (2, 6)


def cuda_temporaries(name, args, device_type):
    """Bytes of the storages op ``name``'s CUDA kernel makes for itself and frees before it
    returns, which a fake (meta) kernel never makes: ``(before, after)``, allocated before
    the op's outputs and after them. Where the kernel decides from strides, only a fake run
    (or this function) can tell; a table of workspaces keyed by shapes cannot.

    * LayerNorm (aten/src/ATen/native/cuda/layer_norm_kernel.cu): layer_norm_cuda copies a
      non-contiguous input (``input.expect_contiguous()``) before Y, mean and rstd;
      layer_norm_backward_cuda copies a non-contiguous input before dX, dgamma and dbeta and a
      non-contiguous dY (``dY.contiguous()`` in LayerNormBackwardKernelImpl) after them.
      Swin's and ConvNeXt's LayerNorms run on permuted (channels-last views of NCHW) tensors:
      the H200 history of swin_s b32 bf16 checkpoint (traces/h200/plans_history) shows the
      stem's LayerNorm taking three 38,535,168 B blocks (the fp32 cast, the copy, Y) where the
      fake run made two.
    * ``roll`` over k > 1 dims (roll_common, aten/src/ATen/native/TensorTransformations.cpp)
      rolls the first dim into a new tensor and rolls that over the rest: k - 1
      intermediates of the input's size, each freed when the call that made it returns (the
      same history: Swin's shifted windows, ``torch.roll(x, shifts, dims=(1, 2))``, take two
      38,535,168 B blocks, the fake run one).
    * fp32 ``_scaled_dot_product_efficient_attention_backward``: the grad_out copy, delta's
      temporaries and the kernel's workspace, some freed inside the kernel (``after`` holds
      :class:`TempFree` entries; :func:`efficient_attention_backward_temporaries`).
    * ``_scaled_dot_product_cudnn_attention_backward`` (fp16/bf16 attention on Hopper): the
      cuDNN graph's workspace after the three gradients, freed inside the call
      (:func:`cudnn_attention_backward_temporaries`).
    * ``_softmax_backward_data`` (softmax_backward_cuda_out, aten/src/ATen/native/cuda/
      SoftMax.cu) computes ``tmp = grad * output`` into a new tensor after grad_input and
      hands it to the kernel: one temporary of the gradient's size in the product's dtype.
      The H200 allocator histories with C++ stacks (``scripts/alloc_frames_probe.py``,
      traces/h200/alloc_frames) show it in every softmax backward of Swin-T, Swin3D-T and
      MViT-V2-S (``mul`` inside ``structured_softmax_backward_cuda_out``): the fp32
      attention-sized block of their backward the fake run did not make. ``log_softmax``'s
      backward takes none.
    * ``_safe_softmax`` (the math composite of attention, aten/src/ATen/native/transformers/
      attention.cpp) is a kernel of its own to a fake run, a composite to CUDA. From torch
      2.6 (pytorch#139613, the peak-memory regression of #139612) the softmax is the output:
      ``isneginf`` (bool, the input's size), its ``all`` over the row and a zero scalar follow
      it, and ``where_out`` writes into the softmax in place; the three are freed as it
      returns. The H200 captures made with the stamped alignment (traces/h200/t5,
      traces/h200/align_s59: T5-small and SmolLM2-135M fp32) hold exactly these blocks after
      each softmax (SmolLM2 b6: 54 MiB softmax, 13.5 MiB test, 27,648 B rows, 4 B). Torch 2.5
      compared with a -inf scalar and made a new output in ``where``: the softmax, the
      scalar, the test, the rows and the zero before the output.
    """
    import torch
    if device_type == "cuda":
        return (), ()

    def nbytes(t):
        return concrete_int(t.numel()) * t.element_size()

    if name == "native_layer_norm":
        return ([nbytes(args[0])] if _copied_arg(args, 0) else []), ()
    if name == "native_layer_norm_backward":   # the input's copy before dX, dY's after
        return (([nbytes(args[1])] if _copied_arg(args, 1) else []),
                ([nbytes(args[0])] if _copied_arg(args, 0) else []))
    if name == "roll" and len(args) > 2 and isinstance(args[0], torch.Tensor):
        dims = args[2] if isinstance(args[2], (list, tuple)) else [args[2]]
        return [nbytes(args[0])] * max(0, len(dims) - 1), ()
    if name == "_scaled_dot_product_efficient_attention_backward" and len(args) > 5:
        return efficient_attention_backward_temporaries(args)
    if name == "_scaled_dot_product_cudnn_attention_backward":
        return cudnn_attention_backward_temporaries(args)
    if name == "embedding_dense_backward":
        return embedding_backward_temporaries(args)
    if name in ("index_put", "index_put_", "_index_put_impl_"):
        return index_put_temporaries(args)
    if name == "_safe_softmax" and args and isinstance(args[0], torch.Tensor):
        x = args[0]
        dim = args[1] if len(args) > 1 else -1
        dtype = args[2] if len(args) > 2 and args[2] is not None else x.dtype
        numel = concrete_int(x.numel())
        if not numel:
            return (), ()
        rows = numel // concrete_int(x.shape[dim])
        if modelled_release() < SAFE_SOFTMAX_IN_PLACE_FROM:
            return [numel * dtype.itemsize, dtype.itemsize, numel, rows, dtype.itemsize], ()
        return (), [numel, rows, dtype.itemsize]
    if name == "_softmax_backward_data" and len(args) > 1 \
            and all(isinstance(t, torch.Tensor) for t in args[:2]):
        grad, output = args[0], args[1]
        product = torch.promote_types(grad.dtype, output.dtype)
        numel = concrete_int(grad.numel())
        return (), ([numel * product.itemsize] if numel else [])
    return (), ()


def cuda_output_layout(name, out, device_type):
    """``out`` of op ``name`` with the strides its CUDA kernel gives where a fake (meta) kernel
    gives others, so that what a fake run does next is what a CUDA step does.

    * ``native_layer_norm_backward``: layer_norm_backward_cuda makes dX
      ``empty_like(X, LEGACY_CONTIGUOUS_MEMORY_FORMAT)`` (the CPU kernel too); the meta kernel
      gives it dY's strides. Swin's classifier pools a permuted view of the last stage
      (``MeanBackward`` makes an NCHW gradient), so the fake run gave every LayerNorm backward
      of that stage a permuted dX, and each layer after it a copy the H200 does not make (the
      history of swin_v2_t b24 bf16 superneurons, traces/h200/plans_history: a float32 copy of
      dY in each of its LayerNorm backwards and a bfloat16 copy in its MLP's backward, 3.6 and
      1.8 MB at batch 24, none of them there).
    """
    if device_type == "cuda":
        return out
    if name == "native_layer_norm_backward" and isinstance(out, (tuple, list)) and out \
            and isinstance(out[0], torch.Tensor) and not out[0].is_contiguous():
        return (torch.empty_like(out[0], memory_format=torch.contiguous_format), *out[1:])
    return out


#: Kernels a CPU recording runs where CUDA runs another, unmodelled one: the recurrent layers
#: (nn.LSTM, nn.GRU, nn.RNN) run oneDNN's RNN on the CPU, where CUDA runs cuDNN's
#: (``_cudnn_rnn``: a flattened weight buffer and a reserve space kept for backward, whose size
#: torch's meta kernel does not know either). Their memory and time in a prediction are the
#: CPU kernel's: ``snsim predict`` says so (``cpu_only_ops``).
CPU_ONLY_OPS = {
    "mkldnn_rnn_layer": "CUDA runs cuDNN's RNN (_cudnn_rnn: a reserve space kept for "
                        "backward), which snsim does not model",
    "mkldnn_rnn_layer_backward": "CUDA runs cuDNN's RNN backward, which snsim does not model",
}
_DATA_DEPENDENT_OPS = frozenset({"_local_scalar_dense", "nonzero", "masked_select", "unique",
                                 "_unique2", "unique_consecutive", "repeat_interleave"})


def concrete_int(v):
    """``int(v)``; a size that depends on a data-dependent (unbacked) symbol takes its upper
    bound (``nonzero`` of n elements: n)."""
    if isinstance(v, int):
        return v
    try:
        return int(v)
    except Exception:
        node = getattr(v, "node", None)
        upper = node.shape_env.bound_sympy(node.expr).upper if node is not None else None
        if upper is None or not upper.is_finite:
            raise
        return int(upper)


def signature(name, args, kwargs):
    """A string naming an op call by its name, tensor shapes/dtypes and other arguments."""
    parts = [name]
    for a in leaves((args, kwargs)):
        if isinstance(a, torch.Tensor):
            parts.append(f"{str(a.dtype)[6:]}{list(a.shape)}")
        elif isinstance(a, (int, float, bool, str)) or a is None:
            parts.append(repr(a))
    return " ".join(parts)


def conv_layout(name, args):
    """``"channels_last"`` when convolution call ``name(*args)`` runs cuDNN's NHWC engines,
    else ``""``: as ``cudnn_conv_suggest_memory_format`` (aten/src/ATen/native/ConvUtils.h),
    when its input or its weight suggests channels-last (``convolution_backward``'s are its
    second and third arguments). A network that permutes NHWC activations back (ConvNeXt's
    blocks) feeds its convolutions channels-last without asking for it; cuDNN's NHWC kernels
    run at other rates than its NCHW ones (:data:`snsim.kernel_table.LAYOUT_FAMILIES`)."""
    if name not in ("convolution", "convolution_backward"):
        return ""
    from torch._prims_common import suggest_memory_format
    ts = [a for a in args[(1 if name == "convolution_backward" else 0):][:2]
          if isinstance(a, torch.Tensor)]
    return "channels_last" if any(
        t.dim() in (4, 5) and suggest_memory_format(t) != torch.contiguous_format
        for t in ts) else ""


# copies whose CUDA kernel depends on the source's strides (kernel_table.STRIDED_FAMILIES)
STRIDED_COPY_OPS = frozenset({"clone", "cat", "_to_copy"})


def copy_layout(name, args):
    """How copy ``name(*args)`` reads its tensors: ``"permuted"`` when one's innermost
    stride is not 1 (an NCHW<->NHWC permute, a transpose of the last dims), ``"strided"`` when
    one is otherwise not contiguous (a chunk or narrow view, a transpose of outer dims: the
    channel shuffle's), else ``""``. A contiguous copy runs ATen's vectorized kernels
    (``vectorized_elementwise_kernel``, cat's ``CatArrayBatchedCopy_contig`` / ``_aligned16``);
    a strided one the generic indexing ``elementwise_kernel`` and ``CatArrayBatchedCopy``,
    at a fraction of the bandwidth (ShuffleNetV2's channel shuffle and chunk/cat on the H200,
    traces/h200/profile/heldout5_*). Only for :data:`STRIDED_COPY_OPS`."""
    if name not in STRIDED_COPY_OPS:
        return ""
    out = ""
    for t in leaves(args):
        if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.is_contiguous():
            continue
        if t.numel() <= 1:
            continue
        inner = [st for sz, st in zip(t.shape, t.stride()) if sz > 1]
        if inner and inner[-1] != 1:
            return "permuted"
        out = "strided"
    return out


MATMUL_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm"})


def matmul_math(name, args):
    """:data:`snsim.kernel_table.TF32_PREFIX` for matmul ``name`` on fp32 operands while the
    float32 matmul precision is not ``highest`` (what ``torch.backends.cuda.matmul.allow_tf32``
    reads), else ``""``; a recording on the CPU keeps what the CUDA call would have run."""
    if name not in MATMUL_OPS or torch.get_float32_matmul_precision() == "highest":
        return ""
    mats = [a for a in args if isinstance(a, torch.Tensor) and a.dim() >= 2]
    return TF32_PREFIX if mats and all(t.dtype == torch.float32 for t in mats) else ""


def matmul_layout(name, args, outs):
    """``"aligned"`` when every matrix operand and the output of matmul ``name(*args)`` has a
    leading dimension (its non-unit stride) and a storage offset that are multiples of 8
    elements, else ``"unaligned:N"``, N the largest of 4, 2 and 1 that divides them all (the
    vector width cuBLAS's kernels can load; ``"unaligned:1"`` for an operand with no unit
    stride), or ``""`` for other ops: what cuBLAS's fastest kernels need
    (:func:`snsim.kernel_table.matmul_class`, :func:`snsim.kernel_table.matmul_align`). A 1-D
    operand (addmm's bias) is left out. After a ``/`` the two operands' form, ``n`` or ``t``
    each (a transposed view: :func:`_matrix_form`), which picks cuBLAS's kernel
    (``"aligned/nt"``: a Linear's forward, ``x @ W.t()``)."""
    if name not in MATMUL_OPS:
        return ""
    out = next((t for t in outs if isinstance(t, torch.Tensor)), None)
    mats = [a for a in args if isinstance(a, torch.Tensor) and a.dim() >= 2]
    form = "/" + "".join(_matrix_form(t) for t in mats[-2:]) if len(mats) >= 2 else ""
    align = 8
    for t in mats + [out]:
        if t is None or t.dim() < 2:
            continue
        rows, cols = t.stride()[-2:]
        ld = rows if cols == 1 else cols if rows == 1 else None
        if ld is None:
            return "unaligned:1" + form
        align = pow2_align((concrete_int(ld), concrete_int(t.storage_offset())), cap=align)
    return ("aligned" if align == 8 else f"unaligned:{align}") + form


def _matrix_form(t):
    """``"t"`` for a matmul operand that is a transposed view (unit stride on its rows, as a
    Linear's forward reads its weight), else ``"n"``."""
    rows, cols = t.stride()[-2:]
    return "t" if cols != 1 and rows == 1 else "n"


def _dense(t):
    """Whether ``t``'s elements fill its storage span without gaps or overlap, in some order
    of its dims (``TensorImpl::is_non_overlapping_and_dense``)."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def elementwise_layout(name, args, outs):
    """``"generic:<dtype>"`` when elementwise op ``name(*args)`` (a family of
    :data:`snsim.kernel_table.ELEMENTWISE_FAMILIES`) runs ATen's generic indexing kernel or its
    unrolled casting one, ``"generic_cast:<dtype>"`` when it runs the casting indexing kernel (a
    broadcast operand of another dtype), else ``""``. TensorIterator takes the vectorized kernel
    only when every operand is dense in the output's shape and strides
    (``TensorIteratorBase::is_contiguous``, after it orders the dims alike for all of them: a
    channels-last op whose operands are all channels-last stays vectorized); an operand of
    another shape (broadcast) or other strides (a view, a stride-0 expand) sends it to
    ``elementwise_kernel`` with offset calculators. An operand of another dtype than the output
    (autocast's bf16 linear output added to an fp32 residual or mask) needs dynamic casting,
    which takes no vectorized kernel either (``gpu_kernel_impl``:
    ``unrolled_elementwise_kernel`` with per-element casts where contiguous, the casting
    ``elementwise_kernel`` where not). The H100 profile of GPT-Neo-125M b8 s1024 bf16
    (traces/h100/profile_s60) ran its contiguous bf16 + fp32 adds at 2.25 TB/s, as calibrate's
    generic rows run on that GPU (2.3-2.4 TB/s in fp32), where contiguous same-dtype adds stream
    at about 3; its broadcast mask add (bf16 scores + an fp32 mask) at 1.16 TB/s, the casting
    indexing kernel (:data:`snsim.kernel_table.GENERIC_CAST_BYTES_PER_S`). Operands of one
    element are left out: CPU scalars are the kernel's arguments, not operands."""
    from ..kernel_table import ELEMENTWISE_FAMILIES, family_of
    if family_of(name) not in ELEMENTWISE_FAMILIES:
        return ""
    out = next((t for t in outs if isinstance(t, torch.Tensor)), None)
    if out is None or out.numel() <= 1:
        return ""
    dense = _dense(out)
    scattered = cast = False
    for t in leaves(args):
        if not isinstance(t, torch.Tensor) or t.numel() <= 1:
            continue
        scattered |= not dense or t.shape != out.shape or t.stride() != out.stride()
        cast |= t.dtype != out.dtype
    if scattered and cast:
        return f"generic_cast:{str(out.dtype)[6:]}"
    return f"generic:{str(out.dtype)[6:]}" if scattered or cast else ""


def reduction_layout(name, args):
    """``"rows"`` when ``sum(x, dims)`` sums the dims that vary slowest in ``x``'s memory and
    keeps the innermost (a dense ``x`` read as a ``[R, D]`` matrix summed over its rows: a
    Linear's grad_bias, a channels-last tensor summed over all but its channels), else
    ``""``. ATen's reduce kernel then reads ``D`` columns in parallel and splits the rows
    across blocks, at a rate set by ``D`` and ``R`` (:data:`snsim.kernel_table.ROW_FAMILIES`,
    family ``sum_rows``); an NCHW tensor summed over ``(0, 2, 3)`` keeps a middle dim and
    stays ``sum``."""
    if name != "sum" or len(args) < 2 or not isinstance(args[0], torch.Tensor):
        return ""
    x, dims = args[0], args[1]
    if dims is None or x.dim() < 2 or not _dense(x):
        return ""
    red = {int(d) % x.dim() for d in (dims if isinstance(dims, (list, tuple)) else [dims])}
    if not red or len(red) == x.dim():
        return ""
    # dims of more than one element, slowest-varying first
    order = [i for _, i in sorted(((x.stride(i), i) for i in range(x.dim())
                                   if x.shape[i] != 1), reverse=True)]
    seen_kept = False
    for i in order:
        if i in red and seen_kept:
            return ""
        seen_kept = seen_kept or i not in red
    return "rows" if seen_kept and any(i in red for i in order) else ""


class _NullMarker:
    def mark(self, label, phase, kind=""):
        pass


class Recorder:
    """Record ops and storage lifetimes while :meth:`active`.

    Parameters
    ----------
    device_type : str
        Only storages on this device type are tracked (``"cuda"`` for a real capture,
        ``"cpu"`` under a CPU ``FakeTensorMode``).
    track_pointers : bool
        Keep each storage's ``data_ptr()`` (real tensors only), to align with the allocator's
        own trace; on CUDA every aten call also stamps the allocator's trace entries made
        inside it with :data:`OP_TAG` and its call number (:attr:`op_of_call`).
    values : bool
        A fake mode that propagates real values (``predict``'s values attempt): an op's
        outputs keep a value only where :func:`known_values` says they are known.

    Attributes
    ----------
    storages : list of [nbytes, data_ptr, name]
    events : list of (mark, "a" | "f", storage id, op index)
        In the order they happened. Storages registered before any mark carry mark -1.
    marks : list of (label, phase, kind, iteration)
    ops : list of (mark, op name, read storage ids, new storage ids, flops, bytes, signature,
        layout, copy calls)
        The copy calls (:func:`copy_calls`): the contiguous copies of its arguments the op's
        CUDA kernel makes (a fake run's; a CUDA run's profiler-free recording has none); their
        time is :func:`snsim.torchsim.opcost.copy_ops`', the memory of cuDNN backward's
        grad_output copies :func:`snsim.torchsim.hidden.add_hidden`'s.
    op_of_call : list of int
        With ``track_pointers``: the op index of each aten call in the order the calls
        began (a nested call ends, and is recorded, before the call around it), for the
        allocator trace entries tagged ``OP_TAG + str(call number)``.
    saved : set of storage ids that autograd saved for backward (pack hook)
    host_events : list of (op index, mechanism, phase, count)
        Host work a memory plan adds that is no aten op (:meth:`host_event`): before op
        ``op index`` is issued, ``count`` units of ``mechanism`` in phase ``phase``.
    nested_ops : set of op indexes
        Ops the dispatcher issued from C++ inside another op's call, no Python between them:
        autocast's casts (:func:`snsim.torchsim.amp._nested_cast`).
    accumulation_ops : set of op indexes
        Ops autograd's engine ran after a backward node returned and before the next one
        began (an :class:`Instrument`'s node post-hooks say when): the sums of gradients
        that reach one input from two consumers (``InputBuffer::accumulate``), which
        :func:`inplace_accumulation` makes as a run without a dispatch mode makes them.
    view_sums : set of op indexes
        The ``add``s among :attr:`accumulation_ops` whose first input, the buffer autograd
        sums into, is a view or not dense: summed out of place on a GPU too.
    temp_ops : set of op indexes
        Ops of a fake run given the temporaries their CUDA kernels make
        (:func:`cuda_temporaries`), as storages named ``cuda_temp``.
    reductions : dict
        Op index -> geometry (:func:`snsim.torchsim.reduce_buffers.reduce_geometry`) of a fake
        run's ``sum`` and ``mean`` calls, whose CUDA kernel's buffers depend on the GPU
        (:func:`snsim.torchsim.hidden.add_hidden` adds them).
    """

    def __init__(self, *, device_type, track_pointers=False, values=False):
        self.device_type = device_type
        self.track_pointers = track_pointers
        self.values = values
        self._sid = WeakIdKeyDictionary()
        self.storages = []
        self.events = []
        self.marks = []
        self.ops = []
        self.op_of_call = []
        self.saved = set()
        self.saved_views = set()     # saved storages packed at least once as a part or a
        #                              non-contiguous view of it (a permuted conv output)
        self.released = {}           # saved storage id -> (mark, ops so far) where forward
        #                              dropped the last tensor object on the storage
        self._alive = {}             # storage id -> live tensor objects on it (_hold)
        self._packing = False        # inside pack: its alias is autograd's, not forward's
        self.host_events = []
        self.nested_ops = set()      # op indexes issued from C++ inside another op's call
        self.accumulation_ops = set()
        self.temp_ops = set()        # ops given cuda_temporaries storages
        self.reductions = {}         # op index -> reduce_buffers.reduce_geometry (fake runs)
        self.layer_norm_backwards = {}   # op index -> reduce_buffers.layer_norm_backward_geometry
        self.bias_sums = {}          # op index -> reduce_geometry of a convolution backward's
        #                              bias gradient, when its grad_output is not contiguous
        self.view_sums = set()       # accumulation_ops whose buffer is a view or not dense
        self.accumulating = False    # between a backward node's end and the next node's start
        self.excluded = set()
        self.data_dependent = []      # (op name, mark label) of data-dependent ops met
        self.cpu_only = []            # (op name, mark label) of CPU_ONLY_OPS met
        self.cur = SETUP_MARK
        self.iteration = -1
        self._mode = None

    # -- marks -----------------------------------------------------------------------------
    def _mark_label(self):
        """The label of the mark the recorder is in (``<setup>`` before the first)."""
        return self.marks[self.cur][0] if 0 <= self.cur < len(self.marks) else "<setup>"

    def mark(self, label, phase, kind=""):
        self.marks.append((label, phase, kind, self.iteration))
        self.cur = len(self.marks) - 1
        self.accumulating = False

    def begin_iteration(self):
        self.iteration += 1

    # -- storages --------------------------------------------------------------------------
    def _tracked(self, t):
        return isinstance(t, torch.Tensor) and t.device.type == self.device_type

    def sid_of(self, t):
        """Storage id of tensor ``t`` (None if untracked)."""
        if not self._tracked(t):
            return None
        return self._sid.get(t.untyped_storage())

    def _new(self, st, name, op):
        sid = len(self.storages)
        ptr = st.data_ptr() if self.track_pointers else 0
        self.storages.append([concrete_int(st.nbytes()), ptr, name])
        self._sid[st] = sid
        f = weakref.finalize(st, self._free, sid)
        f.atexit = False
        self.events.append((self.cur, "a", sid, op))
        return sid

    def _free(self, sid):
        self.events.append((self.cur, "f", sid, len(self.ops)))

    def _temp(self, nbytes, op):
        """A storage op ``op``'s CUDA kernel makes for itself (:func:`cuda_temporaries`):
        allocated now; the caller records its free."""
        sid = len(self.storages)
        self.storages.append([nbytes, 0, "cuda_temp"])
        self.events.append((self.cur, "a", sid, op))
        return sid

    def register(self, t, name):
        """Track tensor ``t``'s storage if new (parameters, buffers, inputs made earlier)."""
        if not self._tracked(t):
            return None
        st = t.untyped_storage()
        sid = self._sid.get(st)
        if sid is None and concrete_int(st.nbytes()) > 0:
            sid = self._new(st, name, -1)
        return sid

    def exclude(self, t):
        """Drop ``t``'s storage from the recording (a host tensor a fake device cannot tell)."""
        sid = self.sid_of(t)
        if sid is not None:
            self.excluded.add(sid)

    # -- ops -------------------------------------------------------------------------------
    def _op(self, func, args, kwargs, out):
        op_index = len(self.ops)
        reads = []
        nbytes = 0
        name = func._overloadpacket.__name__
        gathered = args[GATHERED_ARGS[name]] if name in GATHERED_ARGS else None
        for t in leaves((args, kwargs)):
            if isinstance(t, torch.Tensor):
                if t is not gathered:
                    nbytes += concrete_int(t.numel()) * t.element_size()
                if t.device.type == self.device_type:
                    sid = self._sid.get(t.untyped_storage())
                    if sid is not None and sid not in reads:
                        reads.append(sid)
        new = []
        outs = leaves(out)
        order = CUDA_ALLOC_ORDER.get(name) if self.device_type != "cuda" else None
        before, after = cuda_temporaries(name, args, self.device_type)
        if name in _REDUCTIONS and self.device_type != "cuda" and args \
                and isinstance(args[0], torch.Tensor):
            from .reduce_buffers import reduce_geometry
            dims = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple, int)) \
                and not isinstance(args[1], bool) else None
            geometry = reduce_geometry(args[0], dims, as_int=concrete_int)
            if geometry is not None:
                self.reductions[op_index] = geometry
        if name == "convolution_backward" and self.device_type != "cuda":
            geometry = conv_bias_sum_geometry(args)
            if geometry is not None:
                self.bias_sums[op_index] = geometry
        if name == "native_layer_norm_backward" and self.device_type != "cuda":
            from .reduce_buffers import layer_norm_backward_geometry
            geometry = layer_norm_backward_geometry(args, as_int=concrete_int)
            if geometry is not None:
                self.layer_norm_backwards[op_index] = geometry
        made = []
        freed = set()
        for item in before:
            if isinstance(item, TempFree):   # freed inside the kernel, before its outputs
                freed.add(made[item.index])
                self.events.append((self.cur, "f", made[item.index], op_index))
            else:
                made.append(self._temp(item, op_index))
        for t in ([outs[i] for i in order] if order and len(outs) == len(order) else outs):
            if isinstance(t, torch.Tensor):
                nbytes += concrete_int(t.numel()) * t.element_size()
                if t.device.type != self.device_type:
                    continue
                st = t.untyped_storage()
                sid = self._sid.get(st)
                if sid is None:
                    if concrete_int(st.nbytes()) == 0:
                        continue
                    sid = self._new(st, "", op_index)
                    new.append(sid)
                elif sid not in reads:
                    reads.append(sid)
                if not self._packing:
                    self._hold(t, sid)
        if self.device_type != "cuda":
            for i in CUDA_HOST_OUTPUTS.get(name, ()):   # kept, as host memory (excluded)
                sid = self.sid_of(outs[i]) if i < len(outs) else None
                if sid is not None:
                    self.excluded.add(sid)
        for item in after:
            if isinstance(item, TempFree):   # freed inside the kernel (op field: this op)
                freed.add(made[item.index])
                self.events.append((self.cur, "f", made[item.index], op_index))
            else:
                made.append(self._temp(item, op_index))
        if made:
            self.temp_ops.add(op_index)
        for sid in reversed(made):   # freed when the kernel returns, after its outputs exist
            if sid not in freed:
                self.events.append((self.cur, "f", sid, op_index + 1))
        causal = name.startswith("_scaled_dot_product") and causal_attention(func, args,
                                                                              kwargs)
        flops = cpu_attention_flops(name, args, causal)
        rule = _FLOP_REGISTRY.get(func._overloadpacket)
        if rule is not None:
            try:
                flops = int(rule(*args, **kwargs, out_val=out)) // (2 if causal else 1)
            except Exception:  # a formula that does not cover this overload
                flops = 0
        if name in _DATA_DEPENDENT_OPS or any(
                isinstance(t, torch.Tensor) and any(type(d) is not int for d in t.shape)
                for t in outs):
            self.data_dependent.append((str(func), self._mark_label()))
        if name in CPU_ONLY_OPS:
            self.cpu_only.append((name, self._mark_label()))
        sig = signature(name, args, kwargs) if name in SIGNATURE_OPS else ""
        if self.accumulating:
            self.accumulation_ops.add(op_index)
            buffer = args[0] if args else None
            if name == "add" and isinstance(buffer, torch.Tensor) and (
                    buffer._is_view() or not _dense(buffer)):
                self.view_sums.add(op_index)
        self.ops.append((self.cur, name, tuple(reads), tuple(new), flops, nbytes, sig,
                         conv_layout(name, args) or copy_layout(name, args)
                         or elementwise_layout(name, args, outs)
                         or matmul_math(name, args) + matmul_layout(name, args, outs)
                         or reduction_layout(name, args)
                         or ("causal" if causal else ""),
                         copy_calls(name, args) if self.device_type != "cuda" else ()))

    def host_read(self, t):
        """Record a device-to-host read of ``t`` (``Tensor.item()``, aten
        ``_local_scalar_dense``) that a fake run cannot make: a fake tensor has no value."""
        sid = self.sid_of(t)
        self.ops.append((self.cur, HOST_READ_OP, (sid,) if sid is not None else (), (), 0,
                         concrete_int(t.numel()) * t.element_size(), "", ""))

    def host_event(self, mechanism, phase, count, at=None):
        """Record host work of a plan's ``mechanism`` (``checkpoint``: one call saving
        ``count`` tensors; ``saved_tensors_hook``: ``count`` pack or unpack calls), done in
        ``phase`` (F or B) before the op recorded next (or before op ``at``)."""
        self.host_events.append((len(self.ops) if at is None else at, mechanism, phase,
                                 count))

    def pack(self, t):
        sid = self.sid_of(t)
        if sid is not None:
            self.saved.add(sid)
            if not _whole_storage(t):
                self.saved_views.add(sid)
            self._hold(t, sid)
        # detach: never store an output together with its own grad_fn (a reference cycle
        # would delay the free); the storage and version counter are shared. Autograd's
        # alias is not one of forward's objects (_hold)
        self._packing = True
        try:
            return t.detach()
        finally:
            self._packing = False

    def _hold(self, t, sid):
        """Count tensor object ``t`` (an op's output or view, a tensor autograd saves) among
        those on storage ``sid``: when the last of them dies, forward has dropped the storage
        but for what :meth:`pack` returned (autograd's copy, a detached alias), which is where
        ``save_on_cpu`` and ``torch.utils.checkpoint``, which keep no device reference, free
        it (:attr:`released`, the first time for a saved storage). A view's or a local's
        object outlives the op that read it: a nested call's argument, a ``Sequential``'s loop
        variable, a function's local until it returns."""
        self._alive[sid] = self._alive.get(sid, 0) + 1
        f = weakref.finalize(t, self._dropped, sid)
        f.atexit = False

    def _dropped(self, sid):
        n = self._alive[sid] - 1
        self._alive[sid] = n
        if n == 0 and sid in self.saved and sid not in self.released:
            self.released[sid] = (self.cur, len(self.ops))

    @staticmethod
    def unpack(t):
        return t

    def active(self):
        """Context manager: record every aten op while inside."""
        return _RecordMode(self)


HOST_READ_OP = "_local_scalar_dense"


def active_recorder():
    """The :class:`Recorder` recording here (its dispatch mode is on the stack), or None."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    for mode in _get_current_dispatch_mode_stack():
        if isinstance(mode, _RecordMode):
            return mode.rec
    return None


def record_host_read(t):
    """:meth:`Recorder.host_read` on the recorder active here (none: nothing): where a fake run
    skips a ``.item()`` a real step makes (GradScaler's found-inf check)."""
    rec = active_recorder()
    if rec is not None:
        rec.host_read(t)


def _metadata_setter(rec):
    """``torch.cuda.memory._set_memory_metadata`` where ``rec`` tags the allocator's trace
    (a real CUDA capture, on a torch that has it), else None."""
    if not (rec.track_pointers and rec.device_type == "cuda"):
        return None
    return getattr(torch.cuda.memory, "_set_memory_metadata", None)


class _RecordMode(TorchDispatchMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec
        self._set_metadata = _metadata_setter(rec)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._set_metadata is None:
            out = func(*args, **kwargs)
        else:
            calls = self.rec.op_of_call
            call = len(calls)
            calls.append(None)
            outer = torch.cuda.memory._get_memory_metadata()
            self._set_metadata(f"{OP_TAG}{call}")
            try:
                out = func(*args, **kwargs)
            finally:
                self._set_metadata(outer)
            calls[call] = len(self.rec.ops)
        out = cuda_output_layout(func._overloadpacket.__name__, out, self.rec.device_type)
        if self.rec.values and not known_values(func, args, kwargs):
            for t in torch.utils._pytree.tree_leaves(out):
                if getattr(t, "real_tensor", None) is not None:
                    t.real_tensor = None
        self.rec._op(func, args, kwargs, out)
        return out


#: factories whose output holds whatever memory it was given (:func:`known_values`)
_EMPTY_FACTORIES = frozenset({
    torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
    torch.ops.aten.empty_like.default, torch.ops.aten.new_empty.default,
    torch.ops.aten.new_empty_strided.default})


def known_values(func, args, kwargs):
    """Whether a fake op's outputs have values the run knows: every fake tensor it reads has
    one, and it is no ``empty`` factory. FakeTensorMode's own rule is weaker: a decomposed op
    (``to``, ``_to_copy``) makes its output with a factory, which gets a value (garbage)
    whatever the copy into it then does; an op over unknown values (the parameters, made
    without) would then compute on garbage, on the CPU, at full size. (``torch.empty(n)
    .fill_(v)`` has no value then: FakeTensorMode computes no op on a tensor without one.)"""
    if func in _EMPTY_FACTORIES:
        return False
    from torch._subclasses.fake_tensor import FakeTensor
    return all(t.real_tensor is not None
               for t in torch.utils._pytree.tree_leaves((args, kwargs))
               if isinstance(t, FakeTensor))


#: the name of the user annotation :class:`KernelMarker` leaves in the profiler's timeline
KERNEL_MARK = "snsim_mark"


class KernelMarker:
    """A marker for one profiled iteration: each mark is an empty ``record_function`` range,
    so that the profiler's timeline says where each step began on the host;
    :func:`snsim.torchsim.capture.step_kernel_times` gives each step the kernels its ops
    launched. Unlike :class:`EventTimer`'s intervals, a kernel's time does not grow with the
    host time the marks' hooks take."""

    def __init__(self):
        self._i = 0

    def mark(self, label, phase, kind=""):
        self._i += 1
        with torch.profiler.record_function(KERNEL_MARK):
            pass

    @property
    def num_marks(self):
        return self._i


class EventTimer:
    """A marker that records one CUDA event per mark; :meth:`intervals_s` gives step times."""

    def __init__(self, keep=None):
        self._pool = []
        self.keep = keep      # mark indices that start a step (None: all)
        self.reset()

    def reset(self):
        self._n = 0
        self._i = 0
        self.labels = []
        # the training loop, forward and backward, runs on this stream; passing it saves a
        # current_stream() call per mark
        self._stream = torch.cuda.current_stream()

    def _record(self):
        if self._n == len(self._pool):
            self._pool.append(torch.cuda.Event(enable_timing=True))
        self._pool[self._n].record(self._stream)
        self._n += 1

    def mark(self, label, phase, kind=""):
        i = self._i
        self._i = i + 1
        if self.keep is None or i in self.keep:
            self._record()

    @property
    def num_marks(self):
        return self._i

    def close(self):
        """Record the event that ends the last step."""
        self._record()

    def intervals_s(self):
        """Seconds from each recorded mark to the next (synchronizes)."""
        torch.cuda.synchronize()
        ev = self._pool[:self._n]
        return [ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(len(ev) - 1)]


_NODE_TYPES = (("AccumulateGrad", "GRAD"), ("BatchNorm", "BN"), ("Convolution", "CONV"),
               ("Addmm", "FC"), ("MmBackward", "FC"), ("Relu", "ACT"), ("Threshold", "ACT"),
               ("Hardtanh", "ACT"), ("Silu", "ACT"), ("Gelu", "ACT"), ("MaxPool", "POOL"),
               ("AvgPool", "POOL"), ("MeanBackward", "POOL"), ("Dropout", "DROPOUT"),
               ("CatBackward", "CONCAT"), ("AddBackward", "JOIN"), ("LogSoftmax", "SOFTMAX"),
               ("NllLoss", "SOFTMAX"))


def node_type(cls_name):
    """snsim layer type of an autograd node class (``ConvolutionBackward0`` -> ``CONV``).

    >>> node_type("NativeBatchNormBackward0"), node_type("AddmmBackward0"), node_type("TBackward0")
    ('BN', 'FC', 'OP')
    """
    for key, typ in _NODE_TYPES:
        if key in cls_name:
            return typ
    return "OP"


class Instrument:
    """Hooks that mark step boundaries for ``marker`` while the context is active.

    Parameters
    ----------
    model : torch.nn.Module
    marker : Recorder or EventTimer
    """

    def __init__(self, model, marker):
        self.marker = marker
        self.names = {}
        for name, m in model.named_modules(remove_duplicate=False):
            self.names.setdefault(id(m), name or ROOT_MODULE)
        self.param_names = {id(p): n for n, p in model.named_parameters()}
        self.stack = []
        self.fwd_seq = []
        self.fwd_labels = []
        self.in_backward = False
        self._handles = []
        self._saved = None
        # backward steps are attributed to forward steps only when recording
        self.track_nodes = isinstance(marker, Recorder)

    # -- context ---------------------------------------------------------------------------
    def __enter__(self):
        from torch.nn.modules import module as M
        self.stack = []
        self.fwd_seq = []
        self.fwd_labels = []
        self.in_backward = False
        self._handles = [M.register_module_forward_pre_hook(self._pre),
                         M.register_module_forward_hook(self._post)]
        if isinstance(self.marker, Recorder):
            self._saved = torch.autograd.graph.saved_tensors_hooks(self.marker.pack,
                                                                   self.marker.unpack)
            self._saved.__enter__()
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._saved is not None:
            self._saved.__exit__(*exc)
            self._saved = None
        return False

    # -- marks -----------------------------------------------------------------------------
    def mark(self, label, phase, kind=""):
        if phase == "F" and not self.in_backward:
            if self.track_nodes:
                self.fwd_seq.append(_get_sequence_nr() if _get_sequence_nr else 0)
            self.fwd_labels.append(label)
        if phase != "F":
            self.in_backward = phase == "B"
        self.marker.mark(label, phase, kind)

    def _fwd_mark(self, label, kind):
        if self.in_backward:   # a checkpoint's recomputation runs module forwards in backward
            self.marker.mark("recompute:" + label, "B", kind)
        else:
            self.mark(label, "F", kind)

    def _pre(self, module, args):
        name = self.names.get(id(module))
        if name is None:
            return None
        self.stack.append(name)
        self._fwd_mark(name, type(module).__name__)
        return None

    def _post(self, module, args, out):
        name = self.names.get(id(module))
        if name is None:
            return None
        if self.stack and self.stack[-1] == name:
            self.stack.pop()
        self._fwd_mark(self.stack[-1] if self.stack else "<top>", "")
        return None

    def before_backward(self, loss):
        """Register a pre-hook on every autograd node reachable from ``loss``."""
        self.in_backward = True
        root = loss.grad_fn
        if root is None:
            return
        # keep every wrapper alive while walking: C++ nodes get fresh Python wrappers, and a
        # dead wrapper's id() can be reused by the next one
        keep = [root]
        seen = {id(root)}
        todo = [root]
        while todo:
            node = todo.pop()
            cls = type(node).__name__
            i = -1
            if cls == "AccumulateGrad":
                label = "grad:" + self.param_names.get(id(node.variable), "?")
            elif self.track_nodes:
                i = bisect.bisect_right(self.fwd_seq, node._sequence_nr()) - 1
                label = self.fwd_labels[i] if i >= 0 else "<backward>"
            else:
                label = cls
            fwd = i if cls != "AccumulateGrad" else -1
            node.register_prehook(functools.partial(_node_pre, self.marker, label,
                                                    f"{cls}@{fwd}"))
            if self.track_nodes and cls != "AccumulateGrad":
                node.register_hook(functools.partial(_node_post, self.marker))
            for nxt, _ in node.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    seen.add(id(nxt))
                    keep.append(nxt)
                    todo.append(nxt)
        del todo, node, keep


def _node_pre(marker, label, cls, grad_outputs):
    marker.mark(label, "B", cls)
    return None


def _node_post(marker, grad_inputs, grad_outputs):
    # the engine sums this node's outputs into the input buffers of the nodes they feed
    # after its post-hooks and before the next node's pre-hook
    marker.accumulating = True
    return None


def inplace_accumulation(rec):
    """Make ``rec``'s gradient sums in place where a run without a dispatch mode makes them.

    Autograd's engine sums two gradients that reach one input (``InputBuffer::accumulate``,
    torch/csrc/autograd/input_buffer.cpp) into the buffer's tensor, ``old.add_(new)``, when
    ``can_accumulate_inplace(old)``: it is dense, and the buffer holds the last reference to it
    and to its storage; else out of place, ``old + new``. A view never qualifies: it holds its
    base, a second tensor on the storage (MViT's ``r_q``, whose first gradient comes back as a
    permuted view: a real CPU step sums its second gradient out of place and its third in
    place, and its H200 history shows the extra 19,267,584 B buffer per block at batch 8).
    ``can_accumulate_inplace`` also requires that the tensor is not "subclass-like", which
    ``at::isTensorSubclassLike`` (ATen/TensorSubclassLikeUtils.h) reports of every tensor
    while any ``TorchDispatchMode`` is active and of every ``FakeTensor``: a recording (the
    recorder's own mode, a fake run) therefore makes a new buffer for every such sum, which
    an executed plan never makes (the H200 history of efficientnet_b4 b32 cpu_offload,
    traces/h200/plans_history: the squeeze-excitation's mean backward, 16,859,136 B, is
    freed right after the sum, with no sum buffer between). An ``add`` among
    :attr:`Recorder.accumulation_ops`, not among its :attr:`Recorder.view_sums`, whose first
    input's storage dies right after it (the buffer held the last reference), of the
    output's size, is rewritten in place: its output is that input's storage, which lives on
    until the output would have died. Edits ``rec.events`` and ``rec.ops``; returns ``{sum's
    storage: storage it reuses}`` (a GPU capture applies it to the allocator's record too:
    :func:`snsim.torchsim.capture.sums_in_place`).
    """
    if not rec.accumulation_ops:
        return {}
    free_at = {}      # storage id -> (index in rec.events, op index when it was freed)
    alloc_at = {}
    for i, (_, kind, sid, op) in enumerate(rec.events):
        (free_at if kind == "f" else alloc_at)[sid] = (i, op)
    rename, drop = {}, set()

    def resolve(sid):
        while sid in rename:
            sid = rename[sid]
        return sid
    for k in sorted(rec.accumulation_ops):
        mark, name, reads, new, *rest = rec.ops[k]
        if name != "add" or len(new) != 1 or len(reads) != 2 or new[0] not in alloc_at:
            continue
        if k in rec.view_sums:
            continue
        out, victim = new[0], reads[0]
        f = free_at.get(victim)
        if f is not None and f[1] == k + 1 and \
                rec.storages[victim][0] == rec.storages[out][0]:
            drop.update((f[0], alloc_at[out][0]))
            rename[out] = resolve(victim)
            rec.ops[k] = (mark, name, reads, (), *rest)
    if not rename:
        return {}
    rec.events = [(m, kind, resolve(sid), op) for i, (m, kind, sid, op) in enumerate(rec.events)
                  if i not in drop]
    for k, (m, nm, reads, new, *rest) in enumerate(rec.ops):
        if any(r in rename for r in reads):
            rec.ops[k] = (m, nm, tuple(resolve(r) for r in reads), new, *rest)
    return rename


# -- the training iteration ----------------------------------------------------------------------
def split_outputs(out):
    """``(logits, [aux logits...])`` of a classification model's output: a tensor, a tuple
    (Inception's and GoogLeNet's auxiliary logits after the main ones) or a mapping
    (torchvision's segmentation models: ``"out"``, then ``"aux"``)."""
    import collections.abc
    if isinstance(out, collections.abc.Mapping):
        items = [v for v in out.values() if isinstance(v, torch.Tensor)]
        main = out.get("out", items[0] if items else None)
        if not isinstance(main, torch.Tensor):
            raise TypeError(f"model output {type(out).__name__} with keys {list(out)} holds no "
                            f"tensor to train on")
        return main, [v for v in items if v is not main]
    if isinstance(out, torch.Tensor):
        return out, []
    if isinstance(out, (tuple, list)):
        rest = [o for o in out[1:] if isinstance(o, torch.Tensor)]
        return out[0], rest
    raise TypeError(f"model output of type {type(out).__name__} is neither a tensor, a tuple "
                    f"nor a mapping")


def compute_loss(out, y, aux_loss_weight=0.4):
    """Cross entropy of the logits (plus weighted auxiliary losses); a 0-d output is the loss.

    Dense logits (``N x C x H x W``) take a class map ``y`` (``N x H x W``):
    :class:`~snsim.torchsim.predict.Target` makes the one that fits.
    """
    import torch.nn.functional as F
    logits, aux = split_outputs(out)
    if logits.dim() == 0:
        return logits
    loss = F.cross_entropy(logits, y)
    for a in aux:
        loss = loss + aux_loss_weight * F.cross_entropy(a, y)
    return loss


def train_step(model, optimizer, x, y, *, inst=None, aux_loss_weight=0.4, autocast=None,
               scaler=None, step_scope=None):
    """One training iteration; ``inst`` (an :class:`Instrument`) marks its steps.

    ``autocast`` (a context factory, :meth:`snsim.torchsim.amp.TrainSetup.autocast`) wraps
    forward and loss, as PyTorch's AMP recipe does; ``scaler`` (a ``GradScaler``) scales the
    loss, unscales and checks the gradients in ``step`` and updates its scale; ``step_scope``
    (:meth:`~snsim.torchsim.amp.TrainSetup.step_scope`) wraps the whole step.
    """
    import contextlib
    with step_scope() if step_scope is not None else contextlib.nullcontext():
        _train_step(model, optimizer, x, y, inst, aux_loss_weight, autocast, scaler)


def _train_step(model, optimizer, x, y, inst, aux_loss_weight, autocast, scaler):
    import contextlib
    mark = inst.mark if inst is not None else _NullMarker().mark
    with autocast() if autocast is not None else contextlib.nullcontext():
        mark("<input>", "F", "")
        out = model(x)
        mark("loss", "F", "")
        loss = compute_loss(out, y, aux_loss_weight)
        del out
    if scaler is not None:
        loss = scaler.scale(loss)
    if inst is not None:
        inst.before_backward(loss)
    loss.backward()
    mark("optimizer.step", "U", "")
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    mark("optimizer.zero_grad", "U", "")
    optimizer.zero_grad(set_to_none=True)
    del loss
    mark("<end>", "U", "")


def warm_training(text, batch, optimizer, impl, amp, device, warmup=3):
    """A real training setup of model spec ``text`` (``model@CxHxW`` or ``hf:name@seq`` for
    another input size) on ``device``, stepped ``warmup`` times with :func:`train_step` and
    on until fp16's GradScaler took a step (:func:`snsim.torchsim.amp.warm_up`, as the plan
    suite and ``snsim capture`` warm up), for scripts that time steps
    (``scripts/profile_ops.py``, ``scripts/host_innet_probe.py``). Without that, an fp16
    network whose first iterations overflow is timed with its optimizer step skipped: the H200
    profiles of ResNet-152 b32 and b48 and Inception-v3 b16 fp16 (``traces/h200/profile_s28``,
    ``probe_s31``) hold no optimizer kernel, and the in-network host probe's Swin-T b4 AdamW
    fp16 (``traces/h200/profile_host/innet10``) no optimizer call.

    Returns a namespace: ``text`` (without the size), ``spec``, ``setup`` (the
    :class:`~snsim.torchsim.amp.TrainSetup`; ``amp`` ``"none"`` is none), ``net``, ``opt``,
    ``x``, ``y``, ``kw`` (:func:`train_step`'s keyword arguments), ``sync`` (waits for the
    device) and ``skipped_warmup`` (optimizer steps the scaler skipped in the warm-up)."""
    import functools
    import types

    from .amp import TrainSetup, warm_up
    from .models import resolve_sized
    from .predict import infer_target_of
    # amp none | bf16 | fp16 (autocast), or purebf16 | purefp16 (--param-dtype, no autocast)
    setup = TrainSetup.from_precision_field(optimizer, impl, amp)
    spec = resolve_sized(text)
    dev = torch.device(device)
    net = spec.build().train()
    target = infer_target_of(net, spec.make_input(2))   # on the CPU: see there
    setup.cast_model(net).to(dev)
    x = setup.make_input(spec, batch, dev)
    y = target.make(batch, dev)
    opt = setup.make_optimizer(net.parameters())
    kw = {"autocast": setup.autocast(device), "scaler": setup.grad_scaler(device),
          "step_scope": setup.step_scope(device), "aux_loss_weight": spec.aux_loss_weight}

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    skipped = warm_up(functools.partial(train_step, net, opt, x, y, **kw), kw["scaler"],
                      warmup)
    sync()
    return types.SimpleNamespace(text=text, spec=spec, setup=setup, net=net, opt=opt, x=x, y=y,
                                 kw=kw, sync=sync, skipped_warmup=skipped)


def apply_order(model):
    """Parameters and buffers in the order ``model.to(device)`` allocates them."""
    seen = set()
    out = []

    def visit(m, prefix):
        for name, child in m.named_children():
            visit(child, f"{prefix}{name}.")
        for kind, d in (("parameter", m._parameters), ("buffer", m._buffers)):
            for name, t in d.items():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    out.append((prefix + name, kind, t))
    visit(model, "")
    return out


def register_static(rec, model, x, y):
    """Register the model's parameters and buffers (in allocation order) and the input batch
    with ``rec``; return ``{storage id: (name, kind)}`` of these static storages."""
    static_names = {}
    for name, kind, t in apply_order(model):
        sid = rec.register(t, name)
        if sid is not None:
            static_names[sid] = (name, kind)
    for name, t in (("input.x", x), ("input.y", y)):
        static_names[rec.register(t, name)] = (name, "input")
    return static_names


def optimizer_state(optimizer, param_names):
    """``[(name, tensor)]`` of every tensor in the optimizer state."""
    out = []
    for p, state in optimizer.state.items():
        for key, v in state.items():
            if isinstance(v, torch.Tensor):
                out.append((f"{param_names.get(id(p), '?')}.{key}", key, v))
    return out


def _whole_storage(t):
    """Whether ``t`` is its whole storage, contiguous from its start: what a saved-tensor hook
    can copy out and release (SuperNeurons' ``Offloader`` packs only such tensors)."""
    try:
        return (t.is_contiguous() and t.storage_offset() == 0
                and t.numel() * t.element_size() == t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):   # a tensor without a storage to ask
        return True
