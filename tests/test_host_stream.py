"""The host as a stream (issue 10 item 3) on hand-made programs: eager PyTorch issues every op
from one CPU thread, so a step is the makespan of two resources in series per op; the host's
cost per op is its aten call at its shape, plus the module calls and autograd nodes around it,
times the phase's in-network factor."""
import pandas as pd
import pytest

from snsim.hardware import load_hardware
from snsim.kernel_table import KernelTable, load_host_costs
from snsim.torchsim.opcost import host_issue_s, op_times_s

US = 1e-6
NO_EXTRA = {"module_call_s": 0.0, "autograd_node_s": 0.0, "accumulate_grad_s": 0.0, "scale": {}}
# rel=1e-3 below: GPU times of off-row sizes are interpolated (within 0.03% here); the patterns
# each test tells apart differ by 10% or more


def _table():
    """A table where relu_ / add / threshold_backward take exactly ``time_s`` on the GPU
    (flat in bytes) and their aten call costs ``host_s`` on the host at every size."""
    rows = []
    for fam, gpu_s, host_s in (("relu_", 2 * US, 12 * US), ("add", 2 * US, 8 * US),
                               ("threshold_backward", 100 * US, 27 * US)):
        for nb in (1e3, 1e6, 1e9):
            rows.append({"family": fam, "dtype": "float32", "math": "float32", "cls": "",
                         "flops": 0, "bytes": nb, "ntensors": 0, "time_s": gpu_s,
                         "host_s": host_s, "shape": "", "ops": ""})
    return KernelTable(pd.DataFrame(rows))


def test_chain_of_short_kernels_runs_at_the_host_s_pace_then_the_gpu_s():
    tab = _table()
    hw = load_hardware("h200")
    marks = [("m", "F", "", 0)]
    short = [(0, "relu_", (0,), (), 0, 1000)] * 100          # 2 µs kernels, 12 µs to issue
    # host_i = 12 i µs; the GPU finishes kernel i at max(G_{i-1}, H_i) + 2 = 12 i + 2 µs:
    # CPU-bound, step = 100·12 + 2 = 1202 µs, not the GPU's 200 µs nor the sum 1400 µs
    assert sum(op_times_s(short, hw, marks, table=tab, host_costs=NO_EXTRA)) == \
        pytest.approx(1202 * US, rel=1e-3)
    # then one long kernel (a 100 µs threshold_backward, 27 µs to issue) after 5 short ones:
    # H = 60, 87; G: 62 after the relus, it starts at max(62, 87) = 87, ends 187 µs
    mixed = [(0, "relu_", (0,), (), 0, 1000)] * 5 + [(0, "threshold_backward", (0,), (), 0, 1e6)]
    assert sum(op_times_s(mixed, hw, marks, table=tab, host_costs=NO_EXTRA)) == \
        pytest.approx(187 * US, rel=1e-3)
    # GPU-bound: 10 threshold_backward (100 µs each, issued every 27 µs): 27 + 10·100 = 1027 µs
    long = [(0, "threshold_backward", (0,), (), 0, 1e6)] * 10
    assert sum(op_times_s(long, hw, marks, table=tab, host_costs=NO_EXTRA)) == \
        pytest.approx(1027 * US, rel=1e-3)


def test_module_calls_and_autograd_nodes_are_charged_once_each_then_scaled():
    tab = _table()
    costs = {"module_call_s": 1 * US, "autograd_node_s": 4 * US, "accumulate_grad_s": 10 * US,
             "scale": {"F": 2.0, "B": 3.0}}
    # forward: a module (1 µs) whose first op is relu_ (12 µs), a view (no kernel, no cost), a
    # second relu_ under a mark without a module: (1 + 12)·2, 0, 12·2.
    # backward: a node (4 µs) with a threshold_backward (27 µs), then an AccumulateGrad mark
    # with no op and a node whose add (8 µs) carries both: (4 + 27)·3, (10 + 4 + 8)·3
    marks = [("relu", "F", "ReLU", 0), ("<model>", "F", "", 0),
             ("ReluBackward0", "B", "ReluBackward0@1", 0),
             ("p", "B", "AccumulateGrad@-1", 0), ("AddBackward0", "B", "AddBackward0@2", 0)]
    ops = [(0, "relu_", (0,), (), 0, 1000), (0, "view", (0,), (), 0, 1000),
           (1, "relu_", (0,), (), 0, 1000), (2, "threshold_backward", (0,), (), 0, 1e6),
           (4, "add", (0, 1), (2,), 0, 1000)]
    got = host_issue_s(ops, marks, tab, costs)
    assert got == pytest.approx([26 * US, 0.0, 24 * US, 93 * US, 66 * US])
    # a checkpoint's recomputation in backward: the module call (1 µs) and its relu_ (12 µs)
    # are forward work again, at the forward's factor: (1 + 12)·2
    marks.append(("recompute:relu", "B", "ReLU", 0))
    got = host_issue_s(ops + [(5, "relu_", (0,), (), 0, 1000)], marks, tab, costs)
    assert got[-1] == pytest.approx(26 * US)


