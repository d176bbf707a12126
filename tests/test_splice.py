"""Spliced family programs (snsim.experiments.splice) equal the programs built from the DAG."""
import dataclasses

import pytest

from snsim.experiments import search
from snsim.experiments.search import family_network, get_family, max_depth
from snsim.experiments.splice import VERIFY_SIZE, Splicer, program_sections
from snsim.graph import adjacency
from snsim.engine.core import run_plan
from snsim.hardware import load_hardware
from snsim.policies import get_policy
from snsim.program import build_program
from snsim.zoo import with_module_tree

HW = load_hardware("k40c")


def builder(family, framework="superneurons", batch=2, log=None):
    def build(k):
        if log is not None:
            log.append(k)
        G = with_module_tree(family_network(family, k, batch=batch,
                                            twin=framework == "pytorch"))
        return build_program(G, hardware=HW, framework=framework)
    return build


def assert_same_program(p, q):
    """Field by field: what a policy or the engine reads, and the layer graph."""
    assert p.steps == q.steps            # index, layer, name, type, phase, time, deps, in/out
    assert p.tensors == q.tensors        # ids, names, kinds, sizes, producers
    assert p.static_tensors == q.static_tensors and p.static_bytes == q.static_bytes
    assert p.conv_algos == q.conv_algos
    assert (p.name, p.batch, p.source, p.hardware, p.optimizer, p.framework) == \
        (q.name, q.batch, q.source, q.hardware, q.optimizer, q.framework)
    assert p.adjacency == q.adjacency == adjacency(q.graph)
    # what a spliced program gives before its graph is made (SplicedProgram)
    assert p.layer_types() == q.layer_types() and list(p.layer_types()) == list(q.graph)
    assert p.graph_attrs() == q.graph_attrs()
    G, H = p.graph, q.graph
    assert G.graph == H.graph
    assert list(G.nodes(data=True)) == list(H.nodes(data=True))
    assert list(G.edges(data=True)) == list(H.edges(data=True))
    assert all(list(G.pred[n]) == list(H.pred[n]) for n in H)
    assert p.lower_bound_bytes() == q.lower_bound_bytes()
    assert program_sections(p) == program_sections(q)


@pytest.mark.parametrize("family", ["resnet", "vgg", "gpt", "llama"])
def test_spliced_programs_equal_built_ones(family):
    build = builder(family)
    sp = Splicer(base=get_family(family).min_size + 1)
    assert sp.learn(build), sp.failed
    for k in (VERIFY_SIZE + 1, 17, 40, 101):     # two- and three-digit block indices
        assert_same_program(sp.splice(k, build), build(k))


@pytest.mark.parametrize("family,framework", [
    ("densenet", "superneurons"),   # each dense layer reads one more input: not periodic
    ("resnet", "pytorch"),          # one optimizer step reads every gradient: not periodic
    ("gpt", "pytorch"),
])
def test_families_that_are_not_a_repeated_block_are_built(family, framework):
    build = builder(family, framework)
    sp = Splicer(base=get_family(family).min_size + 1)
    assert not sp.learn(build) and sp.failed
    assert sp.splice(30, build) is None


def test_small_sizes_are_built_and_learning_builds_only_small_ones():
    log = []
    build = builder("resnet", log=log)
    sp = Splicer(base=2)
    assert sp.splice(VERIFY_SIZE, build) is None and log == []
    assert sp.splice(200, build) is not None
    assert sorted(log) == [2, 3, 4, 5, VERIFY_SIZE]     # four to learn, one to certify


def test_a_number_not_affine_in_the_size_is_caught():
    build = builder("vgg")

    def twisted(k):      # the last static tensor grows as k squared: not a repeated block
        p = build(k)
        last = p.static_tensors[-1]
        p.static_tensors[-1] = dataclasses.replace(last, nbytes=last.nbytes + k * k)
        return p
    sp = Splicer(base=2)
    assert not sp.learn(twisted) and "not affine" in sp.failed


