"""CI gate: replay the committed H200 captures and hold SPEC §12.4's bounds (no torch, no GPU).

Every trace in ``traces/h200/*.json.gz`` is a real training step captured on an H200. Its
exact alloc/free order replayed through snsim's ``pytorch`` allocator model must give the
measured allocated peak within 2% on average (5% at most) and the reserved peak within 5% on
average; the engine's step time over the captured per-step times must be within 10% on average.
"""
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from snsim.captured import replay_capture
from snsim.policies import POLICIES
from snsim.torchsim.validate import GATES, expand, summarize, validate, validate_trace
from snsim.trace import load_trace_doc, read_trace

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces" / "h200"
FILES = expand([str(TRACES)])


@pytest.fixture(scope="module")
def rows():
    assert FILES, f"no committed captures in {TRACES}"
    return validate(FILES)


def test_at_least_the_required_set_is_committed(rows):
    nets = {(r["network"], r["policy"]) for r in rows}
    for net in ("alexnet", "vgg16", "resnet50", "resnet101", "resnet152", "densenet121",
                "inception_v3"):
        batches = {r["batch"] for r in rows if r["network"] == net and r["policy"] == "default"}
        assert len(batches) >= 2, f"{net}: need two batch sizes, have {sorted(batches)}"
    assert any(n.startswith("resnet_") for n, _ in nets), "a very deep ResNet is missing"
    for net in ("resnet50", "vgg16"):
        for pol in ("recompute", "offload"):
            assert (net, pol) in nets, f"no executed {pol} plan for {net}"


@pytest.mark.parametrize("quantity", sorted(GATES))
def test_gate(rows, quantity):
    s = summarize(rows)[quantity]
    worst = max(rows, key=lambda r: abs(r[_col(quantity)]))
    assert s["ok"], (f"{quantity}: mean |err| {s['mean_abs_pct']:.2f}% (gate "
                     f"{s['mean_gate_pct']}%), max |err| {s['max_abs_pct']:.2f}% (gate "
                     f"{s['max_gate_pct']}%); worst {worst['trace']} "
                     f"{worst[_col(quantity)]:+.2f}%")


# and no single capture may leave the bounds either
PER_TRACE_BOUND_PCT = {"err_allocated_pct": 5.0, "err_reserved_pct": 5.0, "err_step_time_pct": 10.0}


@pytest.mark.parametrize("column", sorted(PER_TRACE_BOUND_PCT))
def test_every_capture_within_bounds(rows, column):
    bad = [f"{r['trace']} {r[column]:+.2f}%" for r in rows
           if abs(r[column]) > PER_TRACE_BOUND_PCT[column]]
    assert not bad, f"{column} beyond {PER_TRACE_BOUND_PCT[column]}%: {', '.join(bad)}"


def _col(quantity):
    return {"peak_allocated": "err_allocated_pct", "peak_reserved": "err_reserved_pct",
            "step_time": "err_step_time_pct"}[quantity]


def test_every_error_is_a_number(rows):
    for r in rows:
        for c in ("err_allocated_pct", "err_reserved_pct", "err_step_time_pct"):
            assert not math.isnan(r[c]), f"{r['trace']}: {c} is NaN"


def test_replay_is_deterministic():
    doc = load_trace_doc(FILES[0])
    a = replay_capture(doc["program"], "h200")
    b = replay_capture(doc["program"], "h200")
    assert a.to_frame().drop(columns="sim_wall_s").equals(b.to_frame().drop(columns="sim_wall_s"))


def test_requested_peak_matches_the_allocator_exactly(rows):
    # the exact event order reproduces torch's requested_bytes.all.peak for plain runs; where
    # the recorder saw events the allocator trace did not match (convnext_tiny: 2), their frees
    # sit at the last matched step, which can only hold memory longer (convnext +0.8%, vit +2.2%)
    for r in rows:
        if r["policy"] == "default":
            notes = load_trace_doc(TRACES / r["trace"])["program"]["notes"]
            if notes.get("unmatched_recorder_events", 0) == 0:
                assert r["pred_requested_bytes"] == pytest.approx(r["meas_requested_bytes"],
                                                                  rel=1e-3), r["trace"]
            else:
                assert 0 <= r["pred_requested_bytes"] / r["meas_requested_bytes"] - 1 < 0.03


