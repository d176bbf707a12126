"""Every policy on many random layer DAGs: no plan error, no leak, never above the budget.

The graphs mix every layer type, forks with several branches, joins, concats and plain
fan-out (an output read by several layers without a FORK), so policy corner cases (replays
that need freed inputs, by-products of multi-output replays) show up. Seeded: deterministic.
"""
import random

import pytest

from snsim.engine.core import run_plan
from snsim.graph import GraphBuilder
from snsim.hardware import load_hardware
from snsim.policies import applicable_policies, get_policy
from snsim.program import build_program

K40C = load_hardware("k40c")


def random_graph(seed):
    rng = random.Random(seed)
    b = GraphBuilder(f"random{seed}", batch=rng.choice([1, 2, 4]), input_shape=(3, 16, 16))
    x = b.conv(b.data(), rng.choice([4, 8]), 3, 1, 1)
    live = [x]
    for _ in range(rng.randint(4, 30)):
        op = rng.random()
        src = rng.choice(live[-3:])
        c = b.shape(src)[1]
        if op < 0.25:
            k = rng.choice([1, 3])
            y = b.conv(src, rng.choice([4, 8, 16]), k, 1, k // 2)
        elif op < 0.35:
            y = b.bn(src)
        elif op < 0.45:
            y = b.relu(src)
        elif op < 0.5:
            y = b.lrn(src)
        elif op < 0.55:
            y = b.dropout(src)
        elif op < 0.6:
            y = b.padding(src, 1)
        elif op < 0.75:
            # a residual block: FORK -> (identity | conv-bn-relu-conv with c channels) -> JOIN
            f = b.fork(src)
            m = b.relu(b.bn(b.conv(f, c, 3, 1, 1)))
            m = b.conv(m, c, 3, 1, 1)
            y = b.relu(b.join([f, m]))
        elif op < 0.9:
            # an inception-like block: FORK -> k branches -> CONCAT
            f = b.fork(src)
            branches = []
            for _ in range(rng.randint(2, 4)):
                k = rng.choice([1, 3])
                branches.append(b.relu(b.conv(f, rng.choice([2, 4]), k, 1, k // 2)))
            y = b.concat(branches)
        else:
            # plain fan-out: an earlier output read again by a concat (DenseNet-style)
            others = [t for t in live if b.shape(t)[2:] == b.shape(src)[2:]]
            y = b.concat(sorted(set(others[-3:] + [src])))
        live.append(y)
    x = live[-1]
    return b.finish(b.softmax(b.fc(x, 10)))


@pytest.mark.parametrize("seed", range(40))
def test_every_policy_on_a_random_graph(seed):
    G = random_graph(seed)
    p = build_program(G, hardware=K40C)
    largest = p.lower_bound_bytes() - p.static_total_bytes
    rng = random.Random(seed)
    budgets = [10**12, p.static_total_bytes + int(largest * rng.uniform(1.0, 3.0))]
    for name in applicable_policies(p):
        for budget in budgets:
            plan = get_policy(name).plan(p, K40C, budget)
            r = run_plan(p, plan, K40C, budget_bytes=budget)   # raises on a plan error or leak
            if r.feasible:
                assert r.peak_ideal_bytes <= budget
            else:
                assert budget < 10**12, (name, r.failure)
    # with the tensor cache, SuperNeurons always fits in the lower bound (SPEC §7)
    lb = p.lower_bound_bytes()
    r = run_plan(p, get_policy("superneurons").plan(p, K40C, lb), K40C, budget_bytes=lb)
    assert r.feasible, r.failure
