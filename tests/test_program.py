"""Tensor tables and dependencies on hand-checked graphs (SPEC §2.3)."""
import pytest

from snsim.errors import ConfigError
from snsim.hardware import load_hardware
from snsim.program import build_program
from snsim.zoo import build_network


def names(p, ids):
    return [p.tensors[t].name for t in ids]


def step(p, layer_name, phase):
    return next(s for s in p.steps if s.name == layer_name and s.phase == phase)


def test_tiny_chain_tensors_by_hand(tiny_chain):
    p = build_program(tiny_chain)
    assert [(t.name, t.kind, t.nbytes) for t in p.tensors] == [
        ("conv.y", "activation", 128), ("relu.y", "activation", 128),
        ("fc.y", "activation", 40), ("softmax.y", "activation", 40),
        ("fc.dx", "activation_grad", 128)]
    assert names(p, step(p, "relu", "F").deps) == ["conv.y", "relu.y"]
    # softmax B: x and y; its dx is y itself (dx ≡ y)
    assert names(p, step(p, "softmax", "B").deps) == ["fc.y", "softmax.y"]
    # FC B: x, dy (= softmax.y storage), dx
    assert names(p, step(p, "fc", "B").deps) == ["relu.y", "softmax.y", "fc.dx"]
    # ReLU B: x, y, dy; dx ≡ dy, so fc.dx flows on in place
    assert names(p, step(p, "relu", "B").deps) == ["conv.y", "relu.y", "fc.dx"]
    # the first conv computes no dx (its input is the data layer)
    assert names(p, step(p, "conv", "B").deps) == ["fc.dx"]
    assert [s.phase for s in p.steps].count("U") == 2
    # static: params conv 2*1*9+2 = 20, fc 32*10+10 = 330 -> 1400 B; grads and momentum the same;
    # input 1*1*4*4*4 = 64 B + one int32 label
    assert p.static_bytes == {"parameter": 1400, "parameter_grad": 1400, "optimizer_state": 1400,
                              "buffer": 0, "input": 68}
    # keep-all = static + all managed bytes = 4268 + 464
    assert p.keep_all_bytes() == 4268 + 464
    # largest working set: ReLU B = 128 + 128 + 128
    assert p.lower_bound_bytes() == 4268 + 384


def test_first_conv_dx_quirk(tiny_chain):
    p = build_program(tiny_chain, first_conv_dx=True)
    assert names(p, step(p, "conv", "B").deps) == ["fc.dx", "conv.dx_data"]


def test_block_aliases_and_fork_copies(tiny_block):
    p = build_program(tiny_block)
    fork_f = step(p, "fork", "F")
    assert names(p, fork_f.outputs) == ["fork.copy0", "fork.copy1"]     # one copy per branch
    join_b = step(p, "join", "B")
    # JOIN B: dy, dx_1 (new); dx_0 ≡ dy
    assert names(p, join_b.deps) == ["fc.dx", "join.dx1"]
    dy = join_b.deps[0]
    fork_b = step(p, "fork", "B")
    # FORK B: dy_0 (the join's gradient, in place) and dy_1 (main branch's dx); dx ≡ dy_0
    assert fork_b.deps[0] == dy and len(fork_b.deps) == 2
    # the gradient buffer flows ReLU -> JOIN (input 0) -> FORK -> conv0 B
    assert step(p, "conv0", "B").deps == (dy,)


def test_fork_without_copies(tiny_block):
    p = build_program(tiny_block, fork_copies=False)
    assert step(p, "fork", "F").outputs == ()
    assert not any(t.name.startswith("fork.copy") for t in p.tensors)


def test_unknown_optimizer():
    G = build_network("lenet", batch=1)
    with pytest.raises(ConfigError, match="optimizer 'rmsprop' is unknown"):
        build_program(G, hardware=load_hardware("k40c"), optimizer="rmsprop")


def test_adam_doubles_state():
    hw = load_hardware("k40c")
    G = build_network("lenet", batch=1)
    p = build_program(G, hardware=hw, optimizer="adam")
    assert p.static_bytes["optimizer_state"] == 2 * p.static_bytes["parameter"]


def test_every_zoo_program_is_consistent():
    hw = load_hardware("k40c")
    for name in ["alexnet", "vgg16", "resnet50", "inception_v4", "densenet121", "cifar_resnet32"]:
        p = build_program(build_network(name, batch=2), hardware=hw)
        first, last = p.uses()
        assert all(f >= 0 and l >= f for f, l in zip(first, last))
        for t in p.tensors:     # every tensor is first touched by its producer's step
            assert p.steps[first[t.tensor_id]].layer == t.producer
        assert all(s.time_s >= 0 for s in p.steps)


def test_derived_programs_do_not_inherit_memos():
    # lower_bound_bytes and the liveness peak are computed once per program; a program derived
    # with dataclasses.replace (as zero_offload derives one) must compute its own
    import dataclasses

    from snsim.api import make_program
    from snsim.policies._schedule import liveness_peak
    p = make_program("lenet", batch=2)
    lb, live = p.lower_bound_bytes(), liveness_peak(p)
    q = dataclasses.replace(p, static_bytes={}, steps=p.steps[:0], _uses=None)
    assert q.lower_bound_bytes() == 0 and lb > 0     # no statics, no steps: nothing needed
    assert liveness_peak(q) == 0 and live > 0
    assert p.lower_bound_bytes() == lb and liveness_peak(p) == live
