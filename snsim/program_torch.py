"""A training step in PyTorch semantics: what autograd saves for the torchvision twin of a zoo net.

:func:`build_torch_program` turns a zoo layer DAG (built with ``twin=True``, so it has every op
torchvision runs) into the same :class:`~snsim.program.Program` structure as
:func:`snsim.program.build_program`, but with the storages, saved tensors and allocation order of
one eager PyTorch training iteration (torch 2.x on CUDA, fp32, ``zero_grad(set_to_none=True)``
at the end of the step, foreach optimizer). The facts behind each rule are in
``docs/DESIGN.md`` ("PyTorch semantics"); each was checked with
``torch.autograd.graph.saved_tensors_hooks`` on a CPU and against the H200 captures.

Forward (per op: new storages, what its backward keeps):

=============  =========================================  ==================================
op             allocates                                  saved for backward
=============  =========================================  ==================================
conv2d         y, cuDNN workspace (freed in the op)       x (and the weight: static)
batch_norm     y, save_mean, save_invstd (C fp32 each)    x, save_mean, save_invstd
ReLU(inplace)  nothing: writes into its input storage     the result (= that storage)
ReLU6(inplace) a copy of its input, then writes into it    the copy (hardtanh_ reads its input)
max_pool2d     y, int64 indices (8 B per output element)  x, indices
avg_pool2d     y                                          x (adaptive pools other than 1x1 too)
global pool    y (``mean``)                               nothing
linear         y                                          x (flatten is a view)
dropout        y, bool mask (1 B per element, CUDA)       mask
add (+=)       nothing: in place into the main branch     nothing
cat            y (also for one input)                     nothing
loss           log-probs, loss, total_weight              log-probs, total_weight
LM loss        + int64 shifted targets first              + the targets
embedding      int64 position ids, one lookup per table,  the position ids
               their sum (the lookups die at the sum)
layer norm     y, mean, rstd (fp32 per row; RMS: rstd)    x, mean, rstd
GELU, SiLU     y                                          x (tanh: y)
residual add   y (``x + f(x)`` is out of place)           nothing
SwiGLU ``*``   y                                          both inputs
fused SDPA     y, logsumexp (fp32), RNG seed and offset   q, k, v (views of the projection)
eager attn     q, k, v copies, scores, mask, softmax      q, k, v copies, mask, softmax
token ``[:,0]`` nothing: a view                            nothing
=============  =========================================  ==================================

Backward follows autograd's engine: a node runs when every gradient of its output has arrived,
the ready node with the highest sequence number (latest in forward) first. Each node allocates
its input gradients (conv: ``dx``, workspace, then ``dW``, workspace, ``db``), then releases
what it saved and its incoming gradient once nothing else holds them; ``add`` passes its
gradient through, ``cat`` hands out views of it (the whole buffer lives while a view does). A
value used more than once gets its gradients summed into the part autograd's input buffer
holds the last reference to (a new buffer only when neither part is free: shared, or a view).
Parameter gradients are created in backward and live until the end of the step.
A tied weight (GPT-2's LM head) gets its gradient in two parts, summed out of place where the
token embedding's backward runs. Transformer rows were checked against ``snsim predict`` on the
twins (``snsim:gpt``'s classes, torchvision's ViT; tests/test_zoo_transformers.py).
The optimizer step is one foreach step: every momentum buffer exists (a steady iteration), and
weight decay makes a temporary copy of every gradient, freed at the end of the step.
"""
from __future__ import annotations

import collections
import functools
import heapq
import itertools
import math

from .errors import ConfigError, GraphError
from .graph import adjacency, forward_order
from .program import (OPTIMIZER_STATE_FACTOR, Program, StaticTensor, Step, Tensor,
                      cast_pieces, parameter_pieces)
from .torchsim.reduce_buffers import reduction_buffers   # torch-free

#: Temporaries of one foreach optimizer step, in gradient-sized buffers per parameter, as the
#: validation runs build the optimizers (snsim.torchsim.amp.TrainSetup): SGD (plain, momentum,
#: Nesterov; weight decay 1e-4) ``_foreach_add`` of the decay into a copy of the gradients;
#: Adam (no weight decay: torch's ``_multi_tensor_adam`` makes no gradient copy) and AdamW
#: (decoupled decay, in place on the parameters) only ``_foreach_sqrt`` of ``exp_avg_sq``.
OPTIMIZER_TEMPORARIES = {"sgd": 1, "sgd-momentum": 1, "nesterov": 1, "adam": 1, "adamw": 1}

#: Presets of sm90 GPUs (Hopper): torch's sdp_utils puts cuDNN attention first there for fp16/
#: bf16 (check_prefer_cudnn_attention); every half-precision call of the H200 captures in
#: traces/h200/amp (torch 2.11, cuDNN 9.19) ran _scaled_dot_product_cudnn_attention
CUDNN_ATTENTION_FIRST = frozenset({"h100", "h200"})
#: Bytes cuDNN's SDPA backward workspace takes beyond its fp32 dQ accumulator and softmax row
#: sums: the three H200 histories of record.cudnn_attention_backward_temporaries, all the same
CUDNN_SDPA_BACKWARD_EXTRA_BYTES = 256

#: Layer kinds with autocast rules (``--amp``; :func:`_autocast_kind`): the convolutional
#: networks' and the GPT-2, ViT, Llama and BERT transformers' (``snsim predict`` on their torch
#: twins checks them). Eager attention has none: ``snsim predict --amp`` runs autocast itself
#: on a torch model.
AUTOCAST_TYPES = frozenset({"DATA", "FORK", "CONV", "BN", "ACT", "POOL", "FC", "DROPOUT",
                            "SOFTMAX", "JOIN", "CONCAT", "PADDING", "SLICE", "EMBED",
                            "LayerNorm", "ATTN", "RMSNorm", "MUL"})


def _autocast_kind(a):
    """A layer's kind for :data:`AUTOCAST_TYPES`: its type, with the variants autocast's
    rules do not cover named apart."""
    t = a["type"]
    if t == "NORM":
        return "LayerNorm" if a.get("norm") == "layer" else "RMSNorm"
    if t == "ATTN" and a.get("attn_kernel", "flash") == "eager":
        return "eager ATTN"
    return t

#: cuBLAS keeps one workspace per (handle, stream), and a handle per thread: the forward's
#: thread and autograd's device thread each get one at their first matmul; the forward's
#: cuBLASLt ``addmm`` (bias epilogue) takes a 1 MiB cuBLASLt workspace. Sizes are torch's
#: defaults on sm90 (``CUBLAS_WORKSPACE_CONFIG`` unset: 4096 KiB x 8) and older GPUs
#: (4096 KiB x 2 + 16 KiB x 8); the sm90 ones match the H200 captures' persistent blocks.
CUBLAS_WORKSPACE_BYTES = {"sm90": 32 << 20, "default": (4096 * 2 + 16 * 8) << 10}
CUBLASLT_WORKSPACE_BYTES = 1 << 20
_SM90 = ("h100", "h200")


def _numel(shape):
    return math.prod(shape)


