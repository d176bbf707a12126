"""The host as a stream (issue 10 item 3) on hand-made programs: eager PyTorch issues every op
from one CPU thread, so a step is the makespan of two resources in series per op; the host's
cost per op is its aten call at its shape times its family's in-network ratio, plus the costs
per call, module call, autograd node, parameter and host read that real steps add."""
import numpy as np
import pandas as pd
import pytest

from snsim.hardware import load_hardware
from snsim.kernel_table import KernelTable, load_host_costs
from snsim.torchsim.opcost import host_issue_s, op_times_s

US = 1e-6
# the table's tight-loop issue costs alone: ratio 1, nothing per call, module, node or parameter
NO_EXTRA = {"innet": {"ratio": {"*": 1.0}, "per_call_s": {}, "per_module_s": 0.0,
                      "per_node_s": 0.0, "per_param_s": 0.0, "per_read_s": 0.0,
                      "per_accumulate_s": 0.0, "per_cat_input_s": 0.0}}
# rel=1e-3 below: GPU times of off-row sizes are interpolated (within 0.03% here); the patterns
# each test tells apart differ by 10% or more


_BASE = (("relu_", 2 * US, 12 * US), ("add", 2 * US, 8 * US),
         ("threshold_backward", 100 * US, 27 * US))


def _table(families=_BASE):
    """A table where each ``(family, time_s, host_s)`` takes exactly ``time_s`` on the GPU
    (flat in bytes) and its aten call costs ``host_s`` on the host at every size (copies, whose
    family starts ``copy_``, carry no math)."""
    rows = []
    for fam, gpu_s, host_s in families:
        for nb in (1e3, 1e6, 1e9):
            rows.append({"family": fam, "dtype": "float32",
                         "math": "" if fam.startswith("copy_") else "float32", "cls": "",
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


def test_pageable_copy_holds_the_host_and_the_stream_once():
    # save_on_cpu(pin_memory=False): the copy stages through the host thread, which returns
    # when the data has moved. relu_ (2 µs GPU, 12 µs issue) ends at 14 µs; the 1000 µs copy
    # whose host side takes 2000 µs starts at 14 and holds both until 2014; the next relu_ is
    # issued 12 µs later and ends at 2028 µs. (As an ordinary op the host and GPU parts would
    # add up: 12 + 2000 + 1000 + ... = 3026 µs.)
    tab = _table((("copy_d2h_pageable", 1000 * US, 2000 * US), ("relu_", 2 * US, 12 * US)))
    marks = [("m", "F", "", 0)]
    ops = [(0, "relu_", (0,), (), 0, 1000), (0, "d2h_pageable", (0,), (), 0, 1e6),
           (0, "relu_", (0,), (), 0, 1000)]
    got = op_times_s(ops, load_hardware("h200"), marks, table=tab, host_costs=NO_EXTRA)
    assert sum(got) == pytest.approx(2028 * US, rel=1e-3)


def test_autocast_casts_cost_their_aten_call_and_item_reads_wait_for_the_gpu():
    tab = _table((("relu_", 2 * US, 12 * US), ("clone", 2 * US, 6 * US),
                  ("threshold_backward", 100 * US, 27 * US),
                  ("copy_d2h_pageable", 1 * US, 20 * US)))
    # a Linear under autocast: two casts (aten _to_copy, family clone: 6 µs each) issued inside
    # the op they cast for open no mark: the module call (1 µs) is charged once, to the first
    # op; each cast costs its aten call alone (the old fitted per-op overhead is gone)
    costs = _innet(ratio={"*": 1.0}, per_call_s={}, per_module_s=1 * US)
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


def test_h200_plan_host_costs_are_the_least_squares_fit_of_the_checkpoint_probe():
    # configs/kernels/h200_checkpoint_costs.csv holds every run of scripts/steptime_probe.py
    # ckpt on the H200 (one chain of blocks per source and layers-per-block k). The fit is
    # recomputed here by numpy.polyfit, independently of fit_plan_host_costs' lstsq, per block:
    #   forward   checkpoint_F - plain_F           = a_F + b_F n   (n saved tensors)
    #   backward  checkpoint_B - plain_B - plain_F = a_B + b_B n   (the recomputed ops are ops)
    #   hooks     hooks_P - plain_P                = c_P n         (through the origin)
    # With the first two runs alone this gave a_F 147.57, b_F 20.860, a_B 444.17, b_B 5.680,
    # c_F 3.325, c_B 0.705 µs (worked by hand in an earlier version of this test).
    t = pd.read_csv("configs/kernels/h200_checkpoint_costs.csv")
    blocks = []
    for _, g in t.groupby(["source", "layers_per_block"]):
        v = {(r["name"], r["phase"]): r["host_s"] for _, r in g.iterrows()}
        if ("checkpoint", "F") in v:   # runs of the offloader's variants alone inform no more
            blocks.append((g["saved_tensors"].iloc[0], v))
    n = np.array([b[0] for b in blocks], dtype=float)
    dF = np.array([v["checkpoint", "F"] - v["plain", "F"] for _, v in blocks])
    dB = np.array([v["checkpoint", "B"] - v["plain", "B"] - v["plain", "F"] for _, v in blocks])
    bF, aF = np.polyfit(n, dF, 1)
    bB, aB = np.polyfit(n, dB, 1)
    hF = max(0.0, float((n * [v["hooks", "F"] - v["plain", "F"] for _, v in blocks]).sum()
                        / (n * n).sum()))
    hB = max(0.0, float((n * [v["hooks", "B"] - v["plain", "B"] for _, v in blocks]).sum()
                        / (n * n).sum()))
    c = load_host_costs("h200")
    # the chain's checkpoint costs, scaled by the in-network ratios measured in real blocks
    # (configs/kernels/h200_checkpoint_innet.csv, scripts/ckpt_parts_analyse.py)
    r = pd.read_csv("configs/kernels/h200_checkpoint_innet.csv").set_index("phase")["ratio"]
    assert c["checkpoint_innet"] == {"F": r["F"], "B": r["B"]}
    assert 1.0 < r["F"] < 2.0 and 1.0 < r["B"] < 2.0     # costlier in a network than a chain
    assert len(blocks) >= 4       # at least the two runs the hand figures came from
    assert c["checkpoint_call_s"]["F"] == pytest.approx(max(aF, 0.0) * r["F"], rel=1e-6,
                                                        abs=1e-9)
    assert c["checkpoint_saved_s"]["F"] == pytest.approx(max(bF, 0.0) * r["F"], rel=1e-6,
                                                         abs=1e-9)
    assert c["checkpoint_call_s"]["B"] == pytest.approx(max(aB, 0.0) * r["B"], rel=1e-6,
                                                        abs=1e-9)
    assert c["checkpoint_saved_s"]["B"] == pytest.approx(max(bB, 0.0) * r["B"], rel=1e-6,
                                                         abs=1e-9)
    assert c["hook_saved_s"]["F"] == pytest.approx(hF, rel=1e-6, abs=1e-9)
    assert c["hook_saved_s"]["B"] == pytest.approx(hB, rel=1e-6, abs=1e-9)
    # checkpoint costs the host more than a bare pair of hooks, per saved tensor and per call
    assert c["checkpoint_call_s"]["F"] > 0 and c["checkpoint_call_s"]["B"] > 0


# the checkpoint costs of the first two H200 probe runs (the hand fit quoted above), fixed so
# that the schedule below can be worked by hand whatever later runs do to the fit
HAND_COSTS = {"checkpoint_call_s": {"F": 147.57 * US, "B": 444.17 * US},
              "checkpoint_saved_s": {"F": 20.860 * US, "B": 5.680 * US},
              "hook_saved_s": {"F": 3.325 * US, "B": 0.705 * US}}


def test_checkpoint_host_charge_of_a_recorded_block_by_hand():
    # One checkpointed block of two relu_ (2 µs GPU, 12 µs issue each) that saves 10 tensors:
    # forward relu_ relu_, backward recomputes them, then two threshold_backward (100 µs GPU,
    # 27 µs issue). Events: the checkpoint call before op 0 (F, 10 saved), its recomputation
    # before op 2 (B, 10). With HAND_COSTS: F charge 147.57 + 10·20.860 = 356.17 µs, B charge
    # 444.17 + 10·5.680 = 500.97 µs; nothing scaled (NO_EXTRA).
    tab = _table()
    hw = load_hardware("h200")
    costs = {**NO_EXTRA, **HAND_COSTS}
    marks = [("blk", "F", "", 0), ("recompute:blk", "B", "", 0), ("blk", "B", "X@0", 0)]
    ops = [(0, "relu_", (0,), (), 0, 1000), (0, "relu_", (0,), (), 0, 1000),
           (1, "relu_", (0,), (), 0, 1000), (1, "relu_", (0,), (), 0, 1000),
           (2, "threshold_backward", (0,), (), 0, 1000),
           (2, "threshold_backward", (0,), (), 0, 1000)]
    events = [(0, "checkpoint", "F", 10), (2, "checkpoint", "B", 10)]
    host = host_issue_s(ops, marks, tab, costs, events=events)
    assert host == pytest.approx([368.17 * US, 12 * US, 512.97 * US, 12 * US, 27 * US,
                                  27 * US], rel=1e-3)
    # the schedule: host issues at 368.17, 380.17, 893.14, 905.14, 932.14, 959.14 µs; the GPU
    # runs the relu_s right after issue, then threshold_backward 932.14-1032.14 and
    # 1032.14-1132.14: the step is 1132.14 µs, of which 857.14 µs is checkpoint host work
    step = sum(op_times_s(ops, hw, marks, table=tab, host_costs=costs, host_events=events))
    assert step == pytest.approx(1132.14 * US, rel=1e-3)
    plain = sum(op_times_s(ops, hw, marks, table=tab, host_costs=costs))
    assert step - plain == pytest.approx(857.14 * US, rel=1e-3)


def test_side_stream_copies_overlap_compute_until_someone_waits_for_them():
    # The SuperNeurons offloader (plans.Offloader): a pinned D2H copy on its own stream (20000
    # µs GPU; its issue is the offloader's Python path, the plan's offload_copy event, none
    # here) after a relu_ (2 µs GPU, 12 µs issue), a relu_ that overlaps it, then the host
    # waits for the copy (copy_sync) and issues a last relu_.
    # relu_ 0: issued 12, runs 12-14 µs. The copy: issued at 12, waits for the compute stream
    # (14), runs 14-20014 µs, no share of the compute stream. relu_ 1: issued 24, runs from 24,
    # slowed by the copy in flight (pinned D2H k = 0.0429, configs/kernels/h200_copy_slowdown
    # .csv): 2 · 1.0429 = 2.0858 µs, ends 26.0858 (share 12.0858). The host resumes at 20014,
    # issues relu_ 2 at 20026, it runs 20026-20028: the step is 20028 µs.
    tab = _table((("copy_d2h_pinned", 20000 * US, 10 * US), ("relu_", 2 * US, 12 * US)))
    hw = load_hardware("h200")
    marks = [("m", "F", "", 0)]
    ops = [(0, "relu_", (0,), (), 0, 1000), (0, "d2h_pinned_async", (5,), (), 0, 1e6),
           (0, "relu_", (0,), (), 0, 1000), (0, "copy_sync", (5,), (), 0, 1e6),
           (0, "relu_", (0,), (), 0, 1000)]
    # (the table's copy model, a bandwidth fitted to the rows, gives T ~ 20000 µs: use it)
    t_copy = op_times_s(ops[1:2], hw, marks, table=tab, host=False)[0]
    assert t_copy == pytest.approx(20000 * US, rel=1e-2)
    got = op_times_s(ops, hw, marks, table=tab, host_costs=NO_EXTRA)
    assert got[:4] == pytest.approx([14 * US, 0.0, 12.0858 * US, 0.0], rel=1e-3)
    assert sum(got) == pytest.approx(28 * US + t_copy, rel=1e-6)
    # the offloader's Python around the copy (offload_copy, 10 µs in forward) before it: the
    # copy is issued at 22 and runs 22-20022, relu_ 1 issued 34 (share 22.0858), the host
    # resumes at 20022 and relu_ 2 ends at 20036
    costs = dict(NO_EXTRA, offload_copy_s={"F": 10 * US, "B": 0.0})
    got = op_times_s(ops, hw, marks, table=tab, host_costs=costs,
                     host_events=[(1, "offload_copy", "F", 1)])
    assert got[:4] == pytest.approx([14 * US, 0.0, 22.0858 * US, 0.0], rel=1e-3)
    assert sum(got) == pytest.approx(36 * US + t_copy, rel=1e-6)
    # the compute stream waits instead (copy_wait): relu_ 2 is issued at 36 µs but starts when
    # the copy ends (14 µs + T) and runs 2 µs: the step is 16 µs + T
    ops[3] = (0, "copy_wait", (5,), (), 0, 1e6)
    got = op_times_s(ops, hw, marks, table=tab, host_costs=NO_EXTRA)
    assert sum(got) == pytest.approx(16 * US + t_copy, rel=1e-6)


def test_superneurons_hook_costs_fit_per_conv_and_per_saved_tensor():
    # probe rows where the executor's conv forward hook costs 3 µs per convolution (k per
    # block) and its pack 2 µs / unpack 1 µs per saved tensor (10 k per block), on top of plain
    from snsim.kernel_table import fit_plan_host_costs
    from snsim.torchsim.opcost import plan_host_s
    rows = []
    for k in (1, 2, 4):
        base = {"F": 90 * k * US, "B": 120 * k * US}
        for ph in "FB":
            for name, extra in (("plain", 0.0), ("hooks", 0.0), ("checkpoint", 400 * US),
                                ("conv_hook", (3 * k if ph == "F" else 0) * US),
                                ("offloader", (2 if ph == "F" else 1) * 10 * k * US)):
                v = base[ph] + extra + (base["F"] if name == "checkpoint" and ph == "B" else 0)
                rows.append(dict(source="r", layers=k, saved=10.0 * k, name=name, phase=ph,
                                 host_s=v))
    c = fit_plan_host_costs(rows)
    assert c["conv_hook_call_s"]["F"] == pytest.approx(3 * US)
    assert c["conv_hook_call_s"]["B"] == pytest.approx(0.0, abs=1e-12)
    assert c["offloader_saved_s"] == pytest.approx({"F": 2 * US, "B": 1 * US})
    # a recomputation's conv hook costs what the forward's does; 5 unpacks 5 µs
    assert plan_host_s("conv_hook", "B", 2, c) == pytest.approx(6 * US)
    assert plan_host_s("offloader_hook", "B", 5, c) == pytest.approx(5 * US)
    # a preset whose probe lacks the offloader rows: the bare hook's cost, a lower bound
    assert plan_host_s("offloader_hook", "F", 5, {"hook_saved_s": {"F": 3 * US}}) == \
        pytest.approx(15 * US)
    assert "offload_copy_s" not in c          # no offloader_copies rows: not fitted


def test_offloader_copy_costs_fit_per_offloaded_tensor_beyond_its_hooks():
    # probe rows (another source, the offloader's variants alone: no checkpoint rows) where
    # each of the k convolutions' outputs copied out costs 100 µs in forward and its prefetch
    # 70 µs in backward, on top of the offloader's hooks (2 / 1 µs per saved tensor) and its
    # conv hook (3 µs per convolution in forward); hand figures: offload_copy_s = 100 / 70 µs
    from snsim.kernel_table import fit_plan_host_costs
    from snsim.torchsim.opcost import plan_host_s
    rows = []
    for src, names in (("r", ("plain", "hooks", "checkpoint")),
                       ("c", ("plain", "conv_hook", "offloader", "offloader_copies"))):
        for k in (1, 2, 4):
            base = {"F": 90 * k * US, "B": 120 * k * US}
            for ph in "FB":
                conv = (3 * k if ph == "F" else 0) * US
                hook = (2 if ph == "F" else 1) * 10 * k * US
                extra = {"plain": 0.0, "hooks": 0.0, "checkpoint": 400 * US + (
                    base["F"] if ph == "B" else 0), "conv_hook": conv, "offloader": hook,
                    "offloader_copies": conv + hook + (100 if ph == "F" else 70) * k * US}
                for name in names:
                    rows.append(dict(source=src, layers=k, saved=10.0 * k, name=name,
                                     phase=ph, host_s=base[ph] + extra[name]))
    c = fit_plan_host_costs(rows)
    assert c["offload_copy_s"] == pytest.approx({"F": 100 * US, "B": 70 * US})
    assert c["conv_hook_call_s"]["F"] == pytest.approx(3 * US)
    assert c["checkpoint_call_s"]["F"] == pytest.approx(400 * US)   # source c informs none
    assert plan_host_s("offload_copy", "B", 3, c) == pytest.approx(210 * US)
    assert plan_host_s("offload_copy", "F", 3, {}) == 0.0           # not timed: nothing


def test_selective_checkpoint_costs_fit_per_call_and_per_op():
    # probe rows where selective checkpointing adds 150 µs per call and 30 µs per op its policy
    # is asked about (4 per layer, k layers per block) in forward, 35 µs per op in backward
    # (no per-call term), on top of checkpoint: the fit recovers them and the charge of a
    # call of 13 ops (a Bottleneck) is 150 + 13 * 30 = 540 µs forward, 13 * 35 = 455 backward
    from snsim.kernel_table import fit_plan_host_costs
    from snsim.torchsim.opcost import plan_host_s
    rows = []
    for k in (1, 2, 4, 8):
        for ph in "FB":
            base = 90 * k * US
            ck = base + 400 * US
            sel = ck + ((150 + 30 * 4 * k) if ph == "F" else 35 * 4 * k) * US
            for name, v in (("plain", base), ("hooks", base), ("checkpoint", ck),
                            ("selective", sel)):
                rows.append(dict(source="r", layers=k, saved=10.0 * k, ops=4.0 * k,
                                 name=name, phase=ph, host_s=v))
    c = fit_plan_host_costs(rows)
    assert c["selective_call_s"]["F"] == pytest.approx(150 * US)
    assert c["selective_call_s"]["B"] == pytest.approx(0.0, abs=1e-12)
    assert c["selective_op_s"] == pytest.approx({"F": 30 * US, "B": 35 * US})
    assert plan_host_s("selective", "F", 13, c) == pytest.approx(540 * US)
    assert plan_host_s("selective", "B", 13, c) == pytest.approx(455 * US)
    # one op count per block: no way to split, all of it per op (through the origin)
    one = fit_plan_host_costs([r for r in rows if r["layers"] == 2] +
                              [dict(r, layers=3, saved=30.0) for r in rows
                               if r["layers"] == 2 and r["name"] != "selective"])
    assert "selective_call_s" not in one
    assert one["selective_op_s"]["F"] == pytest.approx((150 + 30 * 8) / 8 * US)


def test_checkpoint_argument_cost_fits_per_extra_tensor_argument():
    # probe rows where each tensor argument beyond the first adds 4 µs in forward and 12 µs
    # in backward to a checkpoint call (15 more arguments: 60 / 180 µs per block)
    from snsim.kernel_table import fit_plan_host_costs
    rows = []
    for k in (1, 2):
        for ph in "FB":
            ck = (90 + 400) * k * US
            extra = (4 if ph == "F" else 12) * 15 * US
            for name, v, a in (("plain", 90 * k * US, 1.0), ("hooks", 90 * k * US, 1.0),
                               ("checkpoint", ck, 1.0), ("checkpoint_args", ck + extra, 16.0)):
                rows.append(dict(source="r", layers=k, saved=10.0 * k, name=name, phase=ph,
                                 host_s=v, args=a))
    c = fit_plan_host_costs(rows)
    assert c["checkpoint_arg_s"] == pytest.approx({"F": 4 * US, "B": 12 * US})


def _innet(**kw):
    inn = {"ratio": {"*": 2.0, "relu_": 3.0}, "per_module_s": 5 * US,
           "per_call_s": {"F": 0.5 * US, "B": 0.25 * US}, "per_node_s": 4 * US,
           "per_param_s": 10 * US, "per_read_s": 1 * US, "per_accumulate_s": 0.0,
           "per_cat_input_s": 0.0}
    inn.update(kw)
    return dict(NO_EXTRA, innet=inn)


def test_in_network_costs_charge_each_call_module_node_and_parameter_once():
    tab = _table()
    # forward: a module (5 µs) whose relu_ costs 12 µs in the table, 3x in a step, plus 0.5 µs
    # per call with a kernel: 5 + 36 + 0.5; views (t, detach) nothing of their own (the
    # per-call figure holds them); an add (8 µs, the default ratio 2): 16 + 0.5.
    # backward: an AccumulateGrad node and a ReluBackward0 node (4 µs each) with its
    # threshold_backward (27 µs, ratio 2): 8 + 54 + 0.25.
    # optimizer: two parameters (AccumulateGrad marks) at 10 µs, charged to its first op, an
    # add, with the second AccumulateGrad node (4 µs: a mark without ops charges the next op):
    # 20 + 4 + 16 (no per-call figure in U); a step counter's .item() (a host tensor: no sync)
    # 1 µs; the second add 16
    marks = [("relu", "F", "ReLU", 0), ("p", "B", "AccumulateGrad@-1", 0),
             ("ReluBackward0", "B", "ReluBackward0@1", 0), ("q", "B", "AccumulateGrad@-2", 0),
             ("optimizer.step", "U", "", 0)]
    ops = [(0, "relu_", (0,), (), 0, 1000), (0, "t", (0,), (), 0, 1000),
           (0, "detach", (0,), (), 0, 1000), (0, "add", (0,), (1,), 0, 1000),
           (2, "threshold_backward", (0,), (), 0, 1e6),
           (4, "add", (0,), (1,), 0, 1000), (4, "_local_scalar_dense", (5,), (), 0, 8),
           (4, "add", (0,), (1,), 0, 1000)]
    got = host_issue_s(ops, marks, tab, _innet())
    assert got == pytest.approx([41.5 * US, 0.0, 0.0, 16.5 * US, 62.25 * US, 40 * US, 1 * US,
                                 16 * US])
    # a recomputation in backward is forward work: its module call and per-call figure
    marks.append(("recompute:relu", "B", "ReLU", 0))
    got = host_issue_s(ops + [(5, "relu_", (0,), (), 0, 1000)], marks, tab, _innet())
    assert got[-1] == pytest.approx(41.5 * US)


def test_engine_gradient_sums_and_cat_inputs_cost_the_engines_figures_not_a_python_call():
    tab = _table()
    # backward: a CatBackward0 node (4 µs) hands its two inputs' gradients on as slices (3 µs
    # each, per_cat_input_s), then the engine sums one of them into a gradient already waiting
    # (an add, op 3, in ``accumulations``): 7 µs (per_accumulate_s), not the add's Python
    # call (8 µs at ratio 2 plus 0.25 per call: 16.25); the engine's metadata calls around
    # the sum (a device query, op 3) launch nothing. An add the node's own formula issues
    # (op 4, not a sum) keeps the call cost. A slice in another node is a view: nothing.
    marks = [("cat", "B", "CatBackward0@3", 0), ("v", "B", "ViewBackward0@2", 0)]
    ops = [(0, "slice", (0,), (), 0, 1000), (0, "slice", (0,), (), 0, 1000),
           (0, "add", (0, 1), (2,), 0, 1000), (0, "device", (0,), (), 0, 0),
           (0, "add", (0, 1), (3,), 0, 1000), (1, "slice", (0,), (), 0, 1000)]
    costs = _innet(per_accumulate_s=7 * US, per_cat_input_s=3 * US)
    got = host_issue_s(ops, marks, tab, costs, accumulations={2, 3})
    assert got == pytest.approx([7 * US, 3 * US, 7 * US, 0.0, 16.25 * US, 4 * US])
    # without the sums marked, op 2 is a Python add again
    assert host_issue_s(ops, marks, tab, costs)[2] == pytest.approx(16.25 * US)


def test_in_network_costs_file_names_what_it_lacks(tmp_path):
    from snsim.errors import ConfigError
    from snsim.kernel_table import read_host_innet
    p = tmp_path / "x_host_innet.csv"
    p.write_text("kind,name,phase,value,n,source\nratio,*,,1.5,10,t\n"
                 "overhead,per_module,F,1e-6,3,t\n")
    with pytest.raises(ConfigError, match="lacks overhead per_call F"):
        read_host_innet(p)
    # the autograd engine's rows are required too (scripts/engine_host_probe.py)
    p.write_text("kind,name,phase,value,n,source\nratio,*,,1.5,10,t\n" + "".join(
        f"overhead,{n},{ph},1e-6,3,t\n" for n, ph in (
            ("per_module", "F"), ("per_call", "F"), ("per_node", "B"), ("per_call", "B"),
            ("per_param", "U"), ("per_read", "U"))))
    with pytest.raises(ConfigError, match="lacks overhead per_accumulate B, overhead "
                                          "per_cat_input B"):
        read_host_innet(p)
    p.write_text("kind,name,phase,value,n,source\nratio,*,,fast,10,t\n")
    with pytest.raises(ConfigError, match=r"x_host_innet.csv:2: needs kind, name, phase and a "
                                          r"numeric value"):
        read_host_innet(p)
    p.write_text("kind,name,phase,value,n,source\nview,*,,1e-6,10,t\n")
    with pytest.raises(ConfigError, match=r"x_host_innet.csv:2: kind must be ratio or overhead"):
        read_host_innet(p)


def test_grad_scaler_costs_its_parameters_before_its_unscale_kernel(tmp_path):
    """GradScaler's per-parameter host cost (per_param_scaler_s) is charged to the
    _amp_foreach_non_finite_check_and_unscale_ call, once per parameter of the iteration
    (two AccumulateGrad marks: 2 x 14 us on top of the call's own 8 us x 2), and nowhere
    without a scaler; a file without the row reads 0, one with it its value."""
    from snsim.kernel_table import read_host_innet
    tab = _table()
    marks = [("p", "B", "AccumulateGrad@-1", 0), ("q", "B", "AccumulateGrad@-2", 0),
             ("optimizer.step", "U", "", 0)]
    ops = [(2, "_amp_foreach_non_finite_check_and_unscale_", (0,), (), 0, 1000),
           (2, "add", (0,), (1,), 0, 1000)]
    base = host_issue_s(ops, marks, tab, _innet())
    got = host_issue_s(ops, marks, tab, _innet(per_param_scaler_s=14 * US))
    assert got[0] - base[0] == pytest.approx(28 * US) and got[1] == base[1]
    assert host_issue_s(ops[1:], marks, tab, _innet(per_param_scaler_s=14 * US)) == \
        pytest.approx(host_issue_s(ops[1:], marks, tab, _innet()))
    rows = ("kind,name,phase,value,n,source\nratio,*,,1.5,10,t\n"
            + "".join(f"overhead,{n},{p},1e-6,3,t\n" for n, p in (
                ("per_module", "F"), ("per_call", "F"), ("per_node", "B"), ("per_call", "B"),
                ("per_param", "U"), ("per_read", "U"), ("per_accumulate", "B"),
                ("per_cat_input", "B"))))
    p = tmp_path / "x_host_innet.csv"
    p.write_text(rows)
    assert read_host_innet(p)["per_param_scaler_s"] == 0.0
    p.write_text(rows + "overhead,per_param_scaler,U,1.4e-05,1,t\n")
    assert read_host_innet(p)["per_param_scaler_s"] == pytest.approx(1.4e-5)


def test_synchronous_pinned_copy_holds_the_host_until_it_has_run():
    # save_on_cpu(pin_memory=True)'s pack on torch 2.11: copy_ without non_blocking. A 100 µs
    # kernel (issued at 27, ends 127), the 1000 µs copy (issued at 37, runs 127-1127), then a
    # relu_ the host issues only after the copy returns: 1127 + 12 = 1139, ends 1141 µs. The
    # same copy non-blocking lets the relu_ queue behind it: it ends at 1127 + 2 = 1129 µs.
    sync, free = _kernel_copy_relu(_table((("copy_d2h_pinned", 1000 * US, 10 * US),
                                           ("relu_", 2 * US, 12 * US),
                                           ("threshold_backward", 100 * US, 27 * US))))
    assert sync == pytest.approx(1141 * US, rel=1e-3)
    assert free == pytest.approx(1129 * US, rel=1e-3)


def _kernel_copy_relu(tab):
    """The step of a 100 us kernel, a 1 MB pinned D2H copy of its output (blocking, then
    non-blocking) and a relu_ after it, priced with ``tab``: ``(blocking, non-blocking)``."""
    marks = [("m", "F", "", 0)]
    kernel = (0, "threshold_backward", (0,), (1,), 0, 1000)
    relu = (0, "relu_", (1,), (), 0, 1000)
    hw = load_hardware("h200")
    return tuple(sum(op_times_s([kernel, (0, name, (1,), (), 0, 1e6), relu], hw, marks,
                                table=tab, host_costs=NO_EXTRA))
                 for name in ("d2h_pinned_sync", "d2h_pinned"))


def test_blocking_pinned_copy_returns_after_the_tables_round_trip():
    # calibrate's sync_d2h_pinned rows: the blocking copy's wall from an idle GPU, 1015 us,
    # against the non-blocking copy's 10 us issue and 1000 us run: the thread comes back 5 us
    # after the copy has run (KernelTable.sync_wake_s), so the relu_ of the test above ends
    # 5 us later (1146 us); the non-blocking copy is unchanged (1129 us)
    tab = _table((("copy_d2h_pinned", 1000 * US, 10 * US), ("sync_d2h_pinned", 1015 * US, 1015 * US),
                  ("relu_", 2 * US, 12 * US), ("threshold_backward", 100 * US, 27 * US)))
    assert tab.sync_wake_s(10**6) == pytest.approx(5 * US, rel=1e-3)
    sync, free = _kernel_copy_relu(tab)
    assert sync == pytest.approx(1146 * US, rel=1e-3)
    assert free == pytest.approx(1129 * US, rel=1e-3)
    # a table without the rows (before calibrate's pack group): no wake, no allocation
    assert _table().sync_wake_s(10**6) == 0.0 and _table().pinned_alloc_s() == 0.0


def test_pinned_pack_costs_the_tables_allocation_at_the_in_network_ratio():
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.opcost import plan_host_s
    costs = load_host_costs("h200")
    alloc = load_kernel_table("h200").pinned_alloc_s()
    assert 3 * US < alloc < 12 * US     # the H200's tight loop: 6.0-6.6 us at every size
    per = costs["pinned_pack_s"]["F"]
    assert per == pytest.approx(alloc * costs["innet"]["ratio"]["*"])
    assert plan_host_s("pinned_pack", "F", 3, costs) == pytest.approx(3 * per)
    assert plan_host_s("pinned_pack", "B", 3, costs) == 0.0


def test_idle_gaps_attributes_each_gpu_gap_to_what_ended_it():
    """scripts/idle_gaps.py on a hand-made trace of one step (us): the launching thread
    (tid 1) starts the step at 0; kernel 1 (launched at 10) runs 20-60: a 20 us start gap;
    kernel 2, launched at 100 inside aten::conv after the GPU went idle at 60, runs 110-300:
    a 50 us launch gap named aten::conv; kernel 3, launched at 200 (before 300), runs
    350-400: a 50 us wait gap (the GPU waited on something else); a 3 us gap is below the
    threshold."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "idle_gaps.py"
    spec = importlib.util.spec_from_file_location("idle_gaps", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def x(cat, name, ts, dur, tid=1, **args):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid,
                "args": args}
    events = [x("user_annotation", "snsim_step", 0, 1000),
              x("cpu_op", "aten::conv", 95, 10),
              x("cuda_runtime", "cudaLaunchKernel", 10, 2, correlation=1),
              x("cuda_runtime", "cudaLaunchKernel", 100, 2, correlation=2),
              x("cuda_runtime", "cudaLaunchKernel", 200, 2, correlation=3),
              x("cuda_runtime", "cudaLaunchKernel", 210, 2, correlation=4),
              x("kernel", "k1", 20, 40, tid=7, correlation=1),
              x("kernel", "k2", 110, 190, tid=7, correlation=2),
              x("kernel", "k3", 350, 50, tid=7, correlation=3),
              x("kernel", "k4", 403, 7, tid=7, correlation=4)]
    steps, rows = mod.gaps(events, min_gap_us=5.0)
    assert rows == [("start", "F", "<python>", 20), ("launch", "F", "aten::conv", 50),
                    ("wait", "F", "<python>", 50)]
    (lo, first, end, busy, _span), = steps
    assert (lo, first, end, busy) == (0, 20, 410, 40 + 190 + 50 + 7)


def test_checkpoint_innet_ratio_file_is_checked(tmp_path):
    # a ratio file with a bad row stops with one line naming the file, the row and the rule
    from snsim.errors import ConfigError
    from snsim.kernel_table import read_innet_ratio
    good = tmp_path / "ok.csv"
    good.write_text("phase,ratio,n,source\nF,1.25,3,x\nB,1.5,3,x\n")
    assert read_innet_ratio(good) == {"F": 1.25, "B": 1.5}
    for body in ("F,-1,3,x\n", "U,1.2,3,x\n", "F,abc,3,x\n", "F,inf,3,x\n"):
        bad = tmp_path / "bad.csv"
        bad.write_text("phase,ratio,n,source\n" + body)
        with pytest.raises(ConfigError, match=r"bad\.csv:2: needs phase F or B and ratio"):
            read_innet_ratio(bad)


def test_reprice_chain_costs_are_the_probe_fit_without_the_ratio():
    """scripts/reprice_plans.py --chain prices with the chain probe's own fit: the ratios of
    configs/kernels/h200_checkpoint_innet.csv divided out of load_host_costs', the other
    mechanisms' costs untouched."""
    import importlib.util
    import pathlib
    from snsim.kernel_table import fit_plan_host_costs, read_plan_host_rows
    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "reprice_plans.py"
    spec = importlib.util.spec_from_file_location("reprice_plans", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = load_host_costs("h200")
    chain = mod.chain_costs(c)
    fit = fit_plan_host_costs(read_plan_host_rows("configs/kernels/h200_checkpoint_costs.csv"))
    assert "checkpoint_innet" not in chain and "checkpoint_innet" in c
    for key in ("checkpoint_call_s", "checkpoint_saved_s", "checkpoint_arg_s", "hook_saved_s",
                "selective_call_s"):
        for ph in "FB":
            assert chain[key][ph] == pytest.approx(fit[key][ph], rel=1e-9)
    assert c["checkpoint_call_s"]["B"] > chain["checkpoint_call_s"]["B"]
    # the offloader's backward costs likewise (configs/kernels/h200_offload_innet.csv)
    assert "offload_innet" not in chain and "offload_innet" in c
    for key in ("offload_copy_s", "offloader_saved_s"):
        for ph in "FB":
            assert chain[key][ph] == pytest.approx(fit[key][ph], rel=1e-9)
    assert c["offload_copy_s"]["B"] == pytest.approx(
        fit["offload_copy_s"]["B"] * c["offload_innet"]["B"], rel=1e-9)
    assert c["offload_copy_s"]["F"] == pytest.approx(fit["offload_copy_s"]["F"], rel=1e-9)


def test_relevel_host_scales_a_group_to_the_ratio_timed_in_one_process(tmp_path):
    """scripts/relevel_host.py: a table whose fp16 'net ' convolutions cost 1.5x its bf16
    ones to issue (two leases), and a one-process run where they cost 1.1x: the fp16 rows'
    host_s are scaled by 1.1 / 1.5 (hand calculation), the bf16 rows and other groups keep
    theirs, the header says so, and a second run changes nothing."""
    import importlib.util
    import pathlib

    from snsim.torchsim.calibrate import read_table, write_table
    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "relevel_host.py"
    spec = importlib.util.spec_from_file_location("relevel_host", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def row(math_mode, shape, host_s):
        return {"family": "convolution", "dtype": "x", "math": math_mode, "cls": "k1x1s1",
                "flops": "1", "bytes": "1", "ntensors": "", "time_s": "1e-05",
                "host_s": repr(host_s), "shape": shape, "ops": ""}
    table = tmp_path / "t.csv.gz"
    write_table([row("bf16", "net a", 20e-6), row("fp16", "net a", 30e-6),
                 row("bf16", "net b", 40e-6), row("fp16", "net b", 60e-6),
                 row("fp16", "stage a", 30e-6)], {"gpu": "G"}, table)
    same = tmp_path / "same.csv.gz"
    write_table([row("bf16", "net a", 10e-6), row("fp16", "net a", 11e-6),
                 row("bf16", "net b", 50e-6), row("fp16", "net b", 55e-6)],
                {"gpu": "H", "date": "D"}, same)
    args = ["--table", str(table), "--same-process", str(same), "--prefix", "net ",
            "--math", "fp16", "--reference", "bf16", "--families", "convolution",
            "--date", "2026-12-05"]
    assert mod.main(args) == 0
    rows, meta = read_table(table)
    host = {(r["math"], r["shape"]): float(r["host_s"]) for r in rows}
    assert host[("fp16", "net a")] == pytest.approx(30e-6 * 1.1 / 1.5, rel=1e-3)
    assert host[("fp16", "net b")] == pytest.approx(60e-6 * 1.1 / 1.5, rel=1e-3)
    assert host[("bf16", "net a")] == 20e-6 and host[("fp16", "stage a")] == 30e-6
    assert "x0.7333 on 2 rows" in meta["host_relevelled_convolution_fp16_net"]
    assert mod.main(args) == 0
    assert read_table(table) == (rows, meta)
