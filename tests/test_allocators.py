"""Tests for snsim.engine.allocators (SPEC §10)."""
import gzip
import json
import os
import random

import pytest

from snsim.engine import allocators
from snsim.engine.allocators import (
    ALLOCATORS,
    Allocator,
    OutOfMemory,
    PoolAllocator,
    PytorchAllocator,
    make_allocator,
    replay_history,
)
from snsim.errors import ConfigError, InfeasibleError, PlanError, SnsimError, UnknownNameError

KiB = 2**10
MiB = 2**20
GiB = 2**30


# --- registry ---------------------------------------------------------------------------------

def test_registry_names():
    assert ALLOCATORS == ("ideal", "pool", "pytorch")
    for name in ALLOCATORS:
        a = make_allocator(name, None)
        assert isinstance(a, Allocator)
        assert a.name == name


def test_unknown_name_lists_known_names():
    with pytest.raises(UnknownNameError, match=r"unknown allocator 'buddy'.*ideal, pool, pytorch"):
        make_allocator("buddy", None)


@pytest.mark.parametrize("name", ["ideal", "pool"])
def test_models_without_options_reject_any_option(name):
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'max_split_size_bytes'"):
        make_allocator(name, None, max_split_size_bytes=64 * MiB)


def test_pytorch_rejects_unknown_and_unmodelled_options():
    with pytest.raises(ConfigError, match="unknown option"):
        make_allocator("pytorch", None, garbage_collection_threshold=0.5)
    with pytest.raises(ConfigError, match="expandable_segments"):
        make_allocator("pytorch", None, expandable_segments=True)
    make_allocator("pytorch", None, expandable_segments=False)  # the default is fine
    with pytest.raises(ConfigError, match=r"max_split_size_bytes \(=1048576\) must be > 20971520"):
        make_allocator("pytorch", None, max_split_size_bytes=MiB)


@pytest.mark.parametrize("name", ALLOCATORS)
@pytest.mark.parametrize("capacity", [0, -5, 1.5, "1GiB", True])
def test_bad_capacity(name, capacity):
    with pytest.raises(ConfigError, match="capacity_bytes"):
        make_allocator(name, capacity)


def test_pool_needs_one_block():
    with pytest.raises(ConfigError, match="must be >= 1024"):
        make_allocator("pool", 1000)


def test_out_of_memory_is_infeasible():
    assert issubclass(OutOfMemory, InfeasibleError)
    assert issubclass(OutOfMemory, SnsimError)


# --- common behaviour -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALLOCATORS)
def test_double_free_and_unknown_handle(name):
    a = make_allocator(name, None)
    h = a.alloc(4096)
    a.free(h)
    with pytest.raises(PlanError, match=rf"free\(handle={h}\).*already freed"):
        a.free(h)
    with pytest.raises(PlanError, match=r"free\(handle=12345\)"):
        a.free(12345)
    with pytest.raises(PlanError, match=r"free\(handle=None\)"):
        a.free(None)


@pytest.mark.parametrize("name", ALLOCATORS)
@pytest.mark.parametrize("nbytes", [-1, 2.5, "10"])
def test_bad_nbytes(name, nbytes):
    a = make_allocator(name, None)
    with pytest.raises(PlanError, match="nbytes"):
        a.alloc(nbytes)
    with pytest.raises(PlanError, match="nbytes"):
        a.can_alloc(nbytes)


@pytest.mark.parametrize("name", ALLOCATORS)
def test_zero_byte_alloc_holds_nothing(name):
    a = make_allocator(name, 1 * MiB)
    h = a.alloc(0)
    assert (a.allocated_bytes, a.requested_bytes, a.peak_allocated_bytes) == (0, 0, 0)
    a.free(h)
    with pytest.raises(PlanError):
        a.free(h)


@pytest.mark.parametrize("name", ALLOCATORS)
def test_handles_are_distinct_positive_ints(name):
    a = make_allocator(name, None)
    handles = [a.alloc(100) for _ in range(50)]
    assert len(set(handles)) == 50 and all(isinstance(h, int) and h > 0 for h in handles)
    assert a.num_live == 50


@pytest.mark.parametrize("name", ALLOCATORS)
def test_can_alloc_changes_nothing(name):
    a = make_allocator(name, 64 * MiB)
    hs = [a.alloc(5 * MiB) for _ in range(4)]
    a.free(hs[1])
    before = _counters(a)
    for n in (0, 1, MiB, 7 * MiB, 30 * MiB, 63 * MiB, 65 * MiB):
        a.can_alloc(n)
        assert _counters(a) == before


@pytest.mark.parametrize("name", ALLOCATORS)
def test_peaks_and_reset(name):
    a = make_allocator(name, None)
    assert (a.peak_allocated_bytes, a.peak_reserved_bytes, a.peak_requested_bytes) == (0, 0, 0)
    h1 = a.alloc(3 * MiB)
    h2 = a.alloc(5 * MiB)
    peak_alloc, peak_req = a.allocated_bytes, a.requested_bytes
    a.free(h2)
    assert a.peak_allocated_bytes == peak_alloc
    assert a.peak_requested_bytes == peak_req == 8 * MiB
    assert a.allocated_bytes < peak_alloc
    a.reset_peaks()
    assert a.peak_allocated_bytes == a.allocated_bytes
    assert a.peak_requested_bytes == a.requested_bytes == 3 * MiB
    a.free(h1)
    assert a.peak_requested_bytes == 3 * MiB


@pytest.mark.parametrize("name", ALLOCATORS)
def test_deterministic(name):
    def run():
        a = make_allocator(name, 256 * MiB)
        trace, live = [], []
        for kind, arg in _random_ops(random.Random(7), 600):
            if kind == "alloc":
                try:
                    h = a.alloc(*arg)
                    live.append(h)
                    where = a.address_of(h) if hasattr(a, "address_of") else None
                    trace.append(("alloc", h, where))
                except OutOfMemory as err:
                    trace.append(("oom", str(err)))
            elif live:
                a.free(live.pop(arg % len(live)))
            trace.append(_counters(a))
        return trace

    assert run() == run()


# --- ideal ------------------------------------------------------------------------------------