def test_captures_carry_provenance():
    for f in FILES:
        prov = load_trace_doc(f)["provenance"]
        assert prov["kind"] == "measured"
        for key in ("gpu", "torch", "cuda", "cudnn", "date", "model", "batch"):
            assert prov.get(key) not in (None, ""), f"{f}: provenance.{key} missing"


def test_a_capture_names_the_preset_of_its_gpu():
    from snsim.hardware import load_hardware
    from snsim.torchsim.capture import device_preset
    for f in FILES:
        prov = load_trace_doc(f)["provenance"]
        assert device_preset(prov["gpu"]) == prov["hardware"], f
    # device names as torch.cuda.get_device_name() gives them; each preset loads
    names = {"NVIDIA H100 80GB HBM3": "h100", "NVIDIA H200": "h200",
             "NVIDIA A100-SXM4-40GB": "a100-40gb", "Tesla K40c": "k40c", "NVIDIA L4": ""}
    for name, preset in names.items():
        assert device_preset(name) == preset
        assert not preset or load_hardware(preset).name == preset


def test_traces_are_small():
    total = sum(os.path.getsize(f) for f in FILES)
    assert all(os.path.getsize(f) < 2 * 2**20 for f in FILES)
    assert total < 30 * 2**20


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_runs_on_a_capture(policy):
    # the same engine runs every registered policy on a captured program (issue 8)
    p = read_trace(os.path.join(ROOT, "traces", "h200", "resnet50_b128.json.gz"))
    base = replay_capture(p, "h200")
    res = replay_capture(p, "h200", policy=policy)
    assert res.feasible and res.step_time_s >= 0.99 * base.step_time_s
    if policy in ("recompute", "chen_sqrt", "superneurons", "vdnn"):
        assert res.peak_allocated_bytes < base.peak_allocated_bytes, policy
    if policy in ("recompute", "chen_sqrt"):
        assert res.recompute_time_s > 0 and res.recomputed_layers


def test_engine_equals_the_event_order_of_every_capture():
    # op-granular steps + the capture's warm-up: the liveness plan frees exactly where PyTorch
    # did, so the engine's peaks equal the real allocator's (docs/VALIDATION.md, 0.031% max)
    for f in FILES:
        doc = load_trace_doc(f)
        res = replay_capture(read_trace(f), "h200")
        m = doc["measured"]
        exact = doc["program"]["notes"].get("unmatched_recorder_events", 0) == 0
        bound = 1e-3 if exact else 3e-2   # see test_requested_peak_matches_the_allocator_exactly
        assert abs(res.peak_allocated_bytes / m["peak_allocated_bytes"] - 1) < bound, f
        if exact:
            assert res.peak_reserved_bytes == m["peak_reserved_bytes"], f
        else:
            assert abs(res.peak_reserved_bytes / m["peak_reserved_bytes"] - 1) < bound, f


def test_validate_needs_no_torch(tmp_path):
    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from snsim.cli import main\n"
        f"sys.exit(main(['validate', {str(FILES[0])!r}, '--csv', {str(tmp_path / 'v.csv')!r}]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "v.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and "err_allocated_pct" in rows[0]


def test_validate_cli_table_and_csv(tmp_path, capsys):
    from snsim.cli import main
    assert main(["validate", str(FILES[0]), str(FILES[-1]), "--csv", str(tmp_path / "a.csv"),
                 "--check"]) == 0
    out = capsys.readouterr().out
    assert "alloc err %" in out and "peak_allocated" in out
    assert len(list(csv.DictReader(open(tmp_path / "a.csv")))) == 2


def test_validate_rejects_a_trace_without_ground_truth(tmp_path):
    from snsim.errors import TraceError
    doc = load_trace_doc(FILES[0])
    doc.pop("measured")
    p = tmp_path / "x.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match="measured.peak_allocated_bytes is missing"):
        validate_trace(p)


