"""Modelled time of one aten op, and of the op sequence of a step with the host that issues it.

Where the preset has a kernel table (``snsim calibrate``, :mod:`snsim.kernel_table`) an op's
GPU time is interpolated from measured calls of its family; otherwise, and for ops the table
cannot place, the roofline below applies. With the recording's marks, the host is a second
resource (:func:`snsim.kernel_table.host_stream`): eager PyTorch issues one op after another
from one thread, and
a kernel cannot start before it is issued, so steps of short kernels are CPU-bound.

Roofline (SPEC §9) [E]:

``t = max(flops / (eff · peak), bytes / (eff_mem · mem_bytes_per_s)) + launch_overhead_s`` with
the efficiencies of the hardware preset. Convolutions run in TF32 on GPUs that have it
(``torch.backends.cudnn.allow_tf32`` is True by default) and use the TF32 peak below; matmuls
stay FP32 (``torch.backends.cuda.matmul.allow_tf32`` is False by default). Ops that only make
views launch no kernel and cost nothing. The host copies of a shadow ``cpu_offload`` run
(``d2h_pinned``, ``h2d_pageable``, ...: :func:`snsim.torchsim.plans.copy_ops`) take the preset's
PCIe time for their bytes, on the compute stream as ``save_on_cpu``'s copies do.
"""
from __future__ import annotations

import collections
import functools
import math

from ..engine.contention import copy_slowdown
from ..kernel_table import (BIAS_FALLBACK, BN_FAMILIES, ELEMENT_BYTES,  # noqa: F401
                            ELEMENTWISE_FAMILIES, GENERIC_FALLBACK,
                            EMBEDDING_BACKWARD, GENERIC_FAMILY, HOST_READ_OPS,
                            ZERO_SCATTER_OPS,
                            INDEX_FAMILIES, LAYOUT_FAMILIES, MATMUL_FAMILIES,
                            POOL_FAMILIES, ROW_FAMILIES,
                            STRIDED_FAMILIES, TF32_PREFIX, UPSAMPLE_BACKWARD_FAMILIES,
                            bias_time_s,
                            call_conv_flops, call_upsample_work, NO_KERNEL_OPS, bn_class,
                            conv_bias_calls, conv_class, family_of, host_stream, index_class,
                            embedding_backward_call, index_count, innet_call_s, ln_class,
                            load_host_costs,
                            load_kernel_table, matmul_lookup_class, pool_class, roll_passes,
                            sibling_ratio_of, sig_dtype, sig_tensor, sum_rows_class,
                            table_family, load_sibling_ratios, generic_cast_time_s,
                            zero_scatter_calls)

# dense TF32 tensor-core peaks, vendor datasheets [E]; GPUs without TF32 use peak_flops_fp32
TF32_PEAK_FLOPS = {"h200": 494e12, "h100": 494e12, "a100-40gb": 156e12}
# dense FP16/BF16 tensor-core peaks (the same for both), vendor datasheets [E] (H100/H200 SXM
# 989.4 TFLOPS, A100 312 TFLOPS); other GPUs: peak_flops_fp32
HALF_PEAK_FLOPS = {"h200": 989e12, "h100": 989e12, "a100-40gb": 312e12}
_HALF = ("bfloat16", "float16")
_CONV = ("convolution", "convolution_backward", "cudnn_convolution")
_MATMUL = ("mm", "addmm", "bmm", "matmul", "baddbmm")
# shadow host copies: name -> (direction, pinned)
HOST_COPY_OPS = {"d2h_pinned": ("d2h", True), "d2h_pageable": ("d2h", False),
                 "h2d_pinned": ("h2d", True), "h2d_pageable": ("h2d", False),
                 "d2h_pinned_sync": ("d2h", True)}
# pinned copies the host waits for (save_on_cpu's pack before torch's non-blocking one:
# plans.save_on_cpu_pack_blocks): the launching thread returns when the copy has run
SYNC_COPY_OPS = frozenset({"d2h_pinned_sync"})
PAGEABLE_COPY_OPS = frozenset(n for n, (_, pinned) in HOST_COPY_OPS.items() if not pinned)
# ``save_on_cpu()``'s pageable pack makes a new host tensor with the C library's malloc. glibc
# serves one above its mmap threshold -- dynamic, at most DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB on
# 64-bit systems (mallopt(3)) -- with fresh pages from the kernel every time (faulted in as the
# copy writes them, unmapped when freed) and recycles the memory of smaller freed ones once a
# step has freed them. Checked on the five pageable runs of traces/h200/plans_pageable
# (ResNet-50, MobileNetV2, VGG-16, ViT-B/16, DenseNet-121): all copies at the fresh-page rate
# gave -7..+132 %, all at the recycled rate -46..-60 %, split here -7..+14 %.
FRESH_PAGES_BYTES = 32 << 20
# the SuperNeurons offloader's pinned copies on side streams (plans.side_copy_ops): name ->
# the compute-stream copy whose time they take
SIDE_COPY_OPS = {"d2h_pinned_async": "d2h_pinned", "h2d_pinned_async": "h2d_pinned"}
# waits for a side copy: the host (Event.synchronize), the compute stream (wait_event)
COPY_WAIT_OPS = frozenset({"copy_sync", "copy_wait"})
# the views a CatBackward0 node hands each input's gradient on as (cat_tensors_backward's
# narrow, recorded as the aten slice below it)
CAT_GRAD_VIEWS = frozenset({"slice", "narrow"})