def test_ideal_counters_are_exact_sums():
    a = make_allocator("ideal", 1000)
    h1 = a.alloc(1)
    h2 = a.alloc(511)
    assert a.allocated_bytes == a.reserved_bytes == a.requested_bytes == 512
    assert a.can_alloc(488) and not a.can_alloc(489)
    h3 = a.alloc(488)
    with pytest.raises(OutOfMemory, match=r"1000 B live \+ 1 B > capacity 1000 B") as info:
        a.alloc(1)
    assert info.value.requested_bytes == 1 and info.value.short_bytes == 1
    assert a.requested_bytes == 1000  # a failed alloc changes nothing
    for h in (h1, h2, h3):
        a.free(h)
    assert (a.allocated_bytes, a.reserved_bytes, a.requested_bytes) == (0, 0, 0)
    assert a.peak_allocated_bytes == a.peak_reserved_bytes == a.peak_requested_bytes == 1000


def test_ideal_unlimited():
    a = make_allocator("ideal", None)
    a.alloc(10**15)
    assert a.can_alloc(10**15)


# --- pool -------------------------------------------------------------------------------------

def test_pool_rounds_to_1kib_and_reserves_capacity():
    a = make_allocator("pool", 10 * KiB)
    h = a.alloc(1)
    assert (a.allocated_bytes, a.requested_bytes, a.reserved_bytes) == (KiB, 1, 10 * KiB)
    a.alloc(1025)
    assert a.allocated_bytes == 3 * KiB
    assert a.peak_reserved_bytes == 3 * KiB  # highest end address used, not the capacity
    a.free(h)
    assert a.allocated_bytes == 2 * KiB


def test_pool_capacity_rounds_down_to_blocks():
    a = make_allocator("pool", 10 * KiB + 100)
    assert a.reserved_bytes == 10 * KiB
    a.alloc(10 * KiB)
    assert not a.can_alloc(1)


def test_pool_first_fit_lowest_address():
    a = make_allocator("pool", 100 * KiB)
    h = [a.alloc(10 * KiB) for _ in range(5)]  # [0,10) [10,20) ... [40,50)
    a.free(h[1])
    a.free(h[3])
    small = a.alloc(4 * KiB)
    assert a.address_of(small) == 10 * KiB      # first gap that fits, not the best one
    big = a.alloc(8 * KiB)
    assert a.address_of(big) == 30 * KiB        # [14,20) is too small, [30,40) fits
    a.check_invariants()


def test_pool_fragmentation_oom_needs_contiguous_gap():
    a = make_allocator("pool", 8 * KiB)
    h = [a.alloc(KiB) for _ in range(8)]
    for i in (0, 2, 4, 6):
        a.free(h[i])
    assert a.reserved_bytes - a.allocated_bytes == 4 * KiB  # 4 KiB free in total ...
    assert a.num_gaps == 4
    assert a.can_alloc(KiB) and not a.can_alloc(2 * KiB)
    with pytest.raises(OutOfMemory, match=r"no contiguous gap.*4096 B free in 4 gaps, the largest 1024 B") as info:
        a.alloc(2 * KiB)                                    # ... but no 2 KiB gap
    assert info.value.short_bytes == KiB
    assert a.allocated_bytes == 4 * KiB


def test_pool_coalescing():
    a = make_allocator("pool", 4 * KiB)
    h = [a.alloc(KiB) for _ in range(4)]
    a.free(h[1])
    a.free(h[2])          # merges with the free left neighbour
    assert a.num_gaps == 1
    m = a.alloc(2 * KiB)  # fits only in the merged gap
    assert a.address_of(m) == KiB
    a.free(h[0])
    a.free(h[3])
    a.free(m)             # merges with both neighbours
    assert a.num_gaps == 1
    a.check_invariants()
    a.alloc(4 * KiB)      # the whole pool is one gap again
    assert a.num_gaps == 0
    a.check_invariants()


def test_pool_peak_reserved_is_high_water_mark():
    a = make_allocator("pool", GiB)
    h1 = a.alloc(MiB)
    h2 = a.alloc(MiB)
    a.free(h1)
    a.alloc(512 * KiB)    # reuses the hole at the bottom
    assert a.peak_reserved_bytes == 2 * MiB
    a.free(h2)
    a.reset_peaks()
    assert a.peak_reserved_bytes == 512 * KiB  # current end of the live blocks
    assert a.reserved_bytes == GiB


def test_pool_unlimited_grows():
    a = make_allocator("pool", None)
    h = [a.alloc(MiB) for _ in range(3)]
    assert a.reserved_bytes == a.peak_reserved_bytes == 3 * MiB
    for x in h:
        a.free(x)
    assert a.reserved_bytes == 3 * MiB and a.allocated_bytes == 0
    a.check_invariants()
    b = make_allocator("pool", None)    # the very first block counts as reserved too
    b.alloc(1)
    assert b.reserved_bytes == b.allocated_bytes == KiB


def _naive_first_fit(gaps, nblocks):
    for i, (start, size) in enumerate(gaps):
        if size >= nblocks:
            if size == nblocks:
                del gaps[i]
            else:
                gaps[i] = (start + nblocks, size - nblocks)
            return start
    return None


def _naive_free(gaps, start, nblocks):
    gaps.append((start, nblocks))
    gaps.sort()
    merged = []
    for s, n in gaps:
        if merged and merged[-1][0] + merged[-1][1] == s:
            merged[-1] = (merged[-1][0], merged[-1][1] + n)
        else:
            merged.append((s, n))
    gaps[:] = merged


