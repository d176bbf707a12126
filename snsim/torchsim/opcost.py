"""Modelled time of one aten op: a roofline over its FLOPs and bytes (SPEC §9) [E].

``t = max(flops / (eff · peak), bytes / (eff_mem · mem_bytes_per_s)) + launch_overhead_s`` with
the efficiencies of the hardware preset. Convolutions run in TF32 on GPUs that have it
(``torch.backends.cudnn.allow_tf32`` is True by default) and use the TF32 peak below; matmuls
stay FP32 (``torch.backends.cuda.matmul.allow_tf32`` is False by default). Ops that only make
views launch no kernel and cost nothing.
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
    """
    if name in NO_KERNEL_OPS:
        return 0.0
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