def test_validate_missing_files_is_one_line_error(capsys):
    from snsim.cli import main
    assert main(["validate", "no/such/dir/*.json.gz"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("snsim: error:") and "\n" not in err


def test_checkpoint_of_every_block_on_a_plain_capture_predicts_the_executed_run():
    # the plain resnet50 b256 capture under the engine's `checkpoint` plan (every Bottleneck)
    # against the real run of the same plan (resnet50_b256_recompute: one non-reentrant
    # torch.utils.checkpoint per residual block), measured on the H200: 8.927 GiB allocated
    plain = read_trace(os.path.join(TRACES, "resnet50_b256.json.gz"))
    executed = load_trace_doc(os.path.join(TRACES, "resnet50_b256_recompute.json.gz"))
    r = replay_capture(plain, "h200", policy="checkpoint", policy_options={"modules": "Bottleneck"})
    m = executed["measured"]["peak_allocated_bytes"]
    assert r.options["wrapped"] == 16
    assert abs(r.peak_allocated_bytes / m - 1) < 0.01
    assert r.recompute_time_s > 0


def test_checkpoint_options_are_checked():
    from snsim.errors import ConfigError
    p = read_trace(os.path.join(TRACES, "resnet50_b128.json.gz"))
    with pytest.raises(ConfigError, match="does not have; its block classes: .*Bottleneck"):
        replay_capture(p, "h200", policy="checkpoint", policy_options={"modules": "Block"})
    every2 = replay_capture(p, "h200", policy="checkpoint", policy_options={"every": 2})
    every1 = replay_capture(p, "h200", policy="checkpoint", policy_options={"every": 1})
    assert every2.options["wrapped"] == 8 and every1.options["wrapped"] == 16
    assert every1.peak_allocated_bytes < every2.peak_allocated_bytes


def test_cpu_offload_moves_every_saved_activation_and_serialises_the_copies():
    p = read_trace(os.path.join(TRACES, "vgg16_b64.json.gz"))
    base = replay_capture(p, "h200")
    pinned = replay_capture(p, "h200", policy="cpu_offload")
    pageable = replay_capture(p, "h200", policy="cpu_offload",
                              policy_options={"pin_memory": False})
    assert pinned.peak_allocated_bytes < base.peak_allocated_bytes
    assert pinned.d2h_bytes == pinned.h2d_bytes > 0
    # no overlap: the step grows by at least the copy time at the pinned bandwidth
    from snsim.hardware import load_hardware
    hw = load_hardware("h200")
    floor = pinned.d2h_bytes / hw.bandwidth_bytes_per_s("d2h", True)
    assert pinned.step_time_s >= base.step_time_s + floor
    assert pageable.step_time_s > pinned.step_time_s


def test_cpu_offload_waits_for_its_packs_where_the_captures_torch_blocks():
    # VGG16 b64 was captured with torch 2.11, whose pinned save_on_cpu pack copies with a
    # blocking copy_: the engine's plan makes the launching thread wait for each pack's copy
    # (and return sync_wake_s later) and charges each pack its pinned host allocation; the
    # same capture said to come from torch 2.12 (a non-blocking pack) only charges the
    # allocation, so its step is no longer; a pageable plan allocates nothing pinned
    import copy
    from snsim.hardware import load_hardware
    from snsim.policies import get_policy
    from snsim.policies.cpu_offload import packs_block
    hw = load_hardware("h200")
    p = read_trace(os.path.join(TRACES, "vgg16_b64.json.gz"))
    assert p.extra["provenance"]["torch"].startswith("2.11") and packs_block(p)
    plan = get_policy("cpu_offload").plan(p, hw, hw.budget_bytes)
    assert plan.blocking_packs
    hooks = {(i, n) for i, m, ph, n in plan.host_events if m == "saved_tensors_hook"
             and ph == "F"}
    allocs = {(i, n) for i, m, ph, n in plan.host_events if m == "pinned_pack"}
    assert allocs == hooks and allocs
    later = copy.copy(p)
    later.extra = {**p.extra, "provenance": {**p.extra["provenance"], "torch": "2.12.0"}}
    assert not get_policy("cpu_offload").plan(later, hw, hw.budget_bytes).blocking_packs
    blocking = replay_capture(p, "h200", policy="cpu_offload")
    free = replay_capture(later, "h200", policy="cpu_offload")
    assert blocking.step_time_s >= free.step_time_s
    pageable = get_policy("cpu_offload", pin_memory=False).plan(p, hw, hw.budget_bytes)
    assert not pageable.blocking_packs
    assert not [e for e in pageable.host_events if e[1] == "pinned_pack"]


@pytest.mark.parametrize("policy", ["checkpoint", "cpu_offload"])
def test_another_plan_makes_the_first_iterations_static_tensors_where_the_capture_did(policy):
    # gpt_b8's capture recorded its warm-up: parameters and input before the first iteration;
    # in it, cuBLAS's workspace at the first backward GEMM (lm_head's) and one momentum buffer
    # per parameter (148, SGD momentum) in the first optimizer step. Under another plan the
    # engine makes each at the same point of its own first iteration (after as many of the
    # program's tensors, recomputed ones not counted), not at setup; the captured plan replays
    # the recorded history as is.
    from snsim.engine.core import Engine, state_positions
    from snsim.hardware import load_hardware
    from snsim.policies import get_policy
    hw = load_hardware("h200")
    p = read_trace(os.path.join(TRACES, "gpt_b8.json.gz"))
    due = state_positions(p)
    kinds = [p.static_tensors[int(ev[1])].kind for _, ev in due]
    assert kinds.count("optimizer_state") == 148 and "buffer" in kinds
    e = Engine(p, get_policy(policy).plan(p, hw, hw.budget_bytes), hw, allocator="pytorch")
    assert len(e.deferred) == len(due)
    made = []
    alloc = e._alloc

    def spy(t, now, nbytes=None, category=None, label=None):
        if label and label.startswith("static tensor"):
            made.append((label, e.own_made, e.p.steps[e.cur]))
        return alloc(t, now, nbytes, category, label)
    e._alloc = spy
    r = e.run()
    assert r.feasible and len(made) == len(due) and e.deferred == []
    for (n, ev), (label, own, step) in zip(due, made):
        st = p.static_tensors[int(ev[1])]
        assert label == f"static tensor {st.name} ({st.kind})"
        assert n <= own   # never before its turn, and at the first step that reaches it
        if st.kind == "optimizer_state":   # after the update step's own temporaries
            assert step.phase == "U" and own == n
        else:
            assert step.type == "FC" or step.phase == "F"
    assert e.n_static_allocs == len([s for s in p.static_tensors if s.nbytes > 0])
    live = get_policy("liveness").plan(p, hw, hw.budget_bytes)
    assert Engine(p, live, hw, allocator="pytorch").deferred == []


def test_cpu_offload_unpacks_once_per_node_and_packs_once_per_saving_op():
    # VGG16 b64: features.0's output, ReLU'd in place (64 x 64 x 224 x 224 fp32 = 822083584 B,
    # tensor 0 of the capture), is saved by the ReLU (its result) and by conv features.2 (its
    # input): save_on_cpu packs it twice in forward and each backward node unpacks its own
    # device copy, freed when the node ends
    from snsim.hardware import load_hardware
    from snsim.plan import Offload, Prefetch
    from snsim.policies import get_policy
    hw = load_hardware("h200")
    p = read_trace(os.path.join(TRACES, "vgg16_b64.json.gz"))
    assert p.tensors[0].nbytes == 64 * 64 * 224 * 224 * 4
    plan = get_policy("cpu_offload").plan(p, hw, hw.budget_bytes)
    mine = [type(i).__name__ for i in plan.instructions
            if type(i) in (Offload, Prefetch) and i.tensor == 0]
    # out after forward, back for conv features.2's node, dropped after it, back for the ReLU's
    assert mine == ["Offload", "Prefetch", "Offload", "Prefetch"]
    assert sum(n for k, n in plan.extra_packs) >= 822083584
    r = replay_capture(p, "h200", policy="cpu_offload")
    assert r.d2h_bytes == r.h2d_bytes


def test_cpu_offload_packs_what_backward_reads_that_no_tensor_owns():
    # ViT-B/16 b64's plain capture holds buffers no tracked tensor owns from forward to
    # backward (a linear layer's contiguous copy of its transposed input, 36.9 MB per block):
    # save_on_cpu packs them like any saved tensor. The same plan executed on the H200
    # (plans/cpu_offload.json.gz, torch 2.11): 1633109504 B allocated; the engine was +10.9 %
    # while it kept those buffers on the device.
    from snsim.torchsim.validate import plan_runs
    name = "vit_b_16_b64_cpu_offload-pinmemorytrue"
    run = next(r for r in plan_runs(TRACES) if r["name"] == name)
    p = read_trace(os.path.join(TRACES, "vit_b_16_b64.json.gz"))
    r = replay_capture(p, "h200", policy="cpu_offload", policy_options={"pin_memory": True})
    assert abs(r.peak_allocated_bytes / run["measured"]["peak_allocated_bytes"] - 1) < 0.03


def test_latest_runs_takes_each_plans_newest_run_and_keeps_its_first(tmp_path):
    # validate.latest_runs over a suite and its re-run, by hand: the re-run's date wins, the
    # first run stays beside it, and a plan only the first folder ran keeps that run
    import gzip
    from snsim.torchsim.validate import latest_runs

    def bundle(folder, runs):
        (tmp_path / folder).mkdir()
        with gzip.open(tmp_path / folder / "suite.json.gz", "wt") as f:
            json.dump({"runs": runs}, f)
    a = {"name": "a", "status": "ok", "provenance": {"date": "2026-11-30T08:00"}}
    b = {"name": "b", "status": "ok", "provenance": {"date": "2026-11-30T08:00"}}
    a2 = {"name": "a", "status": "ok", "provenance": {"date": "2026-11-30T23:00"}}
    failed = {"name": "b", "status": "oom", "provenance": {"date": "2026-12-01T00:00"}}
    bundle("first", [a, b])
    bundle("again", [a2, failed])
    got = latest_runs(str(tmp_path), ("first", "again"))
    assert got["a"] == (a2, "again", a)
    assert got["b"] == (b, "first", b)


def _hold_issue_8s_memory_gates(df):
    """Issue 8's memory gates on rows of the engine's plans against executed runs:
    allocated mean |err| <= 1 %, max <= 3 %; reserved mean <= 3 %, max <= 8 %.

    DenseNet-121 b128 was the one run past the allocated max (-3.27 % under superneurons)
    until its plain run was captured again with the allocator's trace entries stamped with
    the aten call that made them (record.OP_TAG, 2026-12-03 19:15 UTC): the earlier captures
    put five of the six conv2-backward cuDNN workspaces of its first dense block on the op
    before (autograd's gradient sum), where the plan's peak did not see them. Now -1.57 %."""
    assert df["err_allocated_pct"].abs().mean() <= 1.0
    assert df["err_allocated_pct"].abs().max() <= 3.0
    assert df["err_reserved_pct"].abs().mean() <= 3.0
    assert df["err_reserved_pct"].abs().max() <= 8.0


def test_engine_plans_on_plain_captures_meet_issue_8s_gates():
    # issue 8's gates on the engine's checkpoint / cpu_offload / superneurons on the plain
    # captures against the latest executed run of the same plans on the H200
    # (docs/VALIDATION.md section 3): allocated mean |err| <= 1 %, max <= 3 %; reserved mean
    # <= 3 %, max <= 8 %; step time mean <= 10 %. When this was written (34 runs): 0.11 /
    # 3.27, 0.16 / 3.54, 6.57 %; with DenseNet-121's capture of 2026-12-03 19:15 UTC (its
    # workspaces on the ops that made them): 0.06 / 1.57, 0.16 / 3.54, 5.15 %; with every
    # plain_history capture's kernel times streamed with the host (19:55 UTC): 0.06 / 1.57,
    # 0.16 / 3.54, 5.32 % (max 20.25 %, 36.15 % before).
    from snsim.torchsim.validate import whatif_rows
    wf, _ = whatif_rows(TRACES)
    assert len(wf) >= 30 and set(wf["policy"]) == {"checkpoint", "cpu_offload", "superneurons"}
    _hold_issue_8s_memory_gates(wf)
    assert wf["err_step_time_pct"].abs().mean() <= 10.0
    # the executed runs come from the standard suite and its re-runs
    assert set(wf["executed"]) <= {"plans", "plans_standard_fresh", "plans_standard_mem7",
                                   "plans_standard_final"}


def test_checkpoint_replays_a_block_when_its_first_node_unpacks_anything_it_saved():
    # a Bottleneck's last ReLU saves its result, the block's output, which the next block
    # reads and the engine keeps; torch.utils.checkpoint saves it through its pack hook all
    # the same, so the ReLU's backward node (the block's first) replays the block before it
    # runs, not the later node that first reads a dropped activation
    from snsim.hardware import load_hardware
    from snsim.plan import Compute, Recompute
    from snsim.policies import get_policy
    hw = load_hardware("h200")
    p = read_trace(os.path.join(TRACES, "resnet50_b128.json.gz"))
    plan = get_policy("checkpoint", modules="Bottleneck").plan(p, hw, hw.budget_bytes)
    prog = plan.program or p
    ins = plan.instructions
    first_b = next(k for k, i in enumerate(ins) if type(i) is Compute
                   and prog.steps[i.step].phase == "B"
                   and prog.steps[i.step].name.startswith("layer4.2."))
    assert prog.steps[ins[first_b].step].name == "layer4.2.relu"
    replay = [k for k, i in enumerate(ins) if type(i) is Recompute
              and prog.steps[i.step].name.startswith("layer4.2.")]
    assert replay and max(replay) < first_b
    # the replay makes that output again as new storage (the recomputed bn3 output, then
    # added to and ReLU'd in place), held until the ReLU's node returns: one per Bottleneck
    remade = [r for r in plan.remade if r[3].endswith(" of layer4.2")]
    assert len(plan.remade) == 16 and len(remade) == 1
    first, last, t, _ = remade[0]
    assert first == last == ins[first_b].step
    assert prog.tensors[t].nbytes == 128 * 2048 * 7 * 7 * 4   # layer4's output, fp32
    # the ReLU's node reads the replay's copy: the output forward made dies after its last
    # reader outside the block, the average pool's forward (which saves only a shape)
    assert t not in prog.steps[first].deps
    _, last_use = prog.uses()
    assert prog.steps[last_use[t]].phase == "F" and prog.steps[last_use[t]].name == "avgpool"


@pytest.mark.parametrize("capture, policy", [("resnet50_b128.json.gz", "checkpoint"),
                                             ("gpt_b8.json.gz", "cpu_offload")])
def test_a_saved_hook_plan_replays_identically(tmp_path, capture, policy):
    # what the hooks add to a plan (its split program, the replay's remade storage, the
    # packs' staging copies, the unpacked weights) survives Plan.save / Plan.load
    from snsim.engine.core import run_plan
    from snsim.hardware import load_hardware
    from snsim.plan import Plan
    from snsim.policies import get_policy
    hw = load_hardware("h200")
    p = read_trace(os.path.join(TRACES, capture))
    plan = get_policy(policy).plan(p, hw, hw.budget_bytes)
    assert plan.remade or plan.staged_packs
    plan.save(tmp_path / "plan.json")
    loaded = Plan.load(tmp_path / "plan.json")
    assert (loaded.remade, loaded.staged_packs, loaded.unpacked) == \
        (plan.remade, plan.staged_packs, plan.unpacked)
    a = run_plan(p, plan, hw, allocator="pytorch")
    b = run_plan(p, loaded, hw, allocator="pytorch")
    assert (a.peak_allocated_bytes, a.peak_reserved_bytes, a.step_time_s) == \
        (b.peak_allocated_bytes, b.peak_reserved_bytes, b.step_time_s)


def test_superneurons_on_a_capture_is_the_plan_snsim_execute_runs():
    # on a capture (which records its module tree) superneurons is SuperNeurons placed on
    # module boundaries, as snsim execute runs it: ResNet-50's 16 Bottlenecks checkpointed,
    # and the one convolution output an op outside them saves (the stem conv's, 128 x 64 x
    # 112 x 112 x 4 B = 411041792 B, saved by bn1) offloaded when bn1 packs it, released when
    # the model's forward returns (one offload: fewer than the Offloader's keep_inflight=2
    # after it), and brought back when bn1's backward node begins
    from snsim.hardware import load_hardware
    from snsim.plan import Evict, Offload, Prefetch
    from snsim.policies import get_policy
    p = read_trace(os.path.join(TRACES, "plain_history", "resnet50_b128.json.gz"))
    plan = get_policy("superneurons").plan(p, load_hardware("h200"), None)
    prog = plan.program or p
    assert plan.notes["placement"] == "modules" and plan.notes["segments"] == 16
    assert plan.notes["offloaded_bytes"] == 128 * 64 * 112 * 112 * 4
    ins = plan.instructions
    at = {type(x): i for i, x in enumerate(ins) if type(x) in (Offload, Evict, Prefetch)}
    assert len([x for x in ins if type(x) in (Offload, Evict, Prefetch)]) == 3
    (t,) = {ins[i].tensor for i in at.values()}
    assert prog.steps[ins[at[Offload] - 1].step].name == "bn1"
    before_evict = prog.steps[ins[at[Evict] - 1].step]
    after_evict = prog.steps[ins[at[Evict] + 1].step]
    assert before_evict.name == "fc" and after_evict.name == "loss"
    fetched_by = prog.steps[ins[at[Prefetch] + 1].step]
    assert (fetched_by.name, fetched_by.phase) == ("bn1", "B") and t in fetched_by.deps
    # the layer-graph algorithm is still there, by option
    layers = get_policy("superneurons", placement="layers").plan(p, load_hardware("h200"), None)
    assert layers.notes["placement"] == "layers" and "offloaded_tensors" not in layers.notes


def test_recompute_segments_follow_find_segments_from_the_module_tree():
    # torchvision's VGG16 features: conv-relu pairs ending at a max pool (hand count from
    # torchvision.models.vgg cfg "D": 2, 2, 3, 3, 3 convs); DenseNet-121's transitions are
    # runs of a Sequential subclass (norm, relu, conv, pool) and its dense layers blocks
    from snsim.policies._groups import recompute_segments
    vgg = recompute_segments(read_trace(os.path.join(TRACES, "plain_history",
                                                     "vgg16_b64.json.gz")))
    assert list(vgg) == ["features[0:4]", "features[5:9]", "features[10:16]",
                         "features[17:23]", "features[24:30]"]
    assert vgg["features[0:4]"] == tuple(f"features.{i}" for i in range(5))
    dn = recompute_segments(read_trace(os.path.join(TRACES, "plain_history",
                                                    "densenet121_b128.json.gz")))
    assert len(dn) == 6 + 12 + 24 + 16 + 3
    assert dn["features.transition1[norm:pool]"] == tuple(
        f"features.transition1.{c}" for c in ("norm", "relu", "conv", "pool"))
    # a capture without containers recorded (gpt_b8, 2026-11-29): the ModuleList that was
    # never called is taken from its children's paths
    gpt = recompute_segments(read_trace(os.path.join(TRACES, "gpt_b8.json.gz")))
    assert list(gpt) == [f"blocks.{i}" for i in range(12)]


def test_engine_plans_on_fresh_captures_meet_issue_8s_memory_gates():
    # seven networks section 3 had never used, captured plain and run under superneurons,
    # offload and recompute on the H200 after the engine's module-boundary plans were
    # written (traces/h200/plans_on_fresh_captures/): issue 8's memory gates on the engine's
    # plans on the captures. When this was written (21 runs): allocated 0.40 % (max 3.27 %),
    # reserved 0.84 % (max 7.96 %); with the plain runs captured again, each allocator entry
    # stamped with its aten call, and four plans run again without the host gauge first:
    # 0.15 % (max 1.57 %), 0.10 % (max 1.94 %). Step time (issue 8: mean <= 10 %), the
    # captures' kernel times streamed with the host's issue time and the plans' host events
    # (engine.core): 6.39 % (max 17.07 %); on the hooked intervals before, 9.66 % (32.08 %)
    from snsim.torchsim.validate import FRESH_CAPTURES, fresh_capture_rows
    df = fresh_capture_rows(os.path.join(TRACES, FRESH_CAPTURES))
    assert len(df) == 21 and set(df["policy"]) == {"superneurons", "offload", "recompute"}
    _hold_issue_8s_memory_gates(df)
    assert df["err_step_time_pct"].abs().mean() <= 10.0
