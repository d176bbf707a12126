"""Peak memory pinned to hand derivations on tiny graphs (see each comment for the arithmetic).

tiny_chain (tests/conftest.py): data(1x4x4) -> conv(2ch) -> relu -> fc(10) -> softmax, batch 1.
Managed tensors: conv.y 128 B, relu.y 128 B, fc.y 40 B, softmax.y 40 B, fc.dx 128 B.
Static: params 1400 + grads 1400 + momentum 1400 + input 68 = 4268 B.
Liveness timeline (managed): conv F 128, relu F 256, fc F 296, softmax F 336,
softmax B frees fc.y -> 296, fc B allocates fc.dx -> 424 (peak), then drains to 0.
"""
import pytest

from snsim.api import simulate
from snsim.hardware import load_hardware

STATIC = 4268
K40C = load_hardware("k40c")


def run(G, policy, **kw):
    return simulate(G, hardware=K40C, policy=policy, **kw)


def test_keep_all_peak(tiny_chain):
    r = run(tiny_chain, "keep_all")
    assert r.feasible
    assert r.peak_ideal_bytes == STATIC + 128 + 128 + 40 + 40 + 128   # everything at once: 4732
    # all of it allocated up front, at t = 0: 14 static tensors and the 5 managed ones, which
    # are the only ones released
    allocs = [t for t, _, delta in r.memory_events if delta > 0]
    assert len(allocs) == 14 + 5 and len(r.memory_events) == 19 + 5 and set(allocs) == {0.0}


def test_liveness_peak(tiny_chain):
    r = run(tiny_chain, "liveness")
    assert r.peak_ideal_bytes == STATIC + 424 == 4692
    # 5 F steps x 1 ms + 4 B steps x 2 ms (the data layer's B is a no-op) + 2 updates x 0.1 ms
    assert r.step_time_s == pytest.approx(13.2e-3)
    assert r.compute_time_s == pytest.approx(13.2e-3) and r.stall_time_s == 0
    # nothing leaves the GPU: no copies, no host memory
    assert (r.h2d_bytes, r.d2h_bytes, r.counters["peak_host_bytes"]) == (0, 0, 0)
    assert set(r.steps_frame().workspace_bytes) == {0}   # no conv tables: no workspaces


def test_recompute_replays_relu(tiny_chain):
    r = run(tiny_chain, "recompute")
    # relu.y is dropped after fc F and replayed (1 ms) before fc B; the peak stays at fc B
    assert r.recomputed_layers == ("relu",)
    assert r.recompute_time_s == pytest.approx(1e-3)
    assert r.peak_ideal_bytes == STATIC + 424
    assert r.step_time_s == pytest.approx(14.2e-3)


def test_offload_moves_conv_output(tiny_chain):
    r = run(tiny_chain, "offload", policy_options={"free_after_offload": True})
    # conv.y (128 B) goes D2H after conv F and comes back H2D when backward starts
    assert r.d2h_bytes == 128 and r.h2d_bytes == 128
    assert r.counters["prefetch_hits"] == 1 and r.counters["cache_misses"] == 0
    assert r.peak_ideal_bytes == STATIC + 424


def test_budget_one_byte_short_is_infeasible(tiny_chain):
    r = run(tiny_chain, "liveness", budget_bytes=STATIC + 423)
    assert not r.feasible
    # at fc B 4268 + 296 B are resident; fc.dx needs 128 B and 127 are free
    assert (r.failure.layer, r.failure.phase, r.failure.tensor) == ("fc", "B", "fc.dx")
    assert r.failure.requested_bytes == 128 and r.failure.short_bytes == 1


def test_superneurons_fits_in_the_lower_bound(tiny_chain):
    # lower bound = static + largest working set (ReLU B: 3 x 128 B)
    r = run(tiny_chain, "superneurons", budget_bytes=STATIC + 384)
    assert r.feasible and r.peak_ideal_bytes <= STATIC + 384
    assert r.lower_bound_bytes == STATIC + 384


def test_pool_allocator_rounds_to_1kib(tiny_chain):
    r = run(tiny_chain, "liveness", allocator="pool")
    # static tensors, each rounded up to 1 KiB: batch 64 B, labels 4 B, and conv weight 72 B,
    # conv bias 8 B, fc bias 40 B (x3: value, grad, momentum) -> 1 KiB each = 11 KiB; fc weight
    # 1280 B (x3) -> 2 KiB each = 6 KiB; static 17 KiB. Peak: 4 live managed tensors x 1 KiB
    assert r.peak_allocated_bytes == 21 * 1024
    assert r.peak_ideal_bytes == STATIC + 424


def test_pytorch_allocator_rounding_and_segment(tiny_chain):
    r = run(tiny_chain, "liveness", allocator="pytorch")
    # 512 B rounding: fc weight 1280 B -> 1536 (x3); the 11 other static tensors -> 512 each:
    # 4608 + 5632 = 10240 B; plus 4 live managed tensors x 512 -> 12288 B allocated.
    # Everything is small (<= 1 MiB) and fits one 2 MiB segment
    assert r.peak_allocated_bytes == 12288
    assert r.peak_reserved_bytes == 2 * 2**20


def test_one_byte_static_tensors_are_allocated():
    # 1-byte floats, a 1x1 conv with one channel: its weight and bias (and their gradients and
    # momentum) are 1 B each; with the fc (8 + 2 B, x3) and the 4 B batch and labels: 44 B
    from snsim.graph import GraphBuilder
    b = GraphBuilder("bytes", batch=1, input_shape=(1, 2, 2), dtype_bytes=1)
    x = b.conv(b.data(), 1, 1, name="conv")
    r = run(b.finish(b.softmax(b.fc(x, 2, name="fc"))), "liveness")
    static = [d for _, cat, d in r.memory_events if cat != "activation" and d > 0
              and cat != "activation_grad"]
    assert sorted(static) == [1] * 6 + [2] * 3 + [4, 4] + [8] * 3 and r.static_bytes == 44