def test_issue_cost_follows_the_shape_it_was_measured_at():
    # a conv family whose small calls cost 15 µs to issue and large ones 60 µs (more kernels)
    rows = [{"family": "convolution", "dtype": "float32", "math": "tf32", "cls": "k3x3s1",
             "flops": f, "bytes": f / 100, "ntensors": 0, "time_s": 1e-5 + f / 1e14,
             "host_s": h, "shape": "", "ops": ""}
            for f, h in ((1e6, 15e-6), (1e7, 15e-6), (1e11, 60e-6), (1e12, 60e-6))]
    tab = KernelTable(pd.DataFrame(rows))
    small = tab.issue_s("convolution", flops=2e6, nbytes=2e4, cls="k3x3s1", math_="tf32")
    big = tab.issue_s("convolution", flops=5e11, nbytes=5e9, cls="k3x3s1", math_="tf32")
    assert small == pytest.approx(15e-6, rel=0.05) and big == pytest.approx(60e-6, rel=0.05)


def test_h200_host_costs_are_the_probe_figures():
    # configs/kernels/h200_host_costs.csv (scripts/steptime_probe.py host on the H200):
    # nn.ReLU 7.9814 µs - F.relu 6.6548 µs; AddBackward0 chain 4.4124 µs per node; leaf chain
    # 7.9165 µs per node over 2 nodes per leaf: 2·7.9165 - 4.4124 = 11.4206 µs
    c = load_host_costs("h200")
    assert c["module_call_s"] == pytest.approx(1.3266e-6)
    assert c["autograd_node_s"] == pytest.approx(4.4124e-6)
    assert c["accumulate_grad_s"] == pytest.approx(11.4206e-6)


def test_pageable_copy_holds_the_host_and_the_stream_once():
    # save_on_cpu(pin_memory=False): the copy stages through the host thread, which returns
    # when the data has moved. relu_ (2 µs GPU, 12 µs issue) ends at 14 µs; the 1000 µs copy
    # whose host side takes 2000 µs starts at 14 and holds both until 2014; the next relu_ is
    # issued 12 µs later and ends at 2028 µs. (As an ordinary op the host and GPU parts would
    # add up: 12 + 2000 + 1000 + ... = 3026 µs.)
    rows = [{"family": "copy_d2h_pageable", "dtype": "float32", "math": "", "cls": "",
             "flops": 0, "bytes": nb, "ntensors": 0, "time_s": 1000 * US, "host_s": 2000 * US,
             "shape": "", "ops": ""} for nb in (1e3, 1e6, 1e9)]
    rows += [{"family": "relu_", "dtype": "float32", "math": "float32", "cls": "", "flops": 0,
              "bytes": nb, "ntensors": 0, "time_s": 2 * US, "host_s": 12 * US, "shape": "",
              "ops": ""} for nb in (1e3, 1e6, 1e9)]
    tab = KernelTable(pd.DataFrame(rows))
    marks = [("m", "F", "", 0)]
    ops = [(0, "relu_", (0,), (), 0, 1000), (0, "d2h_pageable", (0,), (), 0, 1e6),
           (0, "relu_", (0,), (), 0, 1000)]
    got = op_times_s(ops, load_hardware("h200"), marks, table=tab, host_costs=NO_EXTRA)
    assert sum(got) == pytest.approx(2028 * US, rel=1e-3)


def test_autocast_casts_cost_their_aten_call_and_item_reads_wait_for_the_gpu():
    rows = [{"family": fam, "dtype": "float32", "math": "float32", "cls": "", "flops": 0,
             "bytes": nb, "ntensors": 0, "time_s": gpu_s, "host_s": host_s, "shape": "",
             "ops": ""}
            for fam, gpu_s, host_s in (("relu_", 2 * US, 12 * US), ("clone", 2 * US, 6 * US),
                                       ("threshold_backward", 100 * US, 27 * US),
                                       ("copy_d2h_pageable", 1 * US, 20 * US))
            for nb in (1e3, 1e6, 1e9)]
    tab = KernelTable(pd.DataFrame(rows))
    # a Linear under autocast: two casts (aten _to_copy, family clone: 6 µs each) issued inside
    # the op they cast for open no mark: the module call (1 µs) is charged once, to the first
    # op; each cast costs its aten call alone (the old fitted per-op overhead is gone)
    costs = dict(NO_EXTRA, module_call_s=1 * US)
    ops = [(0, "_to_copy", (0,), (1,), 0, 1000), (0, "_to_copy", (2,), (3,), 0, 1000),
           (0, "relu_", (1,), (), 0, 1000)]
    got = host_issue_s(ops, [("lin", "F", "Linear", 0)], tab, costs)
    assert got == pytest.approx([7 * US, 6 * US, 12 * US])
    # GradScaler's found_inf.item(): a 100 µs kernel issued at 27 µs ends at 127; the read
    # waits for it, then costs a scalar pageable copy's issue (20 µs): the next relu_ is issued
    # at 127 + 20 + 12 = 159 and ends at 161 µs. A host tensor's .item() (a foreach step
    # counter, storage in host_sids) does not wait: the relu_ ends at 127 + 2 = 129 µs.
    hw = load_hardware("h200")
    marks = [("m", "F", "", 0)]
    ops = [(0, "threshold_backward", (0,), (), 0, 1e6), (0, "_local_scalar_dense", (5,), (), 0, 4),
           (0, "relu_", (0,), (), 0, 1000)]
    assert sum(op_times_s(ops, hw, marks, table=tab, host_costs=NO_EXTRA)) == \
        pytest.approx(161 * US, rel=1e-3)
    assert sum(op_times_s(ops, hw, marks, table=tab, host_costs=NO_EXTRA, host_sids={5})) == \
        pytest.approx(129 * US, rel=1e-3)
