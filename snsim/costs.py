"""Modelled layer costs: a roofline per layer and an analytic conv algorithm table (SPEC §6, §9).

Every time here is an estimate [E]: the roofline

    t = max(flops / (eff_c * peak_flops_fp32), bytes / (eff_m * mem_bytes_per_s)) + launch_overhead_s

with the efficiencies of the hardware preset. Measured times (a calibration CSV or a captured
trace) replace these when they exist; graphs record which one they carry in ``time_source``.

Choices, in one place
---------------------
* **CONV** and **FC** are compute kernels: ``eff_c = eff[type]``, ``eff_m = eff["mem"]``.
  CONV time comes from its algorithm table (below); FC: fwd flops ``2·macs``, bwd ``4·macs``
  (data + weight gradients); bytes fwd ``x + w + y``, bwd ``2x + y + 2w`` (read x, dy, w;
  write dx, dw).
* **All other types** are bandwidth-bound: both efficiencies are ``eff[type]``, and a few flops
  per element keep the compute term honest. Bytes (``in`` = all inputs, ``out`` = output):

  ======== ====================== ======================================================
  type     forward                backward
  ======== ====================== ======================================================
  BN       2·in + out (stats,     3·in + 2·out (reductions over x, dy; then x, dy -> dx)
           then normalise)
  ACT      in + out               in + 2·out (read y, dy; write dx)
  POOL     in + out               2·in + 2·out (read x, y, dy; write dx)
  LRN      in + out               2·in + 2·out
  DROPOUT  in + out               in + out (read dy, write dx; the mask is ignored)
  SOFTMAX  2·in + out             2·out (dx ≡ y - onehot, in place)
  PADDING  in + out               in + out
  FORK(k)  in + k·out (k copies)  in + k·out (sum k branch gradients)
  JOIN     in + out (sum)         out + Σ in[1:] (dx_0 ≡ dy; copy dy to the others)
  CONCAT   in + out               in + out (split dy)
  DATA     0                      0
  ======== ====================== ======================================================

* **Recompute** (phase ``"R"``) costs the same as the forward pass.
* **Update** (:func:`update_time_s`) reads params, grads and state and writes params and state:
  ``3·param_bytes + 2·state_bytes`` at ``eff["update"]``.

Conv algorithms
---------------
Eight forward, six bwd-data and six bwd-filter algorithms, as in cuDNN 7. For each: flops of its
family (direct ``2·macs``; FFT and Winograd count their transforms and pointwise products), an
efficiency multiplier on ``eff["conv"]`` (capped so the product is at most 1), and the bytes of
``x + w + y`` plus, for algorithms that materialise their workspace, a write and a read of it.

* ``IMPLICIT_GEMM`` / ``ALGO_0``: no workspace, multiplier 0.6; always supported.
* ``IMPLICIT_PRECOMP_GEMM`` (fwd), ``ALGO_1`` (bwd-data), ``ALGO_3`` (bwd-filter): an int32
  index buffer of ``4·kh·kw·Ho·Wo`` B (``4·kh·kw·H·W`` for bwd-data), multiplier 1.0. **These
  are the defaults**: :func:`layer_time_s` for a CONV is the fwd default for ``"F"`` and the sum
  of the bwd-data and bwd-filter defaults for ``"B"``.
* ``GEMM`` (fwd), ``ALGO_1`` (bwd-filter): explicit im2col, ``N·C·kh·kw·Ho·Wo·dtype`` B — the
  whole batch in flight (an upper estimate; cuDNN's workspace grows with the batch),
  multiplier 1.1.
* ``FFT``: stride 1, groups 1, padded input ``Hp, Wp <= 256`` and pad < kernel (cuDNN's rules);
  ``8·(N·C + K·C + N·K)·Hp·(Wp//2 + 1)`` B (complex64), multiplier 0.6.
* ``FFT_TILING``: the same on 32×32 tiles (kernel <= 32), multiplier 0.6.
* ``WINOGRAD``: fused F(2×2, 3×3); 3×3, stride 1, groups 1; workspace the transformed filters
  ``K·C·16·dtype`` B; multiplier 0.9.
* ``WINOGRAD_NONFUSED``: F(4×4, 3×3), m = 4; same support; workspace
  ``(m+2)²/m² · (x + y + w)`` = 2.25× those bytes; multiplier 0.8.
* ``DIRECT`` (fwd): listed, never supported (cuDNN 7 does not implement it).

An algorithm modelled slower than the zero-workspace one is clamped to its time: with ties broken
towards the smaller workspace (:func:`choose_algo`) it is then never chosen, exactly as if it
kept its slower time, and the zero-workspace algorithm is always the slowest or equal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ConfigError, GraphError, UnknownNameError
from .kernel_table import linear_gemm_classes, matmul_lookup_class

PASSES = ("fwd", "bwd_data", "bwd_filter")
PHASES = ("F", "B", "R")

# name -> efficiency multiplier on eff["conv"], per pass, in cuDNN 7's enum order.
ALGO_EFFICIENCY = {
    "fwd": (("IMPLICIT_GEMM", 0.6), ("IMPLICIT_PRECOMP_GEMM", 1.0), ("GEMM", 1.1),
            ("DIRECT", 0.6), ("FFT", 0.6), ("FFT_TILING", 0.6), ("WINOGRAD", 0.9),
            ("WINOGRAD_NONFUSED", 0.8)),
    "bwd_data": (("ALGO_0", 0.6), ("ALGO_1", 1.0), ("FFT", 0.6), ("FFT_TILING", 0.6),
                 ("WINOGRAD", 0.9), ("WINOGRAD_NONFUSED", 0.8)),
    "bwd_filter": (("ALGO_0", 0.6), ("ALGO_1", 1.1), ("FFT", 0.6), ("ALGO_3", 1.0),
                   ("WINOGRAD_NONFUSED", 0.8), ("FFT_TILING", 0.6)),
}
#: The zero-workspace algorithm of each pass (SPEC §6: it always qualifies).
ZERO_WS_ALGO = {"fwd": "IMPLICIT_GEMM", "bwd_data": "ALGO_0", "bwd_filter": "ALGO_0"}
#: The algorithm :func:`layer_time_s` assumes for each pass.
DEFAULT_ALGO = {"fwd": "IMPLICIT_PRECOMP_GEMM", "bwd_data": "ALGO_1", "bwd_filter": "ALGO_3"}

FFT_MAX_PADDED = 256     # cuDNN: feature map + 2·pad <= 256 for FFT
FFT_TILE = 32            # FFT_TILING works on 32×32 tiles
WINOGRAD_FUSED_M = 2     # F(2×2, 3×3)
WINOGRAD_NONFUSED_M = 4  # F(4×4, 3×3)
COMPLEX_BYTES = 8        # cuFFT complex64

# Bandwidth-bound types: (forward flops per output element, (a_in, a_out) forward bytes,
# (b_in, b_out) backward bytes) with bytes = a_in·in_bytes + a_out·out_bytes.
_ELEMENTWISE = {
    "BN": (8, (2, 1), (3, 2)),
    "ACT": (1, (1, 1), (1, 2)),
    "POOL": (None, (1, 1), (2, 2)),      # flops = window size
    "LRN": (None, (1, 1), (2, 2)),       # flops = 2·size + 5
    "DROPOUT": (2, (1, 1), (1, 1)),
    "SOFTMAX": (5, (2, 1), (0, 2)),
    "PADDING": (0, (1, 1), (1, 1)),
    "CONCAT": (0, (1, 1), (1, 1)),
}
_LAYER_TYPES = ("DATA", "CONV", "FC", "BN", "ACT", "POOL", "LRN", "DROPOUT", "SOFTMAX",
                "FORK", "JOIN", "CONCAT", "PADDING", "EMBED", "NORM", "ATTN", "MUL", "SLICE")
# the transformer types' elementwise rows (as _ELEMENTWISE) and the preset efficiency they use
_ELEMENTWISE.update({
    "NORM": (8, (2, 1), (3, 2)),      # a LayerNorm/RMSNorm costs as a batch norm
    "MUL": (1, (1, 1), (2, 2)),       # reads both inputs; backward writes both gradients
    "SLICE": (0, (0, 1), (0, 1)),     # copies one token forward; writes a zero-padded dx
})
_EFF_KIND = {"NORM": "bn", "MUL": "act", "SLICE": "mem", "EMBED": "mem"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvAlgo:
    """One row of the conv algorithm table (SPEC §6).

    Attributes
    ----------
    name : str
        cuDNN 7 algorithm name without prefix (``"IMPLICIT_GEMM"``, ``"ALGO_1"``, ...).
    pass_name : {"fwd", "bwd_data", "bwd_filter"}
    ws_bytes : int
        Workspace bytes.
    time_s : float
        Modelled (or measured) kernel time, launch overhead included.
    supported : bool
        False where cuDNN refuses the configuration (e.g. FFT with stride 2).
    source : str
        ``"analytic"`` here; ``"measured"`` for rows from a calibration CSV.
    """

    name: str
    pass_name: str
    ws_bytes: int
    time_s: float
    supported: bool
    source: str = "analytic"


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerCost:
    """Modelled times of one layer.

    Attributes
    ----------
    fwd_time_s : float
        Forward time (CONV: the default fwd algorithm).
    bwd_time_s : float
        Backward time (CONV: default bwd-data plus default bwd-filter).
    conv_algos : dict or None
        ``{"fwd": (ConvAlgo, ...), "bwd_data": ..., "bwd_filter": ...}`` for CONV, else None.
    """

    fwd_time_s: float
    bwd_time_s: float
    conv_algos: dict | None = None


# -- helpers -------------------------------------------------------------------------------
def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _pair(v, default):
    if v is None:
        return default
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _roofline(flops, nbytes, eff_c, eff_m, hw):
    return max(flops / (eff_c * hw.peak_flops_fp32),
               nbytes / (eff_m * hw.mem_bytes_per_s)) + hw.launch_overhead_s


def _label(attrs):
    lid = attrs.get("layer_id", "?")
    return f"layer {lid} ({attrs.get('name', '?')})"


def _need(attrs, key):
    try:
        return attrs[key]
    except KeyError:
        raise GraphError(f"{_label(attrs)}: {attrs.get('type')} needs attribute {key!r} "
                         f"for the cost model") from None


def _check_phase(phase):
    if phase not in PHASES:
        raise ConfigError(f"phase (={phase!r}) must be one of 'F', 'B', 'R'")


# -- conv geometry and algorithms -----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _ConvGeom:
    n: int
    c: int
    h: int
    w: int
    k: int
    ho: int
    wo: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    groups: int
    macs: int
    x_bytes: int
    y_bytes: int
    w_bytes: int
    dtype_bytes: int


def _conv_geom(attrs, dtype_bytes):
    in_shapes = _need(attrs, "in_shapes")
    if not in_shapes or len(in_shapes[0]) != 4:
        raise GraphError(f"{_label(attrs)}: CONV needs one (N, C, H, W) input shape, got "
                         f"{in_shapes!r}")
    n, c, h, w = (int(d) for d in in_shapes[0])
    out = _need(attrs, "out_shape")
    if len(out) != 4:
        raise GraphError(f"{_label(attrs)}: CONV out_shape {out!r} must be (N, K, Ho, Wo)")
    _, k, ho, wo = (int(d) for d in out)
    kh, kw = _pair(_need(attrs, "kernel"), None)
    sh, sw = _pair(attrs.get("stride"), (1, 1))
    ph, pw = _pair(attrs.get("pad"), (0, 0))
    g = int(attrs.get("groups") or 1)
    macs = attrs.get("macs") or n * k * (c // g) * kh * kw * ho * wo
    w_bytes = attrs.get("param_bytes")
    if w_bytes is None:
        w_bytes = (k * (c // g) * kh * kw + (k if attrs.get("bias") else 0)) * dtype_bytes
    return _ConvGeom(n, c, h, w, k, ho, wo, kh, kw, sh, sw, ph, pw, g, int(macs),
                     n * c * h * w * dtype_bytes, n * k * ho * wo * dtype_bytes, int(w_bytes),
                     dtype_bytes)


def _fft_flops(n_in, n_filt, n_out, pointwise, size):
    """Transforms (2.5·s·log2 s real-FFT flops each) plus complex multiply-adds (8 flops)."""
    per_fft = 2.5 * size * math.log2(max(size, 2))
    return (n_in + n_filt + n_out) * per_fft + 8.0 * pointwise


def _algo_model(g, pass_name, name):
    """Return (flops, extra_bytes, ws_bytes, supported) of one algorithm for one pass."""
    direct = 2.0 * g.macs
    stride1 = g.sh == 1 and g.sw == 1
    ungrouped = g.groups == 1
    is3x3 = g.kh == 3 and g.kw == 3
    # the spatial size the pass produces: fwd/bwd_filter walk the output, bwd_data the input
    oh, ow = (g.h, g.w) if pass_name == "bwd_data" else (g.ho, g.wo)
    if name in ("IMPLICIT_GEMM", "ALGO_0") and name == ZERO_WS_ALGO[pass_name]:
        return direct, 0, 0, True
    if name == "DIRECT":
        return direct, 0, 0, False
    if name == DEFAULT_ALGO[pass_name]:  # PRECOMP-like: a small int32 index buffer
        return direct, 0, 4 * g.kh * g.kw * oh * ow, True
    if name in ("GEMM", "ALGO_1"):       # explicit im2col of the whole batch
        ws = g.n * g.c * g.kh * g.kw * g.ho * g.wo * g.dtype_bytes
        return direct, 2 * ws, ws, True
    if name == "FFT":
        hp, wp = g.h + 2 * g.ph, g.w + 2 * g.pw
        ok = (stride1 and ungrouped and hp <= FFT_MAX_PADDED and wp <= FFT_MAX_PADDED
              and g.ph < g.kh and g.pw < g.kw)
        half = hp * (wp // 2 + 1)
        ws = COMPLEX_BYTES * (g.n * g.c + g.k * g.c + g.n * g.k) * half
        flops = _fft_flops(g.n * g.c, g.k * g.c, g.n * g.k, g.n * g.k * g.c * half, hp * wp)
        return flops, 2 * ws, ws, ok
    if name == "FFT_TILING":
        t = FFT_TILE
        ok = (stride1 and ungrouped and g.kh <= t and g.kw <= t
              and g.ph < g.kh and g.pw < g.kw)
        th, tw = max(t - g.kh + 1, 1), max(t - g.kw + 1, 1)
        tiles = math.ceil(g.ho / th) * math.ceil(g.wo / tw)
        half = t * (t // 2 + 1)
        ws = COMPLEX_BYTES * (g.n * g.c * tiles + g.k * g.c + g.n * g.k * tiles) * half
        flops = _fft_flops(g.n * g.c * tiles, g.k * g.c, g.n * g.k * tiles,
                           g.n * g.k * g.c * tiles * half, t * t)
        return flops, 2 * ws, ws, ok
    if name in ("WINOGRAD", "WINOGRAD_NONFUSED"):
        m = WINOGRAD_FUSED_M if name == "WINOGRAD" else WINOGRAD_NONFUSED_M
        a = m + 2
        ok = stride1 and ungrouped and is3x3
        tiles = math.ceil(oh / m) * math.ceil(ow / m)
        # pointwise products over a·a points per tile, plus ~2·a³ flops per transform
        flops = (2.0 * g.n * g.k * g.c * a * a * tiles
                 + 2.0 * a ** 3 * (g.n * g.c * tiles + g.n * g.k * tiles + g.k * g.c))
        if name == "WINOGRAD":
            return flops, 0, g.k * g.c * a * a * g.dtype_bytes, ok
        ws = math.ceil(a * a / (m * m) * (g.x_bytes + g.y_bytes + g.w_bytes))
        return flops, 2 * ws, ws, ok
    raise UnknownNameError(f"conv algorithm {name!r} is unknown for pass {pass_name}")  # pragma: no cover


def _pass_table(g, pass_name, hw):
    eff_conv = hw.eff("conv")
    eff_m = hw.eff("mem")
    base_bytes = g.x_bytes + g.y_bytes + g.w_bytes  # every pass reads/writes x, y, w (or grads)
    rows = []
    t_zero = None
    for name, mult in ALGO_EFFICIENCY[pass_name]:
        flops, extra, ws, ok = _algo_model(g, pass_name, name)
        t = _roofline(flops, base_bytes + extra, min(1.0, eff_conv * mult), eff_m, hw)
        if t_zero is None:  # the zero-workspace algorithm is first in every pass
            t_zero = t
        rows.append(ConvAlgo(name=name, pass_name=pass_name, ws_bytes=int(ws),
                             time_s=min(t, t_zero), supported=ok))
    return tuple(rows)


def _default_time(g, pass_name, hw):
    flops, extra, _, _ = _algo_model(g, pass_name, DEFAULT_ALGO[pass_name])
    mult = dict(ALGO_EFFICIENCY[pass_name])[DEFAULT_ALGO[pass_name]]
    return _roofline(flops, g.x_bytes + g.y_bytes + g.w_bytes + extra,
                     min(1.0, hw.eff("conv") * mult), hw.eff("mem"), hw)


def conv_algorithms(node_attrs, hw, dtype_bytes=4):
    """Analytic algorithm table of one CONV layer (SPEC §6).

    Parameters
    ----------
    node_attrs : Mapping
        CONV node attributes: ``in_shapes``, ``out_shape``, ``kernel``, ``stride``, ``pad``,
        ``groups``, ``macs``, ``param_bytes`` (as written by :class:`snsim.graph.GraphBuilder`).
    hw : HardwareSpec
    dtype_bytes : int
        Bytes per element (4 for fp32).

    Returns
    -------
    dict
        ``{"fwd": (ConvAlgo, ...), "bwd_data": (...), "bwd_filter": (...)}``, each tuple in
        cuDNN 7's enum order with the zero-workspace algorithm first.

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> conv = dict(type="CONV", in_shapes=[(8, 64, 56, 56)], out_shape=(8, 64, 56, 56),
    ...             kernel=(3, 3), stride=(1, 1), pad=(1, 1), groups=1,
    ...             macs=8 * 64 * 64 * 9 * 56 * 56, param_bytes=64 * 64 * 9 * 4)
    >>> table = conv_algorithms(conv, load_hardware("k40c"))
    >>> [a.name for a in table["fwd"] if a.supported and a.ws_bytes == 0]
    ['IMPLICIT_GEMM']
    >>> choose_algo(table["fwd"]).name
    'WINOGRAD_NONFUSED'
    """
    if node_attrs.get("type", "CONV") != "CONV":
        raise ConfigError(f"{_label(node_attrs)}: conv_algorithms needs a CONV layer, "
                          f"not {node_attrs.get('type')}")
    g = _conv_geom(node_attrs, dtype_bytes)
    return {p: _pass_table(g, p, hw) for p in PASSES}


def choose_algo(algos, free_bytes=None):
    """Fastest supported algorithm whose workspace fits (SPEC §6).

    A row qualifies if it is supported and ``ws_bytes < free_bytes`` (``None``: ignore memory);
    the zero-workspace row always qualifies. Ties go to the smaller workspace, then to the
    earlier row, so the choice is deterministic.

    Examples
    --------
    >>> rows = (ConvAlgo(name="A", pass_name="fwd", ws_bytes=0, time_s=2.0, supported=True),
    ...         ConvAlgo(name="B", pass_name="fwd", ws_bytes=100, time_s=1.0, supported=True))
    >>> choose_algo(rows).name, choose_algo(rows, free_bytes=100).name
    ('B', 'A')
    """
    best = None
    best_key = None
    for i, a in enumerate(algos):
        if not a.supported:
            continue
        if a.ws_bytes and free_bytes is not None and not a.ws_bytes < free_bytes:
            continue
        key = (a.time_s, a.ws_bytes, i)
        if best_key is None or key < best_key:
            best, best_key = a, key
    if best is None:
        raise ConfigError("no supported algorithm fits: the table has no zero-workspace row")
    return best


# -- per-layer times --------------------------------------------------------------------------
def layer_time_s(node_attrs, hw, phase="F", dtype_bytes=4, *, n_outputs=None):
    """Modelled time of one layer step (see the module docstring for every choice).

    Parameters
    ----------
    node_attrs : Mapping
        Node attributes (``type``, ``out_shape``, ``in_shapes``, ``macs``, ``param_bytes``,
        hyper-parameters).
    hw : HardwareSpec
    phase : {"F", "B", "R"}
        Forward, backward or recompute (costed as forward).
    dtype_bytes : int
        Bytes per element.
    n_outputs : int, optional
        FORK branch count (the graph's out-degree); defaults to
        ``node_attrs["n_outputs"]`` or 2.

    Returns
    -------
    float
        Seconds, launch overhead included; 0.0 for DATA.

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> hw = load_hardware("k40c")
    >>> relu = dict(type="ACT", in_shapes=[(1, 1000)], out_shape=(1, 1000))
    >>> t = layer_time_s(relu, hw, "F")    # 8,000 B at 0.75 x 288 GB/s, plus 5 us
    >>> round(t * 1e6, 4)
    5.037
    """
    _check_phase(phase)
    t = node_attrs.get("type")
    if t == "DATA":
        return 0.0
    if t == "CONV":
        g = _conv_geom(node_attrs, dtype_bytes)
        if phase == "B":
            return _default_time(g, "bwd_data", hw) + _default_time(g, "bwd_filter", hw)
        return _default_time(g, "fwd", hw)
    if t not in _LAYER_TYPES:
        raise UnknownNameError(f"{_label(node_attrs)}: layer type {t!r} is unknown; known: "
                               f"{', '.join(_LAYER_TYPES)}")
    out_shape = _need(node_attrs, "out_shape")
    in_shapes = node_attrs.get("in_shapes") or [out_shape]
    out_elems = _numel(out_shape)
    out_b = out_elems * dtype_bytes
    in_list = [_numel(s) * dtype_bytes for s in in_shapes]
    in_b = sum(in_list)
    bwd = phase == "B"
    if t == "FC":
        macs = node_attrs.get("macs") or out_elems * (in_list[0] // dtype_bytes // out_shape[0])
        w_b = node_attrs.get("param_bytes") or 0
        flops = (4.0 if bwd else 2.0) * macs
        nbytes = (2 * in_b + out_b + 2 * w_b) if bwd else (in_b + out_b + w_b)
        return _roofline(flops, nbytes, hw.eff("fc"), hw.eff("mem"), hw)
    if t == "ATTN":
        return _attention_time_s(node_attrs, hw, bwd, in_b, out_b)
    eff = hw.eff(_EFF_KIND.get(t, t))
    if t == "EMBED":
        # gather the rows (one table per lookup); backward scatters into a zeroed gradient table
        lookups = 1 + bool(node_attrs.get("positions")) + bool(node_attrs.get("token_types"))
        w_b = node_attrs.get("param_bytes") or 0
        return _roofline(0.0, (lookups + 1) * out_b + (w_b if bwd else 0), eff, eff, hw)
    if t == "FORK":
        k = n_outputs or node_attrs.get("n_outputs") or 2
        return _roofline(0.0, in_b + k * out_b, eff, eff, hw)
    if t == "JOIN":
        if bwd:
            return _roofline(0.0, out_b + sum(in_list[1:]), eff, eff, hw)
        return _roofline((len(in_list) - 1) * out_elems, in_b + out_b, eff, eff, hw)
    per_elem, (fa, fb), (ba, bb) = _ELEMENTWISE[t]
    if per_elem is None:
        if t == "POOL":
            kh, kw = _pair(node_attrs.get("kernel"), (1, 1))
            per_elem = kh * kw
        else:  # LRN
            per_elem = 2 * int(node_attrs.get("size", 5)) + 5
    flops = per_elem * out_elems * (2.0 if bwd else 1.0)
    nbytes = (ba * in_b + bb * out_b) if bwd else (fa * in_b + fb * out_b)
    return _roofline(flops, nbytes, eff, eff, hw)


def _attention_time_s(a, hw, bwd, in_b, out_b):
    """Attention core: ``2 * macs`` flops for q k^T and p v (half with a causal fused kernel,
    which skips the masked blocks); backward does twice the matmuls, a fused kernel also
    recomputes the scores (2.5x). Eager attention moves the ``S x S`` scores and probabilities
    through memory several times (write, mask, softmax, read in p v); a fused kernel only reads
    q, k, v and writes the output."""
    flash = a.get("attn_kernel", "flash") == "flash"
    flops = 2.0 * (a.get("macs") or 0)
    if flash and a.get("causal"):
        flops /= 2
    flops *= (2.5 if flash else 2.0) if bwd else 1.0
    n, s, _ = a["out_shape"]
    ss_b = n * a.get("heads", 1) * s * s * 4
    nbytes = (in_b + out_b) * (2 if bwd else 1) + (0 if flash else (6 if bwd else 5) * ss_b)
    return _roofline(flops, nbytes, hw.eff("fc"), hw.eff("mem"), hw)


def update_time_s(param_bytes, state_bytes, hw):
    """Time of one bandwidth-bound optimizer update (SGD, momentum, Nesterov, Adam).

    Reads parameters, gradients (same size as the parameters) and state; writes parameters and
    state: ``3·param_bytes + 2·state_bytes`` at ``eff["update"]·mem_bytes_per_s``, plus one
    launch. Zero bytes cost nothing.

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> hw = load_hardware("k40c")
    >>> t = update_time_s(4_000_000, 4_000_000, hw)  # 20 MB at 0.75 x 288 GB/s + 5 us
    >>> round(t * 1e6, 3)
    97.593
    """
    if param_bytes < 0 or state_bytes < 0:
        raise ConfigError(f"param_bytes (={param_bytes}) and state_bytes (={state_bytes}) "
                          f"must be >= 0")
    nbytes = 3 * param_bytes + 2 * state_bytes
    if nbytes == 0:
        return 0.0
    return nbytes / (hw.eff("update") * hw.mem_bytes_per_s) + hw.launch_overhead_s


# -- whole graphs -----------------------------------------------------------------------------
_SIGNATURE_KEYS = ("type", "out_shape", "kernel", "stride", "pad", "groups", "macs",
                   "param_bytes", "bias", "size", "attn_kernel", "causal", "heads", "positions",
                   "token_types")


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def modeled_costs(G, hw):
    """Modelled forward and backward times of every layer of ``G`` (never mutates ``G``).

    Parameters
    ----------
    G : networkx.DiGraph
        A layer graph (SPEC §2.1); ``G.graph["dtype_bytes"]`` defaults to 4.
    hw : HardwareSpec

    Returns
    -------
    dict
        ``{layer_id: LayerCost}`` in the graph's node order; CONV layers carry their
        algorithm table.

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> from snsim.zoo import build_network
    >>> G = build_network("lenet", batch=4)
    >>> costs = modeled_costs(G, load_hardware("k40c"))
    >>> costs[1].fwd_time_s, costs[2].conv_algos is not None
    (0.0, True)
    """
    dtype_bytes = int(G.graph.get("dtype_bytes", 4))
    memo = {}
    out = {}
    for n, a in G.nodes(data=True):
        t = a.get("type")
        k = G.out_degree(n) if t == "FORK" else None
        key = (tuple([v if v.__class__ is not list else _freeze(v)
                      for v in map(a.get, _SIGNATURE_KEYS)]),
               _freeze(a.get("in_shapes")), k)
        hit = memo.get(key)
        if hit is None:
            if "layer_id" not in a:  # so that error messages name the layer
                a = {**a, "layer_id": n}
            if t == "CONV":
                g = _conv_geom(a, dtype_bytes)
                tables = {p: _pass_table(g, p, hw) for p in PASSES}
                fwd = _default_time(g, "fwd", hw)
                bwd = _default_time(g, "bwd_data", hw) + _default_time(g, "bwd_filter", hw)
            else:
                tables = None
                fwd = layer_time_s(a, hw, "F", dtype_bytes, n_outputs=k)
                bwd = layer_time_s(a, hw, "B", dtype_bytes, n_outputs=k)
            hit = memo[key] = (fwd, bwd, tables)
        fwd, bwd, tables = hit
        out[n] = LayerCost(fwd_time_s=fwd, bwd_time_s=bwd,
                           conv_algos=dict(tables) if tables is not None else None)
    return out


def with_modeled_times(G, hw):
    """Return a copy of ``G`` whose nodes carry ``fwd_time_s``, ``bwd_time_s`` and
    ``time_source = "modeled:<hw.name>"``; ``G`` itself is left untouched.

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> from snsim.zoo import build_network
    >>> G = build_network("lenet", batch=4)
    >>> H = with_modeled_times(G, load_hardware("k40c"))
    >>> H.nodes[2]["time_source"], "fwd_time_s" in G.nodes[2]
    ('modeled:k40c', False)
    """
    costs = modeled_costs(G, hw)
    H = G.copy()
    source = f"modeled:{hw.name}"
    for n, c in costs.items():
        d = H.nodes[n]
        d["fwd_time_s"] = c.fwd_time_s
        d["bwd_time_s"] = c.bwd_time_s
        d["time_source"] = source
    return H


# -- measured kernel tables (issue 10) ---------------------------------------------------------


#: the dtype of an op's math mode (:func:`_layer_ops`' last field names a math mode for
#: convolutions and matmuls, a dtype for the rest)
_MATH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "tf32": "float32", "fp32": "float32"}


def lookup_args(mode):
    """The kernel table's ``dtype`` and ``math_`` keywords of a :func:`_layer_ops` op whose
    last field is ``mode`` (a compute family's group is its math mode's, another's its
    dtype's: :meth:`snsim.kernel_table.KernelTable.time_s`)."""
    return {"dtype": _MATH_DTYPE.get(mode, mode), "math_": mode}


def _layer_ops(a, dtype_bytes=4, half=None, autocast=False, fp32_input=False,
               input_strided=False):
    """The aten ops of a zoo layer's forward and backward in eager PyTorch (torchvision twin):
    two lists of ``(family, flops, bytes, cls, math)``; None for a type not mapped.

    ``half`` (``"bf16"``/``"fp16"``): the layer computes in 16 bits (pure low precision, or
    autocast with ``dtype_bytes`` 2): convolutions and matmuls read the table's rows of that
    math, every other family its rows of that dtype (``bfloat16``, ``float16``), as a recorded
    16-bit call does
    (:func:`snsim.torchsim.opcost._table_args`). ``autocast`` adds the casts autocast makes:
    each fp32 parameter of a convolution or linear layer to 16 bits in forward (and an fp32
    input, ``fp32_input``), its 16-bit gradient back to fp32 in backward; the loss's
    log-probabilities to fp32 for ``nll_loss`` and their gradient back. A cast reads 4 bytes
    and writes 2 per element (``_to_copy``, the table's ``clone`` rows). ``input_strided``:
    a linear layer reads its input transposed (its cast, and its GEMM's, copy strided)."""
    if half is not None and ((a["type"] == "NORM" and a.get("norm") == "rms" and not autocast)
                             or (a["type"] == "SOFTMAX" and a.get("float_logits"))):
        # (under autocast an RMSNorm on the fp32 residual stream is an fp32 layer)
        return _fp32_inside_ops(a, half)
    if _sdpa_attention(a):
        fwd, bwd = _sdpa_ops(a, dtype_bytes, half, autocast)
        if half is None:
            return fwd, bwd
    else:
        ops = _layer_ops_fp32(a, dtype_bytes, input_strided)
        if ops is None or half is None:
            return ops
        wide = {"tf32": half, "fp32": half}   # the table's rows of the 16-bit math and dtype
        fwd, bwd = ([(f, fl, nb, cls, wide.get(m, _MATH_DTYPE[half]), *rest)
                     for f, fl, nb, cls, m, *rest in part] for part in ops)
    narrow = _MATH_DTYPE[half]
    if not autocast:
        return fwd, bwd
    typ = a["type"]
    if typ in ("CONV", "FC"):
        from .program import cast_pieces
        pieces = [n for _, n in cast_pieces(a)]
        casts = [("_to_copy", 0, 6 * n, "", "float32") for n in pieces]
        if fp32_input:
            casts.append(("clone_strided" if input_strided else "_to_copy", 0,
                          6 * _numel(a["in_shapes"][0]), "", "float32"))
        fwd = casts + fwd
        bwd = bwd + [("_to_copy", 0, 6 * n, "", narrow) for n in pieces]
    elif typ == "SOFTMAX":
        # nll_loss runs on the fp32 copy: its calls read and write fp32
        n = _numel(a["out_shape"])
        cast = ("_to_copy", 0, 6 * n, "", narrow)
        wide = {"nll_loss_forward": 4 * n, "nll_loss_backward": 8 * n}
        fwd, bwd = ([(f, fl, wide[f], cls, "float32") if f in wide else (f, fl, nb, cls, m)
                     for f, fl, nb, cls, m in part] for part in (fwd, bwd))
        fwd = fwd[:1] + [cast] + fwd[1:]
        bwd = bwd[:1] + [cast] + bwd[1:]
    return fwd, bwd


def _fp32_inside_ops(a, half):
    """A 16-bit layer that computes in fp32 (pure low precision): Hugging Face's RMSNorm (its
    input cast to fp32, its normalized ``h`` cast back before the weight's product, the two
    gradients cast likewise) and its causal-LM loss (``logits.float()``; the gradient cast
    back): the fp32 calls at the table's fp32 rows, the casts (4 + 2 bytes an element) and
    the weight's products at the 16-bit ones."""
    narrow = _MATH_DTYPE[half]
    n = _numel(a["out_shape"])
    fwd, bwd = _layer_ops_fp32(a, 4)
    cast = ("_to_copy", 0, 6 * n, "", "float32")
    if a["type"] == "SOFTMAX":
        return [cast] + fwd, bwd + [cast[:4] + (narrow,)]

    def low(op, nbytes):
        return (op[0], op[1], nbytes, op[3], narrow)
    d = a["out_shape"][-1]
    # forward: x to fp32 first; h back to 16 bits before weight * h, which runs in 16 bits
    fwd = [cast] + fwd[:-1] + [cast[:4] + (narrow,), low(fwd[-1], 3 * n * 2 + 2 * d)]
    # backward: the weight's products and sum in 16 bits, h's gradient to fp32, ..., the
    # input's gradient back to 16 bits
    bwd = [low(op, op[2] // 2) for op in bwd[:3]] + [cast] + bwd[3:] + \
        [cast[:4] + (narrow,)]
    return fwd, bwd


def _sdpa_attention(a):
    """Layer ``a`` is an attention through ``scaled_dot_product_attention`` (a fused kernel,
    or the math composite CUDA runs for grouped-query heads), not eager attention."""
    return a["type"] == "ATTN" and a.get("attn_kernel", "flash") != "eager"


def _sdpa_ops(a, b, half=None, autocast=False):
    """An SDPA attention layer's calls (:func:`_sdpa_attention`), in 16 bits with ``half``:
    the fused kernel's (:func:`_attention_ops`) or the math composite's
    (:func:`_math_attention_ops`, which computes in fp32 whatever its inputs), after Hugging
    Face's rotary positions (:func:`_rotary_ops`) for a rotary layer. Under ``autocast`` the
    rotary products promote the 16-bit q and k to fp32 (cos and sin are fp32): the rotary
    calls run in fp32, autocast casts the rotated q and k back to 16 bits for the kernel, and
    in backward their gradients to fp32 and, per projection, the products' gradients of the
    16-bit q or k back (4 + 2 bytes an element each)."""
    fwd, bwd = (_math_attention_ops(a) if a.get("attn_kernel") == "math"
                else _attention_ops(a, b, half))
    if a.get("rotary") and autocast:
        nb, s, _ = a["out_shape"]
        rot_f, rot_b = _rotary_ops(a, 4, "float32", promoted=True)
        qk = [nb * s * heads * a["head_dim"] for heads in (a["heads"], a["kv_heads"])]
        fwd = rot_f + [("_to_copy", 0, 6 * n, "", "float32") for n in qk] + fwd
        bwd = bwd + [("_to_copy", 0, 6 * n, "", _MATH_DTYPE[half]) for n in qk] + rot_b + \
            [("_to_copy", 0, 6 * n, "", "float32") for n in qk for _ in range(2)]
    elif a.get("rotary"):
        rot_f, rot_b = _rotary_ops(a, b, _MATH_DTYPE[half] if half else "float32")
        fwd, bwd = rot_f + fwd, bwd + rot_b
    return fwd, bwd


def _attention_ops(a, b, half=None):
    """A fused attention layer's calls (``snsim predict`` records them so on the GPU):
    ``_scaled_dot_product_efficient_attention`` and its backward at the flop counter's count
    (4 and 10 x B x H x S^2 x D; cuDNN's backward 8; halved when causal: the table's
    ``causal`` rows), reading q,
    k, v and writing the output and the fp32 logsumexp; in 16 bits (``half``) cuDNN's kernel
    (Hopper; a table without its rows reads flash's), as opcost reads a recorded one.

    ``nn.MultiheadAttention`` (torchvision's ViT) runs sequence-first on views of the packed
    projection: it copies the projection into q/k/v order (a strided copy, and its gradient
    back), hands the output projection an ``(S, N, C)`` copy of the memory-efficient kernel's
    output (cuDNN's is laid out so already; the gradient is copied back in either case), and
    each of q, k and v's gradients is a ``select_backward`` into the packed size (a fill and a
    strided copy: :func:`snsim.kernel_table.zero_scatter_calls`), summed into one. The
    memory-efficient kernel returns q, k and v's gradients contiguous in ``(N, H, S, D)``, and
    the view chain back to the packed layout copies each twice (reshape's copies); cuDNN's are
    strided like its inputs and need none. Element ``[5]`` of a ``select_backward`` call is
    its gradient's bytes."""
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a.get("kv_heads", a["heads"]), a["head_dim"]
    causal = bool(a.get("causal"))
    flops = 4 * nb * h * s * s * d // (2 if causal else 1)
    q, k = nb * s * h * d * b, nb * s * kv * d * b
    lse = nb * h * s * 4
    cls = "causal" if causal else ""
    kernel, math_ = ("cudnn", half) if half else ("efficient", "fp32")
    fwd = [(f"_scaled_dot_product_{kernel}_attention", flops, 2 * q + 2 * k + lse, cls, math_)]
    # the flop counter's backward: five products for the memory-efficient kernel (the scores
    # recomputed), four for cuDNN's (as snsim predict records them)
    bwd = [(f"_scaled_dot_product_{kernel}_attention_backward",
            2 * flops if half else 5 * flops // 2, 4 * q + 4 * k + lse, cls,
            math_)]
    if not a.get("mha") and not a.get("rotary"):
        # q, k and v were split off one projection: their gradients are cat into its one
        bwd.append(("cat", 0, 2 * (q + 2 * k), "", _MATH_DTYPE[half] if half else "float32"))
    if a.get("mha"):
        dt = _MATH_DTYPE[half] if half else "float32"
        packed = q + 2 * k

        def copy(nbytes):
            return ("clone_strided", 0, 2 * nbytes, "", dt)
        fwd = [copy(packed)] + fwd + ([] if half else [copy(q)])
        bwd = [copy(q)] + bwd + ([] if half else [copy(q), copy(q), copy(k), copy(k),
                                                  copy(k), copy(k)]) + \
            [("select_backward", 0, packed + g, "", dt, g) for g in (q, k, k)] + \
            [("add", 0, 3 * packed, "", dt)] * 2 + [copy(packed)]
    return fwd, bwd


def _rms_norm_ops(a, b):
    """Hugging Face's ``LlamaRMSNorm`` call by call, as ``snsim predict`` records it: in
    forward ``pow``, ``mean``, ``+ eps``, ``rsqrt``, ``x * rstd`` and ``weight * h``; in
    backward the weight's two products and row sum, the product's two and row sum, the rows'
    ``rsqrt`` backward (``pow`` and two products), ``mean``'s expansion (``div``), ``pow``'s
    backward (``pow`` and two products) and the two gradients summed into the input's."""
    d = a["out_shape"][-1]
    x = _numel(a["out_shape"]) * b
    r = x // (d * b) * 4            # fp32 per row
    w = d * b
    fwd = [("pow", 0, 2 * x), ("mean", 0, x + r), ("add", 0, 2 * r), ("rsqrt", 0, 2 * r),
           ("mul", 0, 2 * x + r), ("mul", 0, 2 * x + w)]
    bwd = [("mul", 0, 2 * x + w), ("mul", 0, 3 * x), ("sum", 0, x + w), ("mul", 0, 2 * x + r),
           ("mul", 0, 3 * x), ("sum", 0, x + r), ("pow", 0, 2 * r), ("mul", 0, 3 * r),
           ("mul", 0, 3 * r), ("div", 0, x + r), ("pow", 0, 2 * x), ("mul", 0, 3 * x),
           ("mul", 0, 3 * x), ("add_", 0, 3 * x)]
    return ([(f, 0, nb, "", "float32") for f, _, nb in fwd],
            [(f, 0, nb, "", "float32") for f, _, nb in bwd])


def _math_attention_ops(a):
    """SDPA's math composite (grouped-query heads: ``program_torch._math_attention``) call by
    call, in fp32 as it computes, as ``snsim predict`` records it: the query's scale, the
    causal mask (``ones``, ``tril``, ``where``), k and v repeated to every head (copies), the
    key's scale, the query's contiguous copy, the scores' ``bmm``, ``_safe_softmax``, the
    values' ``bmm`` and the output's copy; in backward the output gradient's copy, the two
    products' two ``bmm`` each, the softmax's backward, the scales' products and the sums
    over each group of heads."""
    nb, s, _ = a["out_shape"]
    h, kv, d = a["heads"], a.get("kv_heads", a["heads"]), a["head_dim"]
    bh = nb * h
    q, k, ss = nb * s * h * d * 4, nb * s * kv * d * 4, bh * s * s * 4
    f = "float32[{}, {}, {}]".format

    def bmm(m, inner, n):
        sig = f"bmm {f(bh, m, inner)} {f(bh, inner, n)}"
        return ("bmm", 2 * bh * m * inner * n, 4 * bh * (m * inner + inner * n + m * n),
                matmul_lookup_class(sig), "fp32")

    def ew(family, nbytes):
        return (family, 0, nbytes, "", "float32")
    mask = [ew("ones", s * s), ew("tril", 2 * s * s), ew("where", 5 * s * s)] \
        if a.get("causal") else []
    fwd = [ew("mul", 2 * q)] + mask + [ew("clone", 2 * q), ew("clone", 2 * q), ew("mul", 2 * q),
                                       ew("clone", 2 * q), bmm(s, d, s), ew("_safe_softmax", 2 * ss),
                                       bmm(s, s, d), ew("clone", 2 * q)]
    bwd = [ew("clone", 2 * q), bmm(s, d, s), bmm(s, s, d), ew("_softmax_backward_data", 3 * ss),
           bmm(s, s, d), bmm(s, s, d), ew("mul", 2 * q), ew("mul", 2 * q), ew("sum", q + k),
           ew("sum", q + k)]
    return fwd, bwd


def _rotary_ops(a, b, dtype="float32", promoted=False):
    """Rotary positions as Hugging Face applies them to q and k (``q * cos +
    rotate_half(q) * sin``), as ``snsim predict`` records and times them: q and k are
    transposed views and cos and sin broadcast, so every product and sum runs TensorIterator's
    generic kernel (the table's ``elementwise_generic`` rows) and ``cat`` its strided one. Per
    projection in forward a product, ``neg`` of a half, ``cat``, a product and the sum; in
    backward a product, ``neg``, two ``slice_backward``, their sum, a product, its sum into
    the gradient and the copy back to the projection's layout. ``promoted`` (autocast: 16-bit
    q and k times fp32 cos and sin): the forward products cast as they go, TensorIterator's
    casting kernel (the ``cast`` rows)."""
    nb, s, _ = a["out_shape"]
    d = a["head_dim"]
    fwd, bwd = [], []
    for heads in (a["heads"], a.get("kv_heads", a["heads"])):
        y = nb * s * heads * d * b
        cs = s * d * b                  # cos or sin, broadcast over batch and heads
        gen = "elementwise_generic"
        prod = (gen, 0, 2 * y + cs, "cast" if promoted else "", dtype)
        fwd += [prod, (gen, y), ("cat_strided", 2 * y), prod, (gen, 3 * y)]
        bwd += [(gen, 2 * y + cs), (gen, y)]
        # each half's gradient scattered into a zeroed full one (element [5]: its bytes)
        bwd += [("slice_backward", 0, y + y // 2, "", dtype, y // 2)] * 2
        bwd += [("add", 3 * y), (gen, 2 * y + cs), (gen, 3 * y), ("clone", 2 * y)]
    return ([op if len(op) > 2 else (op[0], 0, op[1], "", dtype) for op in fwd],
            [op if len(op) > 2 else (op[0], 0, op[1], "", dtype) for op in bwd])


def _layer_ops_fp32(a, dtype_bytes, input_strided=False):
    """:func:`_layer_ops` of a layer in one dtype of ``dtype_bytes``, at the table's fp32
    (TF32 convolutions) rows."""
    typ = a["type"]
    b = dtype_bytes
    y = _numel(a["out_shape"]) * b
    x = _numel(a["in_shapes"][0]) * b if a.get("in_shapes") else 0
    if typ == "CONV":
        n, c = a["in_shapes"][0][:2]
        kh, kw = _pair(a["kernel"], 1)
        sh = _pair(a.get("stride", 1), 1)[0]
        g = a.get("groups", 1)
        w = a["params"] * b
        cls = (("dw" if g > 1 and g == c else f"g{g}" if g > 1 else "") + f"k{kh}x{kw}s{sh}"
               f":c{c}o{a['out_shape'][1]}hw{_numel(a['in_shapes'][0][2:])}")
        first = c == 3   # the input batch needs no gradient
        macs = a["macs"]
        fwd = [("convolution", 2 * macs, x + w + y, cls, "tf32")]
        bwd = [("convolution_backward", (2 if first else 4) * macs,
                y + x + w + w + (0 if first else x), cls, "tf32")]
        return fwd, bwd
    if typ == "FC":
        n = _numel(a["out_shape"][:-1])    # rows: the batch, times the sequence
        i, o = a["in_features"], a["out_features"]
        w = a["params"] * b
        mm = 2 * n * i * o
        fwd, dgrad, wgrad = linear_gemm_classes(n, i, o)    # as a recorded Linear's calls
        # a transposed input (nn.MultiheadAttention's input projection) cannot be folded into
        # one GEMM: F.linear copies it, multiplies, and adds the bias by the generic kernel
        gemm = ([("clone_strided", 0, 2 * x, "", "float32"), ("mm", mm, x + w + y, fwd, "fp32"),
                 ("elementwise_generic", 0, 2 * y + o * b, "", "float32")] if input_strided
                else [("addmm", mm, x + w + y, fwd, "fp32")])
        bias = [("sum_rows", 0, y, f"d{o}r{n}", "float32")] if a.get("bias", True) else []
        return (gemm,
                [("mm", mm, y + w + x, dgrad, "fp32"), ("mm", mm, y + x + w, wgrad, "fp32")]
                + bias)   # the bias's gradient, a sum over the rows (kernel_table)
    if typ == "BN":
        shape = a["in_shapes"][0]
        cls = f"c{shape[1]}hw{_numel(shape[2:])}"     # as kernel_table.bn_class names it
        # training mode counts its batches: ``num_batches_tracked.add_(1)`` (int64, one element)
        return ([("native_batch_norm", 0, x + y, cls, "float32"), ("add_", 0, 16, "", "float32")],
                [("native_batch_norm_backward", 0, 3 * x, cls, "float32")])
    if typ == "ACT" and a.get("activation") in ("gelu", "silu", "tanh"):
        act = a["activation"]
        return [(act, 0, 2 * x, "", "float32")], [(f"{act}_backward", 0, 3 * x, "", "float32")]
    if typ == "NORM" and a.get("norm") == "layer":
        d = a["out_shape"][-1]
        rows = _numel(a["out_shape"]) // d
        cls = f"d{d}r{rows}"                        # kernel_table.ln_class
        stats, w = 2 * rows * 4, 2 * d * b          # mean and rstd (fp32); weight and bias
        return ([("native_layer_norm", 0, x + w + y + stats, cls, "float32")],
                [("native_layer_norm_backward", 0, 3 * x + stats + 2 * w, cls, "float32")])
    if typ == "NORM" and a.get("norm") == "rms":
        return _rms_norm_ops(a, b)
    if typ == "MUL":
        return [("mul", 0, 3 * y, "", "float32")], [("mul", 0, 3 * y, "", "float32")] * 2
    if typ == "EMBED" and a.get("vocab"):
        # each lookup's bytes are its ids and the rows it gathers (an embedding's table is not
        # read whole: snsim.torchsim.record.GATHERED_ARGS); its backward writes a whole
        # gradient table. Positions (1, S) are broadcast over the batch: added, then summed
        # back; BERT's token types come from a buffer's ids (``gather``), looked up per token
        nb, s, d = a["out_shape"]
        ids = nb * s * 8

        def grad_table(indices, rows):   # (indices, width, rows): KernelTable's own lookup
            return ("embedding_dense_backward", 0, indices * (8 + d * b) + rows * d * b, "",
                    "float32", (indices, d, rows))
        fwd = [("embedding", 0, ids + y, "", "float32")]
        bwd = [grad_table(nb * s, a["vocab"])]
        if a.get("token_types"):
            fwd += [("gather", 0, 3 * s * 8, "", "int64"),
                    ("embedding", 0, ids + y, "", "float32"),
                    ("add", 0, 3 * y, "", "float32")]
            bwd += [grad_table(nb * s, a["token_types"])]
        if a.get("positions"):
            fwd += [("embedding", 0, s * 8 + s * d * b, "", "float32"),
                    ("add", 0, 2 * y + s * d * b, "", "float32")]
            bwd += [("sum", 0, y + s * d * b, "", "float32"),
                    grad_table(s, a.get("positions", s))]
        return fwd, bwd
    if typ == "ACT" and a.get("activation") == "relu6":     # autograd's copy, hardtanh_
        return ([("clone", 0, 2 * x, "", "float32"), ("hardtanh_", 0, 2 * x, "", "float32")],
                [("hardtanh_backward", 0, 3 * x, "", "float32")])
    if typ == "ACT":
        return ([("relu_", 0, 2 * x, "", "float32")],
                [("threshold_backward", 0, 3 * x, "", "float32")])
    if typ == "POOL":
        kh, kw = _pair(a["kernel"], 1)
        cls = f"k{kh}x{kw}s{_pair(a.get('stride') or (kh, kw), 1)[0]}"   # kernel_table.pool_class
        if a.get("mode", "max") == "max":
            return ([("max_pool2d_with_indices", 0, x + 3 * y, cls, "float32")],
                    [("max_pool2d_with_indices_backward", 0, 2 * x + 3 * y, cls, "float32")])
        if a["out_shape"][-1] == 1 and a["out_shape"][-2] == 1:
            return ([("mean", 0, x + y, "", "float32")], [("div", 0, x + y, "", "float32")])
        return ([("avg_pool2d", 0, x + y, cls, "float32")],
                [("avg_pool2d_backward", 0, 2 * x + y, cls, "float32")])
    if typ == "JOIN":
        return [("add_", 0, 3 * y, "", "float32")], []
    if typ == "SOFTMAX":    # and backward()'s seed, a one-element ones_like of the loss
        return ([("_log_softmax", 0, 2 * y, "", "float32"),
                 ("nll_loss_forward", 0, y, "", "float32"), ("ones_like", 0, 4, "", "float32")],
                [("nll_loss_backward", 0, 2 * y, "", "float32"),
                 ("_log_softmax_backward_data", 0, 3 * y, "", "float32")])
    if typ == "DROPOUT":
        return ([("native_dropout", 0, x + y + y // b, "", "float32")],
                [("native_dropout_backward", 0, 2 * y + y // b, "", "float32")])
    if typ == "CONCAT":
        return [("cat", 0, 2 * y, "", "float32")], []
    return None


def table_layer_times(G, table, dtype_bytes=4, half=None, ops_of=None):
    """Per-layer times of a zoo graph from a measured kernel table (:mod:`snsim.kernel_table`).
    ``half``: the step's 16-bit math (:func:`_layer_ops`); ``ops_of(node)``: each layer's
    calls instead (:func:`snsim.program_torch.build_torch_program`'s, which knows each value's
    dtype under autocast).

    Returns
    -------
    dict
        node -> ``(fwd_s, bwd_s, fwd_ops, bwd_ops)`` for every layer the table can time (all
        its ops found); ``sources`` maps ``"table"``/``"fitted"``/``"proxy"`` to seconds.
    """
    from .kernel_table import (EMBEDDING_BACKWARD, ZERO_SCATTER_OPS, bias_calls, bias_time_s,
                               family_of,
                               generic_cast_time_s, table_family, zero_scatter_calls)
    dtype = (_MATH_DTYPE[half] if half
             else {2: "bfloat16", 8: "float64"}.get(dtype_bytes, "float32"))
    out, sources = {}, {}
    for n, a in G.nodes(data=True):
        if a.get("type") in ("DATA", "FORK"):
            continue
        ops = ops_of(n) if ops_of is not None else _layer_ops(a, dtype_bytes, half)
        if ops is None:
            continue
        times, ok, srcs = [], True, []
        for backward, part in enumerate(ops):
            total = 0.0
            # a convolution's bias kernels, outside cuDNN's call (kernel_table.bias_calls:
            # recorded calls take the same, opcost.conv_bias_time_s)
            calls = bias_calls(a["out_shape"], a["in_shapes"][0][1], a.get("groups", 1),
                               a.get("bias"), backward=bool(backward), dtype=dtype) \
                if a["type"] == "CONV" else []
            for fam, nbytes, cls, dt in calls:
                t, src = bias_time_s(table, fam, nbytes, cls, dt)
                if t is None:
                    ok = False
                    break
                total += t
                srcs.append((src, t))
            for fam, flops, nbytes, cls, mth, *grad in part:
                if fam == EMBEDDING_BACKWARD and grad:   # its fill and scatter, as opcost's
                    t, src = table.embedding_backward_s(*grad[0],
                                                        dtype=lookup_args(mth)["dtype"])
                    if t is not None:
                        total += t
                        srcs.append((src, t))
                        continue
                if fam in ZERO_SCATTER_OPS:     # its two kernels, as opcost times one
                    calls = [(f, "", 0, b) for f, b in zero_scatter_calls(nbytes - grad[0],
                                                                          grad[0])]
                else:
                    # the table's family of the aten name, as a recorded call looks it up (a
                    # Linear's addmm reads the mm rows), and as a table without it reads it;
                    # an add of two dtypes and layouts runs the casting indexing kernel
                    # (``cls`` "cast": :func:`snsim.kernel_table.generic_cast_time_s`)
                    calls = [(*table_family(table, fam, "" if cls == "cast" else cls),
                              flops, nbytes)]
                for f, c, fl, nb in calls:
                    t, src = table.time_s(family_of(f), flops=fl, nbytes=nb, cls=c,
                                          **lookup_args(mth))
                    if t is None:
                        break
                    if cls == "cast":
                        t = generic_cast_time_s(t, nb)
                    total += t
                    srcs.append((src, t))
                if t is None:
                    ok = False
                    break
            times.append(total)
        if ok:
            out[n] = (times[0], times[1], len(ops[0]), len(ops[1]))
            for src, t in srcs:
                sources[src] = sources.get(src, 0.0) + t
    return out, sources