def op_time_s(name, flops, nbytes, hw, dtype="float32"):
    """Modelled seconds of op ``name`` with ``flops`` and ``nbytes`` of traffic on ``hw``;
    convolutions and matmuls in ``bfloat16``/``float16`` use the tensor cores' half peak.

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> hw = load_hardware("h200")
    >>> op_time_s("view", 0, 10**6, hw)
    0.0
    >>> round(op_time_s("relu_", 0, 4.8e9 * 0.8, hw) * 1e3, 3)   # 1 ms of traffic + launch
    1.005
    >>> round(op_time_s("d2h_pinned", 0, 55e6, hw) * 1e3, 3)    # 1 ms at 55 GB/s + latency
    1.01
    """
    if name in NO_KERNEL_OPS or name in COPY_WAIT_OPS:
        return 0.0
    name = SIDE_COPY_OPS.get(name, name)
    if name in HOST_COPY_OPS:
        direction, pinned = HOST_COPY_OPS[name]
        return hw.transfer_time_s(nbytes, direction, pinned)
    mem = nbytes / (hw.eff("mem") * hw.mem_bytes_per_s)
    if flops:
        if name in _CONV + _MATMUL and dtype in _HALF:
            peak = HALF_PEAK_FLOPS.get(hw.name, hw.peak_flops_fp32)
            eff = hw.eff("conv" if name in _CONV else "fc")
        elif name in _CONV:
            peak, eff = TF32_PEAK_FLOPS.get(hw.name, hw.peak_flops_fp32), hw.eff("conv")
        elif name in _MATMUL:
            peak, eff = hw.peak_flops_fp32, hw.eff("fc")
        else:
            peak, eff = hw.peak_flops_fp32, hw.eff("act")
        return max(flops / (eff * peak), mem) + hw.launch_overhead_s
    return mem + hw.launch_overhead_s


