"""Copy and step timing pinned to hand derivations (issue 9, item 5).

Graph ``two_conv``: data(1x4x4) -> conv a (2ch) -> conv b (2ch) -> fc(10) -> softmax, batch 1;
every F step 1 ms, B step 2 ms, update 0.1 ms (the data layer's B is a no-op).
Managed tensors: a.y 128 B, b.y 128 B, fc.y 40 B (plus softmax.y, fc.dx, b.dx, never copied).
``vdnn`` with ``layers=all`` offloads the inputs of b, fc and softmax (a.y, b.y, fc.y) right
after their producer's F, frees each GPU copy when its copy and its F reader are both done,
and prefetches a.y, b.y and fc.y when backward starts (t = 5 ms). Copy latency 0, copy
efficiency 1: a copy takes nbytes / rate.
"""
import dataclasses

import pytest

from snsim.api import make_program, simulate
from snsim.graph import GraphBuilder
from snsim.hardware import load_hardware

MS = 1e-3
K40C = load_hardware("k40c")


def two_conv():
    b = GraphBuilder("two_conv", batch=1, input_shape=(1, 4, 4))
    x = b.conv(b.data(), 2, 3, 1, 1, name="a")
    x = b.conv(x, 2, 3, 1, 1, name="b")
    G = b.finish(b.softmax(b.fc(x, 10, name="fc")))
    for n in G:
        G.nodes[n].update(fwd_time_s=1e-3, bwd_time_s=2e-3, update_time_s=1e-4)
    return G


def run(*, h2d, d2h, link_shared=False, copy_engines=2, host_pinned_bytes=2**30):
    hw = dataclasses.replace(K40C, copy_latency_s=0.0, h2d_pinned_bytes_per_s=h2d,
                             d2h_pinned_bytes_per_s=d2h, link_shared=link_shared,
                             copy_engines=copy_engines, host_pinned_bytes=host_pinned_bytes)
    p = make_program(two_conv(), hardware=hw)
    r = simulate(p, hardware=hw, policy="vdnn", policy_options={"layers": "all"},
                 check_invariants=True)
    assert r.feasible
    names = {t.tensor_id: t.name for t in p.tensors}
    ms = lambda t_s: round(t_s / MS, 9)   # noqa: E731 - float noise below 1 ps
    copies = [(names[t], d, ms(start), ms(end)) for t, d, _, _, start, end, _ in r.transfers]
    steps = {(name, ph): (start / MS, end / MS) for _, name, ph, start, end, *_ in r.steps}
    return r, copies, steps


def test_d2h_time_and_h2d_serialisation():
    # D2H 128 kB/s: 128 B = 1 ms, 40 B = 0.3125 ms. H2D 64 kB/s: 128 B = 2 ms, 40 B = 0.625 ms.
    # D2H: a.y issued at 2 (end of a F) runs 2-3; b.y at 3, 3-4; fc.y at 4, 4-4.3125.
    # GPU copies go when copy and F reader are done: a.y at 3, b.y at 4, fc.y at 5 (softmax F).
    # At 5 ms the prefetches fc.y, b.y, a.y queue on the one H2D stream, in that order:
    # fc.y 5-5.625, b.y 5.625-7.625, a.y 7.625-9.625.
    r, copies, steps = run(h2d=64e3, d2h=128e3)
    assert copies == ([
        ("a.y", "d2h", 2, 3), ("b.y", "d2h", 3, 4), ("fc.y", "d2h", 4, 4.3125),
        ("fc.y", "h2d", 5, 5.625), ("b.y", "h2d", 5.625, 7.625), ("a.y", "h2d", 7.625, 9.625)])
    # softmax B waits for fc.y (0.625 ms stall): 5.625-7.625; fc B needs b.y (lands 7.625):
    # 7.625-9.625; b B needs a.y (lands 9.625): 9.625-11.625; a B 11.625-13.625;
    # updates 3 x 0.1 ms -> 13.925 ms
    assert steps["softmax", "B"] == pytest.approx((5.625, 7.625))
    assert steps["fc", "B"] == pytest.approx((7.625, 9.625))
    assert steps["b", "B"] == pytest.approx((9.625, 11.625))
    assert r.stall_time_s == pytest.approx(0.625 * MS)
    assert r.step_time_s == pytest.approx(13.925 * MS)
    assert r.counters["prefetch_late"] == 1 and r.counters["cache_misses"] == 0
    # host copies: a.y + b.y + fc.y are all on the host once fc.y's copy is issued
    assert r.counters["peak_host_bytes"] == 128 + 128 + 40


