"""The shared schedule builder (snsim/policies/_schedule.py): issue 9 D2 and D11."""
import pytest

from snsim.api import make_program, simulate
from snsim.engine.core import run_plan
from snsim.errors import ConfigError
from snsim.graph import GraphBuilder
from snsim.hardware import load_hardware
from snsim.plan import Plan
from snsim.policies import get_policy
from snsim.policies._schedule import build_instructions, managed_peak

K40C = load_hardware("k40c")


def bn_chain(n):
    b = GraphBuilder(f"bn{n}", batch=1, input_shape=(3, 8, 8))
    x = b.conv(b.data(), 4, 3, 1, 1)
    for _ in range(n):
        x = b.bn(x)
    return b.finish(b.softmax(b.fc(x, 10)))


def test_thousands_of_recomputable_layers_in_a_row():
    # D2: the replay chain of the first backward step is 3,000 layers deep (speed-centric);
    # the builder walked it recursively and hit Python's recursion limit at ~1,000
    p = make_program(bn_chain(3000), hardware=K40C)
    plan = get_policy("recompute", mode="speed").plan(p, K40C, K40C.budget_bytes)
    r = run_plan(p, plan, K40C, record=False)
    assert r.feasible and len(r.recomputed_layers) == 3000


def d11_graph():
    # data -> BN -> BN -> Dropout -> Softmax, 64 x 4096 floats: every activation is 1 MiB
    b = GraphBuilder("d11", batch=64, input_shape=(4096,))
    return b.finish(b.softmax(b.dropout(b.bn(b.bn(b.data())))))


def test_recompute_never_needs_more_than_liveness():
    # D11: softmax B needs dropout.y right after softmax F; dropping it and replaying the
    # chain bn -> bn -> dropout put bn.y, bn.y, dropout.y and softmax.y on the GPU at once
    # (4 MiB) where liveness holds 3 MiB (bn.y, dropout.y, softmax.y at softmax F)
    p = make_program(d11_graph(), hardware=K40C)
    live = simulate(p, policy="liveness")
    assert live.peak_ideal_bytes - live.static_bytes == 3 * 2**20
    for pol, opts in [("recompute", {}), ("recompute", {"mode": "speed"}),
                      ("recompute", {"mode": "memory"}), ("superneurons", {}), ("chen_sqrt", {})]:
        r = simulate(p, policy=pol, policy_options=opts)
        assert r.peak_ideal_bytes <= live.peak_ideal_bytes, (pol, opts)
    # cost-aware keeps those layers instead: liveness' plan, peak and time
    r = simulate(p, policy="recompute")
    assert r.recomputed_layers == () and r.step_time_s == live.step_time_s
    # at liveness' peak as the budget, recompute fits too
    r = simulate(p, policy="recompute", budget_bytes=live.peak_ideal_bytes)
    assert r.feasible


def test_managed_peak_matches_the_engine():
    # the builder's clock-free walk gives the engine's ideal peak for plans without a cache
    for G in (d11_graph(), bn_chain(20)):
        p = make_program(G, hardware=K40C)
        for mode in (None, "speed", "memory", "cost-aware"):
            ins = build_instructions(p, recompute=mode)
            peak, _ = managed_peak(p, ins)
            r = run_plan(p, Plan(policy="walk", instructions=ins), K40C, budget_bytes=10**12)
            assert peak == r.peak_ideal_bytes - r.static_bytes, mode


@pytest.mark.parametrize("name,batch", [("resnet50", 8), ("vgg16", 8), ("densenet121", 4)])
def test_recompute_still_recomputes_on_the_zoo(name, batch):
    p = make_program(name, batch=batch, hardware=K40C)
    live = simulate(p, policy="liveness", record=False)
    for mode in ("speed", "memory", "cost-aware"):
        r = simulate(p, policy="recompute", policy_options={"mode": mode}, record=False)
        assert r.peak_ideal_bytes < live.peak_ideal_bytes and r.recompute_time_s > 0, mode


def test_managed_peak_names_the_layers_replayed_at_the_peak():
    # speed-centric replays on d11, by hand: before softmax B, softmax.y (1 MiB) is resident
    # and the replays of bn, bn and dropout bring 3 MiB more: 4 MiB, all three replayed. The
    # cost-aware builder then keeps those three layers' outputs, which is liveness' plan.
    from snsim.policies._schedule import _instructions
    p = make_program(d11_graph(), hardware=K40C)
    names = {n: p.graph.nodes[n]["name"] for n in p.graph}
    peak, layers = managed_peak(p, _instructions(p, recompute="speed"))
    assert peak == 4 * 2**20 and {names[n] for n in layers} == {"bn2", "bn3", "dropout4"}
    assert managed_peak(p, build_instructions(p)) == (3 * 2**20, set())
    assert build_instructions(p, recompute="speed") == build_instructions(p)