def _table_args(op):
    """The family and lookup arguments of recorded op ``op`` in a kernel table."""
    name, flops, nbytes = SIDE_COPY_OPS.get(op[1], op[1]), op[4], op[5]
    if name in HOST_COPY_OPS:   # a plan's host copy: the table's measured PCIe rows
        # save_on_cpu()'s pageable pack copies into a new host tensor, its unpack frees it:
        # above glibc's mmap threshold, calibrate's rows of that pattern
        # (Calibrator.pageable_pattern), below it the tight loop's (FRESH_PAGES_BYTES)
        new = "_new" if name in PAGEABLE_COPY_OPS and nbytes > FRESH_PAGES_BYTES else ""
        direction, pinned = HOST_COPY_OPS[name]
        return (f"copy_{direction}_{'pinned' if pinned else 'pageable'}{new}",
                {"nbytes": nbytes, "dtype": "float32", "math_": ""})
    sig = op[6] if len(op) > 6 else ""
    fam = family_of(name)
    dtype = sig_dtype(sig)
    half = {"bfloat16": "bf16", "float16": "fp16"}.get(dtype)
    if fam.startswith("convolution"):
        mth, cls = (half or "tf32"), conv_class(sig)
        flops = call_conv_flops(sig) or flops     # the table's count (kernel_table.conv_flops)
        if _layout(op) == "channels_last":     # cuDNN's NHWC engines: rows of their own
            fam = LAYOUT_FAMILIES.get(fam, fam)
    elif fam in MATMUL_FAMILIES or fam.startswith("sdpa"):
        # attention: a causal call reads the causal rows (its kernels skip the masked tiles
        # and run at another rate per counted FLOP), a full one the others
        layout = _layout(op)
        tf32 = layout.startswith(TF32_PREFIX)     # an fp32 matmul on TF32 tensor cores
        layout = layout.removeprefix(TF32_PREFIX)
        mth, cls = (half or ("tf32" if tf32 else "fp32")), (
            matmul_lookup_class(sig, layout) if fam in MATMUL_FAMILIES
            else "causal" if layout == "causal" else "")
        if half and fam.startswith("sdpa_efficient"):
            # CUDA's choice for half inputs (a CPU recording names its own kernel): cuDNN's
            # attention on Hopper (torch 2.11: profile_heldout7/8, profile_host), read as
            # flash where a table has no sdpa_cudnn rows (_lookup_args)
            fam = fam.replace("sdpa_efficient", "sdpa_cudnn")
    elif fam in BN_FAMILIES:
        mth, cls = ("bf16" if half else "float32"), bn_class(sig)
    elif fam in POOL_FAMILIES:
        mth, cls = ("bf16" if half else "float32"), pool_class(sig)
    elif fam in INDEX_FAMILIES:
        mth, cls = ("bf16" if half else "float32"), index_class(sig)
    elif fam in ROW_FAMILIES or (fam == "sum" and _layout(op) == "rows"):
        fam = "sum_rows" if fam == "sum" else fam
        mth, cls = ("bf16" if half else "float32"), (
            sum_rows_class(sig) if fam == "sum_rows" else ln_class(sig))
    else:
        mth, cls = ("bf16" if half else "float32"), ""
        if fam in UPSAMPLE_BACKWARD_FAMILIES:   # atomics onto shared inputs: the table's work
            flops = call_upsample_work(sig) or flops
        if _layout(op) in ("strided", "permuted") and fam in STRIDED_FAMILIES:
            fam, cls = STRIDED_FAMILIES[fam], ("perm" if _layout(op) == "permuted" else "")
        elif _layout(op).startswith(("generic:", "generic_cast:")) \
                and fam in ELEMENTWISE_FAMILIES:
            # TensorIterator's generic kernel (kernel_table.ELEMENTWISE_FAMILIES), in the
            # output's dtype as the recorder saw it
            fam, dtype = GENERIC_FAMILY, _layout(op).partition(":")[2]
    ntensors = (len(op[2]) + len(op[3])
                if fam.startswith(("_foreach", "_fused_", "_amp_foreach"))
                else index_count(sig) if fam == "index" else 0)
    return fam, {"flops": flops, "nbytes": nbytes, "ntensors": ntensors, "cls": cls,
                 "dtype": dtype, "math_": mth}


def _layout(op):
    """The memory layout a recorded convolution ran in (``"channels_last"`` or ``""``:
    :func:`snsim.torchsim.record.conv_layout`); ``""`` for a recording made before it."""
    return op[7] if len(op) > 7 else ""


_CONTIGUOUS_FAMILY = {v: k for k, v in STRIDED_FAMILIES.items()}


def _lookup_args(table, op):
    """:func:`_table_args` of ``op`` as ``table`` can answer them: a strided copy's
    contiguous family where the table has no strided rows (tables before 2026-11-30 22:00),
    and a pageable copy's tight-loop rows where it has none of ``save_on_cpu()``'s pattern
    (``_new``: tables before the ``pageable`` group), and an elementwise call on the generic
    kernel the strided copies' rows where the table has none of that kernel
    (``elementwise_generic``: tables before the ``generic`` group)."""
    fam, kw = _table_args(op)
    if fam == GENERIC_FAMILY and fam not in table.families():
        # the same kernel template's strided copies, else the op's contiguous rows
        fam = GENERIC_FALLBACK if GENERIC_FALLBACK in table.families() else family_of(op[1])
    if fam in _CONTIGUOUS_FAMILY and fam not in table.families():
        fam, kw = _CONTIGUOUS_FAMILY[fam], {**kw, "cls": ""}
    if fam.endswith("_new") and fam not in table.families():
        fam = fam[:-len("_new")]
    read, cls = table_family(table, fam, kw.get("cls", ""))
    return (fam, kw) if read == fam else (read, {**kw, "cls": cls})


def _zero_scatter_time(table, op):
    """``(seconds, source)`` of a :data:`ZERO_SCATTER_OPS` call as its two kernels: a
    ``fill_`` of the output's bytes and a ``clone_strided`` copy of the gradient (read and
    written); None where the recording has no signature or the table lacks those rows."""
    t = sig_tensor(op[6] if len(op) > 6 else "")
    if not t or not {f for f, _ in zero_scatter_calls(0, 0)} <= set(table.families()):
        return None
    dtype, dims = t
    grad = math.prod(dims) * ELEMENT_BYTES.get(dtype, 4)
    (f1, b1), (f2, b2) = zero_scatter_calls(max(op[5] - grad, grad), grad)
    fill, s1 = table.time_s(f1, nbytes=b1, dtype=dtype, math_="")
    copy, s2 = table.time_s(f2, nbytes=b2, dtype=dtype, math_="")
    if fill is None or copy is None:
        return None
    return fill + copy, (s1 if s1 == s2 else "proxy" if "proxy" in (s1, s2) else s1)