def conv_workspace_bytes(a, pass_name, dtype_bytes=4):
    """cuDNN workspace of one conv pass under ``cudnn.benchmark=False`` (NCHW fp32 tensors).

    cuDNN 9's heuristics pick NHWC kernels on current GPUs; with NCHW tensors the engine
    transposes its operands into the workspace: the two activations of the pass (x and y, dy
    and dx) and, unless the kernel is 1x1 (where the two layouts coincide), the filter. The
    filter pass (x and dy) reduces over the batch in splits and keeps two filter-sized partial
    sums. On the H200 captures this gives every forward and backward-data workspace of
    ResNet-50/101/152 and VGG-16's 3x3 convs to within the weights' size; backward-filter
    workspaces of small filters are up to ~8 MiB larger in reality (a minimum split buffer).
    """
    n, c, h, w = a["in_shapes"][0]
    _, k, ho, wo = a["out_shape"]
    kh, kw = a["kernel"]
    x = n * c * h * w * dtype_bytes
    y = n * k * ho * wo * dtype_bytes
    wt = k * (c // a.get("groups", 1)) * kh * kw * dtype_bytes
    filt = wt if (kh, kw) != (1, 1) else 0
    if pass_name == "bwd_filter":
        return x + y + 2 * wt
    return x + y + filt


def conv_signatures(a, needs_dx=True, dtype="float32"):
    """The aten signatures of a CONV layer's ``convolution`` and ``convolution_backward``
    calls (the backward's mask: ``needs_dx``, the weight, the bias) as
    :mod:`snsim.torchsim.record` writes them (NCHW tensors of ``dtype``, no dilation): the
    keys of the workspace tables recorded programs read (:mod:`snsim.torchsim.hidden`).

    >>> a = {"in_shapes": [(8, 3, 32, 32)], "out_shape": (8, 16, 16, 16), "kernel": (3, 3),
    ...      "stride": (2, 2), "pad": (1, 1), "out_channels": 16, "bias": True}
    >>> conv_signatures(a)[0]
    'convolution float32[8, 3, 32, 32] float32[16, 3, 3, 3] float32[16] 2 2 1 1 1 1 False 0 0 1'
    >>> conv_signatures(a, needs_dx=False)[1].rsplit("] ", 1)[1]
    '16 2 2 1 1 1 1 False 0 0 1 False True True'
    """
    from .costs import _conv_geom
    g = _conv_geom(a, 4)
    x = f"{dtype}[{g.n}, {g.c}, {g.h}, {g.w}]"
    w = f"{dtype}[{g.k}, {g.c // g.groups}, {g.kh}, {g.kw}]"
    tail = f"{g.sh} {g.sw} {g.ph} {g.pw} 1 1 False 0 0 {g.groups}"
    bias = bool(a.get("bias"))
    fwd = f"convolution {x} {w} {f'{dtype}[{g.k}]' if bias else 'None'} {tail}"
    bwd = (f"convolution_backward {dtype}[{g.n}, {g.k}, {g.ho}, {g.wo}] {x} {w} "
           f"{g.k if bias else 0} {tail} {bool(needs_dx)} True {bias}")
    return fwd, bwd


def workspace_tables(hardware):
    """The workspace tables recorded programs read (:func:`snsim.torchsim.hidden.load_tables`:
    the preset's captures and its probed table), or None where the preset has neither; read
    once per process (0.5 s: ``maxbatch`` and ``maxdepth`` build hundreds of programs)."""
    return None if hardware is None else _workspace_tables(hardware.name)


@functools.lru_cache(maxsize=4)
def _workspace_tables(name):
    from .torchsim.hidden import load_tables    # numpy only: no torch
    t = load_tables(name)
    return t if (t["exact"] or t.get("probe")) else None


def measured_conv_workspaces(hardware, a, needs_dx, dtype="float32"):
    """``(fwd, bwd_data, bwd_filter)`` workspace bytes of a CONV layer from the preset's
    tables (:func:`workspace_tables`), by the lookup recorded programs use
    (:func:`snsim.torchsim.hidden.lookup_slots`: the layer's own call in a capture or the
    probe, at another batch, its probed neighbours ...); ``bwd_data`` is 0 where the backward
    computes no input gradient. None where the preset has no tables or they cannot say (no
    level knew the call, or which pass took which workspace): the first-principles
    :func:`conv_workspace_bytes` then applies. A backward's workspaces beyond its passes'
    (the bias gradient's reduction buffers, a few KiB) are not modelled. ``dtype``: the
    calls' (a 16-bit call the tables lack reads its fp32 shape's, as recorded ones do)."""
    if hardware is None:
        return None
    return _measured_conv_workspaces(hardware.name, *conv_signatures(a, needs_dx, dtype),
                                     int(a["in_shapes"][0][0]), bool(needs_dx))


@functools.lru_cache(maxsize=1 << 16)   # a search builds one batch's program many times
def _measured_conv_workspaces(name, fwd_sig, bwd_sig, batch, needs_dx):
    tables = _workspace_tables(name)
    if tables is None:
        return None
    from .torchsim.hidden import conv_call, lookup_slots, per_pass_sizes
    sizes, how, _ = lookup_slots(tables, fwd_sig, batch)
    if how in ("none", "modelled"):
        return None
    fwd = sizes[0] if sizes else 0
    sizes, how, slots = lookup_slots(tables, bwd_sig, batch)
    if how in ("none", "modelled"):
        return None
    per = per_pass_sizes(conv_call(bwd_sig), sizes, slots)
    n_pass = 2 if needs_dx else 1
    if per is None and slots is None and len(sizes) > n_pass:
        per = list(sizes[:n_pass])     # captures: the passes', then the bias sum's buffers
    if per is None:
        return None
    return (fwd, per[0], per[1]) if needs_dx else (fwd, 0, per[0])


def _embed_forward(a, n, new, dtype, cast_bytes=0):
    """An EMBED layer's forward storages: ``(outputs, temporaries, saved)`` in allocation order.

    Token ids (``snsim:gpt``'s ``wte(tokens) + wpe(arange(s))``): the position ids (int64,
    kept by the position table's backward), one lookup per table, then their sum. Patches
    (torchvision's ViT): ``cat([class token, patches])``, then ``+ pos_embedding``; under
    autocast ``cat`` first copies the 16-bit patches to fp32 (``cast_bytes``), the class
    token's dtype.
    """
    name = a["name"]
    nb, s, d = a["out_shape"]
    y_bytes = nb * s * d * dtype
    saved, temps = [], []
    if a.get("vocab"):
        if a.get("positions"):
            saved.append(new(f"{name}.position_ids", "activation", s * 8, n))
        temps.append(new(f"{name}.word", "activation", y_bytes, n))
        if a.get("positions"):
            temps.append(new(f"{name}.position", "activation", s * d * dtype, n))
        if a.get("token_types"):
            temps.append(new(f"{name}.token_type", "activation", y_bytes, n))
    else:
        if cast_bytes:
            temps.append(new(f"{name}.patches.cast", "activation", cast_bytes, n))
        temps.append(new(f"{name}.cat", "activation", y_bytes, n))
    return [new(f"{name}.y", "activation", y_bytes, n)], saved + temps, saved


def _embed_backward(a, n, dy, new, params_of, add_step, tied_parts, saved, dtype, t_b):
    """An EMBED layer's backward: one gradient table per lookup (``embedding_dense_backward``;
    the position table's after a sum over the batch), a tied table's parts summed out of place
    (autograd's input buffer); patches get ``dy`` itself (``cat`` hands out views). Returns the
    input's gradient (None for token ids)."""
    name = a["name"]
    nb, s, d = a["out_shape"]
    rows = dict(a.get("pieces", []))
    if not a.get("vocab"):
        pg = params_of(n, ("class_token", rows.get("class_token", 0)),
                       ("pos_weight", rows.get("pos_weight", 0)))
        add_step(n, "B", t_b, [dy] + pg)
        return dy
    spent = 0.0     # the smaller tables' share of t_b; the word table's gradient takes the rest
    if a.get("positions"):
        red = new(f"{name}.position.grad", "activation_grad", s * d * dtype, n)
        add_step(n, "B", t_b / 4, [dy, red], name=f"{name}.position_sum")
        add_step(n, "B", t_b / 4, saved + [red] + params_of(n, ("pos_weight", rows["pos_weight"])),
                 name=f"{name}.position_backward")
        spent += t_b / 2
    if a.get("token_types"):
        add_step(n, "B", t_b / 4, [dy] + params_of(n, ("type_weight", rows["type_weight"])),
                 name=f"{name}.token_type_backward")
        spent += t_b / 4
    if tied_parts:
        own = new(f"{name}.weight.grad_own", "activation_grad", rows["weight"] * dtype, n)
        add_step(n, "B", t_b - spent, [dy, own])
        add_step(n, "B", 0.0, tied_parts + [own] + params_of(n, ("weight", rows["weight"])),
                 name=f"{name}.weight.grad_sum")
    else:
        add_step(n, "B", t_b - spent, [dy] + params_of(n, ("weight", rows["weight"])))
    return None


def _cudnn_attention(a, dtype, hardware):
    """Whether CUDA's SDPA runs cuDNN's kernel for ATTN layer ``a``: 16-bit attention on a
    Hopper preset (:data:`CUDNN_ATTENTION_FIRST`; the head-dim rule of
    :func:`snsim.torchsim.predict.cuda_sdpa_backend`)."""
    d = a["head_dim"]
    return (dtype == 2 and getattr(hardware, "name", "") in CUDNN_ATTENTION_FIRST
            and d % 8 == 0 and d <= 256 and a["out_shape"][1] > 1)


def _rms_norm_forward(a, n, x, new, add_step, dtype, t_f):
    """Hugging Face's ``LlamaRMSNorm`` as its ops run (the twin's recording): the input as fp32
    (a copy in 16 bits), ``pow(2)`` (dropped before ``mean``'s row is made, where CUDA drops
    it after: one row's difference), ``mean``, ``+ eps`` and
    ``rsqrt`` (fp32 rows: kept), the normalized ``h = x * rsqrt`` (full, kept; in 16 bits
    cast back, the fp32 one dropped) and ``weight * h``. Returns ``(y, saved)``: the fp32
    input, the row statistics and ``h``."""
    name = a["name"]
    numel = _numel(a["out_shape"])
    rows = numel // a["out_shape"][-1]

    def act(tag, nbytes):
        return new(f"{name}.{tag}", "activation", nbytes, n)
    x32 = x
    first = []
    if dtype != 4:
        x32 = act("x_fp32", numel * 4)
        first = [x32]
    # pow's square before the layer's own step, which a replay (recompute) runs alone
    sq = act("pow", numel * 4)
    add_step(n, "F", 0.0, [x] + first + [sq], first + [sq], (x,), name=f"{name}.square")
    mean, eps = act("mean", rows * 4), act("add_eps", rows * 4)
    rstd, h = act("rstd", rows * 4), act("h", numel * 4)
    cast = [act("h_low", numel * dtype)] if dtype != 4 else []
    y = act("y", numel * dtype)
    add_step(n, "F", t_f, [x32, mean, eps, rstd, h] + cast + [y],
             [mean, eps, rstd, h] + cast + [y], (x32,))
    return y, [x32, rstd] + (cast or [h])


def _rms_norm_backward(a, n, dy, saved, new, add_step, pg, dtype, t_b, needs_dx):
    """``LlamaRMSNorm``'s backward as autograd runs it: the weight's (``dy * weight``, and
    ``dy * h`` summed over the rows), in 16 bits the cast of h's gradient to fp32, the
    product's (``gh * rstd``: the input's first gradient; ``gh * x`` summed per row), the rows'
    ``rsqrt`` and ``mean`` gradients, ``mean``'s expanded back over the row, ``pow``'s (two
    temporaries and a product summed into the first gradient), in 16 bits cast back. Returns
    the input's gradient (None when it needs none)."""
    name = a["name"]
    numel = _numel(a["out_shape"])
    rows = numel // a["out_shape"][-1]
    x32, rstd, h = saved

    def grad(tag, nbytes):
        return new(f"{name}.{tag}", "activation_grad", nbytes, n)
    gh, tmp = grad("dh", numel * dtype), grad("dy_h", numel * dtype)
    add_step(n, "B", t_b / 2, [dy, h, gh, tmp] + pg, name=f"{name}.weight_backward")
    if not needs_dx:
        return None
    if dtype != 4:
        g32 = grad("dh_fp32", numel * 4)
        add_step(n, "B", 0.0, [gh, g32], name=f"{name}.grad_cast")
        gh = g32
    dx, tmp, gr = grad("dx", numel * 4), grad("dh_x", numel * 4), grad("drstd", rows * 4)
    add_step(n, "B", 0.0, [gh, x32, rstd, dx, tmp, gr], name=f"{name}.mul_backward")
    small = [grad(f"row{k}", rows * 4) for k in range(2)]
    gv = grad("dvariance", rows * 4)
    add_step(n, "B", 0.0, [gr, rstd] + small + [gv], name=f"{name}.rsqrt_backward")
    gm = grad("dmean", numel * 4)
    add_step(n, "B", 0.0, [gv, gm], name=f"{name}.mean_backward")
    temps = [grad(f"dpow{k}", numel * 4) for k in range(3)]
    add_step(n, "B", t_b / 2, [gm, x32] + temps + [dx], name=f"{name}.pow_backward")
    if dtype != 4:
        low = grad("dx_low", numel * dtype)
        add_step(n, "B", 0.0, [dx, low], name=f"{name}.dx_cast")
        dx = low
    return dx


def _rotary_forward(a, n, q, k, new, add_step, dtype):
    """Rotary positions as Hugging Face applies them (``q * cos + rotate_half(q) * sin``, then
    the same for k): per projection a product, ``rotate_half``'s ``cat`` (its half-size
    ``neg`` dropped at once) and a second product, summed into a new tensor; the temporaries
    die in the step. Returns the rotated ``(q, k)``."""
    name = a["name"]
    nb, s, _ = a["out_shape"]
    d = a["head_dim"]
    out = []
    for tag, src, heads in (("q", q, a["heads"]), ("k", k, a["kv_heads"])):
        nbytes = nb * s * heads * d * dtype
        temps = [new(f"{name}.{tag}_{t}", "activation", nbytes, n) for t in ("cos", "sin")]
        rot = new(f"{name}.{tag}_rot", "activation", nbytes, n)
        add_step(n, "F", 0.0, [src] + temps + [rot], temps + [rot], (src,),
                 name=f"{name}.rotary_{tag}")
        out.append(rot)
    return tuple(out)


def _math_attention(a, dtype, hardware):
    """Whether CUDA's SDPA runs its math composite for fused ATTN layer ``a``: grouped-query
    heads (``enable_gqa``, as Hugging Face's Llama calls it) that cuDNN's kernel does not take
    (:func:`_cudnn_attention`); neither flash nor the memory-efficient kernel takes them
    (:func:`snsim.torchsim.predict.cuda_sdpa_backend`: on the H200 every fp32 grouped-query
    call of the probe ran the composite). ``nn.MultiheadAttention`` (``mha``) has no
    grouped-query heads to run."""
    return (a["type"] == "ATTN" and a.get("attn_kernel", "flash") == "flash" and not a.get("mha")
            and a["kv_heads"] != a["heads"] and not _cudnn_attention(a, dtype, hardware))


def _math_attention_forward(a, n, x, new, add_step, dtype, t_f, parts=None):
    """SDPA's math composite as CUDA runs it (:func:`snsim.torchsim.predict.cuda_math_attention`,
    whose recording this follows op by op), on q, k, v views of the packed projection ``x``
    (rotary: on new rotated q and k, which live until the attention module returns): 16-bit
    inputs upcast to fp32; the query scaled by the root of the scale; the causal mask (a bool
    ``tril`` and the bias of the upcasts' dtype it becomes); k and v repeated to every head
    (``repeat_interleave``); the transposed key scaled; the query's contiguous copy for the
    batched product; the ``S x S`` scores, ``_safe_softmax`` (its probabilities kept, its
    masks dropped), the product with the values, and the output's ``(N, S, H*D)`` copy. The
    composite's locals die when it returns. ``parts``: the projection's q, k and v as
    separate storages (a rotary layer's: Hugging Face's three linear layers), else views of
    ``x``. Returns ``(y, saved, lingering)``."""
    name = a["name"]
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a["kv_heads"], a["head_dim"]
    q_b, kv_b = nb * s * h * d, nb * s * kv * d
    acc = 4     # fp32 accumulation: half inputs upcast (allow_fp16_bf16_reduction_math_sdp off)
    ss = nb * h * s * s

    def act(tag, nbytes):
        return new(f"{name}.{tag}", "activation", nbytes, n)
    q_in, k_in, v_in = parts or (x, x, x)
    lingering = [v_in]
    if a.get("rotary"):
        q_in, k_in = _rotary_forward(a, n, q_in, k_in, new, add_step, dtype)
        lingering += [q_in, k_in]
    locals_ = []
    if dtype != acc:
        ups = [act("q_acc", q_b * acc), act("k_acc", kv_b * acc), act("v_acc", kv_b * acc)]
        add_step(n, "F", 0.0, [q_in, k_in, v_in] + ups, ups, (q_in, k_in, v_in),
                 name=f"{name}.upcast")
        q_in, k_in, v_in = ups
        locals_ += ups
    qs = act("q_scaled", q_b * acc)
    add_step(n, "F", 0.0, [q_in, qs], [qs], (q_in,), name=f"{name}.scale_q")
    locals_.append(qs)
    mask = []
    if a.get("causal"):
        ones, tril, bias = act("ones", s * s), act("tril", s * s), act("causal_bias", s * s * acc)
        add_step(n, "F", 0.0, [ones, tril, bias], [ones, tril, bias], (), name=f"{name}.mask")
        mask = [tril, bias]
        locals_ += mask
    k_rep, v_rep = act("k_repeated", q_b * acc), act("v_repeated", q_b * acc)
    add_step(n, "F", 0.0, [k_in, v_in, k_rep, v_rep], [k_rep, v_rep], (k_in, v_in),
             name=f"{name}.repeat_kv")
    locals_.append(k_rep)
    kts, qc = act("k_scaled", q_b * acc), act("q_contiguous", q_b * acc)
    scores = act("scores", ss * acc)
    # the scores take the mask's bias in place
    add_step(n, "F", t_f / 2, [k_rep, kts, qs, qc, scores] + mask, [kts, qc, scores],
             (qs, k_rep, *mask), name=f"{name}.qk")
    probs = act("probs", ss * acc)
    temps = [act("softmax_mask", ss), act("softmax_rows", nb * h * s), act("softmax_flag", 4)]
    add_step(n, "F", 0.0, [scores, probs] + temps, [probs] + temps, (scores,),
             name=f"{name}.softmax")
    out = act("pv", q_b * acc)
    # every input a step reads from an earlier one is among its inputs (the plans' segments
    # see the data flow so); the composite's locals are read last here, where they die
    add_step(n, "F", t_f / 2, [probs, v_rep, out] + locals_, [out], (probs, v_rep, *locals_),
             name=f"{name}.pv")
    y = act("y", q_b * dtype)
    add_step(n, "F", 0.0, [out, y], [y], (out,), name=f"{name}.out")
    return y, [v_rep, kts, qc, probs], lingering


def _math_attention_backward(a, n, dy, saved, new, add_step, x_bytes, dtype, t_b):
    """The math composite's backward as autograd runs it: a contiguous copy of ``dy``; the
    value product's ``dv`` (every head) and ``dprobs``; the softmax's gradient (with CUDA's
    ``grad * output`` temporary); the scores' ``dq`` and ``dk``; the scales' gradients; the
    repeated k and v summed back over each group; 16-bit inputs' gradients cast back; rotary
    gradients rotated back; ``cat`` into the packed gradient. Returns it."""
    name = a["name"]
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a["kv_heads"], a["head_dim"]
    q_b, kv_b = nb * s * h * d, nb * s * kv * d
    acc, ss = 4, nb * h * s * s
    v_rep, kts, qc, probs = saved

    def grad(tag, nbytes):
        return new(f"{name}.{tag}", "activation_grad", nbytes, n)
    dyc = grad("dy_contiguous", q_b * acc)
    add_step(n, "B", 0.0, [dy, dyc], name=f"{name}.dy_clone")
    dv_rep, dprobs = grad("dv_repeated", q_b * acc), grad("dprobs", ss * acc)
    add_step(n, "B", t_b / 2, [dyc, probs, v_rep, dv_rep, dprobs], name=f"{name}.pv_backward")
    dscores, tmp = grad("dscores", ss * acc), grad("softmax_backward_product", ss * acc)
    add_step(n, "B", 0.0, [dprobs, probs, dscores, tmp], name=f"{name}.softmax_backward")
    dqs, dkts = grad("dq_scaled", q_b * acc), grad("dk_scaled", q_b * acc)
    add_step(n, "B", t_b / 2, [dscores, qc, kts, dqs, dkts], name=f"{name}.qk_backward")
    dk_rep = grad("dk_repeated", q_b * acc)
    add_step(n, "B", 0.0, [dkts, dk_rep], name=f"{name}.scale_k_backward")
    dv = grad("dv", kv_b * acc)
    add_step(n, "B", 0.0, [dv_rep, dv], name=f"{name}.repeat_v_backward")
    dk = grad("dk", kv_b * acc)
    add_step(n, "B", 0.0, [dk_rep, dk], name=f"{name}.repeat_k_backward")
    dq = grad("dq", q_b * acc)
    add_step(n, "B", 0.0, [dqs, dq], name=f"{name}.scale_q_backward")
    g = [dq, dk, dv]
    if dtype != acc:
        low = [grad(f"{t}_cast", nbytes * dtype) for t, nbytes in
               (("dq", q_b), ("dk", kv_b), ("dv", kv_b))]
        add_step(n, "B", 0.0, g + low, name=f"{name}.grad_cast")
        g = low
    if a.get("rotary"):
        r = [grad("dq_unrot", q_b * dtype), grad("dk_unrot", kv_b * dtype)]
        add_step(n, "B", 0.0, g[:2] + r, name=f"{name}.rotary_backward")
        g = r + g[2:]
    dx = grad("dx", x_bytes)
    add_step(n, "B", 0.0, g + [dx], name=f"{name}.cat")
    return dx


def _attention_forward(a, n, x, new, add_step, dtype, cudnn=False, parts=None):
    """An ATTN layer's forward storages: ``(output, allocations, saved inputs, other saved)``.

    Fused SDPA (``"flash"``): the output, a logsumexp per row and head (fp32; the fp32
    memory-efficient kernel pads the rows to 32, flash in fp16/bf16 does not) and the RNG
    seed and offset; it keeps q, k, v — views of the packed projection ``x``. Rotary
    positions (:func:`_rotary_forward`) make new q and k from ``parts``, the projection's q,
    k and v as separate storages (Hugging Face's three linear layers), and the kernel keeps
    them and v. ``nn.MultiheadAttention`` (``mha``, torchvision's
    ViT) first copies the packed projection into q/k/v order (kept instead of ``x``) and hands
    the output projection a ``(S, N, C)`` copy of the output, except from cuDNN's kernel
    (``cudnn``: 16-bit on Hopper), whose output is already laid out so. Eager: see
    :func:`_eager_attention_forward`.
    """
    name = a["name"]
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a["kv_heads"], a["head_dim"]
    y_b = nb * s * h * d * dtype
    packed = [new(f"{name}.qkv_contiguous", "activation", y_b + 2 * nb * s * kv * d * dtype, n)] \
        if a.get("mha") else []
    y = new(f"{name}.y", "activation", y_b, n)
    rows = -(-s // 32) * 32 if dtype == 4 else s
    kept = [new(f"{name}.logsumexp", "activation", nb * h * rows * 4, n),
            new(f"{name}.philox_seed", "activation", 8, n),
            new(f"{name}.philox_offset", "activation", 8, n)]
    if a.get("rotary"):
        q, k, v = parts
        return y, [y] + kept, [v], kept + list(_rotary_forward(a, n, q, k, new, add_step, dtype))
    if a.get("mha") and not cudnn:
        out = new(f"{name}.y_contiguous", "activation", y_b, n)
        return out, packed + [y] + kept + [out], packed, [y] + kept
    if a.get("mha"):
        return y, packed + [y] + kept, packed, [y] + kept
    return y, [y] + kept, [x], kept


def _eager_attention_forward(a, n, x, new, add_step, dtype, t_f):
    """Eager attention (nanoGPT's math path) as its ops run, one step each, so that the
    ``S x S`` temporaries die where they do: ``q @ k^T`` on contiguous copies of q and k
    (kept), the scaled scores; the causal mask (``ones(s, s).triu(1)``, bool, kept by
    ``masked_fill``); the masked scores and their softmax (kept); ``probs @ v`` on a copy of v
    (kept) and the ``(N, S, H*D)`` copy of its output; grouped-query k and v copied once per
    head (Hugging Face's ``repeat_kv``). Returns ``(y, saved)``."""
    name = a["name"]
    nb, s, _ = a["out_shape"]
    h, d = a["heads"], a["head_dim"]
    q_b, ss_b = nb * s * h * d * dtype, nb * h * s * s * dtype
    # grouped-query k and v are expanded to every head (repeat_kv) in these copies
    q, k = new(f"{name}.q", "activation", q_b, n), new(f"{name}.k", "activation", q_b, n)
    scores = new(f"{name}.scores", "activation", ss_b, n)
    scaled = new(f"{name}.scaled", "activation", ss_b, n)
    add_step(n, "F", t_f / 2, [x, q, k, scores, scaled], [q, k, scores, scaled], (x,),
             name=f"{name}.qk")
    mask, masked = [], []
    if a.get("causal"):
        ones = new(f"{name}.ones", "activation", s * s, n)
        mask = [new(f"{name}.mask", "activation", s * s, n)]
        add_step(n, "F", 0.0, [ones] + mask, [ones] + mask, (), name=f"{name}.mask")
        masked = [new(f"{name}.masked", "activation", ss_b, n)]
    probs = new(f"{name}.probs", "activation", ss_b, n)
    add_step(n, "F", 0.0, mask + masked + [probs, scaled], masked + [probs], (scaled,),
             name=f"{name}.softmax")
    v = new(f"{name}.v", "activation", q_b, n)
    pv = new(f"{name}.pv", "activation", q_b, n)
    y = new(f"{name}.y", "activation", q_b, n)
    add_step(n, "F", t_f / 2, [x, probs, v, pv, y], [y, v, pv], (x, probs))
    return y, [q, k, v, probs] + mask


def _eager_attention_backward(a, n, dy, saved, new, add_step, x_bytes, dtype, t_b):
    """Eager attention's backward, op by op: a contiguous copy of dy; ``probs @ v``'s dv and
    dprobs; the softmax's (with CUDA's ``grad * output`` temporary), the mask's and the
    scale's gradients (``S x S`` each); ``q @ k^T``'s
    dq and dk; contiguous copies of dk and dv (grouped-query: the sums over each group of
    heads); ``cat`` into the packed gradient. Returns it."""
    name = a["name"]
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a["kv_heads"], a["head_dim"]
    q_b, kv_b, ss_b = nb * s * h * d * dtype, nb * s * kv * d * dtype, nb * h * s * s * dtype
    q, k, v, probs, *mask = saved

    def grad(tag, nbytes):
        return new(f"{name}.{tag}", "activation_grad", nbytes, n)
    dyc = grad("dy_contiguous", q_b)
    add_step(n, "B", 0.0, [dy, dyc], name=f"{name}.dy_clone")
    dv, dprobs = grad("dv", q_b), grad("dprobs", ss_b)
    add_step(n, "B", t_b / 2, [dyc, probs, v, dv, dprobs], name=f"{name}.pv_backward")
    g = grad("dscores_softmax", ss_b)
    # CUDA's softmax backward computes grad * output into a temporary after grad_input
    # (snsim.torchsim.record.cuda_temporaries), freed when the step ends
    tmp = grad("softmax_backward_product", ss_b)
    add_step(n, "B", 0.0, [dprobs, probs, g, tmp], name=f"{name}.softmax_backward")
    if mask:
        g2 = grad("dscores_masked", ss_b)
        add_step(n, "B", 0.0, [g] + mask + [g2], name=f"{name}.masked_fill_backward")
        g = g2
    dscores = grad("dscores", ss_b)
    add_step(n, "B", 0.0, [g, dscores], name=f"{name}.scale_backward")
    dq, dk = grad("dq", q_b), grad("dk", q_b)
    add_step(n, "B", t_b / 2, [dscores, q, k, dq, dk], name=f"{name}.qk_backward")
    dvc, dkc = grad("dv_contiguous", kv_b), grad("dk_contiguous", kv_b)
    add_step(n, "B", 0.0, [dv, dvc], name=f"{name}.dv_clone")
    add_step(n, "B", 0.0, [dk, dkc], name=f"{name}.dk_clone")
    dx = grad("dx", x_bytes)
    add_step(n, "B", 0.0, [dq, dkc, dvc, dx], name=f"{name}.cat")
    return dx


def _attention_backward(a, n, dy, sv, new, add_step, x_bytes, dtype, t_b, cudnn=False):
    """An ATTN layer's backward: the q, k and v gradients (rotary: rotated back into new
    buffers), then ``cat`` into the packed projection's gradient. Returns it. cuDNN's kernel
    (``cudnn``) takes a workspace after the three gradients and frees it before it returns
    (:func:`snsim.torchsim.record.cudnn_attention_backward_temporaries`: an fp32 dQ
    accumulator and row sums, B x H x S x (D + 1) x 4 bytes, and 256 more)."""
    name = a["name"]
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a["kv_heads"], a["head_dim"]
    q_b, kv_b = nb * s * h * d * dtype, nb * s * kv * d * dtype
    g = [new(f"{name}.dq", "activation_grad", q_b, n), new(f"{name}.dk", "activation_grad", kv_b, n),
         new(f"{name}.dv", "activation_grad", kv_b, n)]
    ws = ([new(f"{name}.cudnn_workspace", "activation_grad",
               nb * h * s * (d + 1) * 4 + CUDNN_SDPA_BACKWARD_EXTRA_BYTES, n)] if cudnn else [])
    add_step(n, "B", t_b, sv + [dy] + g + ws)
    if a.get("rotary"):
        r = [new(f"{name}.dq_unrot", "activation_grad", q_b, n),
             new(f"{name}.dk_unrot", "activation_grad", kv_b, n)]
        add_step(n, "B", 0.0, g[:2] + r, name=f"{name}.rotary_backward")
        g = r + g[2:]
    dx = new(f"{name}.dx", "activation_grad", x_bytes, n)
    add_step(n, "B", 0.0, g + [dx], name=f"{name}.cat")
    return dx


# zoo layer types that are an ``nn.Module`` call in the torchvision twin (an add or a
# ``torch.cat`` in a block's forward is not), and the autograd nodes their backward runs
# (a Linear: ``AddmmBackward0`` and the weight's ``TBackward0``; the loss: ``NllLossBackward0``
# and ``LogSoftmaxBackward0``), besides their parameters' ``AccumulateGrad``
_MODULE_TYPES = frozenset({"CONV", "BN", "ACT", "POOL", "FC", "DROPOUT", "SOFTMAX", "LN",
                           "EMBED", "ATTN", "GELU"})
_NODES = {**{t: 1 for t in _MODULE_TYPES | {"JOIN", "CONCAT", "SLICE"}}, "FC": 2, "SOFTMAX": 2}

#: The foreach calls of one ``torch.optim`` step (``foreach=True``; weight decay 1e-4 on the
#: SGDs, none on Adam/AdamW: :meth:`snsim.torchsim.amp.TrainSetup.make_optimizer`) as the
#: recorder sees them: ``(family, tensors per parameter it reads and makes, parameter-sized
#: passes of traffic)``. Adam's first call adds to its step counters, host tensors (no traffic).
#: The zoo's optimizer step is their kernel-table time on the GPU and their issue on the host;
#: tests/test_program_torch.py checks both against a recording of each optimizer.
FOREACH_CALLS = {
    "sgd": (("_foreach_add", 3, 3), ("_foreach_add_", 2, 2)),
    "sgd-momentum": (("_foreach_add", 3, 3), ("_foreach_mul_", 1, 1), ("_foreach_add_", 2, 2),
                     ("_foreach_add_", 2, 2)),
    "nesterov": (("_foreach_add", 3, 3), ("_foreach_mul_", 1, 1), ("_foreach_add_", 2, 2),
                 ("_foreach_add_", 2, 2), ("_foreach_add_", 2, 2)),
}
_ADAM = (("_foreach_lerp_", 2, 2), ("_foreach_mul_", 1, 1), ("_foreach_addcmul_", 2, 3),
         ("_foreach_sqrt", 2, 2), ("_foreach_div_", 1, 1), ("_foreach_add_", 1, 1),
         ("_foreach_addcdiv_", 3, 3))
FOREACH_CALLS["adam"] = (("_foreach_add_", 1, 0),) + _ADAM
FOREACH_CALLS["adamw"] = (("_foreach_add_", 1, 0), ("_foreach_mul_", 1, 1)) + _ADAM
#: GradScaler's calls in an fp16 step (``scaler.unscale_`` in ``scaler.step``, then
#: ``scaler.update``), as :data:`FOREACH_CALLS`: the gradients read and written once, and the
#: one-element scale update
SCALER_CALLS = (("_amp_foreach_non_finite_check_and_unscale_", 1, 2),
                ("_amp_update_scale_", 0, 0))
#: ``.item()`` reads of a host step counter per parameter in one step (Adam's two bias
#: corrections, ``_get_value(step)``)
HOST_READS_PER_PARAM = {"adam": 2, "adamw": 2}


def _host_s(steps, nodes, table, inn, param_grads, tensors, optimizer, layer_ops, update_calls,
            math_u, scaler):
    """Host seconds the launching thread spends on each step before its kernels can start.

    They are what :func:`snsim.torchsim.opcost.host_issue_s` charges the
    same calls in a recorded step, from the preset's in-network host model ``inn``
    (:func:`snsim.kernel_table.read_host_innet`) through the same per-call rule
    (:func:`snsim.kernel_table.innet_call_s`): each of the layer's aten calls at its shape
    (:func:`snsim.costs._layer_ops`, :meth:`KernelTable.issue_s`) times its family's ratio,
    plus the phase's per-call cost; in forward ``per_module_s`` for its module call, each
    block and stage its dotted name enters (``layer1``, ``layer1.0``) and the model's own
    call; in backward ``per_node_s`` for each of its autograd nodes (:data:`_NODES`) and its
    parameters' ``AccumulateGrad`` (a concatenation's also ``per_cat_input_s`` per input); the
    autograd engine's gradient sums (``per_accumulate_s`` each: an ``add_`` from C++); the
    optimizer step's foreach calls (``update_calls``: :data:`FOREACH_CALLS`, and
    :data:`SCALER_CALLS` with ``scaler``) by tensor count and bytes in the parameters' math
    ``math_u`` (their dtype), ``per_param_s`` per parameter, ``per_read_s`` per read of a host step
    counter and, with GradScaler, ``per_param_scaler_s``. ``layer_ops(node)``: the layer's
    aten calls (:func:`snsim.costs._layer_ops` at the step's precision)."""
    from .costs import lookup_args
    from .kernel_table import family_of, innet_call_s
    memo = {}

    def calls(ops, phase, before_s):
        h = before_s
        for f, flops, nbytes, cls, math_, *_ in ops:
            fam, cls = family_of(f), "" if cls == "cast" else cls
            key = (fam, flops, nbytes, cls, math_)
            if key not in memo:      # a network repeats its shapes (every block)
                memo[key] = table.issue_s(fam, flops=flops, nbytes=nbytes, cls=cls,
                                          **lookup_args(math_))
            h = innet_call_s(inn, fam, phase, memo[key], h)
        return h

    n_params = len(param_grads)
    param_bytes = sum(tensors[t].nbytes for t in param_grads)
    entered = set()     # dotted prefixes of the blocks and stages entered
    charged = set()
    charged_f = False
    host = []
    for st in steps:
        a = nodes.get(st.layer, {})
        typ = a.get("type")
        h = 0.0
        if st.phase == "U":
            h = n_params * (inn["per_param_s"]
                            + HOST_READS_PER_PARAM.get(optimizer, 0) * inn["per_read_s"]
                            + (inn.get("per_param_scaler_s", 0.0) if scaler else 0.0))
            for fam, lists, passes in update_calls:
                issue = table.issue_s(fam, nbytes=passes * param_bytes,
                                      ntensors=lists * n_params, **lookup_args(math_u))
                h = innet_call_s(inn, fam, "U", issue, h)
        elif st.type == "JOIN" and st.name.endswith(".grad_sum"):
            h = inn["per_accumulate_s"]     # the engine's add_ from C++, at any size
        elif (st.layer, st.phase) not in charged and typ is not None:
            charged.add((st.layer, st.phase))
            ops = layer_ops(st.layer)
            part = ops[0 if st.phase == "F" else 1] if ops else []
            if st.phase == "F":
                modules = (typ in _MODULE_TYPES) + (not charged_f)   # and the model's call
                charged_f = True
                parts = str(a.get("name", "")).split(".")[:-1]
                for k in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:k])
                    if prefix not in entered:
                        entered.add(prefix)
                        modules += 1
                h = calls(part, "F", inn["per_module_s"] * modules)
            else:
                n_nodes = _NODES.get(typ, 0) + len(parameter_pieces(a))
                h = calls(part, "B", inn["per_node_s"] * n_nodes + (
                    inn["per_cat_input_s"] * len(a.get("in_shapes", ()))
                    if typ == "CONCAT" else 0.0))
        host.append(h)
    return host