@pytest.mark.parametrize("chunk", [2, 64])
@pytest.mark.parametrize("seed", range(3))
def test_pool_matches_naive_first_fit(seed, chunk, monkeypatch):
    # tiny chunks make the chunked free list split, empty and drop chunks all the time
    monkeypatch.setattr(allocators._GapList, "_CHUNK", chunk)
    rng = random.Random(seed)
    total = 4000
    a = PoolAllocator(total * KiB)
    gaps = [(0, total)]
    live = {}
    for i in range(6000):
        if i % 50 == 0:
            a.check_invariants()      # gaps ordered, coalesced, tiling the pool with the blocks
            assert list(a._gaps.items()) == gaps
        if live and rng.random() < 0.45:
            h = rng.choice(sorted(live))
            start, n = live.pop(h)
            a.free(h)
            _naive_free(gaps, start, n)
        else:
            nbytes = rng.randint(1, 6 * KiB)
            n = -(-nbytes // KiB)
            want = _naive_first_fit(gaps, n)
            if want is None:
                with pytest.raises(OutOfMemory):
                    a.alloc(nbytes)
                continue
            h = a.alloc(nbytes)
            assert a.address_of(h) == want * KiB
            live[h] = (want, n)
    assert a.num_gaps == len(gaps)
    a.check_invariants()


# --- pytorch: SPEC §10 table --------------------------------------------------------------------
# The expected numbers below come from a real NVIDIA H200 measurement (torch 2.11.0+cu130) recorded
# in SPEC §10: one allocation after torch.cuda.empty_cache(), allocated and reserved deltas.

@pytest.mark.parametrize("request_bytes, allocated, reserved", [
    (1, 512, 2 * MiB),
    (511, 512, 2 * MiB),
    (512, 512, 2 * MiB),
    (513, 1024, 2 * MiB),
    (1000, 1024, 2 * MiB),
    (MiB, MiB, 2 * MiB),
    (MiB + 1, MiB + 512, 20 * MiB),
    (5 * MiB, 5 * MiB, 20 * MiB),
    (10 * MiB - 1, 10 * MiB, 10 * MiB),    # the < 10 MiB rule applies to the rounded size
    (10 * MiB + 1, 10 * MiB + 512, 12 * MiB),
    (21 * MiB, 22 * MiB, 22 * MiB),        # remainder 1 MiB is not > 1 MiB: handed out whole
])
def test_pytorch_single_allocation_matches_h200(request_bytes, allocated, reserved):
    # numbers measured on a real H200, recorded in SPEC §10
    a = make_allocator("pytorch", 141 * GiB)
    h = a.alloc(request_bytes)
    assert a.allocated_bytes == allocated
    assert a.reserved_bytes == reserved
    assert a.requested_bytes == request_bytes
    assert a.block_size_of(h) == allocated
    a.check_invariants()


def test_pytorch_three_7mib_use_two_segments_h200():
    # numbers measured on a real H200, recorded in SPEC §10: 3 x 7 MiB -> 21 MiB / 40 MiB
    a = make_allocator("pytorch", 141 * GiB)
    for _ in range(3):
        a.alloc(7 * MiB)
    assert a.allocated_bytes == 21 * MiB
    assert a.reserved_bytes == 40 * MiB
    assert a.num_segments == 2
    a.check_invariants()


def test_pytorch_segments_never_merge_h200():
    # numbers measured on a real H200, recorded in SPEC §10: 8 x 16 MiB freed, then
    # 4 x 32 MiB -> 256 MiB reserved for 128 MiB allocated
    a = make_allocator("pytorch", 141 * GiB)
    hs = [a.alloc(16 * MiB) for _ in range(8)]
    for h in hs:
        a.free(h)
    assert (a.allocated_bytes, a.reserved_bytes) == (0, 128 * MiB)
    for _ in range(4):
        a.alloc(32 * MiB)
    assert a.allocated_bytes == 128 * MiB
    assert a.reserved_bytes == 256 * MiB
    assert a.num_segments == 12
    a.check_invariants()


# --- pytorch: other rules ---------------------------------------------------------------------

def test_pytorch_best_fit_smallest_then_lowest_address():
    a = PytorchAllocator(None)
    big = [a.alloc(12 * MiB) for _ in range(2)]     # two 12 MiB segments
    mid = a.alloc(16 * MiB)                          # one 16 MiB segment
    a.free(mid)
    for h in big:
        a.free(h)
    h = a.alloc(11 * MiB)   # 12 MiB blocks fit best; the lower address wins the tie
    assert a.address_of(h) == 0
    assert a.block_size_of(h) == 12 * MiB  # remainder 1 MiB is not > 1 MiB: no split
    assert a.reserved_bytes == 40 * MiB


def test_pytorch_small_pool_split_and_merge():
    a = PytorchAllocator(None)
    hs = [a.alloc(512) for _ in range(4)]
    assert a.reserved_bytes == 2 * MiB and a.num_segments == 1
    assert [a.address_of(h) for h in hs] == [0, 512, 1024, 1536]
    a.free(hs[1])
    a.free(hs[2])
    h = a.alloc(1024)           # fits exactly in the merged hole
    assert a.address_of(h) == 512
    for x in (hs[0], hs[3], h):
        a.free(x)
    assert a.cached_segment_bytes == 2 * MiB
    a.check_invariants()


def test_pytorch_small_and_large_pools_are_separate():
    a = PytorchAllocator(None)
    h = a.alloc(MiB + 1)        # large pool, 20 MiB segment
    a.free(h)
    a.alloc(4096)               # small request cannot use the large pool's cache
    assert a.reserved_bytes == 22 * MiB and a.num_segments == 2


def test_pytorch_stream_separation():
    a = make_allocator("pytorch", None)
    h = a.alloc(5 * MiB, stream=0)
    a.free(h)
    assert a.reserved_bytes == 20 * MiB
    a.alloc(5 * MiB, stream=1)  # the stream-0 block is not reused on stream 1
    assert a.reserved_bytes == 40 * MiB
    a.alloc(5 * MiB, stream=0)  # but is on stream 0
    assert a.reserved_bytes == 40 * MiB
    a.check_invariants()


def test_pytorch_oom_empty_cache_and_retry():
    a = make_allocator("pytorch", 64 * MiB)
    cached = [a.alloc(20 * MiB, stream=1) for _ in range(2)]
    for h in cached:
        a.free(h)
    keep = a.alloc(16 * MiB)
    assert a.reserved_bytes == 56 * MiB
    assert a.can_alloc(40 * MiB)            # fits once the two cached segments go
    h = a.alloc(40 * MiB)                   # 56 + 40 > 64: release cached, retry
    assert a.num_alloc_retries == 1 and a.num_ooms == 0
    assert a.reserved_bytes == 56 * MiB and a.num_segments == 2
    assert not a.can_alloc(10 * MiB)
    with pytest.raises(OutOfMemory, match=r"58720256 B reserved \+ 10485760 B > capacity 67108864 B") as info:
        a.alloc(10 * MiB)
    assert info.value.short_bytes == 2 * MiB
    assert a.num_alloc_retries == 2 and a.num_ooms == 1
    a.free(h)
    a.free(keep)
    a.check_invariants()


def test_pytorch_empty_cache_keeps_split_segments():
    a = PytorchAllocator(None)
    h1 = a.alloc(3 * MiB)       # 20 MiB segment, split
    h2 = a.alloc(18 * MiB)      # the 17 MiB remainder is too small: new 18 MiB segment
    a.free(h2)
    assert a.empty_cache() == 18 * MiB
    assert a.reserved_bytes == 20 * MiB     # the segment holding h1 stays
    a.free(h1)
    assert a.empty_cache() == 20 * MiB
    assert a.reserved_bytes == 0 and a.num_segments == 0
    assert a.peak_reserved_bytes == 38 * MiB
    a.check_invariants()


def test_pytorch_max_split_size():
    mss = 64 * MiB
    a = make_allocator("pytorch", None, max_split_size_bytes=mss)
    big = a.alloc(100 * MiB)
    assert a.block_size_of(big) == 100 * MiB
    a.free(big)
    small = a.alloc(30 * MiB)   # < mss: may not take the 100 MiB oversize block
    assert a.reserved_bytes == 130 * MiB
    a.free(small)
    h = a.alloc(70 * MiB)       # >= mss: 100 MiB block is >= 70 + 20 MiB, not allowed
    assert a.reserved_bytes == 200 * MiB
    a.free(h)
    h = a.alloc(90 * MiB)       # 100 < 90 + 20: takes the 100 MiB block whole, no split
    assert a.block_size_of(h) == 100 * MiB
    assert a.reserved_bytes == 200 * MiB
    a.check_invariants()


def test_pytorch_max_split_size_releases_oversize_blocks_first():
    a = make_allocator("pytorch", 200 * MiB, max_split_size_bytes=32 * MiB)
    small = a.alloc(20 * MiB, stream=0)       # 20 MiB segment, cached later
    a.free(small)
    for h in [a.alloc(40 * MiB) for _ in range(3)]:
        a.free(h)
    assert a.reserved_bytes == 140 * MiB
    # 140 + 70 > 200 MiB: torch frees the largest oversize (>= 32 MiB) cached blocks of this
    # pool and stream until 70 MiB are freed -- two 40 MiB segments -- before any full retry
    a.alloc(70 * MiB)
    assert a.num_alloc_retries == 0
    assert a.reserved_bytes == 20 * MiB + 40 * MiB + 70 * MiB
    a.check_invariants()


def test_pytorch_max_split_size_releases_one_large_enough_block():
    a = make_allocator("pytorch", 200 * MiB, max_split_size_bytes=32 * MiB)
    for n in (20 * MiB, 130 * MiB):
        a.free(a.alloc(n))
    # the cached 130 MiB block is >= 100 + 20 MiB, so it may not serve the request; being
    # oversize and large enough, it alone is released, and the 20 MiB segment stays cached
    a.alloc(100 * MiB)
    assert a.num_alloc_retries == 0
    assert a.reserved_bytes == 120 * MiB and a.cached_segment_bytes == 20 * MiB
    a.check_invariants()


def test_pytorch_reuse_steady_state():
    # the second iteration of the same pattern needs no new segment
    a = PytorchAllocator(None)
    sizes = [3 * MiB, 700, 12 * MiB, 64 * KiB, 25 * MiB, 1]
    for _ in range(2):
        hs = [a.alloc(n) for n in sizes]
        for h in reversed(hs):
            a.free(h)
        reserved = a.reserved_bytes
    assert a.reserved_bytes == reserved == a.peak_reserved_bytes


# --- randomized invariants --------------------------------------------------------------------

def _random_ops(rng, n):
    for _ in range(n):
        if rng.random() < 0.55:
            r = rng.random()
            if r < 0.4:
                nbytes = rng.randint(0, 4096)
            elif r < 0.7:
                nbytes = rng.randint(4096, 2 * MiB)
            elif r < 0.95:
                nbytes = rng.randint(2 * MiB, 24 * MiB)
            else:
                nbytes = rng.randint(24 * MiB, 80 * MiB)
            yield "alloc", (nbytes, rng.choice((0, 0, 0, 1, 2)))
        else:
            yield "free", rng.randrange(1 << 30)


def _counters(a):
    return (a.allocated_bytes, a.reserved_bytes, a.requested_bytes,
            a.peak_allocated_bytes, a.peak_reserved_bytes, a.peak_requested_bytes)


@pytest.mark.parametrize("name", ALLOCATORS)
@pytest.mark.parametrize("capacity", [None, 300 * MiB])
@pytest.mark.parametrize("seed", range(5))
def test_random_invariants(name, capacity, seed):
    rng = random.Random(seed)
    a = make_allocator(name, capacity)
    live = []
    for step, (kind, arg) in enumerate(_random_ops(rng, 1500)):
        reserved_before = a.reserved_bytes
        retries_before = getattr(a, "num_alloc_retries", 0)
        if kind == "alloc":
            expect = a.can_alloc(*arg)
            try:
                live.append(a.alloc(*arg))
                assert expect, "can_alloc said no but alloc succeeded"
            except OutOfMemory:
                assert not expect, "can_alloc said yes but alloc failed"
                assert capacity is not None
        elif live:
            a.free(live.pop(arg % len(live)))
        if name == "pytorch" and a.num_alloc_retries == retries_before:
            assert a.reserved_bytes >= reserved_before  # shrinks only by (internal) empty_cache
        if step % 10 == 0 and name == "pytorch" and rng.random() < 0.05:
            a.empty_cache()
        assert 0 <= a.requested_bytes <= a.allocated_bytes <= a.reserved_bytes
        assert a.peak_allocated_bytes >= a.allocated_bytes
        assert a.peak_requested_bytes >= a.requested_bytes
        assert a.peak_allocated_bytes <= (a.peak_reserved_bytes if name != "pool"
                                          else a.reserved_bytes)
        if name != "pool":
            assert a.peak_reserved_bytes >= a.reserved_bytes
        if capacity is not None:
            assert a.reserved_bytes <= capacity
        if step % 100 == 0 and hasattr(a, "check_invariants"):
            a.check_invariants()
    rng.shuffle(live)
    for h in live:
        a.free(h)
    assert a.allocated_bytes == a.requested_bytes == 0
    assert a.num_live == 0
    if hasattr(a, "check_invariants"):
        a.check_invariants()
    if name == "pytorch":
        assert a.cached_segment_bytes == a.reserved_bytes
        a.empty_cache()
        assert a.reserved_bytes == 0 and a.num_segments == 0
    if name == "pool":
        assert a.num_gaps == 1


@pytest.mark.parametrize("seed", range(5))
def test_random_invariants_pytorch_max_split_size(seed):
    rng = random.Random(100 + seed)
    a = make_allocator("pytorch", 400 * MiB, max_split_size_bytes=32 * MiB)
    live = []
    for kind, arg in _random_ops(rng, 1500):
        if kind == "alloc":
            expect = a.can_alloc(*arg)
            try:
                live.append(a.alloc(*arg))
            except OutOfMemory:
                assert not expect
            else:
                assert expect
        elif live:
            a.free(live.pop(arg % len(live)))
        assert a.requested_bytes <= a.allocated_bytes <= a.reserved_bytes <= 400 * MiB
    a.check_invariants()
    for h in live:
        a.free(h)
    assert a.allocated_bytes == 0
    a.check_invariants()


def test_driver_calls_counted_as_in_a_steady_state_iteration():
    # issue 9 D10: cudaMalloc/cudaFree calls that the engine charges latency for
    a = make_allocator("pytorch", 40 * MiB)
    h = a.alloc(12 * MiB)          # a new 12 MiB segment: cached from the previous iteration
    a.free(h)
    assert (a.device_mallocs, a.device_frees) == (0, 0)
    h = a.alloc(30 * MiB)          # 12 + 30 > 40: release the cached 12 MiB, then make 30 MiB
    assert (a.device_mallocs, a.device_frees) == (1, 1)
    a.free(h)
    a.alloc(12 * MiB)              # splits the cached 30 MiB block: no driver call
    assert (a.device_mallocs, a.device_frees) == (1, 1)
    for name in ("ideal", "pool"):  # no allocator, or one allocated before the iteration
        m = make_allocator(name, 40 * MiB)
        m.free(m.alloc(30 * MiB))
        m.alloc(30 * MiB)
        assert (m.device_mallocs, m.device_frees) == (0, 0)


def test_pytorch_boundaries_exactly():
    # torch: a request of exactly kSmallSize (1 MiB) is small (2 MiB segment, not 20 MiB)
    a = make_allocator("pytorch", None)
    a.alloc(MiB)
    assert a.reserved_bytes == 2 * MiB
    # max_split_size: a cached block of exactly request + kLargeBuffer is too large to take
    a = make_allocator("pytorch", None, max_split_size_bytes=40 * MiB)
    a.free(a.alloc(70 * MiB))
    h = a.alloc(50 * MiB)            # 70 >= 50 + 20: a new 50 MiB segment
    assert a.reserved_bytes == 120 * MiB and a.block_size_of(h) == 50 * MiB
    a = make_allocator("pytorch", None, max_split_size_bytes=40 * MiB)
    a.free(a.alloc(70 * MiB))
    a.alloc(40 * MiB)                # a request of exactly max_split is a large one: same rule
    assert a.reserved_bytes == 110 * MiB


# -- the real caching allocator's event history (traces/h200/plans_history) --------------------

_HISTORIES = os.path.join(os.path.dirname(__file__), "..", "traces", "h200", "plans_history")


# histories whose segments the model opens otherwise, reaching the same peak: Swin-V2-T b24
# bf16 superneurons (held-out set 20): at its 46th segment the real allocator opened a 2 MiB
# small-pool segment for an 802,816 B request the model fitted into a free small block (not
# explained this session)
_SEGMENTS_DIFFER = {"swin_v2_t_b24_bf16_superneurons"}


def _replay_history(name):
    """Feed a history's requests and frees to the allocator model, under the run's memory cap
    where it had one: (model, segments it opened, the history's segments, the measured peaks,
    the peak of the history's own segments (None where it began with earlier ones), whether the model refused each request the real
    allocator refused (its ``oom`` events))."""
    with gzip.open(os.path.join(_HISTORIES, f"{name}.json.gz"), "rt") as f:
        doc = json.load(f)
    events = doc["events"]
    cap = doc["config"].get("budget_bytes")
    real_segments = [size for action, _, size, _ in events if action == "segment_alloc"]
    a = PytorchAllocator(cap, segment_addresses=[addr for action, addr, _, _ in events
                                                 if action == "segment_alloc"])
    made, refused = [], []
    live = {}
    opened = False   # a history may begin inside a segment reserved before it was recorded
    held = events_peak = 0
    for action, addr, size, stream in events:
        opened = opened or action == "segment_alloc"
        held += size if action == "segment_alloc" else -size if action == "segment_free" else 0
        events_peak = max(events_peak, held)
        if action == "alloc":
            before = a.reserved_bytes
            live[addr] = a.alloc(size, stream)
            if a.reserved_bytes > before and opened:
                made.append(a.reserved_bytes - before)
        elif action == "free_completed":
            a.free(live.pop(addr))
        elif action == "segment_free" and cap:
            # under a cap: the segment a release-and-retry gave back
            a.release_segment(addr)
        elif action == "segment_free":
            # torch.cuda.empty_cache(): execute.measure empties the cache after its host gauge's
            # small adds (histories recorded since the gauge, 2026-12-01) and before the model
            a.empty_cache()
        elif action == "oom":
            refused.append(not a.can_alloc(size, stream))
    # a history that gives back a segment before it opens one began with segments the run
    # before left (the model never made them): its own peak is unknown
    first = next((e[0] for e in events if e[0] in ("segment_alloc", "segment_free")), None)
    if first == "segment_free":
        events_peak = None
    return a, made, real_segments, doc["measured"], events_peak, refused


_HISTORY_NAMES = sorted(f[:-len(".json.gz")] for f in (
    os.listdir(_HISTORIES) if os.path.isdir(_HISTORIES) else ()))
_CAPPED = {n for n in _HISTORY_NAMES if "_cap" in n}


@pytest.mark.parametrize("name", sorted(set(_HISTORY_NAMES) - _CAPPED))
def test_pytorch_replays_the_real_allocators_history(name):
    # scripts/plan_alloc_history.py recorded torch 2.11's CUDACachingAllocator on an H200
    # (torch.cuda.memory._record_memory_history) over a whole executed plan: every request,
    # every free and every cudaMalloc'd segment. Fed the same requests and frees, with each new
    # segment at the address the driver gave it (ties between equal free blocks break by
    # address), the model must reach the measured max_memory_reserved exactly and open the
    # same segments in the same order (but for _SEGMENTS_DIFFER, which must still differ: a
    # fix moves it out of the set).
    a, made, real_segments, measured, _, _ = _replay_history(name)
    assert a.peak_reserved_bytes == measured["peak_reserved_bytes"]
    assert (made == real_segments) != (name in _SEGMENTS_DIFFER)
    a.check_invariants()


@pytest.mark.parametrize("name", sorted(_CAPPED))
def test_pytorch_refuses_what_the_capped_allocator_refused(name):
    # VGG-16 at its out-of-memory edges under set_per_process_memory_fraction (8 and 20 GiB,
    # traces/h200/plans_history/vgg16_b*_cap*: 53-171 requests refused each, most of them
    # cuDNN workspaces it then ran without, and b73's 896 MiB activation that ended its run).
    # Under the same cap, fed the same requests, frees and released segments, the model grants
    # every request the real allocator granted (alloc raises otherwise), refuses every one it
    # refused, and opens the same segments, so its reserved bytes follow the history's own.
    # The measured peaks are of the timed steps alone, after the warm-up's retries.
    a, made, real_segments, measured, events_peak, refused = _replay_history(name)
    assert refused and all(refused)
    assert made == real_segments
    if events_peak is not None:
        assert a.peak_reserved_bytes == events_peak
    if measured.get("oom"):
        assert measured["peak_reserved_bytes"] is None
    else:
        assert measured["peak_reserved_bytes"] <= a.peak_reserved_bytes
    a.check_invariants()


_H200_WINDOW_BYTES = 414 * 2**20   # the H200 preset's lazy_loading_window_bytes
_CUBLAS_BYTES = 64 * 2**20   # the H200 preset's lazy_loading_cublas_bytes


@pytest.mark.parametrize("name, window_bytes, gemm_at, other_bytes", [
    # torch's default lazy module loading, each the first run of a fresh process (without
    # the window: the same peak, or the one in the comment). gemm_at: the first in_proj
    # output (allocation 79; 80 under cpu_offload, whose first offload allocates before it),
    # before which cuBLAS maps its 64 MiB (the hole before the 32 MiB workspace request
    # that follows it in these histories, and in scripts/va_probe.py's)
    ("resnet18_b256_fp16_plain_fresh", _H200_WINDOW_BYTES, None, None),
    ("resnet34_b128_superneurons_fresh", _H200_WINDOW_BYTES, None, None),
    ("convnext_base_b32_adamw_bf16_checkpoint_fresh", _H200_WINDOW_BYTES, None, None),
    ("regnet_x_400mf_b512_plain_fresh1", _H200_WINDOW_BYTES, None, None),
    ("regnet_x_400mf_b512_plain_fresh2", _H200_WINDOW_BYTES, None, None),
    ("regnet_y_3_2gf_b64_adamw_bf16_superneurons_fresh", _H200_WINDOW_BYTES, None, 1769996288),
    ("regnet_y_32gf_b24_adamw_bf16_checkpoint_lazy", _H200_WINDOW_BYTES, None, 4049600512),
    ("densenet121_b16_fp16_cpu_offload_lazy", _H200_WINDOW_BYTES, None, None),
    ("efficientnet_b7_b8_fp16_cpu_offload_lazy", _H200_WINDOW_BYTES, None, None),
    ("mobilenet_v3_small_b512_fp16_superneurons_lazy", _H200_WINDOW_BYTES, None, None),
    ("transformer_encoder_b32_plain_lazy", _H200_WINDOW_BYTES, 79, None),
    ("transformer_encoder_b32_checkpoint_harness_cpu", _H200_WINDOW_BYTES, 79, 1698693120),
    ("transformer_encoder_b32_cpu_offload_harness_cpu", _H200_WINDOW_BYTES, 80, 1159725056),
    # CUDA_MODULE_LOADING=EAGER (the lead's H200 call of 00:29 UTC, plan_alloc_history --tag
    # eager): every kernel module mapped before the first cudaMalloc, no window
    ("transformer_encoder_b32_plain_eager", 0, 79, 4412407808),
    ("transformer_encoder_b32_checkpoint_eager", 0, 79, 1564475392),
    ("transformer_encoder_b32_cpu_offload_eager", 0, 80, 1293942784),
    ("densenet121_b16_fp16_cpu_offload_eager", 0, None, None),
    ("efficientnet_b7_b8_fp16_cpu_offload_eager", 0, None, None),
    ("mobilenet_v3_small_b512_fp16_superneurons_eager", 0, None, None)])
def test_driver_placement_replays_fresh_process_histories(name, window_bytes, gemm_at,
                                                          other_bytes):
    # Fresh-process H200 histories whose cudaMalloc addresses the engine's "driver" placement
    # orders as the driver did (large segments top-down, 2 MiB ones bottom-up; under lazy
    # loading the first step's segments from the bottom of a 414 MiB window above all earlier
    # ones, upward, while they fit): the same stream replays to the measured
    # max_memory_reserved. The window is read off the addresses (scripts/lazy_window.py),
    # not fitted to these peaks; the other loading mode's placement gives other_bytes, so
    # the cases tell the modes apart where the peaks differ.
    with gzip.open(os.path.join(_HISTORIES, f"{name}.json.gz"), "rt") as f:
        doc = json.load(f)
    measured = doc["measured"]["peak_reserved_bytes"]
    assert replay_history(doc, window_bytes, gemm_at, _CUBLAS_BYTES) == measured
    other = replay_history(doc, _H200_WINDOW_BYTES - window_bytes, gemm_at, _CUBLAS_BYTES)
    assert other == (measured if other_bytes is None else other_bytes)


def test_gpt2_history_misses_by_the_room_its_lazy_window_had():
    # Held-out set 8's GPT-2 b16 fp16 Adam selective checkpoint (lazy, fresh process): with
    # the H200's 414 MiB window the driver placement replays it at +18.80% (one 1572 MiB
    # segment more: at allocation 209 best fit ties two free 24 MiB blocks and takes the one
    # the model put higher in the window). In the run, the first step's 24, 24 and 36 MiB
    # segments, cuBLAS's 64 MiB and a 32 MiB segment took [+832, +1056) MiB from its first
    # segment, each below the last (its 12 MiB ones went into tails of earlier 20 MiB
    # reservations), and the 24 MiB one of allocation 185 went below every segment: the window
    # had 224 MiB of room, not 414 (docs/DESIGN.md). With that room
    # the replay reaches the measured peak; the twelve other lazy histories need the 414 MiB
    # (test_driver_placement_replays_fresh_process_histories).
    with gzip.open(os.path.join(_HISTORIES, "gpt2_b16_adam_fp16_checkpoint_selective_lazy"
                                ".json.gz"), "rt") as f:
        doc = json.load(f)
    measured = doc["measured"]["peak_reserved_bytes"]
    assert replay_history(doc, 224 * 2**20) == measured == 8768192512
    assert replay_history(doc, _H200_WINDOW_BYTES) == 10416553984   # +18.80%, 1572 MiB more


def test_replay_history_without_marks_and_with_the_cache_emptied():
    # hand calculation: a 100 MiB request takes a 100 MiB segment (large requests are
    # rounded to 2 MiB); freed, the segment stays cached. A later 10 MiB request reuses it
    # (100 MiB reserved), unless the cache was emptied in between: then a 10 MiB segment.
    # A history without iteration marks (a ZeRO step's) takes no lazy-loading window.
    mib = 2**20
    doc = {"events": [["alloc", 1, 100 * mib, 0], ["free_completed", 1, 100 * mib, 0],
                      ["alloc", 2, 10 * mib, 0]], "iterations": []}
    assert replay_history(doc, 0) == 100 * mib
    assert replay_history(doc, 0, empty_cache_after=1) == 10 * mib


def test_replay_history_empties_its_cache_where_the_history_released_segments():
    # hand calculation: a 100 MiB segment, cached after its free; the process then called
    # empty_cache() (the history's segment_free). A 60 MiB and a 50 MiB request then take
    # segments of their own: 110 MiB reserved at the peak. Kept cached, the 60 MiB would split
    # the 100 MiB segment and the 50 MiB need one more: 150 MiB (the replay before)
    mib = 2**20
    doc = {"events": [["alloc", 1, 100 * mib, 0], ["free_completed", 1, 100 * mib, 0],
                      ["segment_free", 1, 100 * mib, 0],
                      ["alloc", 2, 60 * mib, 0], ["alloc", 3, 50 * mib, 0]],
           "iterations": []}
    assert replay_history(doc, 0) == 110 * mib
    kept = dict(doc, events=[e for e in doc["events"] if e[0] != "segment_free"])
    assert replay_history(kept, 0) == 150 * mib


def test_lazy_window_places_segments_upward_above_earlier_ones_while_they_fit():
    # hand calculation: 20 MiB segments; before the window opens each goes below the last;
    # after, into the 50 MiB window from its bottom (two fit), then below again
    mib = 2**20
    a = PytorchAllocator(segment_placement="driver", lazy_window_bytes=50 * mib)
    before = [a.alloc(20 * mib) for _ in range(2)]
    a.open_lazy_window()
    a.open_lazy_window()   # once: a second call moves nothing
    after = [a.alloc(20 * mib) for _ in range(3)]
    addr = [a.address_of(h) for h in before + after]
    top = 1 << 56
    assert addr == [top - 20 * mib, top - 40 * mib, top, top + 20 * mib, top - 60 * mib]
    # a 2 MiB small-pool segment keeps its own bottom-up order
    assert a.address_of(a.alloc(512)) == 0
    a.check_invariants()


def test_lazy_window_opens_after_the_first_allocation_of_the_step():
    # hand calculation: the engine's first training step asks for the window once its first
    # allocation is made, as a capture's history opens it after the step's first event: a
    # conv's output (20 MiB) goes below the earlier segment, its workspace (30 MiB) into the
    # window; a cuBLAS mapping asked for before any new segment opens it as well
    mib = 2**20
    a = PytorchAllocator(segment_placement="driver", lazy_window_bytes=100 * mib)
    setup = a.alloc(20 * mib)
    a.open_lazy_window_after(a.allocations)
    out, ws = a.alloc(20 * mib), a.alloc(30 * mib)
    top = 1 << 56
    assert [a.address_of(h) for h in (setup, out, ws)] == [top - 20 * mib, top - 40 * mib, top]
    b = PytorchAllocator(segment_placement="driver", lazy_window_bytes=100 * mib)
    b.open_lazy_window_after(b.allocations)
    b.alloc(512)                  # small pool, no large segment: the step's first allocation
    b.map_into_window(64 * mib)   # its first GEMM
    assert b.address_of(b.alloc(20 * mib)) == top + 64 * mib
    a.check_invariants()


def test_lazy_window_option_and_module_loading_are_checked(monkeypatch):
    with pytest.raises(ConfigError, match="lazy_window_bytes"):
        PytorchAllocator(segment_placement="driver", lazy_window_bytes=-1)
    with pytest.raises(ConfigError, match="lazy_window_bytes"):
        PytorchAllocator(segment_placement="driver", lazy_window_bytes=True)
    monkeypatch.delenv("CUDA_MODULE_LOADING", raising=False)
    assert allocators.module_loading() == "lazy"          # CUDA's default
    assert allocators.module_loading("eager") == "eager"
    monkeypatch.setenv("CUDA_MODULE_LOADING", "EAGER")
    assert allocators.module_loading() == "eager"
    assert allocators.module_loading("lazy") == "lazy"    # the option wins
    monkeypatch.setenv("CUDA_MODULE_LOADING", "SOMETIMES")
    with pytest.raises(ConfigError, match="^environment variable CUDA_MODULE_LOADING "
                                          r"\(='sometimes'\) must be one of LAZY, EAGER$"):
        allocators.module_loading()
    with pytest.raises(ConfigError, match="^allocator option module_loading"):
        allocators.module_loading("later")


def test_map_into_window_takes_the_open_windows_next_addresses_if_they_fit():
    # hand calculation, 100 MiB window: cuBLAS's 64 MiB before the window opens maps nothing
    # here; after, 20 MiB segment at the bottom, 64 MiB hole, then a 20 MiB segment no longer
    # fits (84 + 20 > 100) and goes below
    mib = 2**20
    a = PytorchAllocator(segment_placement="driver", lazy_window_bytes=100 * mib)
    a.map_into_window(64 * mib)
    a.open_lazy_window()
    h1 = a.alloc(20 * mib)
    a.map_into_window(64 * mib)
    h2 = a.alloc(20 * mib)
    top = 1 << 56
    assert (a.address_of(h1), a.address_of(h2)) == (top, top - 20 * mib)
    a.map_into_window(64 * mib)   # does not fit either: nothing moves
    h3 = a.alloc(16 * mib)        # 84 + 16 = 100: fits exactly
    assert a.address_of(h3) == top + 84 * mib


# --- alloc_prefix: a run of allocations at once (the engine's setup) ---------------------------

def _state(a):
    """Everything a later call can observe: counters, live handles, the next handle, and for
    the pool its free gaps and high-water marks."""
    extra = ()
    if isinstance(a, PoolAllocator):
        extra = (list(a._gaps.items()), a._high_water_blocks, a._ever_high_water_blocks)
    live = {h: (a.address_of(h) if r is not None else None) if isinstance(a, PytorchAllocator)
            else r for h, r in a._live.items()}   # the caching allocator's records: by address
    return (_counters(a), a.num_live, live, a._next_handle, a.device_mallocs, extra)


@pytest.mark.parametrize("name", ALLOCATORS)
@pytest.mark.parametrize("capacity", [None, 5 * MiB, 64 * MiB])
@pytest.mark.parametrize("fragmented", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_alloc_prefix_is_alloc_one_by_one(name, capacity, fragmented, seed):
    """alloc_prefix places exactly what repeated alloc would, and stops where it would fail."""
    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 700, KiB, 3 * KiB + 5, rng.randint(1, 2 * MiB)])
             for _ in range(rng.randint(0, 300))]

    def fresh():
        a = make_allocator(name, capacity)
        if fragmented:   # several free gaps: the pool's one-gap layout does not apply
            hs = [a.alloc(64 * KiB) for _ in range(6)]
            for h in hs[::2]:
                a.free(h)
        return a

    one = fresh()
    n_one = 0
    for nbytes in sizes:
        if not one.can_alloc(nbytes):
            break
        one.alloc(nbytes)
        n_one += 1
    many = fresh()
    assert many.alloc_prefix(sizes) == n_one
    assert _state(many) == _state(one)
    if isinstance(many, PoolAllocator):
        many.check_invariants()
        h = many.alloc(KiB) if many.can_alloc(KiB) else None   # both go on alike
        assert h is None or (many.address_of(h) == one.address_of(one.alloc(KiB)))