def _table_time(table, op):
    if op[1] in ZERO_SCATTER_OPS:
        two = _zero_scatter_time(table, op)
        if two is not None:
            return two
    if op[1] == EMBEDDING_BACKWARD:     # its table's fill and its rows' scatter, apart
        call = embedding_backward_call(op[6] if len(op) > 6 else "")
        if call is not None:
            t, src = table.embedding_backward_s(*call)
            if t is not None:
                return t, src
    fam, kw = _lookup_args(table, op)
    if fam.startswith("copy_"):     # a host copy: by its bytes alone, between measured sizes
        return table.copy_time_s(fam, kw["nbytes"])
    # a half type's own rows, the other's as a fallback (snsim.kernel_table._OTHER_HALF)
    t, src = table.time_s(fam, **kw)
    if t is not None and op[1] == "roll":     # one kernel pass per rolled dim
        t *= roll_passes(op[6] if len(op) > 6 else "")
    return t, src


def copy_ops(op):
    """The contiguous copies recorded op ``op``'s CUDA kernel makes of its arguments
    (:func:`snsim.torchsim.record.copy_calls`, the op's ninth field), as recorded ``clone``
    ops: each a strided clone's kernel and a clone call's issue, from C++."""
    # (signature, bytes, layout[, when]): recordings before the copies' "when" have three
    return [(op[0], "clone", (), (), 0, nbytes, sig, layout)
            for sig, nbytes, layout, *_ in (op[8] if len(op) > 8 else ())]


def sibling_ratio(op, ratios):
    """How much longer recorded op ``op`` runs on the GPU than the borrowed table's time:
    ``ratios``' figure for the op's table family at its bytes (:func:`snsim.kernel_table.
    sibling_ratio_of`).

    >>> sibling_ratio((0, "add", (), (), 0, 1 << 30), {"add": [(0, 1 << 27, 1.1),
    ...                                                       (1 << 27, None, 1.4)]})
    1.4
    """
    return sibling_ratio_of(ratios, _table_args(op)[0], op[5])


def op_gpu_time_s(table, op, hw, sibling=None):
    """``(seconds, source)`` of recorded op ``op`` on the GPU alone: ``table``'s time (source
    ``table``, ``fitted`` or ``proxy``; None: no table), else ``hw``'s roofline (``roofline``),
    with the conv's bias kernels and the kernel's own copies of non-contiguous arguments; a
    borrowed table's time times ``sibling``'s measured slowdown (:func:`sibling_ratio`); the
    casting indexing kernel no faster than :data:`snsim.kernel_table.GENERIC_CAST_BYTES_PER_S`.
    ``(0.0, "none")`` for an op that launches no kernel."""
    if op[1] in NO_KERNEL_OPS or op[1] in COPY_WAIT_OPS:
        return 0.0, "none"
    t, src = (_table_time(table, op) if table is not None else (None, "roofline"))
    if t is None:
        t, src = op_time_s(op[1], op[4], op[5], hw,
                           sig_dtype(op[6] if len(op) > 6 else "")), "roofline"
    t += conv_bias_time_s(table, op, hw)     # the conv's bias kernels: its source's
    for c in copy_ops(op):   # the kernel's own copies of non-contiguous arguments
        tc = _table_time(table, c)[0] if table is not None else None
        t += tc if tc is not None else op_time_s("clone", 0, c[5], hw, sig_dtype(c[6]))
    if sibling is not None and src != "roofline":
        t *= sibling_ratio(op, sibling)
    if _layout(op).startswith("generic_cast:"):   # the casting indexing kernel
        t = generic_cast_time_s(t, op[5])
    return t, src


def conv_bias_time_s(table, op, hw):
    """GPU seconds of the kernels ATen adds to recorded convolution call ``op`` for its bias
    (:func:`snsim.kernel_table.conv_bias_calls`: the broadcast add after cuDNN's forward, the
    grad_bias reduction of a backward whose mask asks for it), 0 for other ops. Each is looked
    up in the table's ``conv_bias_add`` / ``conv_bias_grad`` rows (``snsim calibrate --only
    convbias``) by bytes, channels and map size; a table without them (made before that
    group) charges it as the elementwise op it is, ``add_`` / ``sum`` by bytes, and with no
    table (or none of those either) the preset's roofline of that op by bytes."""
    if family_of(op[1]) not in ("convolution", "convolution_backward"):
        return 0.0
    total = 0.0
    for fam, nbytes, cls, dtype in conv_bias_calls(op[6] if len(op) > 6 else "", _layout(op)):
        t = bias_time_s(table, fam, nbytes, cls, dtype)[0] if table is not None else None
        total += t if t is not None else op_time_s(BIAS_FALLBACK[fam], 0, nbytes, hw, dtype)
    return total


