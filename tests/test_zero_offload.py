"""zero_offload (SPEC §16): the policy on a hand-checked chain, its composition, its executor on
the CPU, and hf: model specs."""
import pytest

from snsim.api import make_program
from snsim.engine.core import run_plan
from snsim.errors import ConfigError, UnknownNameError
from snsim.hardware import load_hardware
from snsim.plan import Evict, Plan
from snsim.policies import get_policy
from snsim.policies.host_step import host_update_time_s


def _run(program, hw, policy):
    plan = get_policy(policy).plan(program, hw, hw.budget_bytes)
    return plan, run_plan(program, plan, hw, allocator="ideal", check_invariants=True)


def test_zero_offload_golden_on_tiny_chain(tiny_chain):
    hw = load_hardware("k40c")
    p = make_program(tiny_chain, hardware=hw)
    _, live = _run(p, hw, "liveness")
    plan, zero = _run(p, hw, "zero_offload")
    # hand: parameters conv 2x1x3x3 + 2 bias, fc 32x10 + 10 bias = 350 fp32 = 1,400 B; the
    # fc layer's own 320 + 10 = 330 elements = 1,320 B. Static on the GPU: only the input
    # batch (1x4x4 fp32 = 64 B) and the int32 label (4 B)
    assert zero.static_bytes == 68
    # liveness holds params + grads + momentum (3 x 1,400 B) for the whole iteration;
    # zero_offload holds at its peak (fc backward, the same activations live) only fc's
    # parameters and fc's gradients: 4,692 - 4,200 + 2 x 1,320 = 3,132 B
    assert live.static_bytes == 68 + 3 * 1400
    assert zero.peak_ideal_bytes == live.peak_ideal_bytes - 3 * 1400 + 2 * 1320 == 3132
    # every parameter in twice (before forward, before backward), every gradient out once
    assert zero.h2d_bytes == 2 * 1400 and zero.d2h_bytes == 1400
    # host: pinned fp32 masters + gradient buffers, momentum pageable
    assert plan.notes["host_pinned_bytes"] == 2800
    assert plan.notes["host_optimizer_state_bytes"] == 1400
    # time: the two GPU update steps (1e-4 s each) leave; the CPU step (350 params x 60 B
    # for sgd-momentum: 7 fp32 reads + 4 writes, each write also read for ownership,
    # 4 x (7 + 2 x 4), at host_mem_bytes_per_s; 4 tensors x 4 ops at host_op_overhead_s; no
    # fresh page: 1,280 B temporaries come from the heap) and every copy, serialised, come in
    pieces = [72, 8, 1280, 40]
    copies = sum(2 * hw.transfer_time_s(b, "h2d", True) + hw.transfer_time_s(b, "d2h", True)
                 for b in pieces)
    cpu_s = 350 * 60 / hw.host_mem_bytes_per_s + 16 * hw.host_op_overhead_s
    assert plan.notes["cpu_step_s"] == pytest.approx(cpu_s, rel=1e-12)
    assert zero.step_time_s == pytest.approx(live.step_time_s - 2e-4 + cpu_s + copies,
                                             rel=1e-9)


def test_evict_follows_forward_and_the_gradient(tiny_chain):
    hw = load_hardware("k40c")
    p = make_program(tiny_chain, hardware=hw)
    plan = get_policy("zero_offload").plan(p, hw, hw.budget_bytes)
    evicted = [plan.program.tensors[i.tensor].name for i in plan.instructions
               if isinstance(i, Evict)]
    # each parameter leaves the GPU after its forward and after its backward
    assert sorted(evicted) == sorted(2 * ["conv.weight", "conv.bias", "fc.weight", "fc.bias"])


def test_superneurons_plus_zero_offload_composes(tiny_block):
    hw = load_hardware("k40c")
    p = make_program(tiny_block, hardware=hw)
    pol = get_policy("superneurons+zero_offload")
    assert pol.options["base"] == "superneurons"
    plan, r = _run(p, hw, "superneurons+zero_offload")
    _, sn = _run(p, hw, "superneurons")
    assert plan.policy == "superneurons+zero_offload" and plan.lru
    assert r.feasible and r.peak_ideal_bytes < sn.peak_ideal_bytes