def test_keeping_the_layers_at_the_peak_leaves_the_rest_recomputed():
    # data(1x4x4) -> conv(2ch) -> dropout -> fc(8) -> bn -> fc(10) -> softmax, batch 1:
    # conv.y = dropout.y = 128 B, fc.y = bn.y = 32 B. Liveness frees conv.y after dropout F
    # (dropout B does not read it): peak 288 B. Dropping dropout.y keeps conv.y alive until
    # fc B replays the dropout: 416 B. So dropout keeps its output; bn is still dropped and
    # replayed (its input, an FC output, is needed anyway), and the peak is liveness'.
    from snsim.policies._schedule import _instructions
    b = GraphBuilder("keep", batch=1, input_shape=(3, 4, 4))
    x = b.dropout(b.conv(b.data(), 2, 3, 1, 1, name="conv"), name="drop")
    x = b.bn(b.fc(x, 8, name="fc1"), name="bn")
    p = make_program(b.finish(b.softmax(b.fc(x, 10, name="fc2"))), hardware=K40C)
    names = {n: p.graph.nodes[n]["name"] for n in p.graph}
    assert managed_peak(p, build_instructions(p)) == (288, set())
    peak, layers = managed_peak(p, _instructions(p, recompute="cost-aware"))
    assert peak == 416 and {names[n] for n in layers} == {"drop"}
    r = simulate(p, policy="recompute")
    assert r.recomputed_layers == ("bn",) and r.peak_ideal_bytes - r.static_bytes == 288


def test_prefetch_depth_zero_prefetches_nothing():
    p = make_program(bn_chain(3), hardware=K40C)
    ins = build_instructions(p, offload=True, prefetch_depth=0)
    assert not any(type(i).__name__ == "Prefetch" for i in ins)
    assert any(type(i).__name__ == "Prefetch" for i in build_instructions(p, offload=True))
    with pytest.raises(ConfigError, match=r"prefetch_depth \(=-1\) must be >= 0"):
        build_instructions(p, offload=True, prefetch_depth=-1)



def test_proper_prefixes_are_every_dotted_prefix():
    # against the split-per-level set select_modules built before (its "parents"), on names
    # with empty, leading, trailing and repeated dots, in random orders
    import random
    from snsim.policies._groups import _proper_prefixes
    rng = random.Random(11)
    for _ in range(400):
        names = ["".join(rng.choice("ab.") for _ in range(rng.randint(0, 9)))
                 for _ in range(rng.randint(0, 12))]
        want = {n.rsplit(".", k)[0] for n in names for k in range(1, n.count(".") + 1)}
        assert _proper_prefixes(names) == want


@pytest.mark.parametrize("policy", ["superneurons", "recompute", "vdnn", "checkpoint"])
def test_plans_of_a_program_share_their_instructions(policy):
    """A program's plans reuse one instance per instruction (_instruction_table): a second
    plan is equal to the first and made of the same objects; a fresh copy of the program
    (nothing memoised) plans the same values, of the exact instruction types the engine
    dispatches on."""
    from snsim.plan import INSTRUCTIONS
    from snsim.zoo import build_network
    p = make_program(build_network("resnet50", batch=4), hardware=K40C)
    pol = get_policy(policy)
    a = pol.plan(p, K40C, K40C.budget_bytes).instructions
    b = pol.plan(p, K40C, K40C.budget_bytes).instructions
    assert a == b and all(x is y for x, y in zip(a, b))
    fresh = make_program(build_network("resnet50", batch=4), hardware=K40C)
    c = pol.plan(fresh, K40C, K40C.budget_bytes).instructions
    assert c == a and [type(x) for x in c] == [type(x) for x in a]
    assert all(type(x) in INSTRUCTIONS.values() and type(x)(x[0]) == x for x in a)
    # another policy's plan of the program reuses the same instances
    live = get_policy("liveness").plan(p, K40C, K40C.budget_bytes).instructions
    assert live[0] is a[a.index(live[0])]


@pytest.mark.parametrize("name,batch,framework", [
    ("resnet50", 4, "superneurons"), ("densenet121", 2, "superneurons"),
    ("gpt2", 1, "superneurons"), ("vgg16", 2, "pytorch"), ("d11", None, "superneurons")])
def test_liveness_peak_sweep_equals_the_walk_of_the_liveness_plan(name, batch, framework):
    # the sweep over first and last uses gives managed_peak of the plain liveness
    # instructions, the walk it replaced; and the engine's ideal peak for that plan
    from snsim.policies._schedule import _instructions, liveness_peak
    p = make_program(d11_graph() if name == "d11" else name, batch=batch, hardware=K40C,
                     framework=framework)
    ins = _instructions(p, recompute=None)
    walk, _ = managed_peak(p, ins)
    assert liveness_peak(p) == walk > 0
    r = run_plan(p, Plan(policy="walk", instructions=ins), K40C, budget_bytes=10**12)
    assert walk == r.peak_ideal_bytes - r.static_bytes
