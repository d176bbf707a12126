"""The host as a stream (issue 10 item 3) on hand-made programs: eager PyTorch issues every op
from one CPU thread, so a step is the makespan of two resources in series per op."""
import pandas as pd
import pytest

from snsim.hardware import load_hardware
from snsim.kernel_table import GRAD_ACCUMULATE_OPS, KernelTable
from snsim.torchsim.opcost import op_times_s

US = 1e-6
# rel=1e-3 below: GPU times of off-row sizes are interpolated (within 0.03% here); the patterns
# each test tells apart differ by 10% or more


def _table(host_step_rows):
    """A table where relu_ / add / threshold_backward take exactly ``time_s`` on the GPU
    (flat in bytes) and their aten call costs ``host_s`` on the host (smallest rows)."""
    rows = []
    for fam, gpu_s, host_s in (("relu_", 2 * US, 5 * US), ("add", 2 * US, 8 * US),
                               ("threshold_backward", 100 * US, 20 * US)):
        for nb in (1e3, 1e6, 1e9):
            rows.append({"family": fam, "dtype": "float32", "math": "float32", "cls": "",
                         "flops": 0, "bytes": nb, "ntensors": 0, "time_s": gpu_s,
                         "host_s": host_s, "shape": "", "ops": ""})
    return KernelTable(pd.DataFrame(rows + host_step_rows))


def _step_row(phase, host_s, ops):
    return {"family": "host_step", "dtype": "float32", "math": "", "cls": phase, "flops": 0,
            "bytes": 0, "ntensors": sum(ops.values()), "time_s": 0.0 + 1e-9, "host_s": host_s,
            "shape": "hand-made", "ops": " ".join(f"{k}:{v}" for k, v in ops.items())}


def test_chain_of_short_kernels_runs_at_the_host_s_pace_then_the_gpu_s():
    # F overhead: one phase of 10 relu_ that took 10·(5 + 7) µs -> 7 µs per op beyond the call
    tab = _table([_step_row("F", 10 * 12 * US, {"relu_": 10})])
    assert tab.host_s("F", "relu_") == pytest.approx(12 * US)
    hw = load_hardware("h200")
    marks = [("m", "F", "", 0)]
    short = [(0, "relu_", (0,), (), 0, 1000)] * 100          # 2 µs kernels, 12 µs to issue
    # host_i = 12 i µs; the GPU finishes kernel i at max(G_{i-1}, H_i) + 2 = 12 i + 2 µs:
    # CPU-bound, step = 100·12 + 2 = 1202 µs, not the GPU's 200 µs nor the sum 1400 µs
    assert sum(op_times_s(short, hw, marks, table=tab)) == pytest.approx(1202 * US, rel=1e-3)
    # then one long kernel (a 100 µs threshold_backward, 20+7 µs to issue) after 5 short ones:
    # H = 60, 87; G: 62 after the relus, it starts at max(62, 87) = 87, ends 187 µs
    mixed = [(0, "relu_", (0,), (), 0, 1000)] * 5 + [(0, "threshold_backward", (0,), (), 0, 1e6)]
    assert sum(op_times_s(mixed, hw, marks, table=tab)) == pytest.approx(187 * US, rel=1e-3)
    # GPU-bound: 10 threshold_backward (100 µs each, issued every 27 µs): 27 + 10·100 = 1027 µs
    long = [(0, "threshold_backward", (0,), (), 0, 1e6)] * 10
    assert sum(op_times_s(long, hw, marks, table=tab)) == pytest.approx(1027 * US, rel=1e-3)


def test_gradient_sums_in_backward_cost_the_aten_call_only():
    assert "add" in GRAD_ACCUMULATE_OPS
    # calibrate's backward phase: 4 threshold_backward (20 µs aten call + overhead o) and 6
    # gradient-sum adds (8 µs each, no overhead) took 168 µs: o = (168 - 4·20 - 6·8) / 4 = 10 µs
    # (the old rule spread it over all 10 ops: (168 - 128) / 10 = 4 µs)
    tab = _table([_step_row("B", 168 * US, {"threshold_backward": 4, "add": 6})])
    assert tab.host_overhead["B"] == pytest.approx(10 * US)   # over the 4 node ops only
    assert tab.host_s("B", "threshold_backward") == pytest.approx(30 * US)
    assert tab.host_s("B", "add") == pytest.approx(8 * US)    # the aten add alone
    # a forward add is a Python call like any other: the overhead applies there
    tab = _table([_step_row("F", 10 * 12 * US, {"relu_": 10}),
                  _step_row("B", 168 * US, {"threshold_backward": 4, "add": 6})])
    assert tab.host_s("F", "add") == pytest.approx(8 * US + 7 * US)
    hw = load_hardware("h200")
    marks = [("m", "B", "", 0)]
    # DenseNet-like backward: 50 gradient sums of 2 µs kernels issued at 8 µs each: 402 µs;
    # charged the node overhead too (the old rule) it would be 50·18 + 2 = 902 µs
    sums = [(0, "add", (0, 1), (2,), 0, 1000)] * 50
    assert sum(op_times_s(sums, hw, marks, table=tab)) == pytest.approx(402 * US, rel=1e-3)