def test_plan_with_its_program_saves_and_replays(tmp_path, tiny_chain):
    hw = load_hardware("k40c")
    p = make_program(tiny_chain, hardware=hw)
    plan, r = _run(p, hw, "zero_offload")
    plan.save(tmp_path / "plan.json")
    again = Plan.load(tmp_path / "plan.json")
    r2 = run_plan(p, again, hw, allocator="ideal")
    assert (r2.peak_ideal_bytes, r2.step_time_s) == (r.peak_ideal_bytes, r.step_time_s)


def test_bad_options_are_one_line():
    with pytest.raises(ConfigError, match=r"option base \(='chen'\) must be one of"):
        get_policy("zero_offload", base="chen")
    with pytest.raises(UnknownNameError, match="does not compose with a base policy"):
        get_policy("superneurons+liveness")
    with pytest.raises(ConfigError, match="names its base"):
        get_policy("superneurons+zero_offload", base="liveness")
    # the executed scheme is fp32 with torch.optim on the CPU: predict and execute refuse more
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.zero import zero_setup
    with pytest.raises(ConfigError, match=r"zero_offload runs fp32 .*drop --amp fp16"):
        zero_setup("zero_offload", TrainSetup("adam", "foreach", "fp16"))
    with pytest.raises(ConfigError, match="drop --optimizer-impl fused"):
        zero_setup("superneurons+zero_offload", TrainSetup("adamw", "fused"))
    assert zero_setup("zero_offload", "nesterov") == TrainSetup("nesterov")
    hw = load_hardware("k40c")
    with pytest.raises(ConfigError, match="optimizer 'lamb' has no host update model"):
        host_update_time_s(4, "lamb", hw)


# -- the executor, on the CPU ---------------------------------------------------------------------
def _zero_trains_as_plain(torch, a, b, x, y):
    """Two SGD-momentum steps of model ``a`` and two ZeRO steps of its twin ``b`` (CPU): the
    same parameters after; between iterations no parameter has "device" storage, and each
    was fetched twice (forward, backward) and its gradient copied out once. The executor."""
    from snsim.torchsim.record import compute_loss
    from snsim.torchsim.zero import ZeroOffload
    opt = torch.optim.SGD(a.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    for _ in range(2):
        compute_loss(a(x), y).backward()
        opt.step()
        opt.zero_grad()
    z = ZeroOffload(b, "sgd-momentum", device="cpu")
    for _ in range(2):
        z.step(x, y)
    for pa, pb in zip(a.parameters(), z.params):
        assert torch.equal(pa.detach(), z.master[id(pb)])
    assert all(pb.untyped_storage().size() == 0 for pb in z.params)
    n_bytes = sum(pb.numel() * 4 for pb in z.params)
    assert (z.h2d_bytes, z.d2h_bytes) == (2 * n_bytes, n_bytes)
    return z


def test_executor_updates_as_a_plain_step():
    torch = pytest.importorskip("torch")
    from torch import nn

    from snsim.torchsim.plans import make_transform

    def net():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                             nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
    x, y = torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2,))
    for transform in (None, "recompute"):
        a, b = net(), net()
        if transform:
            b = make_transform(transform)(b)
        _zero_trains_as_plain(torch, a, b, x, y)


# -- hf: model specs ------------------------------------------------------------------------------
def test_hf_gpt2_from_the_shipped_config():
    pytest.importorskip("transformers")
    from snsim.torchsim.models import resolve_model
    spec = resolve_model("hf:gpt2", input_shape=(16,))
    assert (spec.name, spec.tokens, spec.vocab_size) == ("gpt2", True, 50257)
    import torch
    with torch.device("meta"):
        model = spec.build()
    # GPT-2 small with tied embeddings: 124,439,808 parameters (the published count)
    assert sum(p.numel() for p in model.parameters()) == 124_439_808


