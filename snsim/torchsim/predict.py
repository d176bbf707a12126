"""Predict a training step's memory and time on a CPU, without a GPU (``snsim predict``).

The model runs under ``FakeTensorMode`` — every tensor is metadata only, no kernel computes
anything — with the same :func:`~snsim.torchsim.record.train_step`, optimizer (foreach kernels,
as PyTorch picks on CUDA) and :class:`~snsim.torchsim.record.Recorder` as a real capture. The
recording gives the same program a capture would: the exact alloc/free order of the steady
iteration and of the warm-up before it. Two things a CPU cannot see are modelled:

* CUDA-only dispatch (SPEC §15): ``F.dropout`` takes the fused ``native_dropout`` kernel (a
  1-byte mask) on CUDA but a float mask on CPU; it is redirected to ``native_dropout`` here.
  ``F.scaled_dot_product_attention`` runs the math path on a CPU (it saves the s×s attention
  probabilities); here it calls the kernel CUDA would pick — flash attention (fp16/bf16) or
  memory-efficient attention (fp32) — whose fake implementation allocates and saves what the
  CUDA kernel does: the output and a logsumexp, never the probabilities. ``F.linear`` adds
  its bias in place after a matmul, as on CUDA (a fake bias makes torch add out of place).
  Where a CUDA kernel allocates its outputs in another order than it returns them
  (``native_dropout``: the mask first), the recorder allocates them in the kernel's order
  (:data:`~snsim.torchsim.record.CUDA_ALLOC_ORDER`).
* data-dependent ops (``.item()``, ``nonzero``, boolean masks): a first run without symbolic
  shapes; if it meets one, a second run with a ``ShapeEnv`` treats the value as unknown
  (an unbacked symbol) and sizes that depend on it at their upper bound. A forward that
  branches on such a value stops with one line naming the op and the module.
* memory no tensor owns (cuDNN/cuBLAS workspaces): from the hidden-allocation tables of
  committed captures of the same GPU (:mod:`~snsim.torchsim.hidden`), else none; CUDA
  kernels' own buffers and copies from the strides and shapes the fake run sees (reductions'
  staging buffers, LayerNorm's contiguous copies, ``roll``'s intermediates).
* what a dispatch mode or a fake tensor changes in torch itself: autograd sums two gradients
  of one input out of place under either, in place on a plain CUDA run
  (:func:`~snsim.torchsim.record.inplace_accumulation`).

Times are modelled per op (:mod:`~snsim.torchsim.opcost`): interpolated from the preset's
kernel table where it has one (``snsim calibrate``), with the host issuing the ops as a second
resource; else a roofline. ``provenance["time_sources"]`` says how much came from each.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from ..errors import ConfigError
from ..program import ROOT_MODULE
from ..program_torch import CUDNN_ATTENTION_FIRST
from .models import resolve_model, resolve_sized
from .plans import modelled_release, torch_release


def cuda_sdpa_backend(query, key, value, attn_mask=None, dropout_p=0.0, enable_gqa=False,
                      cudnn_first=False):
    """The fused kernel CUDA's ``scaled_dot_product_attention`` picks on sm80+: ``"cudnn"``
    (sm90 with ``cudnn_first``), ``"flash"``, ``"efficient"`` or ``"math"`` (torch's
    ``sdp_utils`` checks, the ones our models meet).

    On the H200 (torch 2.11, cuDNN 9.19; ``scripts/sdpa_choice_probe.py``,
    traces/h200/sdpa_choice/sdpa_choice.csv.gz: 510 cases of 8 shapes, 5 stride layouts, 3
    dtypes, causal, boolean and additive masks, dropout) every fp16/bf16 call ran cuDNN's
    kernel, with a mask, with fewer key/value heads (``enable_gqa``), with head dims up to
    256 and in every layout; every fp32 call ran the memory-efficient kernel, masks
    included, except grouped-query ones, which ran the math composite. Elsewhere (no
    ``cudnn_first``) flash takes half-precision calls without a mask and the memory-efficient
    kernel the rest it can. A mask that requires grad (a learned bias: T5's relative positions)
    runs the math composite in every precision: an H200 capture of T5-small (b16, s512, fp32
    and bf16 autocast; traces/h200/t5/) ran its 12 self-attention calls, whose bias carries
    the position table's gradient, as ``_safe_softmax`` and ``bmm``, and its 6 cross-attention
    calls, whose bias needs none, on the memory-efficient (fp32) and cuDNN (bf16) kernels."""
    import torch
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        return "math"
    d = query.shape[-1]
    if any(t.stride(-1) != 1 for t in (query, key, value)) or value.shape[-1] != d:
        return "math"
    gqa = enable_gqa and key.shape[1] != query.shape[1]
    if attn_mask is not None and attn_mask.requires_grad:
        # no fused kernel takes a mask's gradient on the H200 (measured, see above)
        return "math"
    half = query.dtype in (torch.float16, torch.bfloat16)
    if (cudnn_first and half and d % 8 == 0 and d <= 256 and key.shape[2] > 1
            and not (query.shape[2] == 1 and dropout_p > 0)):
        return "cudnn"
    if gqa:
        return "math"
    if half and attn_mask is None and d % 8 == 0 and d <= 256:
        return "flash"
    if query.dtype in (torch.float32, torch.float16, torch.bfloat16) \
            and d % (16 // query.element_size()) == 0:
        return "efficient"
    return "math"


# the first torch release whose convert_boolean_attn_mask is ``where(mask, 0, fill)``, not
# ``where(mask.logical_not(), fill, 0)`` (pytorch PR #139784, landed with #139613 before the 2.6
# branch): no mask-sized ``logical_not`` block (none in the H200 captures of torch 2.11,
# traces/h200/align_s59)
BOOL_MASK_WITHOUT_NOT_FROM = (2, 6)


def attention_bias(attn_mask, query, key, kind):
    """The additive bias CUDA's ``scaled_dot_product_attention`` hands kernel ``kind`` for
    ``attn_mask`` (aten/src/ATen/native/transformers/attention.cpp): a boolean mask becomes a
    new tensor of the query's dtype, 0 where attended and -65504 (cuDNN) or -inf elsewhere
    (from torch 2.6 without the mask's ``logical_not``: :data:`BOOL_MASK_WITHOUT_NOT_FROM`);
    the memory-efficient kernel's bias must have every stride but the last a multiple of 8
    (``preprocess_mask``), else it is padded by ``8 - S % 8`` columns and sliced back, and is
    read expanded to (batch, heads, L, S)."""
    import torch
    import torch.nn.functional as F
    if attn_mask is None:
        return None
    bias = attn_mask
    if attn_mask.dtype == torch.bool:
        fill = -65504.0 if kind == "cudnn" else float("-inf")
        if modelled_release() < BOOL_MASK_WITHOUT_NOT_FROM:
            bias = torch.where(attn_mask.logical_not(), fill,
                               torch.scalar_tensor(0.0, dtype=query.dtype))
        else:
            bias = torch.where(attn_mask, 0.0, torch.scalar_tensor(fill, dtype=query.dtype))
    if kind == "efficient":
        aligned = bias.stride(-1) == 1 and all(st % 8 == 0 for st in bias.stride()[:-1])
        if not aligned:
            s = bias.shape[-1]
            bias = F.pad(bias, (0, 8 - s % 8))[..., :s]
        bias = bias.expand(query.shape[0], query.shape[1], query.shape[2], key.shape[2])
    return bias


@contextlib.contextmanager
def linear_bias_in_place():
    """``F.linear`` adding the bias in place, as a run without a dispatch mode does.

    torch's composite linear (aten/src/ATen/native/Linear.cpp) sends a bias-carrying input
    that is neither 2-D nor contiguous through matmul and then adds the bias in place
    (``output.add_(bias)``), unless the bias is "tensor-subclass-like" -- which a FakeTensor,
    or any tensor while a dispatch mode is on (the recorder's, on the GPU too), is: the add
    then goes out of place, one output-sized allocation (and free) a plain run never makes
    (``nn.MultiheadAttention``'s in-projection of a batch-first input).

    Under (emulated) autocast the three arguments are cast first, as linear's autocast kernel
    casts them before the composite runs: bias, weight, input (the order the kernel's
    arguments are evaluated in; the allocator histories show it), the weight's and bias's casts
    through autocast's cache, alive until the region ends. Left to ``matmul``'s kernel, the
    weight's transpose (a view, which the cache skips) would be cast anew and freed after the
    product, and the fp32 bias would be added uncast: ViT-H/14 b8 bf16 checkpointed, whose
    in-projection weight casts (9,830,400 B a layer) the H100's allocator history keeps to the
    forward's end (traces/h100/plans_history). A CUDA capture runs under torch's own autocast,
    which this does not reach: there the stand-in casts as matmul does."""
    import torch
    import torch.nn.functional as F
    from .amp import emulated_autocast_cast
    orig_linear = F.linear

    def linear(input, weight, bias=None):
        if bias is not None and input.dim() != 2 and not input.is_contiguous():
            cast = emulated_autocast_cast()
            if cast is not None:
                bias = cast(bias)
                weight = cast(weight)
                input = cast(input)
            return torch.matmul(input, weight.t()).add_(bias)
        return orig_linear(input, weight, bias)

    F.linear = linear
    try:
        yield
    finally:
        F.linear = orig_linear


#: the torch release from which ``F.multi_head_attention_forward`` frees q, k and v right after
#: attention (``del q, k, v`` before the output's reshape; torch/nn/functional.py of 2.12.0,
#: 2.13.0 and 2.14.1 have it, 2.11.0 not)
MHA_FREES_QKV_FROM = (2, 12)


@contextlib.contextmanager
def mha_qkv_kept_to_return():
    """``nn.MultiheadAttention``'s q, k and v alive until ``F.multi_head_attention_forward``
    returns, as torch before :data:`MHA_FREES_QKV_FROM` keeps them (its locals), where the
    installed torch frees them after attention and the modelled release
    (:func:`snsim.torchsim.plans.modelled_release`: the one that will run the step) is older.

    In self-attention the three are views of the packed in-projection, so the projection
    (ViT-B/16 b64 bf16: 58,097,664 B a block) outlives the out-projection's casts and output:
    the H200 allocator history of ViT-B/16 b64 bf16 ``recompute`` and the H100 one of ViT-H/14
    b8 bf16 checkpointed (torch 2.11, traces/h*/plans_history) free every block's
    projection after them; predicted with torch 2.14's early free, ViT-B/16's reserved peak
    came out -6.4 %, with it kept -0.1 %. Each call wraps whatever scaled-dot-product
    attention is installed then (a CUDA-like stand-in among them) to hold the three."""
    import torch
    import torch.nn.functional as F
    if (modelled_release() >= MHA_FREES_QKV_FROM
            or torch_release(torch.__version__) < MHA_FREES_QKV_FROM):
        yield
        return
    orig = F.multi_head_attention_forward

    def mha(*args, **kwargs):
        kept = []
        inner = F.scaled_dot_product_attention

        def sdpa(q, k, v, *a, **kw):
            kept.append((q, k, v))
            return inner(q, k, v, *a, **kw)
        F.scaled_dot_product_attention = sdpa
        try:
            return orig(*args, **kwargs)
        finally:
            F.scaled_dot_product_attention = inner
            kept.clear()       # as the older release's locals go when it returns

    F.multi_head_attention_forward = mha
    try:
        yield
    finally:
        F.multi_head_attention_forward = orig


@contextlib.contextmanager
def math_attention_mask_in_place():
    """CUDA's ``scaled_dot_product_attention`` adding its mask in place where torch picks the
    math composite, as a run without a dispatch mode does.

    The composite adds the mask (or the causal mask it builds) to the scores in place unless a
    tensor is "tensor-subclass-like", which any tensor is while a dispatch mode (the
    recorder's) is on: the add then goes out of place, one scores-sized block a plain run never
    makes (T5-small b16 s512's 12 self-attention calls on the H200: a replay +3.3 % allocated
    in fp32, +6.6 % under bf16 autocast). A CUDA call that ``torch._fused_sdp_choice`` sends to
    the math composite runs :func:`cuda_math_attention` instead, which adds in place."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend
    orig = F.scaled_dot_product_attention

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
        if query.is_cuda and (attn_mask is not None or is_causal):
            q, k, v, mask = _autocast_inputs("cuda", query, key, value, attn_mask)
            if torch._fused_sdp_choice(q, k, v, mask, dropout_p, is_causal, scale=scale,
                                       enable_gqa=enable_gqa) == SDPBackend.MATH.value:
                return cuda_math_attention(q, k, v, mask, dropout_p, is_causal, scale,
                                           enable_gqa)
        return orig(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                    enable_gqa=enable_gqa)

    F.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        F.scaled_dot_product_attention = orig


@contextlib.contextmanager
def plain_run_adds():
    """A recorded step's adds as a plain run makes them: :func:`linear_bias_in_place` and
    :func:`math_attention_mask_in_place` (a capture)."""
    with linear_bias_in_place(), math_attention_mask_in_place():
        yield


def _autocast_inputs(device_type, *tensors):
    """``tensors`` as autocast hands them to ``scaled_dot_product_attention``: floating ones in
    the autocast dtype when autocast is on for ``device_type`` (CUDA's autocast casts the inputs
    before the kernel is picked: autocast_mode.h, AT_FORALL_LOWER_PRECISION_FP)."""
    import torch
    if not torch.is_autocast_enabled(device_type):
        return tensors
    low = torch.get_autocast_dtype(device_type)
    return tuple(t.to(low) if t is not None and t.is_floating_point() else t for t in tensors)


@contextlib.contextmanager
def cuda_like_dispatch(gpu="h200"):
    """Make CPU fake tensors take the ops CUDA tensors of GPU preset ``gpu`` take (fused
    dropout, fused attention, linear's in-place bias add: :func:`linear_bias_in_place`)."""
    with linear_bias_in_place(), _cuda_like_kernels(gpu), regenerated_views_as_strided():
        yield


@contextlib.contextmanager
def regenerated_views_as_strided():
    """Autograd's history of a view modified in place, as it is for a plain tensor.

    When a view (or its base) has been modified in place, autograd regenerates the view's
    ``grad_fn`` on its next use (``VariableHooks::grad_fn``, torch/csrc/autograd/variable.cpp):
    for a plain tensor one ``AsStridedBackward0`` on the base, whose backward makes one zeroed
    block of the base's storage; for a tensor subclass, which a FakeTensor is, the view's chain
    replayed from the base (its ``view_fn``), whose backward makes one zeroed block per level
    of the chain (MViT's ``attn[:, :, 1:, 1:] += rel_pos``: two ``slice_backward``s, one of them
    an extra attention-sized block a GPU step never makes). Here a view used after its version
    moved on since it was made is handed to the call as ``as_strided`` on its base, which
    autograd records as that ``AsStridedBackward0``. Views whose dtype differs from their base's
    (``view_as_real``) replay on a GPU too and are left alone."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_leaves, tree_map
    from torch.utils.weak import WeakIdKeyDictionary

    born = WeakIdKeyDictionary()   # view -> its version when it was made
    history = WeakIdKeyDictionary()   # view -> (version, its as_strided stand-in)

    def regenerated(t):
        if not (isinstance(t, torch.Tensor) and t._is_view()) or t.is_inference():
            return t
        version = born.get(t)
        base = t._base
        if version is None or version == t._version or not base.requires_grad \
                or t.dtype != base.dtype or not torch.is_grad_enabled():
            return t
        # one node per regeneration, whatever reads the view after it (a real run's two
        # consumers sum their gradients into the one AsStridedBackward0)
        kept = history.get(t)
        if kept is None or kept[0] != t._version:
            kept = (t._version, base.as_strided(t.size(), t.stride(), t.storage_offset()))
            history[t] = kept
        return kept[1]

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*tree_map(regenerated, args), **tree_map(regenerated, kwargs or {}))
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and t._is_view() and not t.is_inference() \
                        and t not in born:
                    born[t] = t._version
            return out

    with Mode():
        yield


@contextlib.contextmanager
def _cuda_like_kernels(gpu):
    import torch
    import torch.nn.functional as F
    orig = F.dropout
    orig_sdpa = F.scaled_dot_product_attention

    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and not inplace and input.numel() > 0:
            return torch.native_dropout(input, p, True)[0]
        return orig(input, p, training, inplace)

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
        # CUDA's autocast policy sits on the CPU's autocast key here
        query, key, value, attn_mask = _autocast_inputs("cpu", query, key, value, attn_mask)
        kind = cuda_sdpa_backend(query, key, value, attn_mask, dropout_p, enable_gqa,
                                 cudnn_first=gpu in CUDNN_ATTENTION_FIRST)
        if kind in ("cudnn", "flash", "efficient"):
            # a CUDA-only kernel: a fake run that propagates real values (predict's third
            # attempt, _record_fake's values) must not try to run it on the CPU
            for t in (query, key, value):
                if getattr(t, "real_tensor", None) is not None:
                    t.real_tensor = None
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        if kind == "cudnn":
            return torch.ops.aten._scaled_dot_product_cudnn_attention(
                query, key, value, attention_bias(attn_mask, query, key, kind), grad,
                dropout_p, is_causal, False, scale=scale)[0]
        if kind == "flash":
            return torch.ops.aten._scaled_dot_product_flash_attention(
                query, key, value, dropout_p, is_causal, False, scale=scale)[0]
        if kind == "efficient":
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                query, key, value, attention_bias(attn_mask, query, key, kind), grad,
                dropout_p, is_causal, scale=scale)[0]
        return cuda_math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                   enable_gqa)

    F.dropout = dropout
    F.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        F.dropout = orig
        F.scaled_dot_product_attention = orig_sdpa


def cuda_math_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                        scale=None, enable_gqa=False):
    """``scaled_dot_product_attention``'s math composite as a plain CUDA run takes it
    (``_scaled_dot_product_attention_math``, aten/src/ATen/native/transformers/attention.cpp),
    not as CPU fake tensors would: half-precision inputs upcast to fp32 (unless
    ``allow_fp16_bf16_reduction_math_sdp``), query and transposed key each scaled by the root of
    the scale, grouped-query heads repeated, the s x s scores, the mask added in place (a
    FakeTensor is "subclass-like" and would add out of place: one more scores-sized block),
    ``_safe_softmax``, then the fused ``native_dropout`` (1-byte mask) CUDA's ``at::dropout``
    takes where the CPU's makes a mask of the scores' dtype, the product with the values, and
    both results cast back to the inputs' dtype. Autocast is off inside, as below the
    autocast key the composite is.

    Lifetimes as the C++ has them (T5-small b24 bf16's H100 allocator history,
    traces/h100/profile_s67): the composite's locals die when it returns, the last made
    first; its second result, the probabilities cast back (made before the first:
    ``make_tuple``'s arguments are evaluated right to left), dies after them, when the caller
    drops it; the mask the caller converted, after that."""
    import torch
    with torch.autocast(query.device.type, enabled=False):
        # a boolean mask becomes a bias of the inputs' dtype before the composite runs
        # (scaled_dot_product_attention's convert_boolean_attn_mask)
        attn_mask = attention_bias(attn_mask, query, key, "math")
        out, probs = _cuda_math_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                          scale, enable_gqa)
        del probs
        return out


def _cuda_math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                         enable_gqa):
    import math
    import torch
    reduce_low = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed",
                         lambda: False)()
    origin = query.dtype

    def acc(t):
        low = t.dtype in (torch.float16, torch.bfloat16)
        return t.to(torch.float32) if low and not reduce_low else t

    # the composite's ``query_acc``, ``key_acc`` and ``value_acc`` are C++ locals: each upcast
    # lives until the call returns, the query's too although only its scaled copy is read
    # after (T5-small b24 bf16's H100 allocator history, traces/h100/profile_s67: freed with
    # the key's and the value's, not after the scaling)
    query_acc, key, value = acc(query), acc(key), acc(value)
    root = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(query_acc.shape[-1]))
    query = query_acc * root
    if is_causal:   # the causal mask the composite builds itself takes the upcast's dtype
        tril = torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool,
                          device=query.device).tril()
        attn_mask = attention_bias(tril, query, key, "math")
    heads, kv_heads = query.shape[-3], key.shape[-3]
    if enable_gqa and kv_heads != heads:
        key = key.repeat_interleave(heads // kv_heads, -3)
        value = value.repeat_interleave(heads // kv_heads, -3)
    attn = torch.matmul(query, key.transpose(-2, -1) * root)
    if attn_mask is not None:
        attn.add_(attn_mask)
    attn = torch.ops.aten._safe_softmax(attn, -1)
    if dropout_p > 0.0:
        attn = torch.native_dropout(attn, dropout_p, True)[0]
    probs = attn.to(origin)     # the second result, made first
    out = torch.matmul(attn, value).to(origin)
    del attn, query, value, key, query_acc      # the locals, the last made first
    return out, probs


@contextlib.contextmanager
def no_init():
    """Skip ``torch.nn.init`` while building a fake model: values do not matter, and some
    initialisers read data (``.item()``) that fake tensors do not have."""
    import torch.nn.init as init
    names = [n for n in dir(init) if n.endswith("_") and not n.startswith("_")
             and callable(getattr(init, n))]
    saved = {n: getattr(init, n) for n in names}

    def keep(tensor, *args, **kwargs):
        return tensor

    for n in names:
        setattr(init, n, keep)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(init, n, f)


@dataclass(frozen=True, slots=True)
class Target:
    """The labels a model trains on: class ids below ``classes``, ``sample_shape`` of them per
    sample (``()`` for a classifier's ``N x C`` logits, ``(H, W)`` for dense ``N x C x H x W``
    ones, a segmentation model's)."""

    classes: int
    sample_shape: tuple = ()

    def make(self, batch, device=None):
        """Random labels for ``batch`` samples (int64, as ``cross_entropy`` takes them)."""
        import torch
        return torch.randint(0, self.classes, (batch, *self.sample_shape), device=device)


def infer_target(model, x):
    """The :class:`Target` of a model: its logits' class dimension and, for dense logits, the
    class map's shape (a run of two samples without gradients; fake under ``FakeTensorMode``).
    A model whose output is its 0-d loss takes no labels (``Target(1)``)."""
    import torch
    from .record import split_outputs
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits, _ = split_outputs(model(x[:2]))
    finally:
        model.train(was)
    if logits.dim() == 0:
        return Target(1)
    if logits.dim() <= 2:
        return Target(int(logits.shape[-1]))
    return Target(int(logits.shape[1]), tuple(int(d) for d in logits.shape[2:]))


_DATA_DEPENDENT = ("DataDependentOutputException", "DynamicOutputShapeException",
                   "GuardOnDataDependentSymNode", "PendingUnbackedSymbolNotFound")


def _is_data_dependent(e):
    return any(c.__name__ in _DATA_DEPENDENT for c in type(e).__mro__)


class _ModuleStack:
    """The module whose forward is running (global forward hooks), for error messages."""

    def __init__(self, model):
        self.names = {id(m): (n or ROOT_MODULE, type(m).__name__)
                      for n, m in model.named_modules(remove_duplicate=False)}
        self.stack = []
        self._handles = []
        self.last = None

    def __enter__(self):
        from torch.nn.modules import module as M

        def pre(m, args):
            self.stack.append(self.names.get(id(m), ("?", type(m).__name__)))

        def post(m, args, out):
            if self.stack:
                self.stack.pop()
        self._handles = [M.register_module_forward_pre_hook(pre),
                         M.register_module_forward_hook(post)]
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and self.stack:
            self.last = self.stack[-1]
        for h in self._handles:
            h.remove()
        return False

    def where(self):
        name, cls = self.last or (ROOT_MODULE, "?")
        return f"module {name!r} ({cls})"


def _data_dependent_error(spec, e, where):
    op = getattr(e, "func", None)
    if op is not None:
        what = f"calls {op}, whose output depends on tensor values"
    else:   # a Python branch on an unbacked symbol
        expr = str(e).strip().splitlines()[0].split(" (unhinted")[0] if str(e).strip() else ""
        what = (f"branches on a tensor's value (aten._local_scalar_dense, e.g. .item(); "
                f"{expr})")
    return ConfigError(f"model {spec.text!r}: {where} {what}, which FakeTensorMode does not "
                       f"know; snsim predict cannot follow it: measure the model on a GPU with "
                       f"snsim capture")


def infer_target_of(net, x):
    """:func:`infer_target` of a real model: a fake run of two samples, or, for a model
    whose forward reads tensor values (``.item()``), a real one without gradients.

    Call it with the model and ``x`` on the CPU, before the model goes to a GPU (the
    executed and captured runs do): under ``FakeTensorMode`` an op with no fake kernel runs
    for real on zero-filled copies of its inputs on their device, and in ``eval`` mode without
    gradients ``nn.TransformerEncoderLayer`` and ``nn.MultiheadAttention`` take such ops (their
    fast paths, ``_transformer_encoder_layer_fwd``, ``_native_multi_head_attention``). On a GPU
    the blocks those make and free stay cached and change the segments the training run
    gets: the H200 histories of transformer_encoder b32 (traces/h200/plans_history) hold six
    such layer calls before the first step, and without them replay to exactly the
    predicted reserved peaks (plain 4,412,407,808 B, cpu_offload 1,159,725,056 B, checkpoint
    1,698,693,120 B; measured with them 4,538,236,928, 1,314,914,304, 1,719,664,640 B). A
    user's training run makes no such call."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            return infer_target(net, torch.empty_like(x[:2]))
    except Exception as e:
        if not _is_data_dependent(e):
            raise
    return infer_target(net, x)


def record_fake(spec, batch, optimizer="sgd-momentum", *, iterations=3, transform=None,
                gpu="h200"):
    """Record ``iterations`` training iterations of ``spec`` under ``FakeTensorMode``.

    A model that calls a data-dependent op (``.item()``, ``nonzero``, boolean masking) is
    recorded again with symbolic shapes (a ``ShapeEnv``): the op's value is an unbacked
    symbol, and sizes that depend on it take their upper bound. Ops met this way are listed
    in the recorder's ``data_dependent`` list.

    Parameters
    ----------
    spec : ModelSpec
    batch : int
    optimizer : str
    iterations : int
        The last one is the steady iteration; the ones before are warm-up.
    transform : callable, optional
        ``transform(model) -> model`` applied before training (an execution plan).
    gpu : str
        The hardware preset whose CUDA dispatch the fake run follows (attention kernels).

    Returns
    -------
    dict
        ``rec`` (the Recorder), ``static_names``, ``info``, ``stream``, ``model_params``.

    Raises
    ------
    ConfigError
        The model cannot be built or traced, or its forward branches on a tensor value (one
        line naming the op and the module).
    """
    try:
        return _record_fake(spec, batch, optimizer, iterations=iterations, transform=transform,
                            symbolic=False, gpu=gpu)
    except _Retry:
        pass
    try:
        return _record_fake(spec, batch, optimizer, iterations=iterations, transform=transform,
                            symbolic=True, gpu=gpu)
    except _RetryValues as retry:
        stop = retry.error
    try:
        return _record_fake(spec, batch, optimizer, iterations=iterations, transform=transform,
                            symbolic=True, gpu=gpu, values=True)
    except Exception:
        # the real values could not be computed on the CPU (an op with no CPU kernel, such as
        # a CUDA attention kernel the fake run dispatches, reached by a value it propagated):
        # the branch is the one line of the symbolic attempt
        raise stop from None


class _Retry(Exception):
    pass


def _next_attempt(spec, e, where, symbolic, values):
    """What a fake run that hit data-dependent error ``e`` raises: the retry with symbolic
    shapes, then the one with propagated values, then the one line naming op and module."""
    if not symbolic:
        return _Retry()
    error = _data_dependent_error(spec, e, where.where())
    return error if values else _RetryValues(error)


class _RetryValues(Exception):
    """A branch on a tensor's value that symbolic shapes cannot follow: the third attempt
    gives the tensors snsim itself makes from constants their real values
    (:func:`_record_fake`'s ``values``). ``error``: the one line if that fails too."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def cached_recording(model, batch, setup, cache=None):
    """``(name, (ops, marks, host_sids, nested, accumulations))``: :func:`record_fake` of
    model spec ``model``
    (``name@CxHxW`` for another input size) at ``batch`` under ``setup`` (a
    :class:`~snsim.torchsim.amp.TrainSetup`), as the diagnosis scripts read it
    (``scripts/op_breakdown.py``, ``shape_compare.py``, ``host_by_family.py``). With a
    ``cache`` folder it is kept there as ``<name>@<input size>.pkl`` and read back; a file of
    another shape (one from before the gradient sums were kept) is recorded again. ``name`` is
    ``<network>_b<batch><setup slug>``, the configuration name of ``scripts/profile_ops.py``."""
    import pickle
    from pathlib import Path
    spec = resolve_sized(model)
    name = f"{spec.name}_b{batch}{setup.slug}"
    # the file names the input size too: the name does not (a profile's configuration name)
    size = "x".join(map(str, spec.input_shape))
    path = Path(cache) / f"{name}@{size}.pkl" if cache else None
    if path is not None and path.exists():
        with open(path, "rb") as f:
            got = pickle.load(f)
        if len(got) == 5:
            return name, got
    rec = record_fake(spec, batch, setup)["rec"]
    got = (rec.ops, rec.marks, set(rec.excluded), rec.nested_ops, rec.accumulation_ops)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump(got, f)
    return name, got


def _build(spec):
    """``spec.build()`` without parameter init. A failure is one line (ConfigError), except a
    data-dependent one under fake tensors, which is raised as it is: the caller builds such a
    model (its constructor reads tensor values) with real tensors and then fakes them."""
    try:
        with no_init():
            return spec.build()
    except ConfigError:
        raise
    except Exception as e:
        if _is_data_dependent(e):
            raise
        raise ConfigError(f"model {spec.text!r} cannot be built: {_first_line(e)}") from None


def _fake_parameters(model, mode, *, buffer_values=False):
    """Swap a real model's parameters and buffers for fake ones (``from_tensor`` keeps a
    parameter a parameter, with its ``requires_grad``; a tensor shared by two modules stays
    shared). ``buffer_values``: the fake buffers keep their real values, for a mode that
    propagates them (a causal mask a module registered, which ``nn.TransformerEncoder``
    compares with its own to choose a kernel); parameters never do."""
    fakes = {}

    def fake(t, keep):
        if id(t) not in fakes:
            f = fakes[id(t)] = mode.from_tensor(t)
            if not keep:         # from_tensor keeps the value whatever the mode propagates
                f.real_tensor = None
        return fakes[id(t)]
    for m in model.modules():
        for d, keep in ((m._parameters, False), (m._buffers, buffer_values)):
            for name, t in list(d.items()):
                if t is not None:
                    d[name] = fake(t, keep)
    return model


def _record_fake(spec, batch, optimizer, *, iterations, transform, symbolic, gpu,
                 values=False):
    """One fake run of the training step (:func:`record_fake`). ``symbolic``: sizes that
    depend on tensor values are unbacked symbols. ``values`` (after a branch on a tensor's
    value that symbols cannot follow, e.g. ``if torch.all(attention_mask == 1)`` in a
    transformers release's causal-mask code): FakeTensorMode also computes the real value
    of every tensor whose inputs all have one -- the input batch, masks and positions made by
    factory functions (``torch.ones``, ``arange``), never the parameters, which are made
    without values -- so such a branch goes the way the same inputs send it on a GPU."""
    import logging
    import torch._functorch.config as functorch_config
    from torch._subclasses.fake_tensor import FakeTensorMode
    from .amp import as_setup
    setup = as_setup(optimizer)

    shape_env = None
    if symbolic:
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        shape_env = ShapeEnv()
    with functorch_config.patch(fake_tensor_propagate_real_tensors=values):
        mode = FakeTensorMode(shape_env=shape_env)
    mode.propagate_real_tensors = False      # the parameters are made without values
    quiet = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = quiet.level
    if values:   # it logs a warning per branch taken on a real value
        quiet.setLevel(logging.ERROR)
    try:
        out = _record_in_mode(spec, batch, setup, mode, iterations=iterations,
                              transform=transform, symbolic=symbolic, gpu=gpu, values=values)
    finally:
        quiet.setLevel(level)
    out["value_branches"] = values
    return out


def _record_in_mode(spec, batch, setup, mode, *, iterations, transform, symbolic, gpu, values):
    import torch
    from .record import (Instrument, Recorder, inplace_accumulation, optimizer_state,
                         register_static, train_step)
    model = None
    if not values:
        with mode, torch.device("cpu"), cuda_like_dispatch(gpu):
            try:
                model = _build(spec)
            except Exception as e:
                if not _is_data_dependent(e):
                    raise
    if model is None:
        # its constructor reads tensor values (RegNet's widths), or its forward branches on a
        # buffer's (a registered mask): built with real tensors (no init: parameters are
        # never written), then faked, the buffers keeping their values in the values attempt
        model = _fake_parameters(_build(spec), mode, buffer_values=values)
    mode.propagate_real_tensors = values
    with mode, torch.device("cpu"), cuda_like_dispatch(gpu):
        setup.cast_model(model).train()
        x = setup.make_input(spec, batch)
        where = _ModuleStack(model)
        try:
            with where:
                target = infer_target(model, x)
        except Exception as e:
            if _is_data_dependent(e):
                raise _next_attempt(spec, e, where, symbolic, values) from None
            loc = f" (in {where.where()})" if where.last else ""
            raise ConfigError(f"model {spec.text!r} cannot be traced on input "
                              f"{tuple(x.shape)}{loc}: {_first_line(e)}") from None
        y = target.make(batch)
        if transform is not None:
            model = transform(model)
        opt = setup.make_optimizer(model.parameters())
        amp_kw = {"autocast": setup.autocast("cpu"), "scaler": setup.grad_scaler("cpu"),
              "step_scope": setup.step_scope("cpu")}
        rec = Recorder(device_type="cpu", values=values)
        static_names = register_static(rec, model, x, y)
        param_names = {id(p): n for n, p in model.named_parameters()}
        inst = Instrument(model, rec)
        where = _ModuleStack(model)
        with rec.active():
            # with fp16 steps skipped: their iterations, the first step taken, the steady one
            skips = setup.skipped_steps or 0        # None (not estimated here): none
            for it in range(max(iterations, skips + 2) if skips else iterations):
                rec.begin_iteration()
                with inst:
                    try:
                        with where:
                            train_step(model, opt, x, y, inst=inst,
                                       aux_loss_weight=spec.aux_loss_weight, **amp_kw)
                    except ConfigError:
                        raise
                    except Exception as e:
                        if _is_data_dependent(e):
                            raise _next_attempt(spec, e, where, symbolic, values) from None
                        raise _training_error(spec, x, e, where) from None
                if it == skips:
                    # the optimizer's state, made at its first step taken (the first, unless
                    # fp16's GradScaler skipped some: TrainSetup.skipped_steps)
                    for name, key, t in optimizer_state(opt, param_names):
                        if key == "step" and t.dim() == 0 and setup.optimizer_impl != "fused":
                            rec.exclude(t)   # a CPU scalar on CUDA too (fused: on the GPU)
                        else:
                            sid = rec.sid_of(t)
                            if sid is not None:
                                static_names[sid] = (name, "optimizer_state")
        n_params = sum(p.numel() for p in model.parameters())
    # gradient sums a fake run makes out of place, as a CUDA run makes them (in place)
    inplace_accumulation(rec)
    out = _streams(rec, static_names, n_params)
    out["model"] = model
    return out


# exceptions of the fake run itself, not of the model: what a GPU would run, FakeTensorMode not
_FAKE_LIMITS = ("UnsupportedOperatorException", "UnsupportedFakeTensorException",
                "FakeTensorDeviceMismatchError", "MetadataMismatchError",
                "UnsupportedMutationAliasingException")
# torch/utils/checkpoint.py's check when a tensor a selective checkpoint saved (MUST_SAVE) is
# modified in place before backward, e.g. a conv output fed to ReLU(inplace=True)
_SAC_MUTATED = "Tensor cached during selective activation checkpoint has been mutated"


def _training_error(spec, x, e, where):
    """The one line of a training step that raised: the plan's rule, the fake run's limit, or
    the model's own error on this input (which PyTorch raises on a GPU too)."""
    where = f"in {where.where()}" if where.last else "in backward or the optimizer step"
    if _SAC_MUTATED in str(e):
        return ConfigError(f"--option selective=true: model {spec.text!r} modifies a tensor the "
                           f"selective checkpoint saves in place (e.g. "
                           f"ReLU(inplace=True) after a convolution), which PyTorch's "
                           f"selective checkpointing refuses on a GPU too: {_first_line(e)}")
    if any(c.__name__ in _FAKE_LIMITS for c in type(e).__mro__):
        return ConfigError(f"model {spec.text!r}: FakeTensorMode cannot run its training step "
                           f"({where}): {_first_line(e)}")
    return ConfigError(f"model {spec.text!r} cannot be trained on input {tuple(x.shape)} "
                       f"({where}): {_first_line(e)}")


def _first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _streams(rec, static_names, n_params):
    stream = []
    info = {}
    for i, (nbytes, ptr, name) in enumerate(rec.storages):
        info[i] = (nbytes, name)
    op_name = {}
    for m, kind, sid, op in rec.events:
        if kind == "a" and op >= 0:
            op_name[sid] = rec.ops[op][1] if op < len(rec.ops) else ""
    for sid, nm in op_name.items():
        info[sid] = (info[sid][0], nm)
    # the recorded events in their order, each op's reads after its allocations and forward's
    # drops of saved tensors between ops (hidden.event_positions)
    from .hidden import event_positions, with_reads
    pos, _ = event_positions(rec)
    stream = with_reads([p for p in pos if p[1][1] not in "rd"],
                        [p for p in pos if p[1][1] in "rd"])
    return {"rec": rec, "static_names": static_names, "info": info, "stream": stream,
            "n_params": n_params}


def _with_step_times(prog, times_s):
    """``prog`` with each layer step's time replaced by ``times_s`` (one per step)."""
    steps = [row[:4] + [float(t)] + row[5:] for row, t in zip(prog["steps"], times_s)]
    return {**prog, "steps": steps}


def predict_program(model, batch, *, optimizer="sgd-momentum", gpu="h200", input_shape=None,
                    transform=None, hidden=True, hidden_exclude=(), host_gauge_s=None,
                    host_range=False):
    """The trace ``program`` dict of a CPU-only prediction (modelled op times).

    ``host_gauge_s``: the gauge (:func:`snsim.torchsim.hostpace.gauge_add_s`) of the machine
    the step will run on; its ratio to the kernel table's scales the modelled host seconds.
    None: the table's own pace. ``host_range``: also the layer times at the paces of the two
    groups the preset's processes gauged in (:func:`snsim.torchsim.hostpace.host_pace_groups`;
    none with a gauge), in the provenance's ``host_range_steps_s``.

    Returns
    -------
    (dict, dict)
        The program and a provenance dict.
    """
    from ..hardware import load_hardware
    from .build import build_program
    from .plans import container_paths
    from .hostpace import host_pace_groups
    from .opcost import op_times_s
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    if batch <= 0:
        raise ConfigError(f"--batch (={batch}) must be a positive integer")
    hw = load_hardware(gpu)
    pace = 1.0
    if host_gauge_s is not None:
        from ..kernel_table import load_kernel_table
        from .hostpace import pace_factor
        pace = pace_factor(host_gauge_s, load_kernel_table(hw.name))
    wall = time.perf_counter()
    from .amp import as_setup, resolve_skipped_steps
    setup, skipped, skip_source = resolve_skipped_steps(as_setup(optimizer), spec, batch)
    r = record_fake(spec, batch, setup, transform=transform, gpu=hw.name)
    rec = r["rec"]
    stream, info = r["stream"], r["info"]
    notes = {}
    if hidden:
        from .hidden import add_hidden
        stream, info, notes = add_hidden(rec, stream, info, hw.name, batch=batch,
                                         exclude=hidden_exclude)
    time_report = {}

    def program(host_pace, report=None):
        times = op_times_s(rec.ops, hw, rec.marks, report=report, host_sids=rec.excluded,
                           host_events=rec.host_events, accumulations=rec.accumulation_ops,
                           host_pace=host_pace)
        return build_program(marks=rec.marks, ops=rec.ops, stream=stream, info=info,
                             iteration=rec.iteration, static_names=r["static_names"],
                             op_times_s=times, name=spec.name, batch=batch,
                             optimizer=setup.optimizer, hardware=hw.name, source="predict",
                             saved=rec.saved, saved_views=rec.saved_views,
                             released=rec.released, containers=container_paths(r["model"]))
    prog = program(pace, time_report)
    # the same step at the paces of the two groups the preset's processes gauged in (no
    # gauge given): the layer times only, for predict's step_time_host_range_s
    groups = host_pace_groups(hw) if host_range and host_gauge_s is None else None
    host_range_steps = [[row[4] for row in program(f)["steps"]] for f in groups or ()]
    prog["notes"].update(notes)
    from .capture import param_aliases
    prog["param_aliases"] = param_aliases(r["model"])     # tied weights, as a capture records
    prov = {"kind": "modeled", "hardware": hw.name, "tool": "snsim predict", "model": spec.text,
            "batch": batch, **setup.to_dict(), "input_shape": list(spec.input_shape),
            "parameters": r["n_params"], "record_wall_s": round(time.perf_counter() - wall, 3),
            "input_dtype": spec.input_dtype, "time_sources": time_report,
            "host_pace_factor": pace, "host_range_steps_s": host_range_steps}
    if setup.amp == "fp16":
        prov.update(skipped_steps=skipped, skipped_steps_source=skip_source)
    if host_gauge_s is not None:
        prov["host_gauge_add_s"] = float(host_gauge_s)
    if rec.data_dependent:
        prov["data_dependent_ops"] = sorted({f"{op} in {label}"
                                             for op, label in rec.data_dependent})
    if rec.cpu_only:
        prov["cpu_only_ops"] = sorted({f"{op} in {label}" for op, label in rec.cpu_only})
    if r.get("value_branches"):
        prov["value_branches"] = True
    try:
        import torch
        prov["torch"] = torch.__version__
        prov["cuda"] = torch.version.cuda or ""    # "": a CPU build (the fake run's torch)
    except ImportError:  # pragma: no cover
        pass
    from .capture import library_versions
    prov["libraries"] = library_versions()
    return prog, prov


#: the memory of the run that says what a step that does not fit would need (1 EiB)
UNLIMITED_BYTES = 1 << 60


def prov_setup(prov):
    """The training setup fields of a provenance (optimizer, optimizer_impl, amp; the float32
    matmul precision and the parameters' dtype where they are not the defaults; fp16's skipped
    steps and their source)."""
    return {k: prov[k] for k in ("optimizer", "optimizer_impl", "amp", "matmul_precision",
                                 "param_dtype", "skipped_steps", "skipped_steps_source")
            if k in prov}


def lazy_window_modelled(hw):
    """Whether a prediction on preset ``hw`` models CUDA's lazy-loading address window: the
    preset has one and the modelled run loads modules lazily (``CUDA_MODULE_LOADING``)."""
    from ..engine.allocators import module_loading
    return bool(hw.lazy_loading_window_bytes) and module_loading() == "lazy"


def _warm_process_reserved_bytes(prog, hw, reserved_bytes, budget_bytes):
    """The reserved peak of the same step in a process that ran CUDA work before building the
    model (an evaluation, a benchmark, another model): its lazily loaded modules already mapped,
    no address window is left for the first step's segments (docs/DESIGN.md, Known limits: the
    lazy-loading window). ``reserved_bytes`` where the prediction models no window (eager
    module loading, or a preset without one)."""
    from ..captured import replay_capture
    if not lazy_window_modelled(hw):
        return int(reserved_bytes)
    return int(replay_capture(prog, hw, budget_bytes=budget_bytes,
                              allocator_options={"module_loading": "eager"}).peak_reserved_bytes)


def predict(model, batch, *, optimizer="sgd-momentum", gpu="h200", input_shape=None,
            transform=None, hidden=True, hidden_exclude=(), budget_bytes=None,
            host_gauge_s=None, host_range=True):
    """Predict peak allocated/reserved bytes and step time of one training iteration.

    Parameters
    ----------
    model : str or ModelSpec
        ``torchvision:resnet50``, ``torchvision:resnet:3,4,36,3`` or ``package.module:callable``.
    batch : int
    optimizer : str
    gpu : str
        Hardware preset for modelled times and hidden-allocation tables.
    hidden : bool
        Model workspaces from the captures' tables (:mod:`~snsim.torchsim.hidden`).
    hidden_exclude : iterable of str
        Capture file names whose tables are not used (leave-one-out comparisons).
    budget_bytes : int, optional
        What the caching allocator may reserve (``set_per_process_memory_fraction``); default
        the preset's memory less the CUDA context. ``feasible`` is the engine's run under it
        (the allocator's release-and-retry and cuDNN's workspace fallback included); the
        peaks are those of an unconstrained run.
    host_range : bool
        Also the step at the paces of the two groups the preset's processes gauged in
        (``step_time_host_range_s``; None with ``host_gauge_s`` or a preset without them).

    Returns
    -------
    dict
        ``peak_allocated_bytes``, ``peak_reserved_bytes``, ``peak_requested_bytes``,
        ``step_time_s``, ``feasible``, ``failure`` and ``program`` (the trace program);
        ``peak_reserved_warm_process_bytes``, the reserved peak in a process that ran CUDA
        work before the model (:func:`_warm_process_reserved_bytes`).
    """
    from ..captured import replay_capture
    from ..hardware import load_hardware
    prog, prov = predict_program(model, batch, optimizer=optimizer, gpu=gpu,
                                 input_shape=input_shape, transform=transform, hidden=hidden,
                                 hidden_exclude=hidden_exclude, host_gauge_s=host_gauge_s,
                                 host_range=host_range)
    hw = load_hardware(gpu)
    fit = replay_capture(prog, hw, budget_bytes=hw.budget_bytes if budget_bytes is None
                         else int(budget_bytes))
    # fits: the peaks under the budget (the allocator releases cache to fit); does not fit:
    # the peaks of the whole step, what it would need -- in a memory with no limit, since a
    # step that needs more than the device has would stop in the device's memory too, and its
    # peaks would be those of a run cut short, below the budget it failed
    res = fit if fit.feasible else replay_capture(prog, hw, budget_bytes=UNLIMITED_BYTES)
    range_s = [replay_capture(_with_step_times(prog, times), hw,
                              budget_bytes=res.budget_bytes).step_time_s
               for times in prov.pop("host_range_steps_s")] or None
    return {"network": prog["name"], "batch": batch, **prov_setup(prov), "hardware": hw.name,
            "peak_reserved_warm_process_bytes": _warm_process_reserved_bytes(
                prog, hw, res.peak_reserved_bytes, fit.budget_bytes if fit.feasible
                else UNLIMITED_BYTES),
            "feasible": fit.feasible, "budget_bytes": fit.budget_bytes,
            "failure": str(fit.failure) if fit.failure else "",
            "peak_requested_bytes": res.peak_ideal_bytes,
            "peak_allocated_bytes": res.peak_allocated_bytes,
            "peak_reserved_bytes": res.peak_reserved_bytes, "static_bytes": res.static_bytes,
            "step_time_s": res.step_time_s, "step_time_host_range_s": range_s,
            "time_sources": prov["time_sources"],
            "program": prog, "provenance": prov}