def _issue_s(table, op, memo):
    fam, kw = _lookup_args(table, op)
    if fam in _CONTIGUOUS_FAMILY or fam == GENERIC_FAMILY:
        # the host issues the same aten call whichever kernel it launches: its contiguous
        # family's cost, looked up as the in-network host model was fitted
        fam, kw = family_of(op[1]), {**kw, "cls": "",
                                     "dtype": sig_dtype(op[6] if len(op) > 6 else "")}
    key = (fam, *kw.values())
    if key not in memo:      # a step repeats its shapes (every iteration, every block)
        memo[key] = table.issue_s(fam, **kw)
    return memo[key]


# host work of memory plans outside aten ops (:meth:`snsim.torchsim.record.Recorder.host_event`)
PLAN_HOST_MECHANISMS = ("checkpoint", "checkpoint_args", "saved_tensors_hook",
                        "pinned_pack", "offloader_hook", "conv_hook", "offload_copy",
                        "selective")


def plan_host_s(mechanism, phase, count, costs):
    """Host seconds of one recorded plan event: a ``checkpoint`` call (forward, phase F) or its
    recomputation (B) with ``count`` saved tensors, ``checkpoint_call_s + count *
    checkpoint_saved_s`` of the phase; ``count`` tensor arguments of a checkpoint call beyond
    its first (``checkpoint_args``: an RNG state stashed per argument in F, got and set twice
    per argument in B, the argument saved), ``count * checkpoint_arg_s`` (0 where not timed);
    ``count`` calls of a ``saved_tensors_hook`` (pack in F,
    unpack in B), ``count * hook_saved_s``; ``count`` pinned host tensors
    ``save_on_cpu(pin_memory=True)``'s pack allocates (``pinned_pack``, F),
    ``count * pinned_pack_s`` (0 for a table without calibrate's ``host_alloc_pinned`` rows:
    the SuperNeurons offloader keeps its buffers); ``count`` calls of the SuperNeurons offloader's
    pack/unpack (``offloader_hook``), ``count * offloader_saved_s`` where the probe timed it,
    else the bare hook's ``hook_saved_s`` (a lower bound: it is a saved-tensor hook too);
    ``count`` calls of its forward hook on a convolution (``conv_hook``, forward and
    recomputation alike), ``count * conv_hook_call_s["F"]`` (0 where not timed); ``count``
    tensors the offloader copies out (``offload_copy``, F) or prefetches back (B), ``count *
    offload_copy_s`` of the phase: the Python path around the copy, its issue included (the
    copy op itself costs the host nothing more; 0 where not timed); selective
    checkpointing's dispatch modes in a checkpointed call whose forward asked their policy
    about ``count`` aten ops (forward: F, recomputation: B), ``selective_call_s + count *
    selective_op_s`` (0 where not timed). Costs from
    :func:`snsim.kernel_table.load_host_costs` (0 for a preset without the checkpoint probe).

    Examples
    --------
    >>> c = {"checkpoint_call_s": {"F": 1e-4, "B": 4e-4},
    ...      "checkpoint_saved_s": {"F": 2e-5, "B": 5e-6}, "hook_saved_s": {"F": 3e-6}}
    >>> round(plan_host_s("checkpoint", "F", 10, c) * 1e6, 6)   # 100 + 10 * 20 us
    300.0
    >>> round(plan_host_s("saved_tensors_hook", "B", 4, c) * 1e6, 6)  # no B figure: 0
    0.0
    """
    if mechanism == "checkpoint":
        return (costs.get("checkpoint_call_s", {}).get(phase, 0.0)
                + count * costs.get("checkpoint_saved_s", {}).get(phase, 0.0))
    if mechanism == "checkpoint_args":
        return count * costs.get("checkpoint_arg_s", {}).get(phase, 0.0)
    if mechanism == "saved_tensors_hook":
        return count * costs.get("hook_saved_s", {}).get(phase, 0.0)
    if mechanism == "pinned_pack":
        return count * costs.get("pinned_pack_s", {}).get(phase, 0.0)
    if mechanism == "offloader_hook":
        per = costs.get("offloader_saved_s", costs.get("hook_saved_s", {}))
        return count * per.get(phase, 0.0)
    if mechanism == "conv_hook":
        return count * costs.get("conv_hook_call_s", {}).get("F", 0.0)
    if mechanism == "offload_copy":
        return count * costs.get("offload_copy_s", {}).get(phase, 0.0)
    if mechanism == "selective":
        return (costs.get("selective_call_s", {}).get(phase, 0.0)
                + count * costs.get("selective_op_s", {}).get(phase, 0.0))
    raise ValueError(f"unknown plan host mechanism {mechanism!r} "
                     f"(known: {', '.join(PLAN_HOST_MECHANISMS)})")


