"""Modelled time of one aten op: a roofline over its FLOPs and bytes (SPEC §9) [E].

``t = max(flops / (eff · peak), bytes / (eff_mem · mem_bytes_per_s)) + launch_overhead_s`` with
the efficiencies of the hardware preset. Convolutions run in TF32 on GPUs that have it
(``torch.backends.cudnn.allow_tf32`` is True by default) and use the TF32 peak below; matmuls
stay FP32 (``torch.backends.cuda.matmul.allow_tf32`` is False by default). Ops that only make
views launch no kernel and cost nothing. The host copies of a shadow ``cpu_offload`` run
(``d2h_pinned``, ``h2d_pageable``, ...: :func:`snsim.torchsim.plans.copy_ops`) take the preset's
PCIe time for their bytes, on the compute stream as ``save_on_cpu``'s copies do.
"""
from __future__ import annotations

# dense TF32 tensor-core peaks, vendor datasheets [E]; GPUs without TF32 use peak_flops_fp32
TF32_PEAK_FLOPS = {"h200": 494e12, "h100": 494e12, "a100-40gb": 156e12}
NO_KERNEL_OPS = frozenset({
    "detach", "t", "view", "_unsafe_view", "reshape", "expand", "permute", "transpose",
    "as_strided", "alias", "squeeze", "unsqueeze", "select", "slice", "split", "unbind",
    "split_with_sizes", "_reshape_alias", "lift_fresh", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "_foreach_empty"})
_CONV = ("convolution", "convolution_backward", "cudnn_convolution")
_MATMUL = ("mm", "addmm", "bmm", "matmul", "baddbmm")
# shadow host copies: name -> (direction, pinned)
HOST_COPY_OPS = {"d2h_pinned": ("d2h", True), "d2h_pageable": ("d2h", False),
                 "h2d_pinned": ("h2d", True), "h2d_pageable": ("h2d", False)}


def op_time_s(name, flops, nbytes, hw):
    """Modelled seconds of op ``name`` with ``flops`` and ``nbytes`` of traffic on ``hw``.

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
    if name in NO_KERNEL_OPS:
        return 0.0
    if name in HOST_COPY_OPS:
        direction, pinned = HOST_COPY_OPS[name]
        return hw.transfer_time_s(nbytes, direction, pinned)
    mem = nbytes / (hw.eff("mem") * hw.mem_bytes_per_s)
    if flops:
        if name in _CONV:
            peak, eff = TF32_PEAK_FLOPS.get(hw.name, hw.peak_flops_fp32), hw.eff("conv")
        elif name in _MATMUL:
            peak, eff = hw.peak_flops_fp32, hw.eff("fc")
        else:
            peak, eff = hw.peak_flops_fp32, hw.eff("act")
        return max(flops / (eff * peak), mem) + hw.launch_overhead_s
    return mem + hw.launch_overhead_s


def op_times_s(ops, hw):
    """Modelled time of every recorded op ``(mark, name, reads, news, flops, bytes)``."""
    return [op_time_s(op[1], op[4], op[5], hw) for op in ops]


def host_copy_time_s(op_rows, hw):
    """Seconds of the shadow host copies among a program's ``ops`` rows
    ``[step, name, flops, bytes]``."""
    total = 0.0
    for row in op_rows:
        if row[1] in HOST_COPY_OPS:
            total += op_time_s(row[1], row[2], row[3], hw)
    return total