@pytest.mark.parametrize("shared", ["link_shared", "one_copy_engine"])
def test_shared_link_serialises_both_directions(shared):
    # Both ways 64 kB/s: 128 B = 2 ms, 40 B = 0.625 ms.
    # D2H: a.y 2-4, b.y 4-6 (queued behind a.y), fc.y 6-6.625. a.y leaves the GPU at 4.
    # At 5 ms fc.y and b.y are still being copied out, so only a.y is prefetched (HOST).
    # softmax B runs 5-7 (fc.y is still resident); b.y left the GPU at 6, so fc B misses it
    # and copies it back.
    kw = {"link_shared": True} if shared == "link_shared" else {"copy_engines": 1}
    full, copies_full, steps_full = run(h2d=64e3, d2h=64e3)
    # full duplex: a.y H2D 5-7 at once; b.y's miss at 7 follows it, 7-9; fc B 9-11, b B 11-13,
    # a B 13-15, updates -> 15.3 ms, 2 ms stall
    assert copies_full[3:] == ([("a.y", "h2d", 5, 7), ("b.y", "h2d", 7, 9)])
    assert steps_full["fc", "B"] == pytest.approx((9, 11))
    assert full.step_time_s == pytest.approx(15.3 * MS)
    assert full.stall_time_s == pytest.approx(2 * MS)
    # one link: a.y's H2D waits for the D2H of fc.y to end (6.625): 6.625-8.625; b.y's miss
    # at 7 queues behind it: 8.625-10.625; fc B 10.625-12.625 (3.625 ms stall), b B
    # 12.625-14.625, a B 14.625-16.625, updates -> 16.925 ms
    shr, copies, steps = run(h2d=64e3, d2h=64e3, **kw)
    assert copies == ([
        ("a.y", "d2h", 2, 4), ("b.y", "d2h", 4, 6), ("fc.y", "d2h", 6, 6.625),
        ("a.y", "h2d", 6.625, 8.625), ("b.y", "h2d", 8.625, 10.625)])
    assert steps["fc", "B"] == pytest.approx((10.625, 12.625))
    assert shr.step_time_s == pytest.approx(16.925 * MS)
    assert shr.stall_time_s == pytest.approx(3.625 * MS)



def test_pinned_host_memory_runs_out_exactly():
    # a.y + b.y + fc.y = 296 B go to the host; with 296 B pinned every copy is pinned, with
    # 295 B fc.y's (the last) is staged through pageable memory at the pageable rate
    r, _, _ = run(h2d=64e3, d2h=128e3, host_pinned_bytes=296)
    assert r.counters["pageable_copies"] == 0 and all(x[6] for x in r.transfers)
    r, copies, _ = run(h2d=64e3, d2h=128e3, host_pinned_bytes=295)
    assert r.counters["pageable_copies"] == 1
    assert [x[6] for x in r.transfers[:3]] == [True, True, False]
    assert copies[2] == ("fc.y", "d2h", 4, round(4 + 40 / K40C.d2h_pageable_bytes_per_s / MS, 9))


def test_lru_eviction_waits_for_an_offload_in_flight():
    # three_conv: a -> b -> c -> fc -> softmax, offload (LRU cache, CONV outputs kept as clean
    # entries), 64 kB/s both ways, a budget of static + 300 B for the managed tensors.
    # a F 1-2 allocates a.y (128); a.y goes D2H 2-4. b F 2-3 allocates b.y (256 live); b.y's
    # D2H queues behind a.y's: 4-6. c F at 3 needs c.y: 384 > 300, so the least recently used
    # tensor that c F does not read, a.y, is evicted -- but its copy is still in flight, so
    # c F waits for it to end: c F runs 4-5 (1 ms stall) with b.y and c.y (256) resident.
    b = GraphBuilder("three_conv", batch=1, input_shape=(1, 4, 4))
    x = b.conv(b.data(), 2, 3, 1, 1, name="a")
    x = b.conv(x, 2, 3, 1, 1, name="b")
    x = b.conv(x, 2, 3, 1, 1, name="c")
    G = b.finish(b.softmax(b.fc(x, 10, name="fc")))
    for n in G:
        G.nodes[n].update(fwd_time_s=1e-3, bwd_time_s=2e-3, update_time_s=1e-4)
    hw = dataclasses.replace(K40C, copy_latency_s=0.0, h2d_pinned_bytes_per_s=64e3,
                             d2h_pinned_bytes_per_s=64e3)
    p = make_program(G, hardware=hw)
    r = simulate(p, hardware=hw, policy="offload", budget_bytes=p.static_total_bytes + 300,
                 check_invariants=True)
    steps = {(name, ph): (round(s / MS, 9), round(e / MS, 9), round(st / MS, 9))
             for _, name, ph, s, e, _, _, _, st in r.steps}
    assert steps["b", "F"] == (2, 3, 0)
    assert steps["c", "F"] == (4, 5, 1)
    # fc F 5-6 adds fc.y (296). softmax F at 6 needs softmax.y (336 > 300): b.y's copy ended
    # at 6, so it is a clean entry and goes for free. fc.y and softmax.y are not CONV outputs
    # and stay. Backward starts at 7: the prefetch of b.y finds 208 B live, and 336 > 300 with
    # no clean entry (c.y's copy, 6-8, is still running): skipped. softmax B 7-9, fc B 9-11
    # (c.y clean at 8), then c.y, fc.y and softmax.y are freed: fc.dx (128) is left.
    # The prefetch of a.y at 11 fits: H2D 11-13. c B at 11 misses b.y: 384 > 300, so a.y,
    # in flight, is evicted after it lands (13); b.y comes over 13-15, and then c.dx cannot
    # fit beside b.y and fc.dx (the lower bound is static + 384 B): 128 - 44 = 84 B short.
    ms = lambda t_s: round(t_s / MS, 9)   # noqa: E731
    names = {t.tensor_id: t.name for t in p.tensors}
    assert [(names[t], d, ms(s), ms(e)) for t, d, _, _, s, e, _ in r.transfers] == [
        ("a.y", "d2h", 2, 4), ("b.y", "d2h", 4, 6), ("c.y", "d2h", 6, 8),
        ("a.y", "h2d", 11, 13), ("b.y", "h2d", 13, 15)]
    c = r.counters
    assert (c["evictions"], c["prefetch_skipped"], c["cache_misses"]) == (3, 1, 1)
    f = r.failure
    assert not r.feasible and (f.layer, f.phase, f.tensor) == ("c", "B", "c.dx")
    assert (f.short_bytes, ms(f.time_s)) == (84, 15)