def host_issue_s(ops, marks, table, costs, syncs=(), events=(), accumulations=()):
    """Host seconds the launching thread spends before each op can start, from the preset's
    in-network host model ``costs["innet"]`` (:func:`snsim.kernel_table.load_host_costs`;
    :func:`innet_host_s`), the one the zoo's programs charge too
    (:func:`snsim.program_torch.build_torch_program`). A ``.item()`` read (op index in
    ``syncs``) costs a scalar pageable copy's issue (``copy_d2h_pageable``);
    :func:`snsim.kernel_table.host_stream` makes it wait for the GPU.

    ``events`` (:attr:`snsim.torchsim.record.Recorder.host_events`) is the host work of memory
    plans that no aten op shows -- checkpoint calls and recomputations, saved-tensor hooks --
    charged (:func:`plan_host_s`: measured in a chain of real blocks) to the op issued after
    it. ``accumulations`` (:attr:`snsim.torchsim.record.Recorder.accumulation_ops`) are the
    op indexes of autograd's engine's gradient sums, issued from C++ (``per_accumulate_s``)."""
    out = innet_host_s(ops, marks, table, costs["innet"], set(syncs), set(accumulations))
    for at, mechanism, phase, count in events:
        if ops:
            out[min(at, len(ops) - 1)] += plan_host_s(mechanism, phase, count, costs)
    return out


def parameters_per_iteration(marks):
    """``{iteration: parameter tensors its backward accumulated}``: the recording's
    ``AccumulateGrad`` node marks per iteration, the tensors the optimizer step walks."""
    return collections.Counter(m[3] for m in marks
                               if m[1] == "B" and str(m[2]).startswith("AccumulateGrad"))


def optimizer_step_starts(ops, marks, syncs):
    """``{iteration: op index}`` where the optimizer step's Python work (``per_param_s``,
    :func:`innet_host_s`) falls: the iteration's first update op; with fp16's GradScaler the
    first update op after the ``.item()`` (an index in ``syncs``) that follows its unscale
    kernel -- ``GradScaler.step`` reads ``found_inf`` and only then calls
    ``optimizer.step()``, so on a GPU-bound step that work runs while the GPU waits."""
    starts, unscaled, read = {}, set(), set()
    for i, op in enumerate(ops):
        if op[0] < 0 or marks[op[0]][1] != "U":
            continue
        it = marks[op[0]][3]
        if op[1] == "_amp_foreach_non_finite_check_and_unscale_":
            unscaled.add(it)
            starts.pop(it, None)
            continue
        if it in unscaled and it not in read:
            if i in syncs:
                read.add(it)
            continue
        starts.setdefault(it, i)
    return starts


