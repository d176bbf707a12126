"""Memory no tensor owns, for CPU-only predictions: tables learnt from committed captures.

On a GPU, cuDNN takes a workspace for most convolutions (forward, backward-data and
backward-filter) and cuBLAS keeps one workspace per handle. The allocator hands these out,
so they count in ``max_memory_allocated``/``max_memory_reserved``, but no tensor owns them and
a CPU run cannot see them. Captures record every one (``program.hidden``: op, signature, bytes,
whether it is freed inside the op; persistent ones are ``hidden:persistent`` static tensors).
:func:`load_tables` collects them from ``traces/<gpu>/*.json.gz``; :func:`add_hidden` inserts
them into a CPU recording:

* per op call, the transient workspaces of the same signature (exact shapes and arguments);
  failing that, for an fp16 or bf16 convolution (not depthwise), those of the same call in
  the other 16-bit dtype, captured or probed (:func:`half_sibling`); failing that, of the
  same signature at other batch sizes, interpolated between the nearest batches on either
  side, else scaled from the nearest by the batch ratio (:func:`_at_nearest_batch`) [E];
  failing that, the same call probed at other batches, the same way
  (:func:`probed_scaled_workspaces`; the probe's zeros included) [E]; failing that, for
  a grouped convolution (none is captured), depthwise included (of its own dtype), the
  nearest probed one of its kernel family scaled by activation bytes
  (:func:`probed_grouped_workspaces`) [E], for a dense one the
  median ratio of its nearest probed calls to the x + y + w model
  (:func:`probed_dense_workspaces`) [E]; failing that, of the same shapes in another
  floating-point dtype (an fp32 capture's table for a bf16/fp16 autocast run), scaled by
  the ratio of element sizes and batches [E]: a convolution's workspace often holds
  operands transformed in the compute dtype (the H200 captures show a 3x3 ResNet-50
  convolution's workspace at exactly half in bf16: 51454099 vs 102908051 bytes), but not
  always (weight-gradient partial sums stay fp32, and engines differ by dtype), so the
  probe's rows of the call's own dtype come first; then the
  first-principles workspaces the zoo's PyTorch semantics use
  (:func:`modelled_conv_workspaces`) [E]; failing that, none. The
  same signature in the GPU's probed table (``configs/kernels/<gpu>_conv_workspaces.json.gz``,
  measured by ``scripts/conv_workspace_probe.py``; a probed call that took none is a known
  zero) comes right after a capture's exact match;
* where they go: after the op's outputs, except ``convolution_backward``'s, each of which
  follows the gradient its cuDNN kernel computes (:func:`_workspace_slots`);
* the persistent cuBLAS workspaces at the first matmul of the forward and of the backward of
  the first iteration, and cuBLASLt's at the first ``addmm`` of the forward, with the sizes the
  captures saw (:data:`_DEFAULT_PERSISTENT`);
* a ``sum`` or ``mean`` takes the staging buffer and semaphores of CUDA's reduction kernel,
  computed from the geometry the fake run saw and the GPU's multiprocessors
  (:mod:`~snsim.torchsim.reduce_buffers`), not from a table; an op the recorder gave its CUDA
  kernel's own temporaries (:func:`snsim.torchsim.record.cuda_temporaries`: LayerNorm's
  contiguous copies, ``roll``'s intermediates) takes nothing from a table either.
"""
from __future__ import annotations

import functools
import glob
import gzip
import json
import math
import os
import re
from pathlib import Path

import numpy as np

from ..kernel_table import ELEMENT_BYTES, tables_of
from ..usercache import cache_file, write_atomic
from .reduce_buffers import layer_norm_backward_buffers, reduction_buffers

_SHAPE = re.compile(r"\[(\d+)((?:, \d+)*)\]")
_DTYPE = re.compile(r"\b(float32|bfloat16|float16)\[")
_MATMUL = ("addmm", "mm")
# what the H200 captures show (torch 2.11, CUDA 13), used when no capture holds them: per
# phase, the first size is the cuBLAS handle's workspace of the thread that runs it (the
# forward's, the autograd engine's in backward), made at the phase's first matmul; the rest
# are cuBLASLt's (1 MiB, PyTorch's default CUBLASLT_WORKSPACE_SIZE), made at its first
# ``addmm``: a bias epilogue runs through cuBLASLt (``gemm_and_bias``). Of the 38 H200
# captures, every one with an ``addmm`` holds 32 MiB + 1 MiB + 32 MiB; SmolLM2-135M (bias-free
# Linears: ``mm`` only) and T5-small hold 32 + 32 MiB (traces/h200/align_s59, traces/h200/t5)
_DEFAULT_PERSISTENT = {"F": [33554432, 1048576], "B": [33554432]}


def traces_dir(hardware):
    """``traces/<hardware>`` of the repository (or ``$SNSIM_TRACES/<hardware>``)."""
    root = os.environ.get("SNSIM_TRACES")
    if root:
        return Path(root) / hardware
    return Path(__file__).resolve().parents[2] / "traces" / hardware


def normalize(sig, batch):
    """The signature with every leading dimension equal to ``batch`` written ``B``.

    >>> normalize("convolution float32[64, 3, 224, 224] float32[64, 3, 7, 7]", 64)
    'convolution float32[B, 3, 224, 224] float32[B, 3, 7, 7]'
    """
    def sub(m):
        return f"[B{m.group(2)}]" if int(m.group(1)) == batch else m.group(0)
    return _SHAPE.sub(sub, sig)


def normalizations(sig, batch):
    """Every way to write ``sig`` with some of its leading dimensions equal to ``batch`` as
    ``B``, the most ``B`` first: a weight whose output channels equal the batch (a 64-channel
    convolution at batch 64) is not a batch dimension, and the table's capture may have run at
    another batch.

    >>> normalizations("f[8, 3] f[8, 3]", 8)
    ['f[B, 3] f[B, 3]', 'f[B, 3] f[8, 3]', 'f[8, 3] f[B, 3]', 'f[8, 3] f[8, 3]']
    """
    spots = [m for m in _SHAPE.finditer(sig) if int(m.group(1)) == batch][:4]
    out = []
    for mask in sorted(range(1 << len(spots)), key=lambda k: (-bin(k).count("1"), -k)):
        text, last = [], 0
        for i, m in enumerate(spots):
            text.append(sig[last:m.start()])
            text.append(f"[B{m.group(2)}]" if mask >> (len(spots) - 1 - i) & 1 else m.group(0))
            last = m.end()
        out.append("".join(text) + sig[last:])
    return out


def undtyped(sig):
    """``(signature with every floating dtype written D, element bytes)`` of a signature whose
    tensors share one floating dtype, else ``(None, 0)``.

    >>> undtyped("convolution bfloat16[B, 3] bfloat16[8, 3] None 1")
    ('convolution D[B, 3] D[8, 3] None 1', 2)
    """
    dtypes = set(_DTYPE.findall(sig))
    if len(dtypes) != 1:
        return None, 0
    return _DTYPE.sub("D[", sig), ELEMENT_BYTES[dtypes.pop()]


@functools.lru_cache(maxsize=512)
def _capture_table(path, mtime_ns, size):
    """``(batch, [(signature, sizes) per transient call], persistent sizes)`` of one measured
    capture, or None. Parsing a capture's JSON costs far more than the table it holds, so
    the table is kept in a cache file per capture version (path, mtime, size); a cache that
    cannot be read or written is skipped."""
    cached = cache_file("hidden", path, mtime_ns, size, suffix=".json")
    try:
        with open(cached) as f:
            out = json.load(f)
        return None if out is None else (out[0], [tuple(c) for c in out[1]], out[2])
    except (OSError, ValueError):
        pass
    try:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    prog = doc.get("program") or {}
    rows = prog.get("hidden")
    out = None
    if doc.get("provenance", {}).get("kind") == "measured" and rows is not None:
        calls = {}
        for row in rows:
            sig, nbytes, transient = row[1], int(row[2]), bool(row[3])
            if sig and transient and len(row) > 4:
                calls.setdefault(row[4], (sig, []))[1].append(nbytes)
        hid = [s[2] for s in prog.get("static_tensors", []) if s[0] == "hidden:persistent"]
        out = (int(prog.get("batch", 0)), [calls[k] for k in sorted(calls)], hid)
    write_atomic(cached, json.dumps(out).encode())
    return out