# --- try_alloc: alloc when it fits, else None and nothing changed (the engine's allocations) ---
@pytest.mark.parametrize("name", ALLOCATORS)
@pytest.mark.parametrize("capacity", [None, 64 * MiB, 300 * MiB])
@pytest.mark.parametrize("seed", range(4))
def test_try_alloc_is_can_alloc_then_alloc(name, capacity, seed):
    """Two allocators fed the same random operations, one through try_alloc, the other
    through can_alloc then alloc: the same handles, counters, addresses and gaps after every
    operation; a None from try_alloc is exactly a 'no' from can_alloc."""
    rng = random.Random(seed)
    one, two = make_allocator(name, capacity), make_allocator(name, capacity)
    live_one, live_two = [], []
    refused = 0
    for kind, arg in _random_ops(rng, 1500):
        if kind == "alloc":
            h = one.try_alloc(*arg)
            fits = two.can_alloc(*arg)
            assert (h is not None) == fits
            if fits:
                live_one.append(h)
                live_two.append(two.alloc(*arg))
            else:
                refused += 1
        elif live_one:
            i = arg % len(live_one)
            one.free(live_one.pop(i))
            two.free(live_two.pop(i))
        assert _state(one) == _state(two)
    assert live_one == live_two
    if capacity == 64 * MiB:
        assert refused > 0   # the small pool made try_alloc say no
    if isinstance(one, PoolAllocator):
        one.check_invariants()


@pytest.mark.parametrize("name", ALLOCATORS)
def test_allocations_counts_handles(name):
    """Allocator.allocations: every alloc, 0-byte ones and alloc_prefix runs included."""
    a = make_allocator(name, 64 * MiB)
    a.alloc(0)
    h = a.alloc(KiB)
    a.alloc_prefix([KiB, 2 * KiB, 0])
    a.free(h)
    assert a.allocations == 5
    assert a.try_alloc(1 << 40) is None and a.allocations == 5


def test_release_segment_gives_back_one_free_segment():
    a = PytorchAllocator()
    x, y = a.alloc(30 * 2**20), a.alloc(40 * 2**20)
    ax, ay = a.address_of(x), a.address_of(y)
    a.free(x)
    assert a.release_segment(ay) == 0            # in use: stays
    assert a.release_segment(ax + 512) == 0      # no segment begins there
    assert a.release_segment(ax) == 30 * 2**20   # free and whole: given back
    assert a.reserved_bytes == 40 * 2**20 and a.release_segment(ax) == 0
    a.check_invariants()