def innet_host_s(ops, marks, table, inn, syncs, accumulations=frozenset()):
    """:func:`host_issue_s` from in-network costs measured in real steps
    (:func:`snsim.kernel_table.read_host_innet`): an aten call with a kernel costs its
    tight-loop issue cost at its shape (:meth:`KernelTable.issue_s`) times its family's
    ratio (the same calls in a real step's sequence over the table's cost) plus its phase's
    ``per_call_s`` (which holds the views and metadata calls around it: a call without a
    kernel costs nothing of its own); every module call (forward, a recomputation too) adds
    ``per_module_s`` and every autograd node (backward, ``AccumulateGrad`` included)
    ``per_node_s``; the optimizer step adds ``per_param_s`` per parameter (the iteration's
    ``AccumulateGrad`` nodes), charged to its first op (:func:`optimizer_step_starts`: with
    fp16's GradScaler, the first after the ``.item()`` that waits for the GPU), ``per_read_s`` per read of a host
    tensor (a step counter's ``.item()``), and GradScaler's ``per_param_scaler_s`` per
    parameter, charged to its unscale kernel's call. The autograd engine's own calls are no
    Python call: a gradient sum (op index in ``accumulations``) costs ``per_accumulate_s``
    and each ``slice`` a ``CatBackward0``
    node hands on ``per_cat_input_s``."""
    ratio = inn["ratio"]
    params = parameters_per_iteration(marks)
    starts = optimizer_step_starts(ops, marks, syncs)
    out = [0.0] * len(ops)
    memo = {}
    seen = -1
    for i, op in enumerate(ops):
        h = 0.0
        if op[0] > seen:
            for m in marks[seen + 1:op[0] + 1]:
                if m[2] and "@" not in m[2]:
                    h += inn["per_module_s"]
                elif m[1] == "B" and m[2]:
                    h += inn["per_node_s"]
            seen = op[0]
        phase, it = "F", -1
        if op[0] >= 0:
            m = marks[op[0]]
            phase = "F" if m[1] == "B" and str(m[0]).startswith("recompute:") else m[1]
            it = m[3]
        if starts.get(it) == i:
            h += inn["per_param_s"] * params[it]
        if op[1] == "_amp_foreach_non_finite_check_and_unscale_":
            # GradScaler.unscale_'s Python loop over the parameters, before its kernel (and
            # before the .item() that waits for the GPU)
            h += inn.get("per_param_scaler_s", 0.0) * params[it]
        if op[1] in CAT_GRAD_VIEWS and phase == "B" and \
                str(marks[op[0]][2]).startswith("CatBackward"):
            out[i] = h + inn["per_cat_input_s"]   # one input's gradient, handed on
            continue
        if i in accumulations and op[1] not in NO_KERNEL_OPS:
            out[i] = h + inn["per_accumulate_s"]    # an add_ from C++, at any size
            continue
        if op[1] in SIDE_COPY_OPS:
            # the offloader's copy on its own stream: its issue is part of the Python path
            # around it, priced as a whole by the plan's offload_copy event (plan_host_s)
            out[i] = h
            continue
        if op[1] in NO_KERNEL_OPS or op[1] in COPY_WAIT_OPS:
            # views, metadata: in the per-call figure of the calls with a kernel; a .item()
            # of a device tensor is a pageable copy's issue
            out[i] = h + (table.aten_host.get("copy_d2h_pageable", 0.0) * ratio["*"]
                          if i in syncs else inn["per_read_s"]
                          if op[1] in HOST_READ_OPS and phase == "U" else 0.0)
            continue
        if op[1] in PAGEABLE_COPY_OPS:   # its data's movement, timed in its own pattern
            out[i] = h + _issue_s(table, op, memo)
            continue
        out[i] = innet_call_s(inn, family_of(op[1]), phase, _issue_s(table, op, memo), h)
        for c in copy_ops(op):
            # a clone the kernel calls from C++: its issue at the family's in-network ratio,
            # no Python call around it (no per-call cost)
            out[i] += _issue_s(table, c, memo) * ratio.get("clone", ratio["*"])
    return out


def preset_table(name):
    """``(table, sibling)``: preset ``name``'s kernel table (None where it has none) and, where
    it borrows its sibling's, the measured slowdowns that scale it (None where it reads its
    own, or none were measured: :func:`snsim.kernel_table.load_sibling_ratios`)."""
    table = load_kernel_table(name)
    return table, ((load_sibling_ratios(name) or None) if table is not None else None)