def test_a_change_past_the_learned_sizes_is_caught_by_the_certificate():
    build = builder("vgg")

    def late(k):         # periodic up to k = 8, different from k = 9 on
        p = build(k)
        if k > 8:
            p.static_bytes = {**p.static_bytes, "buffer": p.static_bytes["buffer"] + 1}
        return p
    sp = Splicer(base=2)
    assert not sp.learn(late) and "differs from the build" in sp.failed
    assert sp.splice(50, late) is None


def test_max_depth_with_splicing_equals_max_depth_without(monkeypatch):
    # 1.5 GiB at batch 1: every answer lies past the certified size, so spliced programs
    # decide them (the search's probes beyond k = 12 are spliced)
    spliced = []
    real = Splicer.splice
    monkeypatch.setattr(Splicer, "splice", lambda self, k, build: spliced.append(k)
                        or real(self, k, build))
    kw = dict(batch=1, budget_bytes="1.5GiB",
              policies=["liveness", "superneurons", "chen_sqrt", "offload", "checkpoint"])
    fast = max_depth("resnet", **kw)
    assert any(k > VERIFY_SIZE for k in spliced)
    monkeypatch.setattr(Splicer, "splice", lambda self, k, build: None)
    plain = max_depth("resnet", **kw)
    for f, p in zip(fast.rows, plain.rows):
        assert f.max_size > VERIFY_SIZE
        assert (f.policy, f.max_size, f.next_size, f.step_time_s, f.peak_ideal_bytes,
                f.next_failure, f.simulations) == \
            (p.policy, p.max_size, p.next_size, p.step_time_s, p.peak_ideal_bytes,
             p.next_failure, p.simulations)
    assert fast.probes == plain.probes and fast.bound_cap == plain.bound_cap


def test_the_prober_learns_from_its_own_small_programs(monkeypatch):
    built = []
    real = search.build_program
    monkeypatch.setattr(search, "build_program", lambda G, **kw: built.append(G.graph["name"])
                        or real(G, **kw))
    max_depth("resnet", batch=1, budget_bytes="1.5GiB", policies=["liveness"])
    assert len(built) == len(set(built))     # each size built once, learning included


@pytest.mark.parametrize("family", ["resnet", "vgg", "gpt", "llama"])
def test_splices_in_any_order_equal_builds_and_share_unchanging_records(family):
    # the records whose numbers do not grow with the size are made once and shared by every
    # spliced size: a large size first, then smaller and repeated ones must still equal builds
    build = builder(family)
    sp = Splicer(base=get_family(family).min_size + 1)
    assert sp.learn(build), sp.failed
    spliced = {k: sp.splice(k, build) for k in (60, 17, 61, 13, 60)}
    for k in (60, 17, 61, 13):
        assert_same_program(spliced[k], build(k))
    a, b = spliced[60], spliced[61]
    shared = sum(x is y for x, y in zip(a.steps, b.steps))
    # the steps before the grown stage's last block (the forward of all but the last block)
    # are the same objects; the backward ones move with the size and are made afresh
    assert 0 < shared < len(a.steps)
    assert all(x == y for x, y in zip(a.steps[:shared], b.steps[:shared]))
    assert sp.splice(60, build) is not a and sp.splice(60, build).steps is not a.steps


def test_a_search_plans_and_replays_a_spliced_program_without_making_its_graph():
    build = builder("resnet", batch=4)
    sp = Splicer(base=2)
    assert sp.learn(build), sp.failed
    p, q = sp.splice(30, build), build(30)
    for name in ("liveness", "superneurons", "checkpoint", "cpu_offload", "recompute", "vdnn"):
        pol = get_policy(name)
        assert pol.unsupported(p) is None
        budget = int(1.1 * p.lower_bound_bytes())
        a, b = (run_plan(x, pol.plan(x, HW, budget), HW, budget_bytes=budget, allocator="pool",
                         record=False) for x in (p, q))
        assert (a.feasible, a.peak_reserved_bytes, a.step_time_s, a.counters) == \
            (b.feasible, b.peak_reserved_bytes, b.step_time_s, b.counters), name
    assert p._layers is not None       # the graph is still to be made
    assert_same_program(p, q)          # and made as the build's when asked for
    assert p._layers is None