def test_hf_model_has_fp32_weights_whatever_the_config_dtype():
    """SmolLM2's config names torch_dtype bfloat16; transformers 5 builds in it, and the H200's
    fp16 GradScaler then stopped on the bf16 gradients (held-out set 10). snsim's models train
    fp32 master weights, autocast or not."""
    pytest.importorskip("transformers")
    import torch
    from snsim.torchsim.models import hf_config, resolve_model
    assert hf_config("SmolLM2-135M").torch_dtype == torch.bfloat16
    with torch.device("meta"):
        model = resolve_model("hf:SmolLM2-135M", input_shape=(16,)).build()
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_hf_config_missing_or_seq_too_long_is_one_line():
    pytest.importorskip("transformers")
    from snsim.torchsim.models import resolve_model
    with pytest.raises(ConfigError, match=r"hf:no-such-model: no config in the local Hugging "
                                          r"Face cache nor in .*no-such-model.json"):
        resolve_model("hf:no-such-model")
    with pytest.raises(ConfigError, match=r"--seq \(=2048\) exceeds the config's 1024"):
        resolve_model("hf:gpt2", input_shape=(2048,))


def test_callable_may_return_model_and_input_factory():
    torch = pytest.importorskip("torch")
    from snsim.torchsim.models import resolve_model
    spec = resolve_model("tests.test_zero_offload:_pair")
    model = spec.build()
    x = spec.make_input(3)
    assert x.shape == (3, 5) and model(x).shape == (3, 2)
    del torch


def _pair():
    import torch
    return torch.nn.Linear(5, 2), lambda batch, device=None: torch.randn(batch, 5, device=device)


def test_executor_fetches_a_parameter_whose_module_is_never_called():
    """nn.MultiheadAttention reads out_proj.weight in its own forward and never calls
    out_proj: the attention module fetches it (as the engine's _user_of says), so the ZeRO
    step trains exactly as a plain one, moving every parameter in twice a step."""
    torch = pytest.importorskip("torch")
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            return self.head(self.attn(x, x, x, need_weights=False)[0].mean(1))
    b = Net()
    z = _zero_trains_as_plain(torch, Net(), b, torch.randn(2, 5, 8), torch.randint(0, 3, (2,)))
    assert any(p is b.attn.out_proj.weight for p in z._own(b.attn))

    class Root(Net):           # a parameter of the root module itself (ViT's class_token)
        def __init__(self):
            super().__init__()
            self.token = nn.Parameter(torch.ones(1, 1, 8))

        def forward(self, x):
            return super().forward(torch.cat([self.token.expand(x.shape[0], 1, 8), x], 1))
    b = Root()
    z = _zero_trains_as_plain(torch, Root(), b, torch.randn(2, 5, 8), torch.randint(0, 3, (2,)))
    assert any(p is b.token for p in z._own(b))


def test_execute_zero_prints_the_prediction_beside_the_measurement(tiny, tmp_path, monkeypatch,
                                                                   capsys):
    """snsim execute --policy zero_offload predicts the run (predict_zero) before it measures
    it, and prints and stores both, as for the other plans; here the "GPU" is the CPU
    (measure_zero's device="cpu": no peaks measured, so only the step has an error)."""
    import functools
    import gzip
    import json
    pytest.importorskip("torch")
    from snsim.cli import main
    from snsim.torchsim import capture, zero
    monkeypatch.setattr(capture, "require_cuda", lambda: __import__("torch"))
    monkeypatch.setattr(zero, "measure_zero", functools.partial(zero.measure_zero, device="cpu"))
    out = tmp_path / "z.json.gz"
    assert main(["execute", "--model", f"{tiny}:Net", "--batch", "2", "--policy",
                 "zero_offload", "--optimizer", "adam", "--plain-iters", "1",
                 "--warmup-iters", "1", "--out", str(out), "--format", "json"]) == 0
    res = json.loads(capsys.readouterr().out)       # one result: the object itself
    rows = {r["quantity"]: r for r in res["rows"]}
    assert rows["peak_allocated_bytes"]["predicted"] > 0
    assert rows["peak_allocated_bytes"]["measured"] is None      # the CPU has no peaks
    assert rows["h2d_bytes"]["predicted"] == rows["h2d_bytes"]["measured"] > 0
    assert rows["step_time_s"]["error_pct"] is not None
    with gzip.open(out, "rt") as f:
        doc = json.load(f)
    assert doc["predictions"]["snsim_predict_zero"]["plan"] == "zero_offload"
    assert main(["execute", "--model", f"{tiny}:Net", "--batch", "2", "--policy",
                 "zero_offload", "--amp", "bf16"]) == 2
    assert "runs fp32" in capsys.readouterr().err