def load_tables(hardware, *, exclude=()):
    """Hidden-allocation tables from the captures of ``hardware`` (``traces/<hardware>/``,
    not its subfolders: those hold the validation runs; a sibling's for a preset that reads
    another's tables, :func:`snsim.kernel_table.tables_of`).

    Parameters
    ----------
    hardware : str
    exclude : iterable of str
        Trace file names to leave out (for leave-one-out comparisons).

    Returns
    -------
    dict
        ``exact``: signature -> workspace sizes of one call; ``scaled``: normalised signature
        -> list of (batch, sizes); ``dtyped``: normalised signature without dtypes -> list of
        (batch, element bytes, sizes); ``persistent``: phase -> sizes; ``sources``: file
        names; ``probe`` and ``probe_channels_last``: the GPU's probed tables of NCHW and
        NHWC calls (:func:`_probe_table`; None where not measured).
    """
    exact, scaled, dtyped, sources = {}, {}, {}, []
    persistent = None
    skip = set(exclude)
    for path in sorted(glob.glob(str(traces_dir(tables_of(hardware)) / "*.json.gz"))):
        name = os.path.basename(path)
        if name in skip:
            continue
        st = os.stat(path)
        table = _capture_table(path, st.st_mtime_ns, st.st_size)
        if table is None:
            continue
        batch, calls, hid = table
        sources.append(name)
        for sig, sizes in calls:
            exact.setdefault(sig, sizes)
            for norm in normalizations(sig, batch):
                scaled.setdefault(norm, []).append((batch, sizes))
                bare, elsize = undtyped(norm)
                if bare is not None:
                    dtyped.setdefault(bare, []).append((batch, elsize, sizes))
        if persistent is None and hid:
            persistent = {"F": hid[:2], "B": hid[2:]}
    probe = _probe_table(hardware)
    return {"exact": exact, "scaled": scaled, "dtyped": dtyped, "sources": sources,
            "persistent": persistent or _DEFAULT_PERSISTENT, "probe": probe,
            "probe_channels_last": _probe_table(hardware, "channels_last")}


# -- convolutions no capture has seen ---------------------------------------------------------
_CONV_TAIL = {"convolution": 10, "convolution_backward": 13}


def probe_path(hardware):
    """``configs/kernels/<hardware>_conv_workspaces.json.gz`` (scripts/conv_workspace_probe.py;
    a sibling's for a preset that reads another's tables, :func:`snsim.kernel_table.tables_of`)."""
    return Path(__file__).resolve().parents[2] / "configs" / "kernels" / \
        f"{tables_of(hardware)}_conv_workspaces.json.gz"


@functools.lru_cache(maxsize=8)
def _read_probe(path, mtime_ns):
    """The probe file's tables, kept in the user cache per version of the file and of this
    module (:func:`snsim.usercache.load_derived_keyed`): parsing and indexing 100k probed
    calls costs seconds, and so would unpickling all of them, so the per-signature tables
    (``exact``, ``slots``, ``scaled``) are read a row per lookup."""
    from ..usercache import load_derived_keyed
    return load_derived_keyed("conv_workspaces", path, __file__, _index_probe,
                              keyed=("exact", "slots", "scaled"),
                              valid=lambda t: isinstance(t, dict) and "grouped" in t)