def op_times_s(ops, hw, marks=None, *, table="auto", sibling=None, host=True, report=None,
               host_costs=None, host_sids=frozenset(), host_events=(), accumulations=(),
               host_pace=1.0):
    """Modelled time of every recorded op ``(mark, name, reads, news, flops, bytes[, sig])``.

    Parameters
    ----------
    ops : list of tuples
        The recorder's ops.
    hw : HardwareSpec
    marks : list of (label, phase, kind, iteration), optional
        The recording's marks. With them and a table that has host costs, each op's time is
        its share of the two-resource schedule (:func:`snsim.kernel_table.host_stream`), so a
        step's time includes the GPU's waits for the host.
    table : KernelTable, "auto" or None
        ``"auto"``: the preset's table if it has one (:func:`snsim.kernel_table.load_kernel_table`)
        and its sibling's slowdowns (:func:`preset_table`).
    sibling : dict, optional
        A borrowed ``table``'s measured slowdowns (:func:`preset_table`); ignored with
        ``"auto"``.
    host : bool
        Model the host (needs ``marks``, a table and in-network host costs, ``"innet"``);
        False: GPU time only.
    host_costs : dict, optional
        :func:`snsim.kernel_table.load_host_costs` of the preset (the default).
    host_sids : set of int
        Storages that live in host memory on the GPU (excluded from the recording): a
        ``.item()`` of one does not wait for the GPU.
    host_events : list of (int, str, str, int)
        The recording's plan host work (:func:`host_issue_s`).
    accumulations : set of int
        The recording's gradient sums by autograd's engine
        (:attr:`snsim.torchsim.record.Recorder.accumulation_ops`: :func:`host_issue_s`).
    host_pace : float
        The host seconds' multiplier: the machine's gauge over the table's
        (:func:`snsim.torchsim.hostpace.pace_factor`); 1 is the table's own pace.
    report : dict, optional
        Filled with the seconds of the last iteration by source (``table``, ``fitted``,
        ``proxy``, ``roofline``), ``gpu_s``, ``host_s`` and ``wait_s`` (the GPU idle for the
        host).
    """
    if table == "auto":
        table, sibling = preset_table(hw.name)
    gpu, source = [], []
    for op in ops:
        t, src = op_gpu_time_s(table, op, hw, sibling)
        gpu.append(t)
        source.append(src)
    times = list(gpu)
    host_s = [0.0] * len(ops)
    costs = host_costs if host_costs is not None else (
        load_host_costs(hw.name) if table is not None else {})
    if host and marks is not None and table is not None and "innet" in costs:
        # a .item() of a device tensor; host tensors (a foreach optimizer's step counters) are
        # read without the GPU
        syncs = [i for i, op in enumerate(ops)
                 if op[1] in HOST_READ_OPS and any(s not in host_sids for s in op[2])]
        host_s = [h * host_pace for h in
                  host_issue_s(ops, marks, table, costs, syncs, host_events, accumulations)]
        iters = [marks[op[0]][3] if op[0] >= 0 else -1 for op in ops]
        # a pageable copy holds the launching thread until its data has moved
        blocking = [op[1] in PAGEABLE_COPY_OPS for op in ops]
        side, waits, host_waits = side_copies(ops)
        slow = {d: k for (d, pinned), k in copy_slowdown(hw.name).items() if pinned}
        times = host_stream(gpu, host_s, iters, blocking, syncs, side=side, waits=waits,
                            host_waits=host_waits, slowdown=slow,
                            synchronous=_sync_wakes(ops, table))
    if report is not None:
        last = max((marks[op[0]][3] for op in ops if op[0] >= 0), default=-1) \
            if marks is not None else None
        sel = [i for i, op in enumerate(ops)
               if last is None or (op[0] >= 0 and marks[op[0]][3] == last)]
        for key in ("table", "fitted", "proxy", "roofline"):
            report[f"{key}_s"] = sum(gpu[i] for i in sel if source[i] == key)
        report["gpu_s"] = sum(gpu[i] for i in sel if ops[i][1] not in SIDE_COPY_OPS)
        report["host_s"] = sum(host_s[i] for i in sel)
        report["step_s"] = sum(times[i] for i in sel)
        report["wait_s"] = report["step_s"] - report["gpu_s"]
        report["kernel_table"] = table.source if table is not None else ""
    return times


def _sync_wakes(ops, table):
    """``{op index: seconds}`` of :func:`snsim.kernel_table.host_stream`'s ``synchronous``: each
    blocking copy's :meth:`~snsim.kernel_table.KernelTable.sync_wake_s`, looked up once per
    size (a step packs the same sizes every block and iteration)."""
    wake = functools.lru_cache(maxsize=None)(table.sync_wake_s)
    return {i: wake(op[5]) for i, op in enumerate(ops) if op[1] in SYNC_COPY_OPS}


def side_copies(ops):
    """``(side, waits, host_waits)`` of :func:`snsim.kernel_table.host_stream` for recorded
    ops: each side copy's direction, and each wait paired with the last side copy before it
    that read the same storage.

    >>> ops = [(0, "d2h_pinned_async", (7,), (), 0, 8), (0, "relu", (3,), (4,), 0, 8),
    ...        (0, "copy_sync", (7,), (), 0, 8)]
    >>> side_copies(ops)
    ({0: 'd2h'}, {}, {2: 0})
    """
    side, waits, host_waits, last = {}, {}, {}, {}
    for i, op in enumerate(ops):
        if op[1] in SIDE_COPY_OPS:
            side[i] = HOST_COPY_OPS[SIDE_COPY_OPS[op[1]]][0]
            for sid in op[2]:
                last[sid] = i
        elif op[1] in COPY_WAIT_OPS:
            j = next((last[sid] for sid in op[2] if sid in last), None)
            if j is not None:
                (host_waits if op[1] == "copy_sync" else waits)[i] = j
    return side, waits, host_waits


def host_copy_time_s(op_rows, hw):
    """Seconds of the shadow host copies among a program's ``ops`` rows
    ``[step, name, flops, bytes, (signature, layout)]``."""
    total = 0.0
    for row in op_rows:
        if row[1] in HOST_COPY_OPS:
            total += op_time_s(row[1], row[2], row[3], hw)
    return total