def test_predict_streams_a_parameter_from_the_module_that_uses_it(tiny, capsys):
    """The predicted program of nn.TransformerEncoder names no step after
    self_attn.out_proj (MultiheadAttention never calls it): zero_offload fetches its weight
    for the self_attn steps instead of stopping."""
    pytest.importorskip("torch")
    from snsim.torchsim.zero import predict_zero
    r, _ = predict_zero(f"{tiny}:CausalEncoder", 2, optimizer="adam")
    assert r["feasible"] is True and r["plan"] == "zero_offload"
    # snsim predict --format json carries the ZeRO plan's own figures
    import json
    from snsim.cli import main
    assert main(["predict", "--model", f"{tiny}:CausalEncoder", "--batch", "2", "--optimizer",
                 "adam", "--policy", "zero_offload", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["h2d_bytes"] == r["h2d_bytes"] and doc["cpu_step_s"] == r["cpu_step_s"] > 0
    # every parameter in twice (forward and backward), every gradient out once
    assert r["h2d_bytes"] == 2 * r["d2h_bytes"] == 2 * r["host_pinned_bytes"] // 2 > 0


def test_a_parameter_goes_to_the_nearest_enclosing_step():
    from snsim.policies.zero_offload import _user_of
    steps = {"<model>", "enc.attn", "enc.attn.q", "fc"}
    assert _user_of("fc.weight", steps) == "fc"
    assert _user_of("enc.attn.q.bias", steps) == "enc.attn.q"
    assert _user_of("enc.attn.out_proj.weight", steps) == "enc.attn"    # never called
    assert _user_of("class_token", steps) == "<model>"                  # the root's own
    assert _user_of("head.weight", {"fc"}) is None


def test_tied_parameter_is_fetched_by_every_module_that_uses_it(tiny_chain):
    # a capture records tied weights as param_aliases (GPT-2: lm_head.weight is wte.weight);
    # here fc is made to share conv's weight: fc's steps need it too
    hw = load_hardware("k40c")
    p = make_program(tiny_chain, hardware=hw)
    p.extra["param_aliases"] = {"fc.weight_tied": "conv.weight"}
    plan = get_policy("zero_offload").plan(p, hw, hw.budget_bytes)
    prog = plan.program
    w = next(t.tensor_id for t in prog.tensors if t.name == "conv.weight")
    users = sorted((s.name, s.phase) for s in prog.steps if w in s.deps)
    assert users == [("conv", "B"), ("conv", "F"), ("fc", "B"), ("fc", "F")]
    r = run_plan(p, plan, hw, allocator="ideal", check_invariants=True)
    # conv.weight (72 B) comes in for conv's forward, again for fc's forward, once for fc's
    # backward, and stays until its gradient is done in conv's backward: 3 fetches, not 2
    assert r.h2d_bytes == 2 * 1400 + 72


def test_host_dram_capacity_fails_the_run_with_a_reason(tiny_chain):
    import dataclasses
    base = load_hardware("k40c")
    p = make_program(tiny_chain, hardware=base)

    def run(host_dram_bytes):
        hw = dataclasses.replace(base, host_dram_bytes=host_dram_bytes, host_pinned_bytes=0)
        return _run(p, hw, "zero_offload")[1]
    # hand: the plan keeps 2 x 1,400 B (pinned masters + gradient buffers) + 1,400 B (momentum)
    # = 4,200 B on the host; the gradients copied out land in their buffers (not counted again)
    assert run(4_200).feasible
    r = run(4_199)
    assert not r.feasible
    assert str(r.failure) == ("out of host memory: 4,200 B held on the host (4,200 B the plan "
                              "keeps there + 0 B offloaded) exceed host_dram_bytes 4,199 B of "
                              "k40c during setup")


def test_host_dram_counts_offloaded_activations(tiny_chain):
    import dataclasses
    base = load_hardware("k40c")
    p = make_program(tiny_chain, hardware=base)
    hw = dataclasses.replace(base, host_pinned_bytes=0, host_dram_bytes=2**40)
    plan, r = _run(p, hw, "offload")
    # the offload policy keeps nothing on the host for the whole run; the tensors it copies
    # out are all it holds there (hand: the conv output, 1x2x4x4 fp32 = 128 B, is its only offload)
    assert plan.host_static_bytes == 0
    assert r.feasible and r.counters["peak_host_bytes"] == 128
    assert _run(p, dataclasses.replace(hw, host_dram_bytes=128), "offload")[1].feasible
    r2 = _run(p, dataclasses.replace(hw, host_dram_bytes=127), "offload")[1]
    assert str(r2.failure).startswith("out of host memory: 128 B held on the host (0 B the "
                                      "plan keeps there + 128 B offloaded) exceed "
                                      "host_dram_bytes 127 B of k40c at step")


def test_zero_offload_makes_the_first_iterations_workspaces_at_their_turn():
    # gpt_b8's capture made cuBLAS's workspaces in its first iteration, at the first forward
    # and backward GEMMs. zero_offload is not the captured plan: the engine starts from the
    # statics left on the GPU (parameters, gradients and optimizer state go to the host) and
    # makes each workspace after as many of the program's own tensors as the capture had made,
    # its streamed parameters not counted (they are fetched, not made). Before, the rewritten
    # history lost the first iteration's own allocations and the plan replayed it as captured:
    # the workspaces came at setup, each in a segment of its own (held-out set 35 run again,
    # VGG-16 b32: reserved -7.03 %; 0.00 % with this, to the byte of its allocator history).
    import os
    from snsim.engine.core import Engine, state_positions
    from snsim.policies.zero_offload import stream_parameters
    from snsim.trace import read_trace
    hw = load_hardware("h200")
    p = read_trace(os.path.join(os.path.dirname(__file__), "..", "traces", "h200",
                                "gpt_b8.json.gz"))
    new, _ = stream_parameters(p, hw)
    ev_old, ev_new = p.extra["warmup_events"], new.extra["warmup_events"]
    # the marks point at the same recorded events after the host's statics are dropped
    for j_old, j_new in zip(p.extra["warmup_iteration_starts"],
                            new.extra["warmup_iteration_starts"]):
        assert ev_old[j_old][0] == ev_new[j_new][0] and ev_old[j_old][2:] == ev_new[j_new][2:]
    assert sum(int(e[1]) < 0 for e in ev_old) == sum(int(e[1]) < 0 for e in ev_new) > 0
    plan = get_policy("zero_offload").plan(p, hw, hw.budget_bytes)
    assert plan.as_captured is False
    e = Engine(p, plan, hw, allocator="pytorch")
    due = state_positions(e.p, skip=plan.host_resident)
    kinds = [e.p.static_tensors[int(ev[1])].kind for _, ev in due]
    assert kinds and set(kinds) == {"buffer"}          # the workspaces; no optimizer state
    assert [n for n, _ in e.deferred] == [n for n, _ in due]
    made = []
    alloc = e._alloc

    def spy(t, now, nbytes=None, category=None, label=None):
        if label and label.startswith("static tensor"):
            made.append(e.own_made)
        return alloc(t, now, nbytes, category, label)
    e._alloc = spy
    r = e.run()
    assert r.feasible and e.deferred == [] and len(made) == len(due)
    assert all(n <= own for (n, _), own in zip(due, made)) and min(made) > 0