def _index_probe(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    rows = doc["rows"]
    # per signature, how many of the call's outputs each workspace followed (probes since
    # seed 3 record it; earlier rows have none)
    slots = {sig: [int(k) for k in ks] for sig, ks in doc.get("slots", {}).items()}
    exact = {}
    for sig, sizes in rows:
        exact.setdefault(sig, [int(s) for s in sizes])
    calls = {sig: conv_call(sig) for sig in sorted(exact)}   # each signature parsed once
    calls = {sig: c for sig, c in calls.items() if c is not None}
    scaled = {}
    for sig in sorted(exact):
        # the batch: the first tensor's leading dimension (the input, or a backward's
        # grad_output), for 2-D and 3-D convolutions alike (conv_call reads 2-D ones only)
        m = _SHAPE.search(sig)
        batch = int(m.group(1)) if m else 0
        if batch > 0:
            scaled.setdefault(normalize(sig, batch), []).append(
                (batch, exact[sig], slots.get(sig)))
    return {"exact": exact, "slots": slots, "grouped": _grouped_index(exact, calls, slots),
            "dense": _dense_index(exact, calls, slots), "scaled": scaled,
            "file": os.path.basename(path)}


def _passes(call):
    """The cuDNN passes a convolution call runs, in the order it takes their workspaces:
    ``("fwd",)`` for a forward, else backward-data and backward-filter as far as its mask
    asks for them."""
    if call["mask"] is None:
        return ("fwd",)
    return tuple(p for p, on in zip(("bwd_data", "bwd_filter"), call["mask"][:2]) if on)


def _outputs_before(call, pass_name):
    """How many of a convolution call's outputs exist when ``pass_name`` takes its workspace:
    each cuDNN pass allocates its gradient, then its workspace (``_workspace_slots``)."""
    if pass_name == "bwd_filter":
        return 2 if call["mask"][0] else 1
    return 1


def _grouped_key(call, pass_name):
    """What picks a grouped convolution's cuDNN kernel family: the pass, element size (the
    dtype for a depthwise one, :func:`_is_depthwise`), kernel, stride and the channels per
    group (in, out)."""
    g = call["groups"]
    el = call["dtype"] if _is_depthwise(call) else ELEMENT_BYTES[call["dtype"]]
    return (pass_name, el, tuple(call["w"][2:]), tuple(call["stride"]),
            call["x"][1] // g, call["y"][1] // g)


def _is_depthwise(call):
    """A convolution of one input channel per group. ATen runs it on its own CUDA kernel (no
    workspace) but sends some fp16 ones to cuDNN (``use_cudnn_depthwise``: fp16 only, by a
    shape heuristic), so its probed neighbours are of its own dtype: the seed-3 probe's
    depthwise fp16/bf16 pairs took the same in every forward (none) and differed in 79 of 344
    backward passes, bf16 none, fp16 up to 925,657,050 B (72 channels at 112x112, batch 256);
    MobileNetV3-Small b512 fp16's 5x5 depthwise backward took 48,452,096 B in its H200
    history (traces/h200/plans_history/mobilenet_v3_small_b512_fp16_superneurons_lazy)."""
    return 1 < call["groups"] == call["x"][1]


def _transposed_bytes(call):
    """The two activations a grouped cuDNN pass transposes into its workspace (x and y, or
    dy and dx), in bytes: what its workspace grows with at a fixed kernel family."""
    el = ELEMENT_BYTES[call["dtype"]]
    n, c, h, w = call["x"]
    _, k, ho, wo = call["y"]
    return (n * c * h * w + n * k * ho * wo) * el


def _grouped_index(exact, calls, slots=None):
    """The probed grouped convolutions, depthwise included, by :func:`_grouped_key`: per key a
    list of ``(log groups, log batch x input pixels, transposed bytes, workspace bytes)``,
    one per pass of each probed call whose workspaces can be told apart by pass
    (:func:`per_pass_sizes`). ``calls``: the probed signatures' :func:`conv_call`, in
    signature order; ``slots``: the probe's."""
    index = {}
    slots = slots or {}
    for sig, call in calls.items():
        if not 1 < call["groups"] <= call["x"][1]:
            continue
        n, _, h, w = call["x"]
        per_pass = per_pass_sizes(call, exact[sig], slots.get(sig))
        if per_pass is None or n * h * w <= 0:
            continue
        feat = (math.log(call["groups"]), math.log(n * h * w), _transposed_bytes(call))
        for p, ws in zip(_passes(call), per_pass):
            index.setdefault(_grouped_key(call, p), []).append(feat + (ws,))
    return index


def probed_grouped_workspaces(probe, sig):
    """The workspaces of a grouped convolution the probe did not measure, from the probed
    one nearest to it of the same kernel family (:func:`_grouped_key`; nearest in log
    groups plus log batch x pixels), scaled by the activation bytes the pass transposes.

    cuDNN picks a grouped convolution's engine by heuristics the H200 histories show are
    not one formula: RegNetX-3.2GF's 48-channel groups (traces/h200/plans_history/
    regnet_x_3_2gf_b64_cpu_offload) take x + y + w in some layers and, in others, x, y and
    the filter padded to 64 channels per group (4/3 of x + y, e.g. 59,130,003 B for a
    432-channel 14x14 layer at batch 64 = 4/3 x 43,352,064 + 9 x 64 x 64 x 9 x 4 + 147); a
    backward-filter adds split partial sums of 1 to ~130 filters; layers of one shape take
    different workspaces within one run (that history's 15 stage-3 backward passes
    alternate 48.6 / 60.4 MB), so no table can be exact. A neighbour in the same family runs the same
    engine more often than any one formula holds: leaving each probed call out of
    configs/kernels/h200_conv_workspaces.json.gz in turn and predicting it from the rest
    (workspaces of 8 MiB or more; ``scripts/grouped_workspace_loo.py``; the table with 31k
    grouped calls), the mean |error| is 11% forward, 6% backward-data, 13% backward-filter
    (within 5%: 87%, 86%, 74% of calls), against 24%, 48% and 35% (72%, 67%, 48%) for
    :func:`modelled_conv_workspaces`.
    None when the call is not a grouped convolution or a pass has no neighbour."""
    found = _grouped_per_pass(probe, conv_call(sig))
    return None if found is None else [s for _, s in found if s]


def _grouped_per_pass(probe, call):
    """``[(pass, workspace bytes or 0), ...]`` of :func:`probed_grouped_workspaces`."""
    if probe is None or call is None or not 1 < call["groups"] <= call["x"][1]:
        return None
    per_pass = nearest_grouped(probe.get("grouped", {}), call)
    return None if per_pass is None else list(zip(_passes(call), per_pass))


def nearest_grouped(index, call, *, skip=None):
    """Per pass of a grouped convolution ``call`` (:func:`conv_call`), the workspace of the
    nearest probed call of its family in ``index`` (:func:`_grouped_index`) scaled by the
    transposed activation bytes, 0 where that call took none; None if a pass has no
    neighbour. ``skip``: a probed signature to leave out (its rows are told apart by their
    features)."""
    n, _, h, w = call["x"]
    if n * h * w <= 0:       # an empty input: no kernel runs
        return [0] * len(_passes(call))
    feat = (math.log(call["groups"]), math.log(n * h * w), _transposed_bytes(call))
    out = []
    for p in _passes(call):
        rows = [r for r in index.get(_grouped_key(call, p), ()) if skip is None or r[:3] != skip]
        if not rows:
            return None
        near = min(rows, key=lambda r: abs(r[0] - feat[0]) + abs(r[1] - feat[1]))
        out.append(int(round(near[3] * feat[2] / near[2])))
    return out


def _dense_feats(call):
    n, c, h, w = call["x"]
    return (math.log(n), math.log(c), math.log(call["y"][1]), math.log(h * w))


def _model_bytes(call, pass_name):
    """:func:`snsim.program_torch.conv_workspace_bytes` of one pass of ``call``."""
    from ..program_torch import conv_workspace_bytes
    x, y, w = call["x"], call["y"], call["w"]
    a = {"in_shapes": [x], "out_shape": y, "kernel": tuple(w[2:]), "groups": call["groups"]}
    return conv_workspace_bytes(a, pass_name, ELEMENT_BYTES[call["dtype"]])


def per_pass_sizes(call, sizes, slots=None):
    """Each pass's workspace (0: none) of a probed or captured convolution ``call``
    (:func:`conv_call`) that took ``sizes``, or None where the table cannot say which pass
    took which: a list as long as :func:`_passes`. A backward that took fewer workspaces than
    it ran passes is told apart by the outputs each followed (``slots``, recorded by the
    probe since seed 3) or, for a lone one of exactly the per-sample weight-gradient engine's
    size (:func:`per_sample_filter_bytes`), as the backward-filter's; workspaces after the
    last pass's gradient (a bias sum's reduction buffers) are no pass's. Without slots, more
    workspaces than passes cannot be told apart either: fp16 depthwise backward passes
    recorded by the seed-3 probe took [filter's, bias buffers...] (slots 2, 3, 3), not
    [data's, filter's, ...].

    >>> c = conv_call("convolution_backward float16[8, 4, 5, 5] float16[8, 2, 5, 5] "
    ...               "float16[4, 2, 1, 1] 0 1 1 0 0 1 1 False 0 0 1 True True False")
    >>> per_pass_sizes(c, [256]), per_pass_sizes(c, [1000]), per_pass_sizes(c, [1000], [2])
    ([0, 256], None, [0, 1000])
    """
    passes = _passes(call)
    if not sizes:
        return [0] * len(passes)
    if slots is not None and len(slots) == len(sizes):
        out = [0] * len(passes)
        for size, k in zip(sizes, slots):
            j = next((j for j, p in enumerate(passes) if _outputs_before(call, p) == k), None)
            if j is not None:
                if out[j]:
                    return None          # two workspaces after one gradient: not one pass's
                out[j] = size
        return out
    if len(sizes) == len(passes):
        return list(sizes)
    if (len(sizes) == 1 and passes == ("bwd_data", "bwd_filter")
            and sizes[0] == per_sample_filter_bytes(call)):
        return [0, sizes[0]]
    return None


def _dense_index(exact, calls, slots=None, *, with_sigs=False):
    """The probed dense convolutions by :func:`_dense_key`: per key the features (log batch,
    in and out channels, input pixels), the ratio of each pass's measured workspace to
    :func:`snsim.program_torch.conv_workspace_bytes` (0: none taken), whether it is the
    per-sample engine's and an id of the call's shape whatever its dtype, for the calls whose workspaces can be told apart by pass
    (:func:`per_pass_sizes`; ``calls`` as for :func:`_grouped_index`, ``slots`` the probe's).
    ``with_sigs``: also each key's signatures, row by row."""
    index, sigs, shapes = {}, {}, {}
    slots = slots or {}
    for sig, call in calls.items():
        if call["groups"] != 1 or min(call["x"]) <= 0:
            continue
        shape = shapes.setdefault(undtyped(sig)[0] or sig, len(shapes))
        per_pass = per_pass_sizes(call, exact[sig], slots.get(sig))
        if per_pass is None:
            continue
        feat = _dense_feats(call)
        for p, ws in zip(_passes(call), per_pass):
            model = _model_bytes(call, p)
            if model > 0:
                key = _dense_key(call, p)
                index.setdefault(key, []).append(
                    feat + (ws / model,
                            float(p == "bwd_filter" and ws > 0
                                  and ws == per_sample_filter_bytes(call)), shape))
                sigs.setdefault(key, []).append(sig)
    out = {k: np.array(v) for k, v in index.items()}
    return (out, sigs) if with_sigs else out


def per_sample_filter_bytes(call):
    """The workspace of cuDNN's backward-filter engine that keeps one fp32 partial weight
    gradient per sample and sums them after: batch x weight elements x 4 bytes, whatever the
    compute dtype. configs/kernels/h200_conv_workspaces.json.gz: 307 of 700 fp32 and 141 of
    414 fp16/bf16 1x1 backward-filter passes took exactly this (EfficientNet-B1's 320->1280
    head at batch 96 in bf16: 96 x 1280 x 320 x 4 = 157,286,400 B)."""
    return call["x"][0] * math.prod(call["w"]) * 4


#: neighbours whose median ratio a dense convolution takes (probe leave-one-shape-out, 8,330
#: dense calls: total |error| 100% with none, 50% with the x + y + w model, 10% with 3)
DENSE_NEIGHBOURS = 3


def probed_dense_workspaces(probe, sig):
    """The workspaces of a dense convolution no capture or probe row holds: per pass, the
    median over the :data:`DENSE_NEIGHBOURS` nearest probed dense calls of the same pass,
    element size, kernel and stride (nearest in log batch, channels and pixels) of their
    workspace over the first-principles model (:func:`snsim.program_torch.
    conv_workspace_bytes`), times this call's model. cuDNN's dense engines often take exactly
    the model's transposition workspace (3x3 forward: 70% of probed calls within 5%) and
    often none (1x1 forward: 55% none), by heuristics no formula follows; the neighbours say
    which. SqueezeNet b256 bf16 (traces/h200/plans_history) took workspaces of 3x3 and 1x1
    convolutions no capture holds, which "none" had left out. A backward-filter pass whose
    neighbours mostly ran the per-sample engine (:func:`per_sample_filter_bytes`, a
    workspace no ratio to x + y + w describes) takes that engine's workspace, else the
    median ratio of the neighbours that did not: leaving each probed shape out, the 1x1
    passes' byte-weighted |error| goes from 12.1 to 8.8% (fp32) and 16.6 to 15.3% (16-bit);
    k x k passes unchanged. A 16-bit call on a 1x1 map (squeeze-excitation's convolutions,
    whose maps the probe never ran: its smallest are 7x7, too far to stand for them) takes
    none: NCHW and NHWC are one layout there, so nothing is transposed, and the H200
    histories show none for every one of RegNetY-8GF bf16's and nearly none for
    EfficientNet-B1 fp16's (8 of 23 forward calls: w + y + 256 B, at most 43 KB;
    traces/h200/plans_history/regnet_y_8gf_b32_adamw_bf16_*, efficientnet_b1_b96_fp16_*),
    where the neighbours' per-sample engine had given up to 25.7 MB. None when the call is not a
    dense 2-D convolution or a pass has no probed neighbour."""
    found = _dense_per_pass(probe, conv_call(sig))
    return None if found is None else [s for _, s in found if s]


def _dense_per_pass(probe, call):
    """``[(pass, workspace bytes or 0), ...]`` of :func:`probed_dense_workspaces`."""
    if probe is None or call is None or call["groups"] != 1 or min(call["x"]) <= 0:
        return None
    if ELEMENT_BYTES[call["dtype"]] == 2 and call["x"][2] * call["x"][3] == 1:
        return []     # a 16-bit 1x1 map, a GEMM in NCHW and NHWC alike (see the docstring)
    out = []
    for p in _passes(call):
        rows = probe.get("dense", {}).get(_dense_key(call, p))
        if rows is None or not len(rows):
            return None
        out.append((p, dense_pass_bytes(rows, call, p)))
    return out


def _dense_key(call, pass_name):
    """What a dense convolution's probed neighbours share: the pass, element size (the dtype
    for a 16-bit call whose channels need padding, :func:`_pads_by_dtype`), kernel and
    stride."""
    el = call["dtype"] if _pads_by_dtype(call) else ELEMENT_BYTES[call["dtype"]]
    return (pass_name, el, tuple(call["w"][2:]), tuple(call["stride"]))


def _pads_by_dtype(call):
    """Whether a 16-bit convolution's input channels per group are not a multiple of 8: its
    cuDNN engines then differ by dtype. fp16 pads a 3-channel stem to 4 channels, bf16 to 8
    (configs/kernels/h200_conv_workspaces.json.gz, ResNet-50's 7x7 stem forward at batch 32:
    fp16 64,250,384 B = y + x and w at 4 channels + 16, bf16 77,120,528 B = y + x and w at
    8 channels + 16; hand calculation); of the probe's dense fp16/bf16 forward pairs (seed 3),
    21 of 72 with unaligned channels differ, by 23-133% of the bytes per kernel size, against
    54 of 1,123 with aligned ones, by at most 0.7%."""
    return (ELEMENT_BYTES[call["dtype"]] == 2
            and (call["x"][1] // max(1, call["groups"])) % 8 != 0)


def dense_pass_bytes(rows, call, pass_name):
    """One pass's workspace of a dense ``call`` from probed ``rows`` of its :func:`_dense_key`
    (:func:`_dense_index`'s arrays): the per-sample engine's if most of the nearest
    :data:`DENSE_NEIGHBOURS` ran it, else their median ratio to the x + y + w model times
    this call's."""
    d = np.abs(rows[:, :4] - np.array(_dense_feats(call))).sum(axis=1)
    order = np.argsort(d, kind="stable")
    # one neighbour per shape: a shape probed in fp16 and bf16 (the seed-3 pairs, nearly
    # always equal) is one observation, not two of the three
    _, first = np.unique(rows[order, 6], return_index=True)
    near = order[np.sort(first)][:DENSE_NEIGHBOURS]
    per_sample = rows[near, 5] > 0
    if 2 * per_sample.sum() > len(near):
        return per_sample_filter_bytes(call)     # most neighbours ran the per-sample engine
    other = near[~per_sample]                    # the others' engines, by their ratio
    return int(round(float(np.median(rows[other, 4])) * _model_bytes(call, pass_name)))


def probed_scaled_workspaces(probe, sig, batch):
    """The probed workspaces of the same call at other batches (:func:`_at_nearest_batch`:
    interpolated between the nearest on either side, else the nearest scaled by the batch
    ratio; the probe measured its networks' layers at batches 8 to 256, every 8 up to 64,
    zeros included: a layer a capture does not list because it took none stays at none)."""
    found = _probe_scaled(probe, sig, batch)
    return None if found is None else found[0]


def _probe_scaled(probe, sig, batch):
    """``(sizes, slots or None)`` of :func:`probed_scaled_workspaces`."""
    if probe is None or not probe.get("scaled"):
        return None
    return _at_nearest_batch(probe["scaled"], normalizations(sig, batch), batch,
                             with_slots=True)


def _at_nearest_batch(index, norms, batch, *, with_slots=False):
    """The sizes ``index`` (normalised signature -> ``[(batch, sizes[, slots]), ...]``) holds
    for the first of ``norms`` it has at ``batch``: between the nearest batches below and
    above it that took as many workspaces, interpolated linearly; below or above every probed
    batch, on the line through the two nearest (:func:`_extrapolated`); else from its nearest
    batch, scaled by the batch ratio. None if none. ``with_slots``: ``(sizes, slots or
    None)``.

    Within one cuDNN engine a workspace is affine in the batch, not proportional to it (the
    H200 probe's ViT-B/16 patch embedding, forward, bf16: 20,807,696 B at batch 16 and
    1,103,872 B more per sample up to 128, so 73,794,048 B at 64, what the run's allocator
    history took; the ratio from batch 48 gives 74.8 MB). Leaving each probed batch with a
    probed batch on both sides out of ``configs/kernels/h200_conv_workspaces.json.gz`` in turn
    (``scripts/workspace_batch_loo.py``: 47,604 calls of 8 MiB or more, batches 8 to 40 every
    4 in part, to 64 every 8), the bracketing interpolation misses by 7.1 % mean and 0.0 %
    median (74.5 % within 1 %) where the nearest batch's ratio misses by 11.6 % and 0.5 %
    (57.8 %). Where one side took none and the other some (cuDNN's engine changes between
    them: a 1 x 1 bf16 layer of 1,024 channels on 14 x 14 maps takes x + y bytes at batches 16
    to 28, 36 and 40 and none at 32, 48, 56, 64 and 96), the left-out batch took none in 824 of
    2,529 cases and the other side's in 1,705, by batch and no rule: the line's middle value
    bounds the miss either way."""
    for norm in norms:
        cands = index.get(norm)
        if not cands:
            continue
        best = min(cands, key=lambda c: abs(c[0] - batch))
        slots = best[2] if len(best) > 2 else None
        below = [c for c in cands if c[0] < batch]
        above = [c for c in cands if c[0] > batch]
        sizes = None
        if best[0] != batch and below and above:
            lo = max(below, key=lambda c: c[0])
            hi = min(above, key=lambda c: c[0])
            if len(lo[1]) == len(hi[1]):
                f = (batch - lo[0]) / (hi[0] - lo[0])
                sizes = [max(0, int(round(a + (b - a) * f))) for a, b in zip(lo[1], hi[1])]
        elif best[0] != batch:
            sizes = _extrapolated(below or above, batch)
        if sizes is not None:
            return (sizes, slots if len(best[1]) == len(sizes) else None) \
                if with_slots else sizes
        sizes = [int(round(v * batch / best[0])) for v in best[1]]
        return (sizes, slots) if with_slots else sizes
    return None


#: how far (relative, the call's workspaces summed) the third-nearest probed batch may lie off
#: the line through the two nearest for :func:`_extrapolated` to follow it
COLLINEAR_REL = 0.02


def _extrapolated(side, batch):
    """The sizes at ``batch`` on the line through the two probed batches of ``side`` (all
    below it, or all above it) nearest to it, where the third nearest lies on that line too
    (within :data:`COLLINEAR_REL`: one engine across them), all three took as many workspaces
    and the line stays positive at ``batch``; else None.

    A workspace is affine in the batch within one engine (:func:`_at_nearest_batch`), so
    below (above) every probed batch the line through the two nearest carries on where the
    ratio to the nearest drops the intercept: ViT-H/14's patch embedding (bf16, 3 -> 1280,
    14 x 14 stride 14) took 27,344,912 B at batch 16 and 50,675,728 B at 32 in the H200 probe,
    4,014,096 + 1,458,176 B per sample (48 and 64 on the same line); at batch 8 the H100's
    allocator history (traces/h100/plans_history) took 15,679,504 B, the line's figure, where
    the ratio gives 13,672,456. Leaving the smallest or the largest probed batch of each call
    out in turn (``scripts/workspace_batch_loo.py``) this beats the ratio on both sides.

    >>> _extrapolated([(16, [27344912]), (32, [50675728]), (64, [97337360])], 8)
    [15679504]
    >>> _extrapolated([(16, [27344912]), (32, [50675728]), (64, [60000000])], 8) is None
    True
    >>> _extrapolated([(16, [100]), (32, [300]), (48, [500])], 4) is None  # ends below zero
    True
    """
    if len(side) < 3:
        return None
    near, far, third = sorted(side, key=lambda c: abs(c[0] - batch))[:3]
    if not len(near[1]) == len(far[1]) == len(third[1]) or near[0] == far[0]:
        return None

    def on_line(b):
        f = (b - near[0]) / (near[0] - far[0])
        return [a + (a - z) * f for a, z in zip(near[1], far[1])]
    if abs(sum(on_line(third[0])) - sum(third[1])) > COLLINEAR_REL * max(1, sum(third[1])):
        return None
    sizes = [int(round(v)) for v in on_line(batch)]
    return sizes if all(v > 0 for v in sizes) else None


def _probe_table(hardware, layout=""):
    """The probed convolution workspaces of ``hardware`` (None when none were measured);
    ``layout="channels_last"``: those of the same calls made with NHWC inputs
    (``scripts/conv_workspace_probe.py --layout channels_last``), in the file beside
    :func:`probe_path`'s named ``..._conv_workspaces_channels_last.json.gz``."""
    path = probe_path(hardware)
    if layout:
        path = path.with_name(path.name.replace(".json.gz", f"_{layout}.json.gz"))
    try:
        return _read_probe(str(path), path.stat().st_mtime_ns)
    except (OSError, ValueError, KeyError):
        return None


def conv_call(sig):
    """What a convolution signature says about its call, or None: ``dtype``, ``x`` / ``y`` /
    ``w`` shapes, ``groups``, ``mask`` (the gradients a backward computes; None: forward).

    >>> c = conv_call("convolution float32[96, 48, 112, 112] float32[48, 24, 3, 3] None "
    ...               "2 2 1 1 1 1 False 0 0 2")
    >>> c["y"], c["groups"], c["mask"]
    ([96, 48, 56, 56], 2, None)
    """
    toks = sig.split()
    op = toks[0] if toks else ""
    tail = _CONV_TAIL.get(op)
    shapes = [(d, [int(v) for v in dims.split(", ")]) for d, dims in
              re.findall(r"\b(float32|bfloat16|float16)\[(\d+(?:, \d+)*)\]", sig)]
    if tail is None or len(toks) < tail + 3 or len(shapes) < (2 if tail == 10 else 3):
        return None
    rest = toks[-tail:]
    try:
        stride, pad, dil = ([int(v) for v in rest[i:i + 2]] for i in (0, 2, 4))
        groups = int(rest[9])
        mask = [t == "True" for t in rest[10:13]] if op == "convolution_backward" else None
    except ValueError:
        return None
    if op == "convolution":
        (dtype, x), (_, w) = shapes[0], shapes[1]
        y = [x[0], w[0]] + [(side + 2 * p - d * (k - 1) - 1) // st + 1 for side, p, d, k, st
                            in zip(x[2:], pad, dil, w[2:], stride)]
    else:
        (dtype, y), (_, x), (_, w) = shapes[0], shapes[1], shapes[2]
    if len(x) != 4 or len(w) != 4 or rest[6] != "False":     # 2-D, not transposed
        return None
    return {"dtype": dtype, "x": x, "y": y, "w": w, "groups": groups, "mask": mask,
            "stride": stride}


def modelled_conv_workspaces(sig):
    """The cuDNN workspaces of a grouped convolution call from first principles
    (:func:`snsim.program_torch.conv_workspace_bytes`, the zoo's PyTorch semantics: its NHWC
    kernels transpose the pass's two activations and, unless 1x1, the filter), in the order
    the call takes them: forward; backward-data then backward-filter, as far as the backward
    computes them. None for a call that is not a 2-D convolution, and for a dense one: the
    captures hold many dense convolutions and list a workspace only where one was taken, so a
    dense signature they lack is, on their evidence, mostly one that takes none (applied to
    dense convolutions too, this model moved vgg16 b64's reserved peak from 0.0% to -20.5%
    and densenet121 b128 cpu_offload's allocated one to +23.8%); no capture holds a grouped
    one. A depthwise convolution takes none: ATen sends it to its own CUDA kernel, not cuDNN
    (``use_cudnn_depthwise`` is false but for fp16 inputs of some shapes, not modelled).

    >>> modelled_conv_workspaces("convolution float32[96, 48, 112, 112] "
    ...                          "float32[48, 24, 3, 3] None 2 2 1 1 1 1 False 0 0 2")
    [289055232]
    """
    call = conv_call(sig)
    if call is None or call["groups"] == 1:
        return None
    if call["groups"] == call["x"][1]:
        return []
    return [_model_bytes(call, p) for p in _passes(call)]


_HALF_DTYPE = re.compile(r"\b(bfloat16|float16)\[")
_OTHER_HALF = {"bfloat16": "float16", "float16": "bfloat16"}


def half_sibling(sig):
    """The convolution signature with float16 and bfloat16 swapped, or None: for a call whose
    floating tensors are all one 16-bit dtype and which is not a depthwise convolution.

    cuDNN runs fp16 and bf16 convolutions of one shape on engines of the same element size:
    of the 4,112 non-depthwise calls configs/kernels/h200_conv_workspaces.json.gz probed in
    both, 3,720 took the same workspaces (byte-weighted |difference| 0.2%), e.g. EfficientNet-
    B1's 320->1280 head at batch 96, backward: [15052816, 157286400] B in both (the bf16 probe
    row; the fp16 one in traces/h200/plans_history/efficientnet_b1_b96_fp16_*), where an fp32
    row halved gives [15052808, 17019088]: fp16/bf16 backward-filter partial sums are fp32.
    A depthwise one is excluded: ATen sends some fp16 depthwise convolutions to cuDNN
    (``use_cudnn_depthwise``), never bf16 ones (the probe: 28 pairs, fp16 with workspaces,
    bf16 none).

    A call whose channels need padding is excluded too (:func:`_pads_by_dtype`).

    >>> half_sibling("convolution float16[8, 16, 5, 5] float16[6, 16, 1, 1] None 1 1 0 0 "
    ...              "1 1 False 0 0 1")
    'convolution bfloat16[8, 16, 5, 5] bfloat16[6, 16, 1, 1] None 1 1 0 0 1 1 False 0 0 1'
    >>> half_sibling("convolution float16[8, 3, 5, 5] float16[6, 3, 1, 1] None 1 1 0 0 "
    ...              "1 1 False 0 0 1") is None
    True
    """
    dtypes = set(_DTYPE.findall(sig))
    call = conv_call(sig)
    if len(dtypes) != 1 or call is None or call["dtype"] not in _OTHER_HALF:
        return None
    if 1 < call["groups"] == call["x"][1] or _pads_by_dtype(call):
        return None
    return _HALF_DTYPE.sub(lambda m: _OTHER_HALF[m.group(1)] + "[", sig)


def lookup(tables, sig, batch):
    """Workspace sizes of one call of ``sig`` at ``batch`` (``[]`` when unknown) and the level
    that gave them (:func:`lookup_slots` without the slots)."""
    sizes, how, _ = lookup_slots(tables, sig, batch)
    return sizes, how


def _pass_slots(call, per_pass):
    """Sizes and slots (outputs allocated before each workspace) of per-pass workspaces."""
    kept = [(p, s) for p, s in per_pass if s]
    return [s for _, s in kept], [_outputs_before(call, p) for p, _ in kept]


def lookup_slots(tables, sig, batch, layout="", grad_copied=False):
    """``(sizes, level, slots)`` of one call of ``sig`` at ``batch``: the workspace sizes in
    the order taken, the level of the module docstring that gave them, and how many of the
    call's outputs each follows where that is known (a probed row that recorded it, a
    per-pass level), else None (:func:`_workspace_slots` places them). A lone workspace of a
    backward that runs both passes is taken as the backward-filter's: of the 609 the probe
    recorded with their slots (seed 3), 575 followed grad_weight (fp16 545 of 572, bf16 30 of
    37), among them every one of the per-sample engine's size (:func:`per_sample_filter_bytes`).

    ``layout``: the call's memory layout as the recorder saw it
    (:func:`snsim.torchsim.record.conv_layout`). A depthwise convolution whose input or
    weight suggests channels-last runs on cuDNN, not on ATen's own kernel
    (``use_cudnn_depthwise`` in aten/src/ATen/native/Convolution.cpp), and cuDNN's NHWC
    depthwise backward takes workspaces where the NCHW probe's rows take none: ConvNeXt-T's
    7x7 depthwise backward at batch 32 took 318,219,895 + 19,267,584 + 8 B (96 channels at
    56x56) on the H200 with NHWC inputs and nothing with NCHW ones (scripts/
    conv_workspace_probe.py on that GPU, torch 2.11). Its probe levels read the channels-last
    table (``probe_channels_last``) instead, where one was measured; any other convolution
    run channels-last reads that table's rows of the same call first, then the NCHW levels
    less their transposed activations (:func:`without_activation_transposes`).

    ``grad_copied``: the backward converted its grad_output to the input's layout as it
    started (:func:`snsim.torchsim.record.cudnn_grad_output_conversion`): its bias gradient
    then sums the original, not channels-last, tensor, and the channels-last rows' buffers
    after grad_bias (that sum's, with a channels-last grad_output) are left out. ConvNeXt-S
    b48's downsampling backward at 7 x 7 took none after a grad_output copy
    (traces/h100/plans_history), where the probe's channels-last call took 14,548,992 + 24 B."""
    call = conv_call(sig) if layout == "channels_last" else None
    nhwc = tables.get("probe_channels_last") if call is not None else None
    if nhwc is not None and _is_depthwise(call):
        tables = {**tables, "probe": nhwc}
    elif nhwc is not None and sig not in tables["exact"]:
        found = _channels_last_probed(nhwc, call, sig, batch, grad_copied)
        if found is not None:
            return found
    sizes, how, slots = _lookup_levels(tables, sig, batch)
    if call is not None and how in NCHW_LEVELS and not _is_depthwise(call):
        sizes, slots = without_activation_transposes(call, sizes, slots)
    if slots is None and len(sizes) == 1:
        if call is None:        # parsed above only for a channels-last call
            call = conv_call(sig)
        if call is not None and len(_passes(call)) == 2:
            slots = [_outputs_before(call, "bwd_filter")]
    return sizes, how, slots


def _channels_last_probed(nhwc, call, sig, batch, grad_copied=False):
    """``(sizes, level, slots)`` of a non-depthwise call run channels-last from the
    channels-last probe's rows of the same call (``"probe"``) or of it at other batches
    (``"probe_scaled"``: :func:`_at_nearest_batch`); None when it has neither. Its 2x2
    stride-2 downsampling convolutions of ConvNeXt (``scripts/conv_workspace_probe.py
    --nets convnext_* --layout channels_last``, the H100, seed 7) took a filter's bytes forward
    where the NCHW rows hold the two activations too. ``grad_copied``: without the buffers
    the rows hold after the backward's last gradient (:func:`lookup_slots`)."""
    if sig in nhwc["exact"]:
        sizes, level, slots = list(nhwc["exact"][sig]), "probe", nhwc.get("slots", {}).get(sig)
    else:
        found = _probe_scaled(nhwc, sig, batch)
        if found is None:
            return None
        (sizes, slots), level = found, "probe_scaled"
    mask = call["mask"]
    if grad_copied and slots is not None and mask and mask[2]:
        kept = [(v, k) for v, k in zip(sizes, slots) if k < sum(mask)]
        sizes, slots = [v for v, _ in kept], [k for _, k in kept]
    return sizes, level, slots


#: lookup levels whose workspaces were measured (or modelled) with NCHW activations: the probe
#: runs its calls contiguous, and the first-principles model transposes NCHW operands
NCHW_LEVELS = frozenset({"probe", "probe_scaled", "probe_near", "modelled"})


def without_activation_transposes(call, sizes, slots=None):
    """``(sizes, slots)`` of a dense or grouped convolution ``call`` run on channels-last
    activations, from the same call's workspaces with NCHW ones (a probe level,
    :data:`NCHW_LEVELS`): each pass's workspace less the two activations it transposed
    (:func:`_transposed_bytes`), where it holds them and little else (at most two filters and
    8 MiB more: the transposing engine, :func:`snsim.program_torch.conv_workspace_bytes`);
    a pass left with nothing takes none. Other workspaces stay as they are.

    cuDNN's NHWC engines read and write channels-last activations in place; on NCHW ones they
    transpose both into their workspace first. ConvNeXt-S b48 bf16 on the H100
    (traces/h100/plans_history/convnext_small_b48_adamw_bf16_plain): its downsampling 2x2
    convolutions see channels-last activations (the blocks permute NHWC activations back) and
    took 147,456, 589,824 and 2,359,296 B forward, each its filter's bytes, where the NCHW
    probe's rows of the same calls hold the two activations too (43,500,032 B for 96 -> 192
    channels at 56 x 56: 28,901,376 + 14,450,688 + 147,456 + 512); their backward-filter
    passes took a filter's bytes, their backward-data passes none (this keeps a filter's
    bytes there).

    >>> c = conv_call("convolution bfloat16[48, 96, 56, 56] bfloat16[192, 96, 2, 2] "
    ...               "bfloat16[192] 2 2 0 0 1 1 False 0 0 1")
    >>> without_activation_transposes(c, [43500032])
    ([147968], [1])
    >>> without_activation_transposes(c, [400000000])     # not the transposing engine's
    ([400000000], [1])
    """
    passes = _passes(call)
    per = per_pass_sizes(call, sizes, slots)
    moved = _transposed_bytes(call)
    el = ELEMENT_BYTES[call["dtype"]]
    filt = el * math.prod(call["w"])

    def trimmed(size):
        rest = size - moved
        return rest if 0 <= rest <= 2 * filt + (8 << 20) else size
    if per is None:
        got = [trimmed(v) for v in sizes]
        return [v for v in got if v], (slots if all(got) else None)
    got = [trimmed(v) if v else 0 for v in per]
    kept, at = _pass_slots(call, list(zip(passes, got)))
    return kept, at


def _lookup_levels(tables, sig, batch):
    sizes = tables["exact"].get(sig)
    if sizes is not None:
        return list(sizes), "exact", None
    probe = tables.get("probe")
    probe_slots = probe.get("slots", {}) if probe is not None else {}
    if probe is not None and sig in probe["exact"]:
        return list(probe["exact"][sig]), "probe", probe_slots.get(sig)
    twin = half_sibling(sig)
    if twin is not None:
        for source in (tables["exact"], probe["exact"] if probe is not None else {}):
            if twin in source:
                return list(source[twin]), "half_sibling", probe_slots.get(twin)
    norms = normalizations(sig, batch)
    sizes = _at_nearest_batch(tables["scaled"], norms, batch)
    if sizes is not None:
        return sizes, "scaled", None
    found = _probe_scaled(probe, sig, batch)
    if found is not None:
        return found[0], "probe_scaled", found[1]
    call = conv_call(sig)
    for per_pass in (_grouped_per_pass(probe, call), _dense_per_pass(probe, call)):
        if per_pass is not None:
            sizes, slots = _pass_slots(call, per_pass)
            return sizes, "probe_near", slots
    # another dtype's row scaled by element size, after the probe's rows of this dtype: on the
    # probe's 16-bit dense calls with an fp32 twin (leaving each shape out), the same-dtype
    # neighbours miss by 0.1-18% of the bytes per pass and kernel class, the halved fp32 row
    # by 8-37% (fp16/bf16 weight-gradient partial sums are fp32; 1x1 engines differ by dtype)
    for norm in norms:
        bare, elsize = undtyped(norm)
        cands = tables.get("dtyped", {}).get(bare) if bare is not None else None
        if cands:
            b_ref, el_ref, sizes = min(cands, key=lambda c: (abs(c[0] - batch), c[1] != elsize))
            return ([int(round(s * batch / b_ref * elsize / el_ref)) for s in sizes], "dtype",
                    None)
    sizes = modelled_conv_workspaces(sig)
    if sizes is not None:
        passes = _passes(call) if sizes else ()
        return sizes, "modelled", [_outputs_before(call, p) for p in passes] or None
    return [], "none", None


def _workspace_slots(op_name, n_workspaces, n_outputs, outputs_before=None):
    """After which of its own allocations (0-based) each of an op's workspaces is taken.

    ``convolution_backward`` on cuDNN (ATen ``Convolution.cpp`` / ``cudnn/ConvShared.cpp``)
    runs one kernel per gradient, each allocating its output and then its workspace:
    grad_input, its backward-data workspace, grad_weight, its backward-filter workspace, then
    grad_bias (``grad_output.sum``) and that reduction's buffers. So the j-th workspace
    follows the j-th output and the ones beyond the outputs follow the last. The H200 history
    of VGG-19 (traces/h200/plans_history/vgg19_b48_plain) shows exactly this order; every
    other op's workspaces follow all its outputs. Where one kernel took none, the j-th
    workspace is not the j-th gradient's: ``outputs_before`` (:func:`lookup_slots`) then
    says how many of the op's outputs exist when each is taken (a lone workspace of a
    two-pass backward mostly follows grad_weight: GoogLeNet's and DenseNet-121's fp16 1x1
    backward passes, traces/h200/plans_history). Slot -1: before the first output.

    >>> _workspace_slots("convolution_backward", 4, 3), _workspace_slots("convolution", 1, 1)
    ([0, 1, 2, 2], [0])
    >>> _workspace_slots("convolution_backward", 1, 3, [2])
    [1]
    """
    last = max(0, n_outputs - 1)
    if outputs_before is not None and len(outputs_before) == n_workspaces:
        return [min(k, n_outputs) - 1 for k in outputs_before]
    if op_name != "convolution_backward":
        return [last] * n_workspaces
    return [min(j, last) for j in range(n_workspaces)]


def event_positions(rec):
    """``(positions, made)``: every recorded event of ``rec`` (excluded storages left out) as
    ``(position, (mark, kind, storage))``, and how many allocations each op made. Positions
    sort in the order things happen: ``(op, 0, ...)`` the frees seen before op ran,
    ``(op, 1, 2i, 0)`` the i-th allocation op made (a hidden workspace of op k goes at
    ``(k, 1, 2j+1, ...)``, after the allocation of the output its kernel computes: see
    :func:`_workspace_slots`), a kernel temporary freed inside op k (``record.TempFree``: its
    free carries op k, after some of k's allocations) where it was recorded, after k's latest
    allocation, ``(op, 3, 0, j)`` the op's j-th read of a storage it did not make (once its
    outputs exist, before anything it leaves is freed: what tells a program's steps where
    each tensor is last read, op by op), and ``(op, 0, 1, 0)`` where forward dropped a tensor
    autograd saved, before op ran (:attr:`~snsim.torchsim.record.Recorder.released`). Reads
    (kind ``r``) and drops (``d``) come after the recorded events in the list."""
    pos = []
    made = {}
    inside = 0
    for m, kind, sid, op in rec.events:
        if sid in rec.excluded:
            continue
        if kind == "a":
            i = made.get(op, 0)
            made[op] = i + 1
            pos.append(((op, 1, 2 * i, 0), (m, kind, sid)))
        elif made.get(op) and rec.storages[sid][2] == "cuda_temp":
            inside += 1
            pos.append(((op, 1, 2 * (made[op] - 1), inside), (m, kind, sid)))
        else:
            pos.append(((op, 0, 0, 0), (m, kind, sid)))
    for k, op in enumerate(rec.ops):
        new = set(op[3])
        for j, sid in enumerate(op[2]):
            if sid not in new and sid not in rec.excluded:
                pos.append(((k, 3, 0, j), (op[0], "r", sid)))
    for sid, (m, at) in rec.released.items():   # forward dropped what it saved, before op at
        if sid not in rec.excluded:
            pos.append(((at, 0, 1, 0), (m, "d", sid)))
    return pos, made


def with_reads(positioned, derived):
    """The entries of ``positioned`` (``(position or None, entry)`` in recorded order) with the
    ``derived`` ones (reads and drops: ``(position, entry)``, :func:`event_positions`) each
    before the first recorded entry placed after it; an entry without a position (or one of
    the setup's, op -1) moves none. The recorded order is kept as it is.

    >>> with_reads([((0, 1, 0, 0), "a0"), (None, "h"), ((1, 0, 0, 0), "f0")],
    ...            [((0, 3, 0, 0), "r0"), ((2, 3, 0, 0), "r2")])
    ['a0', 'h', 'r0', 'f0', 'r2']
    """
    derived = sorted(derived, key=lambda x: x[0])
    out, j = [], 0
    for p, e in positioned:
        while p is not None and p[0] >= 0 and j < len(derived) and derived[j][0] < p:
            out.append(derived[j][1])
            j += 1
        out.append(e)
    out.extend(e for _, e in derived[j:])
    return out


#: what a call's workspace rests on, by :func:`lookup_slots`' level: measured at its own
#: signature (a capture's or the probe's row; a 16-bit call's other 16-bit dtype, equal in
#: 3,720 of 4,112 probed pairs), the same call at other batches (interpolated between them or
#: scaled) or in another dtype (scaled), the probed neighbours' ratio, or the first-principles
#: model
WORKSPACE_SOURCES = {"exact": "measured", "probe": "measured", "half_sibling": "measured",
                     "scaled": "other_batch", "probe_scaled": "other_batch",
                     "dtype": "other_dtype", "probe_near": "neighbours",
                     "modelled": "modelled"}


def workspace_sources(notes):
    """How many of a prediction's workspace lookups (:func:`add_hidden`'s ``notes``) rest on
    each kind of source (:data:`WORKSPACE_SOURCES`); calls that took no lookup (no table row,
    not a convolution) are not counted.

    >>> workspace_sources({"hidden_lookup_probe": 3, "hidden_lookup_probe_near": 2,
    ...                    "hidden_lookup_none": 9})
    {'measured': 3, 'other_batch': 0, 'other_dtype': 0, 'neighbours': 2, 'modelled': 0}
    """
    out = dict.fromkeys(WORKSPACE_SOURCES.values(), 0)
    for level, source in WORKSPACE_SOURCES.items():
        out[source] += int(notes.get(f"hidden_lookup_{level}", 0))
    return out


def add_hidden(rec, stream, info, hardware, *, batch=None, exclude=()):
    """Insert modelled hidden allocations into a recording's event stream.

    Returns
    -------
    (stream, info, notes)
    """
    tables = load_tables(hardware, exclude=exclude)
    notes = {"hidden_model": "capture tables" if tables["sources"] else "none",
             "hidden_sources": len(tables["sources"])}
    if tables.get("probe") is not None:
        notes["hidden_probe"] = tables["probe"]["file"]
    if tables.get("probe_channels_last") is not None:
        notes["hidden_probe_channels_last"] = tables["probe_channels_last"]["file"]
    if not tables["sources"] and tables.get("probe") is None:
        return stream, info, notes
    info = dict(info)
    # where every recorded event happened (event_positions), and the hidden allocations
    pos, made = event_positions(rec)
    extra = []
    keys_made = []

    def new(size, kind="hidden"):
        """A hidden storage of ``size`` bytes: its key, its size and kind in ``info``."""
        key = ("h", len(keys_made))
        keys_made.append(key)
        info[key] = (size, kind)
        return key

    def reduction(k, mark, at, sizes, first=0):
        """A CUDA reduction's staging buffer and semaphores (``sizes``) in op ``k`` at
        position ``at``: both taken, held through the sum and freed once its output exists
        (semaphores first: declared last); ``first`` orders them among ``at``'s entries."""
        keys = [new(size) for size in sizes]
        for j, key in enumerate(keys + keys[::-1]):
            extra.append(((k, 1, at, first + j), (mark, "a" if j < len(keys) else "f", key)))
    counts = {"exact": 0, "probe": 0, "half_sibling": 0, "scaled": 0, "dtype": 0,
              "probe_scaled": 0,
              "probe_near": 0, "modelled": 0, "none": 0, "reduction": 0,
              "layer_norm_partials": 0, "bias_sum": 0}
    workspaces_made = set()   # (phase) and (phase, "lt"): the persistent ones placed
    for k, op in enumerate(rec.ops):
        mark = op[0]
        phase = rec.marks[mark][1] if mark >= 0 else "F"
        it = rec.marks[mark][3] if mark >= 0 else 0
        if op[1] in _MATMUL and it == 0 and phase in ("F", "B"):
            sizes = tables["persistent"].get(phase, [])
            # the cuBLAS handle's workspace at the phase's first matmul, cuBLASLt's at its
            # first addmm (_DEFAULT_PERSISTENT)
            due = {phase: sizes[:1]}
            if op[1] == "addmm":
                due[(phase, "lt")] = sizes[1:]
            for which, got in due.items():
                if which not in workspaces_made:
                    workspaces_made.add(which)
                    for size in got:
                        extra.append(((k, 2, 0, 0), (mark, "a", new(size, "hidden:persistent"))))
        last = 2 * max(0, made.get(k, 0) - 1) + 1    # after the op's latest allocation
        partial, per_grad = layer_norm_backward_buffers(rec.layer_norm_backwards.get(k),
                                                        hardware)
        if partial:
            # LayerNorm's split gamma/beta sums: a partial-sum block per gradient, then each
            # gradient's sum(0) (its output, the reduction's staging buffer and semaphores,
            # freed in reverse), the blocks freed when the call returns (beta's first)
            counts["layer_norm_partials"] += 1
            seq = []
            blocks = []
            for _ in range(rec.layer_norm_backwards[k][3]):
                blocks.append(new(partial))
                seq.append(("a", blocks[-1]))
            outs = []
            for _ in blocks:
                keys = [new(size) for size in per_grad]
                seq += [("a", key) for key in keys]
                outs.append(keys[0])
                seq += [("f", key) for key in reversed(keys[1:])]
            seq += [("f", key) for key in outs + blocks[::-1]]
            for j, (kind, key) in enumerate(seq):
                extra.append(((k, 1, last, j), (mark, kind, key)))
        geometry = rec.reductions.get(k)
        if geometry is not None:
            counts["reduction"] += 1
            reduction(k, mark, last, reduction_buffers(geometry, hardware))
            continue
        sig = op[6] if len(op) > 6 else ""
        if not sig or k in rec.temp_ops:
            # the recorder gave this op its CUDA kernel's temporaries from the strides it saw,
            # which a table keyed by shapes only cannot tell apart
            continue
        copies = op[8] if len(op) > 8 and op[1] == "convolution_backward" else ()
        # when each copy is made (record.copy_calls; a recording before it: per pass)
        whens = [c[3] if len(c) > 3 else "pass" for c in copies]
        converted = "call" in whens
        sizes, how, before = lookup_slots(tables, sig, batch or 0,
                                          layout=op[7] if len(op) > 7 else "",
                                          grad_copied=converted)
        counts[how] += 1
        slots = _workspace_slots(op[1], len(sizes), made.get(k, 0), before)
        # the bias gradient's sum of a channels-last grad_output (record.
        # conv_bias_sum_geometry): its staging buffer and semaphores after grad_bias, both held
        # until the sum is done. Rows measured with such a grad_output (the channels-last
        # probe's, a capture's) end with them, taken there as workspaces one at a time: they
        # leave the rows and are placed as the reduction. Rows measured with a contiguous one
        # (an NCHW call's probe levels) or none lack them.
        geometry = rec.bias_sums.get(k)
        bias = reduction_buffers(geometry, hardware) if geometry is not None else []
        if bias and sizes[-len(bias):] == bias:
            sizes, slots = sizes[:-len(bias)], slots[:-len(bias)]
        elif how not in NCHW_LEVELS | {"none"} or (len(op) > 7 and op[7]):
            bias = []
        # cuDNN's backward copies grad_output (the recorder's copy calls, record.kernel_copies:
        # bytes read and written): once as it starts, into the input's layout, freed when its
        # passes are done ("call"); or each pass a non-contiguous one into a contiguous tensor
        # after the pass's gradient and before its workspace, freed after it ("pass")
        for j, (c, when) in enumerate(zip(copies, whens)):
            key = new(c[1] // 2, "cuda_temp")
            if when == "call":
                # before the first gradient; freed after the last pass's workspaces, before
                # grad_bias
                call = conv_call(sig)
                passed = 2 * (len(_passes(call)) if call is not None else made.get(k, 1)) - 1
                extra.append(((k, 1, -1, 0), (mark, "a", key)))
                extra.append(((k, 1, passed, 1 << 20), (mark, "f", key)))
            else:
                extra.append(((k, 1, 2 * j + 1, -1), (mark, "a", key)))
                extra.append(((k, 1, 2 * j + 1, 1 << 20), (mark, "f", key)))
        for j, size in enumerate(sizes):
            key = new(size)
            # one workspace at a time: each is freed before the next is taken
            extra.append(((k, 1, 2 * slots[j] + 1, 2 * j), (mark, "a", key)))
            extra.append(((k, 1, 2 * slots[j] + 1, 2 * j + 1), (mark, "f", key)))
        if bias:     # after grad_bias and the workspaces that follow it
            counts["bias_sum"] += 1
            reduction(k, mark, last, bias, first=1 << 21)
    merged = sorted(pos + extra, key=lambda x: x[0])   # stable: recorded order kept
    notes.update({f"hidden_lookup_{k}": v for k, v in counts.items()})
    return [e for _, e in merged], info, notes