def build_torch_program(G, *, hardware=None, optimizer="sgd-momentum", workspaces=True,
                        kernel_table="auto", amp=None, param_dtype="fp32"):
    """Build the :class:`Program` of one PyTorch training iteration of zoo graph ``G``.

    Parameters
    ----------
    G : networkx.DiGraph
        A zoo layer DAG, ideally built with ``twin=True`` (every op of the torchvision model).
    hardware : HardwareSpec, optional
        Models layer times (and picks the cuBLAS workspace size); required unless every node
        carries ``fwd_time_s``/``bwd_time_s``.
    optimizer : {"sgd", "sgd-momentum", "nesterov", "adam", "adamw"}
    workspaces : bool
        Model the memory no tensor owns (default True): cuDNN conv workspaces inside the conv
        steps and cuBLAS's persistent workspaces. False leaves both out.
    kernel_table : "auto", "none", a path or a KernelTable
        Layer times from the preset's measured kernel table (``snsim calibrate``) where it has
        one, with the host issuing the kernels as a second resource; "none": the roofline.
    amp : {None, "bf16", "fp16"}
        ``torch.autocast`` around forward and loss, fp32 master weights (``--amp``): see
        :data:`AUTOCAST_TYPES` for the layers it has rules for.
    param_dtype : {"fp32", "bf16", "fp16"}
        Pure low-precision training (``model.to(dtype)``, ``--param-dtype``): parameters,
        gradients, optimizer state, BN buffers, activations and the image batch in 16 bits;
        BN's and LayerNorm's saved statistics stay fp32.

    Examples
    --------
    >>> from snsim.zoo import build_network
    >>> from snsim.hardware import load_hardware
    >>> p = build_torch_program(build_network("resnet18", batch=2, twin=True),
    ...                         hardware=load_hardware("h200"))
    >>> p.framework, [s.phase for s in p.steps][:2], p.steps[-1].name
    ('pytorch', ['F', 'F'], 'optimizer.step')
    """
    if optimizer not in OPTIMIZER_STATE_FACTOR:
        raise ConfigError(f"optimizer {optimizer!r} is unknown; known: "
                          f"{', '.join(OPTIMIZER_STATE_FACTOR)}")
    from .torchsim.amp import TrainSetup    # torch-free: the rules of --amp and --param-dtype
    setup = TrainSetup(optimizer, "foreach", amp or None, None, "highest", param_dtype)
    autocast = bool(amp)
    if autocast:
        other = sorted({_autocast_kind(a) for _, a in G.nodes(data=True)} - AUTOCAST_TYPES)
        if other:
            raise ConfigError(f"--amp {amp}: the zoo's autocast rules cover convolutional "
                              f"networks and GPT-2/ViT/Llama/BERT transformers; "
                              f"{G.graph.get('name', 'this network')} has {', '.join(other)} "
                              f"layers: use snsim predict --amp {amp} on its torch model")
    from .costs import (_MATH_DTYPE, _layer_ops, lookup_args,  # costs import hardware
                        modeled_costs, table_layer_times, update_time_s)

    nodes = dict(G.nodes(data=True))
    half = amp or (param_dtype if param_dtype != "fp32" else None)
    # element bytes of the parameters (their gradients and state) and, unless autocast says
    # otherwise per value (vb), of the activations
    dtype = 2 if half else int(G.graph.get("dtype_bytes", 4))
    pbytes = 4 if autocast else dtype
    names = {2: _MATH_DTYPE.get(half, "bfloat16"), 4: "float32"}    # element bytes -> dtype
    # grouped-query attention that CUDA runs as its math composite: laid out and timed as
    # such (``attn_kernel="math"``) on a copy of the graph; the caller's keeps its attributes
    math_attn = [n for n, a in nodes.items() if _math_attention(a, dtype, hardware)]
    if math_attn:
        G = G.copy()
        for n in math_attn:
            G.nodes[n]["attn_kernel"] = "math"
        nodes = dict(G.nodes(data=True))
    nxt, prv = adjacency(G)
    order = forward_order(G, (nxt, prv))
    costs = modeled_costs(G, hardware) if hardware is not None else {}
    table = None
    if hardware is not None and not isinstance(kernel_table, str):
        table = kernel_table
    elif hardware is not None and kernel_table != "none":
        from .kernel_table import load_kernel_table
        table = load_kernel_table(hardware.name if kernel_table == "auto" else kernel_table)

    mem_rate = (hardware.eff("mem") * hardware.mem_bytes_per_s) if hardware is not None else None

    def times(n):
        a = nodes[n]
        if "fwd_time_s" in a and "bwd_time_s" in a:
            return a["fwd_time_s"], a["bwd_time_s"]
        if n in measured:
            return measured[n][:2]
        if n not in costs:
            raise GraphError(f"layer {n} ({a.get('name')}) has no fwd_time_s/bwd_time_s and no "
                             f"hardware was given to model them")
        return costs[n].fwd_time_s, costs[n].bwd_time_s

    def sum_time(nbytes, elem_bytes):
        """Autograd's sum of two gradients of ``nbytes`` at a value with several consumers
        (reads two, writes one): the table's ``add`` rows of their dtype, else the preset's
        memory rate."""
        dt = names.get(elem_bytes, "float32")
        t = table.time_s("add", nbytes=3 * nbytes, dtype=dt, math_=dt)[0] \
            if table is not None else None
        if t is not None:
            return t
        return 3 * nbytes / mem_rate if mem_rate else 0.0

    # values through FORKs (a FORK is no op in PyTorch: its consumers read its input)
    def source(p):
        while nodes[p]["type"] == "FORK":
            p = prv[p][0]
        return p

    ops = [n for n in order if nodes[n]["type"] not in ("FORK", "DATA")]
    seq = {n: i for i, n in enumerate(ops)}
    ins = {n: [source(p) for p in prv[n]] for n in ops}
    users = {n: [] for n in G}
    for n in ops:
        for p in ins[n]:
            users[p].append(n)
    is_data = {n: nodes[n]["type"] == "DATA" for n in G}
    # a rotary attention's projection (Hugging Face's Llama: q_proj, k_proj and v_proj, which
    # the zoo packs into one layer) is three linear layers: three GEMMs, three storages (q and
    # k die once rotated), the input's three gradients summed
    split = {p: m for m in ops for p in ins[m] if nodes[m]["type"] == "ATTN"
             and nodes[m].get("rotary") and nodes[m].get("attn_kernel", "flash") != "eager"
             and nodes[p]["type"] == "FC"}
    # cuDNN workspaces: where the preset has the tables recorded programs read (its captures,
    # its probed table), the same lookup (kept per call signature), else the first-principles
    # model, for the calls in their dtype (16 bits under autocast or pure low precision)
    def conv_ws(n, pass_name):
        got = measured_conv_workspaces(hardware, nodes[n], not is_data[ins[n][0]],
                                       names.get(dtype, "float32"))
        if got is None:
            return conv_workspace_bytes(nodes[n], pass_name, dtype)
        return got[("fwd", "bwd_data", "bwd_filter").index(pass_name)]

    tensors = []
    steps = []

    def new(name, kind, nbytes, producer):
        tid = len(tensors)
        tensors.append(Tensor(tid, name, kind, int(nbytes), producer,
                              nodes[producer]["type"] if producer in nodes else "OPTIMIZER"))
        return tid

    def add_step(n, phase, time_s, deps, outs=(), inputs=(), *, name=None, typ=None):
        seen = []
        for t in deps:
            if t is not None and t not in seen:
                seen.append(t)
        a = nodes.get(n, {})
        steps.append(Step(len(steps), n, name or a.get("name", "optimizer"),
                          typ or a.get("type", "OPTIMIZER"), phase, float(time_s), tuple(seen),
                          tuple(outs), tuple(inputs)))

    # autocast: each value's element bytes. Conv, linear and attention outputs are 16-bit,
    # embeddings' (fp32 tables) and LayerNorm's (an fp32 op) fp32, every other layer's has its
    # inputs' widest dtype (BN, pooling, ReLU and dropout keep their input's, add and cat
    # promote); the image batch is fp32
    vb = {n: 4 if autocast else dtype for n in G if is_data[n]}
    for n in ops:
        typ = nodes[n]["type"]
        vb[n] = (2 if typ in ("CONV", "FC", "ATTN") else 4 if typ in ("EMBED", "NORM")
                 else max(vb[p] for p in ins[n])) if autocast else dtype
        if autocast and typ == "NORM" and vb[ins[n][0]] != 4:
            raise ConfigError(f"--amp {amp}: layer {nodes[n]['name']} normalizes a 16-bit "
                              f"value (a post-LayerNorm block): the zoo's autocast rules do "
                              f"not cover it; use snsim predict --amp {amp} on its torch model")

    def fp32_loss(n):
        """Loss layer ``n`` upcasts 16-bit logits itself (Hugging Face's causal-LM loss,
        ``logits.float()``), in pure low precision and under autocast alike; then log_softmax
        and nll_loss run on that fp32 copy, and autocast casts nothing more."""
        return bool(nodes[n].get("float_logits")) and vb[n] != 4

    # nn.MultiheadAttention (torchvision's ViT: batch-first) runs sequence-first: its input
    # projection reads the LayerNorm's output transposed, and the output projection's result
    # goes back transposed, so the residual stream after the first attention carries (S, N, C)
    # strides (an add's result keeps a transposed operand's). ``transposed[v]``: value v is so
    mha_attn = {m for m in ops if nodes[m]["type"] == "ATTN" and nodes[m].get("mha")}
    mha_in = {p for m in mha_attn for p in ins[m]}
    transposed = {}
    for n in ops:
        transposed[n] = any(p in mha_attn for p in ins[n]) or (
            nodes[n]["type"] in ("JOIN", "DROPOUT", "ACT")
            and any(transposed.get(p, False) for p in ins[n]))

    def layer_ops(n):
        """Layer ``n``'s aten calls at the step's precision (:func:`snsim.costs._layer_ops`):
        under autocast an fp32 layer (LayerNorm, an embedding, a promoted add) in fp32, the
        rest in 16 bits with the casts of an fp32 input (and of its gradient back, where it
        needs one), as :func:`snsim.torchsim.opcost.op_gpu_time_s` times the calls
        ``snsim predict`` records. What a layer's own list cannot know comes from its
        neighbours:

        - the layout (``transposed``): LayerNorm copies a transposed input in forward and
          backward (:func:`snsim.torchsim.record.kernel_copies`), and in backward its output's
          gradient when an attention's input projection took it transposed; an add of
          operands of two layouts runs TensorIterator's generic kernel (the table's
          ``elementwise_generic`` rows), of two layouts and dtypes the casting one
          (``cls`` "cast": no faster than its rate), of two dtypes alone the generic one
          (:func:`snsim.torchsim.record.elementwise_layout`); in backward autocast casts the
          gradient of its 16-bit operand back;
        - an attention's input projection reads its input transposed (``input_strided``)."""
        a = nodes[n]
        typ = a["type"]
        if autocast and vb[n] == 4 and typ != "SOFTMAX":
            got = _layer_ops(a, 4)
        elif n in split or (typ == "FC" and a.get("linears", 1) > 1):
            # the projection's three linear layers (Hugging Face's q, k and v): three GEMMs
            m = nodes[split[n] if n in split else users[n][0]]
            rows, d_in = _numel(a["out_shape"][:-1]), a["in_features"]
            fwd, bwd = [], []
            wide = autocast and vb[ins[n][0]] == 4    # each casts the input, each its dx back
            for heads in (m["heads"], m["kv_heads"], m["kv_heads"]):
                d_out = heads * m["head_dim"]
                bias = d_out if a.get("bias") else 0
                f, b = _layer_ops(dict(a, out_features=d_out, bias=bool(bias),
                                       params=d_in * d_out + bias,
                                       out_shape=(*a["out_shape"][:-1], d_out)), dtype, half,
                                  autocast, fp32_input=wide)
                fwd, bwd = fwd + f, bwd + b
                if wide:
                    bwd.append(("_to_copy", 0, 6 * rows * d_in, "", names[dtype]))
            # the input's gradients from the three, summed (autograd's accumulation)
            b_in = vb[ins[n][0]]
            bwd += [("add", 0, 3 * rows * d_in * b_in, "", names[b_in])] * 2
            return fwd, bwd
        else:
            got = _layer_ops(a, dtype, half, autocast,
                             fp32_input=autocast and any(vb[p] == 4 for p in ins.get(n, ())),
                             input_strided=n in mha_in)
        if got is None:
            return None
        fwd, bwd = got
        x = ins[n][0] if ins.get(n) else None
        numel_in = _numel(a["in_shapes"][0]) if a.get("in_shapes") else 0

        def strided_copy(nbytes):
            return ("clone_strided", 0, 2 * nbytes, "", names[vb[x]])
        if typ == "NORM" and transposed.get(x):
            fwd, bwd = [strided_copy(numel_in * vb[x])] + fwd, [strided_copy(
                numel_in * vb[x])] + bwd
        if typ == "NORM" and any(u in mha_in for u in users[n]):
            bwd = [strided_copy(_numel(a["out_shape"]) * vb[n])] + bwd
        if typ == "JOIN":
            cast = len({vb[p] for p in ins[n]}) > 1
            scattered = len({transposed[p] for p in ins[n]}) > 1
            if cast or scattered:
                fwd = [("elementwise_generic", 0,
                        _numel(a["out_shape"]) * (vb[n] + sum(vb[p] for p in ins[n])),
                        "cast" if cast and scattered else "", names[vb[n]])]
            bwd = [("_to_copy", 0, _numel(a["out_shape"]) * (vb[n] + vb[p]), "", "float32")
                   for p in ins[n] if vb[p] != vb[n]]
        if typ in ("CONV", "FC") and autocast and vb[x] == 4 and not is_data[x]:
            bwd = bwd + [("_to_copy", 0, 6 * numel_in, "", "float32")]
        if typ == "ATTN" and nodes[x].get("linears", 1) > 1 and bwd[-1][0] == "cat":
            bwd = bwd[:-1]      # q, k and v's gradients go to their own linear layers
        return fwd, bwd

    measured, time_sources = (table_layer_times(G, table, dtype, half, ops_of=layer_ops)
                              if table is not None else ({}, {}))
    region = []     # autocast's cached casts no node saved: freed where the region ends
    cast_in = {}    # conv/linear layer -> the 16-bit copy of its fp32 input
    split_casts = {}    # packed q/k/v projection -> its k and v projections' input copies

    def autocast_copies(n):
        """autocast's copies for conv/linear layer ``n``, in 16 bits: its weight (saved for
        backward), its bias (kept by the region's cache until the region ends) and an fp32
        input (saved)."""
        a = nodes[n]
        pre = [new(f"{a['name']}.{piece}.cast", "activation", count * 2, n)
               for piece, count in cast_pieces(a)]
        region.extend(pre[1:])
        if vb[ins[n][0]] != 2:
            # a packed projection of several linear layers (Hugging Face's q, k and v), each
            # casting the input anew (autocast's cache keeps parameters' casts only), each
            # keeping its copy
            cast_in[n], *more = [new(f"{a['name']}.input.cast{k or ''}", "activation",
                                     _numel(a["in_shapes"][0]) * 2, n)
                                 for k in range(a.get("linears", 1))]
            pre.append(cast_in[n])
            pre.extend(more)
            split_casts[n] = more
        return pre

    # -- forward ------------------------------------------------------------------------------
    store = {}      # value (node) -> storage id of its output (None: the input batch)
    saved = {}      # node -> storages its backward needs
    extra = {}      # node -> other tensors its backward needs (indices, masks, statistics)
    for n in G:
        if is_data[n]:
            store[n] = None
    loss_scalar = None
    linger = {}     # node -> storages a Python local keeps alive through its forward step
    # a module's arguments stay referenced by its frame until it returns: the inputs of each
    # of the graph's ``held_spans`` (module paths whose layers the zoo names as the twin's
    # module does) live to the span's last layer, though no layer inside keeps them (BERT's
    # post-LN layers under autocast, whose projections keep 16-bit copies); so do the
    # operands of the expression the last layer is called on (``LN(hidden_states +
    # input_tensor)``: the two locals are referenced until it returns)
    held_inputs = {}    # a span's last layer -> the values held to it
    for path in G.graph.get("held_spans", ()):
        inside = {m for m in ops if str(nodes[m].get("name", "")).startswith(path + ".")}
        if inside:
            last = max(inside, key=seq.get)
            held = {p for m in inside for p in ins[m] if p not in inside and not is_data[p]}
            held |= {p for m in ins[last] if m in inside and nodes[m]["type"] == "JOIN"
                     for p in ins[m] if not is_data[p]}
            held_inputs.setdefault(last, []).extend(sorted(held, key=seq.get))
    parts = {}      # split projection -> its q, k and v storages
    for n in ops:
        a = nodes[n]
        typ = a["type"]
        name = a["name"]
        xs = [store[p] for p in ins[n]]
        x = xs[0] if xs else None
        linger.setdefault(n, []).extend(store[p] for p in held_inputs.get(n, ())
                                        if store[p] is not None)
        y_bytes = _numel(a["out_shape"]) * vb[n]
        t_f = times(n)[0]
        outs, ws = [], []
        pre = autocast_copies(n) if autocast and typ in ("CONV", "FC") else []
        saved[n], extra[n] = [], []
        if typ == "CONV":
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            if workspaces:
                ws = [new(f"{name}.ws_fwd", "workspace", conv_ws(n, "fwd"), n)]
            saved[n] = [cast_in.get(n, x)] + pre[:1]   # autocast: the copies it read
        elif typ == "BN":
            c = a["out_shape"][1]
            outs = [new(f"{name}.y", "activation", y_bytes, n),
                    new(f"{name}.save_mean", "activation", c * 4, n),
                    new(f"{name}.save_invstd", "activation", c * 4, n)]
            saved[n] = [x]
            extra[n] = outs[1:]
        elif typ == "SLICE":
            # ``x[:, i]`` is a view: no storage; its backward writes a zero-padded dx
            store[n] = x
            add_step(n, "F", t_f, xs, (), tuple(t for t in xs if t is not None))
            continue
        elif (typ == "ACT" and a.get("activation", "relu") in ("relu", "relu6")) or (
                typ == "JOIN" and a.get("inplace", True) and len(users[ins[n][-1]]) == 1
                and nodes[ins[n][-1]]["type"] != "ACT"):
            # in place (ReLU(inplace=True), ``out += identity``) when nothing else reads the
            # input and its producer does not keep it for backward
            target = xs[0] if typ == "ACT" else xs[-1]
            relu6 = typ == "ACT" and a.get("activation") == "relu6"
            if typ == "ACT" and len(users[ins[n][0]]) > 1:
                target = None
            if target is not None:
                store[n] = target
                xin = tuple(t for t in xs if t is not None)
                if relu6:
                    # ReLU6(inplace=True) is hardtanh_, whose backward reads its input: autograd
                    # clones the input, keeps the copy and overwrites the original
                    saved[n] = [new(f"{name}.input_copy", "activation", y_bytes, n)]
                    add_step(n, "F", t_f, list(xin) + saved[n], saved[n], xin)
                    continue
                if typ == "ACT":
                    saved[n] = [target]
                add_step(n, "F", t_f, xs, (), xin)
                continue
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            if typ == "ACT":    # out of place: relu keeps its output, hardtanh its input
                saved[n] = [x] if relu6 else [outs[0]]
        elif typ == "POOL":
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            oh, ow = a["out_shape"][2:]
            if a.get("mode", "max") == "max":
                outs.append(new(f"{name}.indices", "activation", _numel(a["out_shape"]) * 8, n))
                saved[n] = [x]
                extra[n] = outs[1:]
            elif not ((oh, ow) == (1, 1) and (a.get("adaptive") or
                                              tuple(a["kernel"]) == tuple(a["in_shapes"][0][2:]))):
                saved[n] = [x]       # avg_pool2d and _adaptive_avg_pool2d keep their input
            # a 1x1 (global) average pool is a mean: nothing saved
        elif typ == "FC" and n in split:
            m = nodes[split[n]]
            width = m["head_dim"] * vb[n] * _numel(a["out_shape"][:-1])
            outs = parts[n] = [new(f"{name}.{t}", "activation", width * heads, n) for t, heads
                               in (("q", m["heads"]), ("k", m["kv_heads"]), ("v", m["kv_heads"]))]
            saved[n] = [cast_in.get(n, x)] + pre[:1] + split_casts.get(n, [])
        elif typ == "FC":
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            saved[n] = [cast_in.get(n, x)] + pre[:1] + split_casts.get(n, [])
        elif typ == "DROPOUT":
            outs = [new(f"{name}.y", "activation", y_bytes, n),
                    new(f"{name}.mask", "activation", _numel(a["out_shape"]), n)]
            extra[n] = outs[1:]
        elif typ == "SOFTMAX":
            # a language model's loss over (N, S, vocab) logits builds its shifted targets in
            # the forward (int64 per token), kept by nll_loss for backward
            targets = ([new(f"{name}.targets", "activation", _numel(a["out_shape"][:-1]) * 8,
                            n)] if len(a["out_shape"]) == 3 else [])
            # the fp32 copy of 16-bit logits, dropped once log_softmax has run in fp32
            up = ([new(f"{name}.logits_fp32", "activation", _numel(a["out_shape"]) * 4, n)]
                  if fp32_loss(n) else [])
            log_probs = new(f"{name}.log_probs", "activation",
                            _numel(a["out_shape"]) * 4 if up else y_bytes, n)
            # autocast: log_softmax in its input's dtype, nll_loss (an fp32 op) on an fp32
            # copy, which it keeps for backward
            wide = ([new(f"{name}.log_probs.cast", "activation", _numel(a["out_shape"]) * 4, n)]
                    if autocast and vb[n] != 4 and not up else [])
            outs = up + targets + [log_probs] + wide + [new(f"{name}.loss", "activation", 4, n),
                                                   new(f"{name}.total_weight", "activation", 4,
                                                       n)]
            extra[n] = [log_probs, outs[-1]] + targets
            saved[n] = wide
            loss_scalar = outs[-2]
            store[n] = log_probs
            xin = tuple(t for t in xs if t is not None)
            # the end of autocast's region: its cache lets go of the copies nothing saved
            add_step(n, "F", t_f, list(xin) + outs + region, outs, xin)
            continue
        elif typ == "LRN":
            # torch's LocalResponseNorm is a chain of elementwise ops and a 3-d average pool;
            # its saved intermediates are modelled as the input, the output and the divisor
            outs = [new(f"{name}.y", "activation", y_bytes, n),
                    new(f"{name}.div", "activation", y_bytes, n)]
            saved[n] = [x]
            extra[n] = list(outs)
        elif typ in ("CONCAT", "JOIN", "PADDING"):
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
        elif typ == "ACT":      # gelu, silu (keep their input), tanh (keeps its output)
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            saved[n] = [outs[0]] if a["activation"] == "tanh" else [x]
        elif typ == "MUL":
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            saved[n] = list(xs)
        elif typ == "NORM" and a.get("norm") == "rms":
            store[n], extra[n] = _rms_norm_forward(a, n, x, new, add_step, vb[n], t_f)
            continue
        elif typ == "NORM":
            # native_layer_norm: y, mean, rstd (fp32 per row)
            rows = _numel(a["out_shape"][:-1])
            outs = [new(f"{name}.y", "activation", y_bytes, n)]
            outs += [new(f"{name}.{st}", "activation", rows * 4, n) for st in ("mean", "rstd")]
            saved[n] = [x]
            extra[n] = outs[1:]
        elif typ == "EMBED":
            outs, temps, extra[n] = _embed_forward(
                a, n, new, vb[n],
                _numel(a["in_shapes"][0]) * 4 if autocast and ins[n] and vb[ins[n][0]] == 2
                else 0)
            store[n] = outs[0]
            # the patches (a ViT's conv output) are read here; the lookups and cat are the
            # step's own allocations
            xin = tuple(t for t in xs if t is not None)
            add_step(n, "F", t_f, list(xin) + temps + outs, temps + outs, xin)
            continue
        elif typ == "ATTN" and a.get("attn_kernel", "flash") == "eager":
            store[n], extra[n] = _eager_attention_forward(a, n, x, new, add_step, dtype, t_f)
            for u in users[n]:   # q, k, v (views of x) live until the attention module
                linger[u] = [x]  # returns, after its output projection
            continue
        elif typ == "ATTN" and a.get("attn_kernel") == "math":
            store[n], extra[n], held = _math_attention_forward(a, n, x, new, add_step, dtype,
                                                               t_f, parts.get(ins[n][0]))
            for u in users[n]:
                linger[u] = held
            continue
        elif typ == "ATTN":
            got = parts.get(ins[n][0])
            store[n], outs, saved[n], extra[n] = _attention_forward(
                a, n, x, new, add_step, dtype, _cudnn_attention(a, dtype, hardware), got)
            # rotary: the kernel reads the rotated q and k and v (q and k died rotated)
            add_step(n, "F", t_f, ([] if got else [x]) + saved[n] + extra[n] + outs, outs,
                     tuple(saved[n] + [t for t in extra[n] if t not in outs]) if got else (x,))
            continue
        else:
            raise GraphError(f"layer {n} ({name}): type {typ!r} has no PyTorch semantics")
        store[n] = outs[0]
        xin = tuple(t for t in xs if t is not None)
        # the workspace is an output too, so that a replay of the step allocates it again
        add_step(n, "F", t_f, list(xin) + pre + outs + ws + linger.get(n, []), pre + outs + ws,
                 xin)

    # -- backward: autograd's ready queue, latest node first ------------------------------------
    grad = {}       # value -> storage holding its gradient (possibly a buffer it is a view of)
    pending = {n: len(users[n]) for n in ops}
    param_grads = []
    tied_parts = []     # gradient parts of a tied weight (GPT-2's LM head), summed at its owner
    ready = []

    holders = {}    # storage -> input buffers (values awaiting their node) holding it
    viewed = set()  # storages handed out as views (cat, padding): never summed into

    def hold(t, k):
        if t is not None:
            holders[t] = holders.get(t, 0) + k

    def deliver(p, g, via):
        """Gradient ``g`` for value ``p`` arrives from consumer ``via``."""
        if is_data[p]:
            return
        old = grad.get(p)
        if old is None:
            grad[p] = g
            hold(g, 1)
        else:
            # autograd's InputBuffer::accumulate sums into the part whose last reference its
            # buffer holds (the one there first, else the new one), out of place only when
            # neither is free to take (held by another buffer, or a view)
            nb = _numel(nodes[p]["out_shape"]) * vb[p]
            step = f"{nodes[via]['name']}>{nodes[p]['name']}.grad_sum"
            if holders.get(old, 0) == 1 and old not in viewed:
                add_step(p, "B", sum_time(nb, vb[p]), [old, g], name=step, typ="JOIN")
            elif holders.get(g, 0) == 0 and g not in viewed:
                add_step(p, "B", sum_time(nb, vb[p]), [old, g], name=step, typ="JOIN")
                hold(old, -1)
                hold(g, 1)
                grad[p] = g
            else:
                s = new(f"{nodes[p]['name']}.grad_sum", "activation_grad", nb, p)
                add_step(p, "B", sum_time(nb, vb[p]), [old, g, s], name=step, typ="JOIN")
                hold(old, -1)
                hold(s, 1)
                grad[p] = s
        pending[p] -= 1
        if pending[p] == 0:
            heapq.heappush(ready, (-seq[p], p))

    def params_of(n, *pieces):
        out = []
        a = nodes[n]
        for piece, count in pieces:
            if count > 0:
                t = new(f"{a['name']}.{piece}.grad", "activation_grad", count * pbytes, n)
                param_grads.append(t)
                out.append(t)
        return out

    def low_grads(n, *pieces):
        """autocast: a conv's or linear layer's parameter gradients as its backward writes
        them, in 16 bits (the gradients of its weight's and bias's copies)."""
        return [new(f"{nodes[n]['name']}.{piece}.grad16", "activation_grad", count * 2, n)
                for piece, count in pieces if count > 0]

    def cast_back(n, pieces, lows):
        """autocast's ``ToCopyBackward0``: each 16-bit gradient cast to its fp32 ``.grad``
        (and an fp32 input's gradient); returns the fp32 tensors."""
        out = []
        for (piece, count), low in zip([p for p in pieces if p[1] > 0], lows):
            g = (params_of(n, (piece, count)) if piece != "input" else
                 [new(f"{nodes[n]['name']}.dx", "activation_grad", count * 4, n)])[0]
            add_step(n, "B", 0.0, [low, g], name=f"{nodes[n]['name']}.{piece}.grad_cast")
            out.append(g)
        return out

    sinks = [n for n in ops if not users[n]]
    for n in sorted(sinks, key=seq.get, reverse=True):
        heapq.heappush(ready, (-seq[n], n))
    while ready:
        _, n = heapq.heappop(ready)
        a = nodes[n]
        typ = a["type"]
        name = a["name"]
        dy = grad.get(n)
        t_b = times(n)[1]
        needs_dx = [not is_data[p] for p in ins[n]]
        x_bytes = [_numel(s) * vb[p] for s, p in zip(a.get("in_shapes", []), ins[n])]
        sv = saved[n] + extra[n]
        out_grads = []   # gradient storage per input port
        if typ == "CONV":
            params = a.get("params", 0)
            bias = a["out_channels"] if a.get("bias") else 0
            dx = None
            t_data = t_b / 2 if needs_dx[0] else 0.0
            pieces = (("weight", params - bias), ("bias", bias))
            if needs_dx[0]:
                dx = new(f"{name}.dx", "activation_grad",
                         x_bytes[0] // 2 if n in cast_in else x_bytes[0], n)
                ws = ([new(f"{name}.ws_bwd_data", "workspace", conv_ws(n, "bwd_data"), n)]
                      if workspaces else [])
                add_step(n, "B", t_data, [dy, dx] + ws)
            pg = low_grads(n, *pieces) if autocast else params_of(n, pieces[0])
            ws = ([new(f"{name}.ws_bwd_filter", "workspace", conv_ws(n, "bwd_filter"), n)]
                  if workspaces else [])
            if not autocast:
                pg += params_of(n, pieces[1])
            add_step(n, "B", t_b - t_data, sv + [dy] + pg[:1] + ws + pg[1:])
            if autocast:
                cast_back(n, pieces, pg)
                if dx is not None and n in cast_in:
                    dx = cast_back(n, [("input", x_bytes[0] // 4)], [dx])[0]
            out_grads = [dx]
        elif typ == "FC" and a.get("tied"):
            # the weight is the token embedding's: its gradient part waits there to be summed;
            # mm's backward writes the weight's part before dx
            part = new(f"{name}.weight.grad_part", "activation_grad",
                       a["in_features"] * a["out_features"] * dtype, n)
            dx = (new(f"{name}.dx", "activation_grad",
                      x_bytes[0] // 2 if n in cast_in else x_bytes[0], n)
                  if needs_dx[0] else None)
            add_step(n, "B", t_b, sv + [dy, part, dx])
            if autocast:    # the 16-bit input's and weight copy's gradients cast to fp32
                if dx is not None and n in cast_in:
                    dx = cast_back(n, [("input", x_bytes[0] // 4)], [dx])[0]
                wide = new(f"{name}.weight.grad_part32", "activation_grad",
                           a["in_features"] * a["out_features"] * 4, n)
                add_step(n, "B", 0.0, [part, wide], name=f"{name}.weight.grad_cast")
                part = wide
            tied_parts.append(part)
            out_grads = [dx]
        elif typ == "FC":
            params = a.get("params", 0)
            bias = a["out_features"] if a.get("bias") else 0
            dx = (new(f"{name}.dx", "activation_grad",
                      x_bytes[0] // 2 if n in cast_in else x_bytes[0], n)
                  if needs_dx[0] else None)
            pieces = (("weight", params - bias), ("bias", bias))
            pg = low_grads(n, *pieces) if autocast else params_of(n, *pieces)
            # the bias gradient's sum over the rows: CUDA's reduction kernel takes a staging
            # buffer and semaphores for the call when it splits the rows over thread blocks
            # (reduce_buffers, as snsim predict places them after the gradient)
            rows = _numel(a["out_shape"][:-1])
            staging = [new(f"{name}.bias.grad.sum_buffer{k}", "workspace", nbytes, n)
                       for k, nbytes in enumerate(reduction_buffers(
                           ((rows, bias), (bias, 1), 0, (0,), vb[n], 4),
                           getattr(hardware, "name", "")) if bias else ())]
            add_step(n, "B", t_b, sv + [dy, dx] + pg + staging)
            if autocast:
                cast_back(n, pieces, pg)
                if dx is not None and n in cast_in:
                    dx = cast_back(n, [("input", x_bytes[0] // 4)], [dx])[0]
            out_grads = [dx]
        elif typ == "NORM" and a.get("norm") == "rms":
            out_grads = [_rms_norm_backward(a, n, dy, extra[n], new, add_step,
                                            params_of(n, *parameter_pieces(a)), vb[n], t_b,
                                            needs_dx[0])]
        elif typ == "NORM":
            dx = new(f"{name}.dx", "activation_grad", x_bytes[0], n) if needs_dx[0] else None
            pg = params_of(n, *parameter_pieces(a))
            add_step(n, "B", t_b, sv + [dy, dx] + pg)
            out_grads = [dx]
        elif typ == "EMBED":
            dx = _embed_backward(a, n, dy, new, params_of, add_step, tied_parts, extra[n],
                                 vb[n], t_b)
            if dx is not None and x_bytes and x_bytes[0] < _numel(a["in_shapes"][0]) * vb[n]:
                # autocast: cat's gradient for the 16-bit patches, cast back to their dtype
                low = new(f"{name}.dx", "activation_grad", x_bytes[0], n)
                add_step(n, "B", 0.0, [dx, low], name=f"{name}.grad_cast")
                dx = low
            out_grads = [dx]
        elif typ == "ATTN" and a.get("attn_kernel") == "math":
            dx = _math_attention_backward(a, n, dy, extra[n], new, add_step, x_bytes[0], dtype,
                                          t_b)
            out_grads = [dx]
        elif typ == "ATTN" and a.get("attn_kernel", "flash") == "eager":
            dx = _eager_attention_backward(a, n, dy, extra[n], new, add_step, x_bytes[0], dtype,
                                           t_b)
            out_grads = [dx]
        elif typ == "ATTN":
            dx = _attention_backward(a, n, dy, sv, new, add_step, x_bytes[0], dtype, t_b,
                                     _cudnn_attention(a, dtype, hardware))
            out_grads = [dx]
        elif typ == "MUL":
            dxs = [new(f"{name}.dx{i}", "activation_grad", x_bytes[i], n) if need else None
                   for i, need in enumerate(needs_dx)]
            add_step(n, "B", t_b, sv + [dy] + dxs)
            out_grads = dxs
        elif typ == "BN":
            c = a["out_shape"][1]
            dx = new(f"{name}.dx", "activation_grad", x_bytes[0], n) if needs_dx[0] else None
            pg = params_of(n, ("weight", c), ("bias", c))
            add_step(n, "B", t_b, sv + [dy, dx] + pg)
            out_grads = [dx]
        elif typ == "SOFTMAX":
            logp, tw, *targets = extra[n]
            up = fp32_loss(n)
            nb = _numel(a["out_shape"]) * (4 if saved[n] or up else vb[n])
            seed = new(f"{name}.grad_seed", "activation_grad", 4, n)
            g1 = new(f"{name}.nll_grad", "activation_grad", nb, n)
            add_step(n, "B", t_b / 2, [tw, seed, g1] + targets + saved[n], name=f"{name}.nll")
            if saved[n]:    # autocast: nll's fp32 gradient cast back to log_softmax's dtype
                g16 = new(f"{name}.nll_grad.cast", "activation_grad",
                          _numel(a["out_shape"]) * vb[n], n)
                add_step(n, "B", 0.0, [g1, g16], name=f"{name}.nll_grad_cast")
                g1 = g16
            dx = new(f"{name}.dx", "activation_grad", x_bytes[0], n) if needs_dx[0] else None
            if up and dx is not None:   # log_softmax's fp32 gradient, cast to the logits'
                wide = new(f"{name}.dx_fp32", "activation_grad", nb, n)
                add_step(n, "B", t_b / 2, [logp, g1, wide])
                add_step(n, "B", 0.0, [wide, dx], name=f"{name}.dx_cast")
            else:
                add_step(n, "B", t_b / 2, [logp, g1, dx])
            out_grads = [dx]
        elif typ == "JOIN":
            add_step(n, "B", 0.0, [dy])
            out_grads = [dy] * len(ins[n])
            for i, p in enumerate(ins[n]):
                if needs_dx[i] and vb[p] < vb[n]:   # autocast: a promoted input's gradient
                    out_grads[i] = new(f"{name}.dx{i}", "activation_grad",
                                       _numel(a["out_shape"]) * vb[p], n)
                    add_step(n, "B", 0.0, [dy, out_grads[i]], name=f"{name}.grad_cast")
        elif typ == "CONCAT":
            add_step(n, "B", 0.0, [dy])
            out_grads = [dy] * len(ins[n])     # narrow() views of the one buffer
        elif typ == "PADDING":
            add_step(n, "B", 0.0, [dy])
            out_grads = [dy]                   # a narrow() view
        else:   # ACT, POOL, DROPOUT, LRN: one new input gradient
            dx = new(f"{name}.dx", "activation_grad", x_bytes[0], n) if needs_dx[0] else None
            add_step(n, "B", t_b, sv + [dy, dx])
            out_grads = [dx]
        hold(dy, -1)       # the node's input buffer is released when it returns
        if typ in ("CONCAT", "PADDING"):
            viewed.add(dy)
        for p, g, need in zip(ins[n], out_grads, needs_dx):
            if need:
                deliver(p, g, n)
    n_b = sum(1 for s in steps if s.phase == "B")
    if n_b == 0:
        raise GraphError("network has no backward")

    # -- optimizer: one foreach step over every parameter ---------------------------------------
    factor = OPTIMIZER_STATE_FACTOR[optimizer]
    # the optimizer's foreach calls, in the parameters' dtype; fp16's GradScaler first unscales
    # the gradients and checks them for inf/NaN (one foreach call) and updates its scale
    math_u = names[pbytes]
    update_calls = FOREACH_CALLS[optimizer] + (SCALER_CALLS if amp == "fp16" else ())
    temps = []
    # foreach ops walk the parameters in model.parameters() order (forward order)
    param_grads.sort(key=lambda t: (seq.get(tensors[t].producer, -1), t))
    for k in range(OPTIMIZER_TEMPORARIES[optimizer]):
        for t in param_grads:
            temps.append(new(f"{tensors[t].name}.tmp{k}", "workspace", tensors[t].nbytes,
                             tensors[t].producer))
    param_bytes = sum(tensors[t].nbytes for t in param_grads)
    t_u = update_time_s(param_bytes, factor * param_bytes, hardware) if hardware else 0.0
    if table is not None:     # the foreach calls torch.optim makes, each at its tensors and bytes
        got = [table.time_s(fam, nbytes=passes * param_bytes, ntensors=lists * len(param_grads),
                            **lookup_args(math_u)) for fam, lists, passes in update_calls]
        if all(t is not None for t, _ in got):
            t_u = sum(t for t, _ in got)
            for t, src in got:
                time_sources[src] = time_sources.get(src, 0.0) + t
    if param_grads:
        add_step(0, "U", t_u, list(param_grads) + temps + [loss_scalar], name="optimizer.step",
                 typ="OPTIMIZER")

    # -- static: parameters, optimizer state, buffers, input, labels, cuBLAS workspaces --------
    static_tensors = []
    for n in order:
        a = nodes[n]
        name, typ = a["name"], a["type"]
        if typ == "DATA":
            static_tensors.append(StaticTensor(f"{name}.batch", "input",
                                               _numel(a["out_shape"]) * a.get("elem_bytes",
                                                                              vb[n]), n))
            continue
        pieces = parameter_pieces(a)
        for piece, count in pieces:
            static_tensors.append(StaticTensor(f"{name}.{piece}", "parameter", count * pbytes,
                                               n))
        if typ == "BN":
            c = a["out_shape"][1]
            static_tensors += [StaticTensor(f"{name}.running_mean", "buffer", c * pbytes, n),
                               StaticTensor(f"{name}.running_var", "buffer", c * pbytes, n),
                               StaticTensor(f"{name}.num_batches_tracked", "buffer", 8, n)]
    # setup's order: the model's parameters and buffers (``model.to(device)``), then the batch
    static_tensors.sort(key=lambda st: st.kind == "input")
    for st in [s for s in static_tensors if s.kind == "parameter"]:
        for k in range(factor):
            static_tensors.append(StaticTensor(f"{st.name}.state{k}", "optimizer_state",
                                               st.nbytes, st.layer))
    data = [n for n in order if is_data[n]]
    batch = G.graph.get("batch", nodes[data[0]]["out_shape"][0] if data else 1)
    static_tensors.append(StaticTensor("labels", "input", batch * 8, data[0] if data else 0))
    if amp == "fp16":   # GradScaler's scale (fp32) and growth tracker (int32), one element each
        static_tensors += [StaticTensor("grad_scaler.scale", "buffer", 4, 0),
                           StaticTensor("grad_scaler.growth_tracker", "buffer", 4, 0)]
    if workspaces and any(nodes[n]["type"] == "FC" for n in ops):
        sm90 = getattr(hardware, "name", "") in _SM90
        cublas = CUBLAS_WORKSPACE_BYTES["sm90" if sm90 else "default"]
        static_tensors += [StaticTensor("cublas.workspace.forward", "buffer", cublas, 0),
                           StaticTensor("cublaslt.workspace.forward", "buffer",
                                        CUBLASLT_WORKSPACE_BYTES, 0),
                           StaticTensor("cublas.workspace.backward", "buffer", cublas, 0)]
    from .kernel_table import load_host_costs
    inn = load_host_costs(hardware.name).get("innet") if table is not None else None
    if inn is not None:     # a preset without in-network host costs: GPU time alone
        # each step's share of the iteration's two-resource schedule: the host issues
        import dataclasses

        from .kernel_table import host_stream
        host = _host_s(steps, nodes, table, inn, param_grads, tensors, optimizer, layer_ops,
                       update_calls, math_u, amp == "fp16")
        # fp16: GradScaler's step reads found_inf (``.item()``), so the host waits for the
        # backward's kernels before it issues the optimizer step
        syncs = {i for i, st in enumerate(steps) if st.phase == "U"} if amp == "fp16" else ()
        steps = [dataclasses.replace(st, time_s=t) for st, t in
                 zip(steps, host_stream([st.time_s for st in steps], host, syncs=syncs))]
    static = {}
    for st in static_tensors:
        static[st.kind] = static.get(st.kind, 0) + st.nbytes
    prog = Program(name=G.graph.get("name", "network"), batch=batch, steps=steps,
                   tensors=tensors, static_bytes=static, conv_algos={}, graph=G,
                   source=G.graph.get("source", "zoo"), hardware=getattr(hardware, "name", ""),
                   optimizer=optimizer, static_tensors=static_tensors, adjacency=(nxt, prv),
                   framework="pytorch",
                   precision=setup.precision_label)
    prog.extra["first_iteration_statics"] = first_iteration_statics(prog)
    return prog


def first_iteration_statics(prog):
    """``[(n, static tensor name)]``: the static tensors a real run makes during its first
    iteration, not at setup, each after ``n`` of the iteration's own tensors (as
    :func:`snsim.engine.core.state_positions` places a capture's): ``torch.optim`` makes the
    optimizer state (momentum, Adam's moments) at its first ``step()``, after the backward has
    freed the activations; cuBLAS its workspaces at the first GEMM of a thread, the forward's
    and the autograd engine's. The engine makes them there in its unmeasured first iteration
    (:class:`snsim.engine.core.Engine`), so the caching allocator's segments are laid out as
    a real run's: the state in the blocks the activations left, not in segments of its own."""
    born, _ = prog.uses()
    made = collections.Counter(b for b in born if b >= 0)   # step -> tensors it makes
    made_before = [0, *itertools.accumulate(made[i] for i in range(len(prog.steps)))]
    first = {}
    for st in prog.steps:
        key = "U" if st.phase == "U" else (st.phase, "FC") if st.type == "FC" else None
        if key is not None and key not in first:
            # a GEMM's workspace after the output of the layer's first GEMM (backward: the
            # input's gradient, before the weight's); Adam's state before the update's own
            # temporaries (``_init_group``), SGD's momentum after them (cloned from the
            # gradients in ``_multi_tensor_sgd``)
            first[key] = (made_before[st.index] + 1 if key != "U" else
                          made_before[st.index + (prog.optimizer in ("sgd-momentum",
                                                                     "nesterov"))])
    gemm = {"cublas.workspace.forward": ("F", "FC"), "cublaslt.workspace.forward": ("F", "FC"),
            "cublas.workspace.backward": ("B", "FC")}
    out = [(first.get("U" if st.kind == "optimizer_state" else gemm.get(st.name)), st.name)
           for st in prog.static_tensors if st.nbytes > 0]
    return sorted(((n, name) for n, name in out if n is not None), key=lambda o: o[0])
