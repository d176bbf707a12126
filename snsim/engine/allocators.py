"""Allocator models: how live tensors turn into allocated and reserved device bytes.

Three models sit behind one small interface (SPEC §10):

``ideal``
    Exact sizes, no fragmentation: allocated = reserved = requested = Σ live bytes.
``pool``
    SuperNeurons' pre-allocated pool of 1 KiB blocks, first fit on an address-ordered free
    list, coalescing on free. Fragmentation can make a request fail.
``pytorch``
    PyTorch's CUDA caching allocator (``c10/cuda/CUDACachingAllocator.cpp``): 512 B rounding,
    small/large pools per stream, best fit, segment sizes of 2 MiB / 20 MiB / multiples of
    2 MiB, its split rules and its empty-cache-and-retry on OOM.

The engine calls :meth:`Allocator.alloc` and :meth:`Allocator.free` once per tensor event, so
every operation is O(log n) or amortised cheap, in pure Python. All models are
deterministic: handles come from a counter and no choice depends on set order or ``id()``.
"""
import os
from bisect import bisect_left, bisect_right
from itertools import accumulate
from operator import index as _as_index

from ..errors import ConfigError, InfeasibleError, PlanError, UnknownNameError

__all__ = [
    "ALLOCATORS",
    "Allocator",
    "IdealAllocator",
    "OutOfMemory",
    "PoolAllocator",
    "PytorchAllocator",
    "make_allocator",
]

KiB = 1 << 10
MiB = 1 << 20


class OutOfMemory(InfeasibleError):
    """An allocation that does not fit in the allocator's ``capacity_bytes``."""


def _check_nbytes(nbytes):
    """Return ``nbytes`` as a plain int >= 0 or raise :class:`PlanError`."""
    try:
        n = _as_index(nbytes)
    except TypeError:
        raise PlanError(f"alloc nbytes (={nbytes!r}) must be an integer number of bytes") from None
    if n < 0:
        raise PlanError(f"alloc nbytes (={nbytes!r}) must be >= 0")
    return n


class Allocator:
    """Common interface and counters of every allocator model.

    Attributes
    ----------
    name : str
        Registry name of the model.
    capacity_bytes : int or None
        Device bytes the model may use; ``None`` means unlimited.
    allocated_bytes, reserved_bytes, requested_bytes : int
        Current bytes handed out after rounding, held from the device (segments or pool), and
        exactly requested by the callers.
    peak_allocated_bytes, peak_reserved_bytes, peak_requested_bytes : int
        Highest value of each counter since construction or the last :meth:`reset_peaks`.
    device_mallocs, device_frees : int
        cudaMalloc / cudaFree calls this model makes in a steady-state iteration; the engine
        charges ``hardware.malloc_latency_s`` / ``free_latency_s`` for each. Zero for ``ideal``
        (no allocator) and ``pool`` (allocated once, before the iteration); see
        :class:`PytorchAllocator` for the caching allocator's rule.

    Notes
    -----
    ``alloc(0)`` returns a valid handle that holds no memory and changes no counter, as
    ``torch.empty(0, device="cuda")`` does.
    """

    name = "allocator"
    _OPTIONS = ()
    #: whether the model calls the driver (``device_mallocs``/``device_frees`` can grow), so
    #: that the engine charges those calls' latency; ``ideal`` and ``pool`` never do
    calls_driver = False

    def __init__(self, capacity_bytes=None):
        if capacity_bytes is not None:
            if isinstance(capacity_bytes, bool):
                raise ConfigError(f"capacity_bytes (={capacity_bytes!r}) must be an int > 0 or None")
            try:
                capacity_bytes = _as_index(capacity_bytes)
            except TypeError:
                raise ConfigError(
                    f"capacity_bytes (={capacity_bytes!r}) must be an int > 0 or None") from None
            if capacity_bytes <= 0:
                raise ConfigError(f"capacity_bytes (={capacity_bytes}) must be > 0 or None")
        self.capacity_bytes = capacity_bytes
        self.allocated_bytes = 0
        self.reserved_bytes = 0
        self.requested_bytes = 0
        self.peak_allocated_bytes = 0
        self.peak_reserved_bytes = 0
        self.peak_requested_bytes = 0
        self.device_mallocs = 0
        self.device_frees = 0
        self._next_handle = 1  # 0 is never a handle, so a handle is always truthy
        self._live = {}        # handle -> model-specific record (None for a 0-byte alloc)

    def alloc(self, nbytes, stream=0):
        """Allocate ``nbytes`` on ``stream`` and return an int handle.

        Raises
        ------
        OutOfMemory
            The allocation does not fit in ``capacity_bytes``.
        PlanError
            ``nbytes`` is negative or not an integer.
        """
        raise NotImplementedError

    def free(self, handle):
        """Release the allocation ``handle``.

        Raises
        ------
        PlanError
            ``handle`` is unknown or already freed.
        """
        raise NotImplementedError

    def can_alloc(self, nbytes, stream=0):
        """Return whether ``alloc(nbytes, stream)`` would succeed; changes no state."""
        raise NotImplementedError

    def try_alloc(self, nbytes, stream=0):
        """``alloc(nbytes, stream)`` when :meth:`can_alloc` says it fits, else None with no
        state changed. ``ideal`` and ``pool`` answer both questions in one pass (the engine
        asks once per allocation)."""
        return self.alloc(nbytes, stream) if self.can_alloc(nbytes, stream) else None

    def alloc_prefix(self, sizes, stream=0):
        """Allocate ``sizes`` in order, exactly as ``alloc`` one at a time would, stopping
        before the first that does not fit; return how many were allocated (their handles
        are the next ones, in order). The engine's setup places tens of thousands of static
        tensors this way; a model overrides it where a whole run can be placed at once."""
        can_alloc, alloc = self.can_alloc, self.alloc
        for i, nbytes in enumerate(sizes):
            if not can_alloc(nbytes, stream):
                return i
            alloc(nbytes, stream)
        return len(sizes)

    def _issue(self, record, allocated, nbytes):
        """Hand out a new handle for ``record``, counting ``allocated`` and ``nbytes``."""
        handle = self._next_handle
        self._next_handle = handle + 1
        self._live[handle] = record
        self.allocated_bytes += allocated
        self.requested_bytes += nbytes
        if self.allocated_bytes > self.peak_allocated_bytes:
            self.peak_allocated_bytes = self.allocated_bytes
        if self.requested_bytes > self.peak_requested_bytes:
            self.peak_requested_bytes = self.requested_bytes
        return handle

    def _retire(self, handle):
        """Forget ``handle`` and return its record (None for a 0-byte allocation)."""
        try:
            return self._live.pop(handle)
        except (KeyError, TypeError):
            raise self._unknown_handle(handle) from None

    @property
    def allocations(self):
        """Number of allocations made (handles handed out) since construction."""
        return self._next_handle - 1

    def reset_peaks(self):
        """Set every peak counter to its current value (like ``torch.cuda.reset_peak_memory_stats``)."""
        self.peak_allocated_bytes = self.allocated_bytes
        self.peak_reserved_bytes = self.reserved_bytes
        self.peak_requested_bytes = self.requested_bytes

    @property
    def num_live(self):
        """Number of live handles."""
        return len(self._live)

    def _new_handle(self, record):
        handle = self._next_handle
        self._next_handle = handle + 1
        self._live[handle] = record
        return handle

    def _unknown_handle(self, handle):
        return PlanError(
            f"free(handle={handle!r}): no live allocation with this handle in the {self.name!r} "
            f"allocator (never allocated or already freed)")

    def __repr__(self):
        cap = "unlimited" if self.capacity_bytes is None else f"{self.capacity_bytes} B"
        return (f"<{type(self).__name__} capacity={cap} live={len(self._live)} "
                f"allocated={self.allocated_bytes} reserved={self.reserved_bytes}>")


# ---------------------------------------------------------------------------------------------
# ideal

class IdealAllocator(Allocator):
    """Exact sizes, no rounding and no fragmentation.

    allocated = reserved = requested = Σ live bytes; an allocation fails only when that sum
    would exceed ``capacity_bytes``. ``stream`` is accepted and ignored.
    """

    name = "ideal"

    def alloc(self, nbytes, stream=0):
        handle = self.try_alloc(nbytes, stream)
        if handle is None:
            nbytes = _check_nbytes(nbytes)
            total, cap = self.requested_bytes + nbytes, self.capacity_bytes
            raise OutOfMemory(
                f"ideal allocator: alloc of {nbytes} B does not fit: {self.requested_bytes} B live "
                f"+ {nbytes} B > capacity {cap} B",
                requested_bytes=nbytes, short_bytes=total - cap)
        return handle

    def try_alloc(self, nbytes, stream=0):
        if nbytes.__class__ is not int or nbytes < 0:
            nbytes = _check_nbytes(nbytes)
        total = self.requested_bytes + nbytes
        cap = self.capacity_bytes
        if cap is not None and total > cap:
            return None
        handle = self._next_handle
        self._next_handle = handle + 1
        self._live[handle] = nbytes
        self.allocated_bytes = self.reserved_bytes = self.requested_bytes = total
        if total > self.peak_requested_bytes:
            self.peak_allocated_bytes = self.peak_reserved_bytes = self.peak_requested_bytes = total
        return handle

    def free(self, handle):
        try:
            nbytes = self._live.pop(handle)
        except (KeyError, TypeError):
            raise self._unknown_handle(handle) from None
        total = self.requested_bytes - nbytes
        self.allocated_bytes = self.reserved_bytes = self.requested_bytes = total

    def can_alloc(self, nbytes, stream=0):
        if nbytes.__class__ is not int or nbytes < 0:   # the check, off the hot path
            nbytes = _check_nbytes(nbytes)
        return self.capacity_bytes is None or self.requested_bytes + nbytes <= self.capacity_bytes

    def alloc_prefix(self, sizes, stream=0):
        sizes = [n if n.__class__ is int and n >= 0 else _check_nbytes(n) for n in sizes]
        ends = list(accumulate(sizes, initial=self.requested_bytes))[1:]
        # the totals only grow: the prefix that fits ends where they pass the capacity
        n = len(ends) if self.capacity_bytes is None else bisect_right(ends, self.capacity_bytes)
        if n:
            first = self._next_handle
            self._next_handle = first + n
            self._live.update(zip(range(first, first + n), sizes[:n]))
            total = ends[n - 1]
            self.allocated_bytes = self.reserved_bytes = self.requested_bytes = total
            if total > self.peak_requested_bytes:
                self.peak_allocated_bytes = self.peak_reserved_bytes = \
                    self.peak_requested_bytes = total
        return n


# ---------------------------------------------------------------------------------------------
# pool

class _GapList:
    """Free gaps of a pool, address-ordered, stored in chunks that know their largest gap.

    First fit scans the per-chunk maxima, then one chunk: O(n/B + B) with B = 64, instead of
    O(n) over every gap. Gaps never overlap or touch (the pool coalesces), so a gap is named by
    its start.
    """

    __slots__ = ("starts", "sizes", "maxes", "firsts")
    _CHUNK = 64

    def __init__(self):
        self.starts = []   # list of sorted lists of gap starts (in blocks)
        self.sizes = []    # parallel lists of gap sizes (in blocks)
        self.maxes = []    # largest size in each chunk
        self.firsts = []   # first start of each chunk, for bisect

    def __len__(self):
        return sum(len(s) for s in self.starts)

    def largest(self):
        maxes = self.maxes   # not max(..., default=0): the keyword triples the call's cost
        return max(maxes) if maxes else 0

    def set(self, ci, j, start, size):
        """Move/resize gap ``(ci, j)`` without changing its rank among the gaps."""
        sizes = self.sizes[ci]
        old = sizes[j]
        self.starts[ci][j] = start
        sizes[j] = size
        if j == 0:
            self.firsts[ci] = start
        if size > self.maxes[ci]:
            self.maxes[ci] = size
        elif old == self.maxes[ci] and size < old:
            self.maxes[ci] = max(sizes)

    def remove(self, ci, j):
        starts, sizes = self.starts[ci], self.sizes[ci]
        del starts[j]
        size = sizes.pop(j)
        if not starts:
            del self.starts[ci], self.sizes[ci], self.maxes[ci], self.firsts[ci]
            return
        if j == 0:
            self.firsts[ci] = starts[0]
        if size == self.maxes[ci]:
            self.maxes[ci] = max(sizes)

    def insert(self, start, size):
        if not self.starts:
            self.starts.append([start])
            self.sizes.append([size])
            self.maxes.append(size)
            self.firsts.append(start)
            return
        ci = max(bisect_right(self.firsts, start) - 1, 0)
        starts, sizes = self.starts[ci], self.sizes[ci]
        j = bisect_left(starts, start)
        starts.insert(j, start)
        sizes.insert(j, size)
        if j == 0:
            self.firsts[ci] = start
        if size > self.maxes[ci]:
            self.maxes[ci] = size
        if len(starts) > 2 * self._CHUNK:
            half = len(starts) // 2
            new_starts, new_sizes = starts[half:], sizes[half:]
            del starts[half:], sizes[half:]
            self.starts.insert(ci + 1, new_starts)
            self.sizes.insert(ci + 1, new_sizes)
            self.maxes[ci] = max(sizes)
            self.maxes.insert(ci + 1, max(new_sizes))
            self.firsts.insert(ci + 1, new_starts[0])

    def last(self):
        """``(start, size)`` of the highest-address gap, or None."""
        if not self.starts:
            return None
        return self.starts[-1][-1], self.sizes[-1][-1]

    def items(self):
        for starts, sizes in zip(self.starts, self.sizes):
            yield from zip(starts, sizes)


class PoolAllocator(Allocator):
    """SuperNeurons' pre-allocated pool of 1 KiB blocks (SPEC §10, paper [P2]).

    Sizes are rounded up to whole 1 KiB blocks and placed by first fit on an address-ordered
    free list; a free coalesces with free neighbours. A request fails when no *contiguous* gap
    is large enough, even if the total free space would do, so fragmentation shows. ``stream``
    is accepted and ignored: the pool is shared by all streams.

    Counters:

    * ``allocated_bytes``: Σ rounded live sizes; ``requested_bytes``: Σ exact sizes.
    * ``reserved_bytes``: the pool size, ``capacity_bytes`` rounded down to whole blocks, since
      the pool is allocated up front. With ``capacity_bytes=None`` the pool is unbounded and
      ``reserved_bytes`` is the highest end address ever used (a pool that grows, never shrinks).
    * ``peak_reserved_bytes``: the highest end address used by a live block since construction
      or :meth:`reset_peaks` -- a chosen deviation from "peak of ``reserved_bytes``", which would
      only repeat the capacity. It says how large a pool this run really needed, fragmentation
      included. It can therefore be below ``reserved_bytes``.
    """

    name = "pool"
    block_bytes = KiB
    _UNBOUNDED_BLOCKS = 1 << 62  # stands for the endless tail of an unlimited pool

    def __init__(self, capacity_bytes=None):
        super().__init__(capacity_bytes)
        if capacity_bytes is None:
            self._total_blocks = self._UNBOUNDED_BLOCKS
        else:
            if self.capacity_bytes < self.block_bytes:
                raise ConfigError(
                    f"capacity_bytes (={self.capacity_bytes}) must be >= {self.block_bytes} "
                    f"for the pool allocator (one {self.block_bytes} B block)")
            self._total_blocks = self.capacity_bytes // self.block_bytes
            self.reserved_bytes = self._total_blocks * self.block_bytes
        self._gaps = _GapList()
        self._gaps.insert(0, self._total_blocks)
        self._high_water_blocks = 0                # since reset_peaks
        self._ever_high_water_blocks = 0           # since construction

    def alloc(self, nbytes, stream=0):
        handle = self.try_alloc(nbytes, stream)
        if handle is None:
            raise self._oom(nbytes, -(-nbytes // KiB))
        return handle

    def try_alloc(self, nbytes, stream=0):
        if nbytes.__class__ is not int or nbytes < 0:
            nbytes = _check_nbytes(nbytes)
        if nbytes == 0:
            return self._new_handle(None)
        nblocks = -(-nbytes // KiB)
        # the gap list's first fit, resize and removal inline (a search's replays make ~10^6
        # allocations; few gaps, most in one chunk)
        gaps = self._gaps
        ci = 0
        for m in gaps.maxes:
            if m >= nblocks:
                break
            ci += 1
        else:
            return None
        sizes = gaps.sizes[ci]
        j = 0
        for size in sizes:
            if size >= nblocks:
                break
            j += 1
        starts = gaps.starts[ci]
        start = starts[j]
        top = start + nblocks
        if size == nblocks:
            gaps.remove(ci, j)
        else:
            starts[j] = top
            sizes[j] = size - nblocks
            if j == 0:
                gaps.firsts[ci] = top
            if size == gaps.maxes[ci]:
                gaps.maxes[ci] = max(sizes)
        if top > self._high_water_blocks:
            self._raise_high_water(top)
        # _issue inline
        handle = self._next_handle
        self._next_handle = handle + 1
        self._live[handle] = (start, nblocks, nbytes)
        self.allocated_bytes += nblocks * KiB
        self.requested_bytes += nbytes
        if self.allocated_bytes > self.peak_allocated_bytes:
            self.peak_allocated_bytes = self.allocated_bytes
        if self.requested_bytes > self.peak_requested_bytes:
            self.peak_requested_bytes = self.requested_bytes
        return handle

    def _raise_high_water(self, top):
        """The pool's used prefix grew to ``top`` blocks: its reserved peak (and, without a
        capacity, what it has reserved) follows."""
        self._high_water_blocks = top
        self.peak_reserved_bytes = top * KiB
        if top > self._ever_high_water_blocks:
            self._ever_high_water_blocks = top
            if self.capacity_bytes is None:
                self.reserved_bytes = top * KiB

    def free(self, handle):
        try:   # _retire inline, as in alloc
            record = self._live.pop(handle)
        except (KeyError, TypeError):
            raise self._unknown_handle(handle) from None
        if record is None:
            return
        start, nblocks, nbytes = record
        self.allocated_bytes -= nblocks * KiB
        self.requested_bytes -= nbytes
        end = start + nblocks
        # the gaps around the freed range, by bisection (no block lies in a gap: the gap
        # before it is the last one starting below it, the one after it the next)
        gaps = self._gaps
        firsts = gaps.firsts
        ci = bisect_right(firsts, start) - 1
        if ci < 0:    # below every gap (or no gap at all): nothing before it
            if firsts and firsts[0] == end:      # grow the first gap down
                gaps.starts[0][0] = firsts[0] = start
                sizes = gaps.sizes[0]
                sizes[0] += nblocks
                if sizes[0] > gaps.maxes[0]:
                    gaps.maxes[0] = sizes[0]
            else:
                gaps.insert(start, nblocks)
            return
        starts, sizes = gaps.starts[ci], gaps.sizes[ci]
        j = bisect_left(starts, start)           # >= 1: starts[0] <= start, and not equal
        prev_end = starts[j - 1] + sizes[j - 1]
        if j < len(starts):
            nci, nj = ci, j
        elif ci + 1 < len(firsts):
            nci, nj = ci + 1, 0
        else:
            nci = -1
        if nci >= 0 and gaps.starts[nci][nj] == end:      # a gap right after it
            next_size = gaps.sizes[nci][nj]
            if prev_end == start:                         # prev + freed + next: one gap
                gaps.remove(nci, nj)
                # the removal may have dropped chunk ci + 1, never chunk ci (j - 1 is in it)
                size = sizes[j - 1] = sizes[j - 1] + nblocks + next_size
                if size > gaps.maxes[ci]:
                    gaps.maxes[ci] = size
            else:                                         # the next gap grows down
                nsizes = gaps.sizes[nci]
                gaps.starts[nci][nj] = start
                size = nsizes[nj] = next_size + nblocks
                if nj == 0:
                    firsts[nci] = start
                if size > gaps.maxes[nci]:
                    gaps.maxes[nci] = size
        elif prev_end == start:                           # the gap before grows up
            size = sizes[j - 1] = sizes[j - 1] + nblocks
            if size > gaps.maxes[ci]:
                gaps.maxes[ci] = size
        else:
            gaps.insert(start, nblocks)

    def can_alloc(self, nbytes, stream=0):
        if nbytes.__class__ is not int or nbytes < 0:   # the check, off the hot path
            nbytes = _check_nbytes(nbytes)
        return nbytes == 0 or self._gaps.largest() >= -(-nbytes // KiB)

    def alloc_prefix(self, sizes, stream=0):
        """With a single free gap (a pool nothing was freed into, as at setup) first fit
        places every request right after the one before, from the gap's start: the run is
        laid out at once. Otherwise one at a time."""
        gaps = self._gaps
        if len(gaps.starts) != 1 or len(gaps.starts[0]) != 1:
            return Allocator.alloc_prefix(self, sizes, stream)
        sizes = [n if n.__class__ is int and n >= 0 else _check_nbytes(n) for n in sizes]
        start, size = gaps.starts[0][0], gaps.sizes[0][0]
        blocks = [-(-nbytes // KiB) for nbytes in sizes]
        ends = list(accumulate(blocks, initial=start))   # request i takes ends[i]..ends[i+1]
        n = bisect_right(ends, start + size) - 1          # the requests that end in the gap
        if not n:
            return 0
        records = list(zip(ends, blocks, sizes[:n]))      # (start, blocks, bytes)
        if 0 in sizes:
            records = [r if r[2] else None for r in records]   # a 0-byte request holds nothing
        at = ends[n]
        first = self._next_handle
        self._next_handle = first + n
        self._live.update(zip(range(first, first + n), records))
        used = at - start
        if used:
            if used == size:
                gaps.remove(0, 0)
            else:
                gaps.set(0, 0, at, size - used)
            self.allocated_bytes += used * KiB
            self.requested_bytes += sum(sizes[:n])
            # each counter only grew along the run: its end is its peak
            if self.allocated_bytes > self.peak_allocated_bytes:
                self.peak_allocated_bytes = self.allocated_bytes
            if self.requested_bytes > self.peak_requested_bytes:
                self.peak_requested_bytes = self.requested_bytes
            if at > self._high_water_blocks:
                self._raise_high_water(at)
        return n

    def reset_peaks(self):
        super().reset_peaks()
        last = self._gaps.last()
        if last is not None and last[0] + last[1] == self._total_blocks:
            self._high_water_blocks = last[0]
        else:
            self._high_water_blocks = self._total_blocks
        self.peak_reserved_bytes = self._high_water_blocks * KiB

    def address_of(self, handle):
        """Byte offset of ``handle``'s block in the pool (None for a 0-byte allocation)."""
        try:
            record = self._live[handle]
        except (KeyError, TypeError):
            raise self._unknown_handle(handle) from None
        return None if record is None else record[0] * KiB

    @property
    def num_gaps(self):
        """Number of free gaps (1 for an empty pool); a measure of fragmentation."""
        return len(self._gaps)

    def _oom(self, nbytes, nblocks):
        largest = self._gaps.largest() * KiB
        free = self.reserved_bytes - self.allocated_bytes
        return OutOfMemory(
            f"pool allocator: no contiguous gap for {nbytes} B ({nblocks} blocks of 1 KiB) in a "
            f"{self.reserved_bytes} B pool: {free} B free in {len(self._gaps)} gaps, the largest "
            f"{largest} B",
            requested_bytes=nbytes, short_bytes=nblocks * KiB - largest)

    def check_invariants(self):
        """Check the free list against the live blocks; raise AssertionError on a mismatch.

        O(n log n); meant for tests and debugging, never the hot path.
        """
        gap_items = list(self._gaps.items())
        spans = [(s, s + n) for s, n in gap_items]
        _require(gap_items == sorted(gap_items) and all(n > 0 for _, n in gap_items),
                 "gap list out of order or holding an empty gap")
        for (_, e1), (s2, _) in zip(spans, spans[1:]):
            _require(e1 < s2, "two gaps touch or overlap (missed coalescing)")
        for ci, sizes in enumerate(self._gaps.sizes):
            _require(self._gaps.maxes[ci] == max(sizes), "stale chunk maximum")
            _require(self._gaps.firsts[ci] == self._gaps.starts[ci][0], "stale chunk first")
        used = sorted((r[0], r[0] + r[1]) for r in self._live.values() if r is not None)
        everything = sorted(spans + used)
        _require(everything[0][0] == 0 and everything[-1][1] == self._total_blocks,
                 "blocks do not cover the pool")
        for (_, e1), (s2, _) in zip(everything, everything[1:]):
            _require(e1 == s2, "live blocks and gaps do not tile the pool")
        _require(sum(e - s for s, e in used) * KiB == self.allocated_bytes, "allocated_bytes drift")


# ---------------------------------------------------------------------------------------------
# pytorch

_SMALL_SIZE = MiB              # kSmallSize: largest request served from the small pool
_SMALL_BUFFER = 2 * MiB        # kSmallBuffer: segment size of the small pool
_LARGE_BUFFER = 20 * MiB       # kLargeBuffer: segment size for 1 MiB < rounded < 10 MiB
_MIN_LARGE_ALLOC = 10 * MiB    # kMinLargeAlloc
_ROUND_LARGE = 2 * MiB         # kRoundLarge
_MIN_BLOCK = 512               # kMinBlockSize
_ADDR_BITS = 64                # free-list key = size << 64 | address


class _Block:
    """A piece of a segment: free or handed out."""

    __slots__ = ("addr", "size", "stream", "small", "prev", "next", "allocated", "requested")

    def __init__(self, addr, size, stream, small, prev=None, next=None):
        self.addr = addr
        self.size = size
        self.stream = stream
        self.small = small
        self.prev = prev
        self.next = next
        self.allocated = False
        self.requested = 0


class PytorchAllocator(Allocator):
    """The PyTorch CUDA caching allocator (SPEC §10, ``c10/cuda/CUDACachingAllocator.cpp``).

    1. Round up to a multiple of 512 B (min 512). Small pool if the rounded size is <= 1 MiB,
       else large. A block is reused only on the stream that allocated its segment.
    2. Best fit within (pool, stream): the smallest free block that fits, ties by lowest
       address.
    3. New segment when nothing fits: 2 MiB if rounded <= 1 MiB, 20 MiB if rounded < 10 MiB,
       else rounded up to a multiple of 2 MiB.
    4. Split: small pool if the remainder is >= 512 B; large pool only if it is > 1 MiB,
       otherwise the whole block is handed out and counts fully as allocated.
    5. Free merges with free neighbours of the same segment; segments never merge.
    6. When a new segment would exceed ``capacity_bytes``: (with ``max_split_size_bytes``) free
       oversize cached blocks of this pool and stream and retry; then free every cached segment
       (:meth:`empty_cache`), count a retry in ``num_alloc_retries`` and retry; then count
       ``num_ooms`` and raise :class:`OutOfMemory`. Segments released on the way stay released.
    7. Driver calls (``device_frees``, ``device_mallocs``): every segment released is a
       cudaFree. The model starts from an empty cache, but a steady-state iteration finds the
       previous iteration's segments cached, so a segment creation counts as a cudaMalloc only
       once some segment has been released in this run (it is then re-created every iteration).

    Parameters
    ----------
    capacity_bytes : int or None
        Bytes the device can give to segments; None means unlimited.
    max_split_size_bytes : int or None
        torch's ``max_split_size_mb`` in bytes (must be > 20 MiB). Requests below it cannot
        take free blocks of at least this size; larger requests take only blocks smaller than
        request + 20 MiB; blocks of this size or more are never split.
    expandable_segments : bool
        Only False is modelled; True raises :class:`ConfigError`.
    lazy_window_bytes : int
        With ``segment_placement="driver"``: the address space that CUDA's lazy module loading
        (the default) leaves above every earlier segment once the first training step's first
        operation has run (:meth:`open_lazy_window`). From then on, a new large segment goes
        there, each above the one before, while it fits; the rest go below every segment as
        before. 0 (``CUDA_MODULE_LOADING=EAGER``, or unknown) opens nothing.

    Notes
    -----
    Not modelled: ``record_stream`` (blocks awaiting another stream), CUDA graph pools,
    ``roundup_power2_divisions``, the garbage-collection threshold and the ~527 MiB CUDA
    context, which torch's counters do not see either (SPEC §10).
    """

    calls_driver = True
    name = "pytorch"
    _OPTIONS = ("max_split_size_bytes", "expandable_segments", "segment_placement",
                "segment_addresses", "lazy_window_bytes")
    PLACEMENTS = ("sequential", "driver")

    def __init__(self, capacity_bytes=None, *, max_split_size_bytes=None,
                 expandable_segments=False, segment_placement="sequential",
                 segment_addresses=None, lazy_window_bytes=0):
        super().__init__(capacity_bytes)
        # Where new segments go matters: best-fit ties between equal free blocks break by
        # address. "driver" places them as cudaMalloc did on the H200 captures (large segments
        # top-down, 2 MiB small-pool segments bottom-up); ``segment_addresses`` (a capture's
        # recorded bases, in creation order) overrides either rule.
        if segment_placement not in self.PLACEMENTS:
            raise ConfigError(f"pytorch allocator option segment_placement "
                              f"(={segment_placement!r}) must be one of {self.PLACEMENTS}")
        self.segment_placement = segment_placement
        self._addresses = [int(a) for a in (segment_addresses or ())]
        self._top = 1 << 56
        self._bottom = 0
        if isinstance(lazy_window_bytes, bool) or not isinstance(lazy_window_bytes, int) \
                or lazy_window_bytes < 0:
            raise ConfigError(f"pytorch allocator option lazy_window_bytes "
                              f"(={lazy_window_bytes!r}) must be an int >= 0")
        self.lazy_window_bytes = lazy_window_bytes
        self._window = None   # [next address, end] once open_lazy_window() has run
        self._window_after = None   # open it once more allocations than this were made
        self._made = 0   # segments ever created (num_segments drops when they are released)
        if expandable_segments is not False:
            raise ConfigError(
                f"pytorch allocator option expandable_segments (={expandable_segments!r}) is not "
                f"modelled; only False is supported")
        if max_split_size_bytes is not None:
            if isinstance(max_split_size_bytes, bool):
                raise ConfigError(
                    f"max_split_size_bytes (={max_split_size_bytes!r}) must be an int or None")
            try:
                max_split_size_bytes = _as_index(max_split_size_bytes)
            except TypeError:
                raise ConfigError(
                    f"max_split_size_bytes (={max_split_size_bytes!r}) must be an int or None") from None
            if max_split_size_bytes <= _LARGE_BUFFER:
                raise ConfigError(
                    f"max_split_size_bytes (={max_split_size_bytes}) must be > {_LARGE_BUFFER} "
                    f"(20 MiB), as torch requires of max_split_size_mb")
        self.max_split_size_bytes = max_split_size_bytes
        self.expandable_segments = False
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_segments = 0
        self.cached_segment_bytes = 0  # Σ sizes of segments that are entirely free
        # (small, stream) -> [sorted keys (size << 64 | addr), blocks in the same order]
        self._free = {}
        self._next_addr = 0

    # -- free lists -------------------------------------------------------------------------

    def _free_list(self, small, stream):
        fl = self._free.get((small, stream))
        if fl is None:
            fl = self._free[(small, stream)] = ([], [])
        return fl

    def _insert_free(self, block):
        keys, blocks = self._free_list(block.small, block.stream)
        key = (block.size << _ADDR_BITS) | block.addr
        i = bisect_left(keys, key)
        keys.insert(i, key)
        blocks.insert(i, block)

    def _remove_free(self, block):
        keys, blocks = self._free[(block.small, block.stream)]
        i = bisect_left(keys, (block.size << _ADDR_BITS) | block.addr)
        del keys[i], blocks[i]

    def _best_fit_index(self, fl, rounded):
        """Index in ``fl`` of the block torch's ``get_free_block`` would take, or -1."""
        keys = fl[0]
        i = bisect_left(keys, rounded << _ADDR_BITS)
        if i == len(keys):
            return -1
        mss = self.max_split_size_bytes
        if mss is not None:
            size = keys[i] >> _ADDR_BITS
            if rounded < mss and size >= mss:
                return -1   # no oversize block for a small request
            if rounded >= mss and size >= rounded + _LARGE_BUFFER:
                return -1   # nor a far too large one for a large request
        return i

    # -- public interface -------------------------------------------------------------------

    def alloc(self, nbytes, stream=0):
        if nbytes.__class__ is not int or nbytes < 0:
            nbytes = _check_nbytes(nbytes)
        if nbytes == 0:
            return self._new_handle(None)
        rounded = _MIN_BLOCK if nbytes <= _MIN_BLOCK else (nbytes + _MIN_BLOCK - 1) & -_MIN_BLOCK
        small = rounded <= _SMALL_SIZE
        fl = self._free.get((small, stream))
        if fl is None:
            fl = self._free[(small, stream)] = ([], [])
        i = self._best_fit_index(fl, rounded)
        if i >= 0:
            keys, blocks = fl
            block = blocks[i]
            del keys[i], blocks[i]
            if block.prev is None and block.next is None:
                self.cached_segment_bytes -= block.size
        else:
            block = self._new_segment(nbytes, rounded, small, stream, fl)

        remaining = block.size - rounded
        if small:
            split = remaining >= _MIN_BLOCK
        else:
            mss = self.max_split_size_bytes
            split = remaining > _SMALL_SIZE and (mss is None or rounded < mss)
        if split:
            rest = _Block(block.addr + rounded, remaining, stream, small, block, block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = rounded
            keys, blocks = fl
            key = (remaining << _ADDR_BITS) | rest.addr
            j = bisect_left(keys, key)
            keys.insert(j, key)
            blocks.insert(j, rest)

        block.allocated = True
        block.requested = nbytes
        return self._issue(block, block.size, nbytes)

    def free(self, handle):
        block = self._retire(handle)
        if block is None:
            return
        self.allocated_bytes -= block.size
        self.requested_bytes -= block.requested
        block.allocated = False
        block.requested = 0
        prev = block.prev
        if prev is not None and not prev.allocated:
            self._remove_free(prev)
            block.addr = prev.addr
            block.size += prev.size
            block.prev = prev.prev
            if block.prev is not None:
                block.prev.next = block
        nxt = block.next
        if nxt is not None and not nxt.allocated:
            self._remove_free(nxt)
            block.size += nxt.size
            block.next = nxt.next
            if block.next is not None:
                block.next.prev = block
        self._insert_free(block)
        if block.prev is None and block.next is None:
            self.cached_segment_bytes += block.size

    def can_alloc(self, nbytes, stream=0):
        if nbytes.__class__ is not int or nbytes < 0:   # the check, off the hot path
            nbytes = _check_nbytes(nbytes)
        if nbytes == 0:
            return True
        rounded = _MIN_BLOCK if nbytes <= _MIN_BLOCK else (nbytes + _MIN_BLOCK - 1) & -_MIN_BLOCK
        small = rounded <= _SMALL_SIZE
        fl = self._free.get((small, stream))
        if fl is not None and self._best_fit_index(fl, rounded) >= 0:
            return True
        cap = self.capacity_bytes
        if cap is None:
            return True
        # every retry path ends with all cached segments released
        return self.reserved_bytes - self.cached_segment_bytes + _segment_size(rounded) <= cap

    def empty_cache(self):
        """Release every entirely free segment, like ``torch.cuda.empty_cache()``.

        Returns
        -------
        int
            Bytes released.
        """
        released = 0
        for key in sorted(self._free):
            keys, blocks = self._free[key]
            keep = [i for i, b in enumerate(blocks) if b.prev is not None or b.next is not None]
            if len(keep) == len(blocks):
                continue
            released += sum(b.size for b in blocks if b.prev is None and b.next is None)
            self.num_segments -= len(blocks) - len(keep)
            self.device_frees += len(blocks) - len(keep)
            keys[:] = [keys[i] for i in keep]
            blocks[:] = [blocks[i] for i in keep]
        self.reserved_bytes -= released
        self.cached_segment_bytes -= released
        return released

    def release_segment(self, addr):
        """Release the entirely free segment that begins at ``addr``, as the real allocator
        did where its recorded history says ``segment_free`` (one segment of a
        release-and-retry under a memory cap, or of ``torch.cuda.empty_cache()``).

        Returns
        -------
        int
            Bytes released: 0 where no free segment begins there (one the model never made,
            or one in use).
        """
        for fl in self._free.values():
            for i, b in enumerate(fl[1]):
                if b.addr == addr and b.prev is None and b.next is None:
                    size = b.size
                    self._release_segment(fl, i)
                    return size
        return 0

    def address_of(self, handle):
        """Virtual address of ``handle``'s block (None for a 0-byte allocation)."""
        try:
            block = self._live[handle]
        except (KeyError, TypeError):
            raise self._unknown_handle(handle) from None
        return None if block is None else block.addr

    def block_size_of(self, handle):
        """Bytes of the block behind ``handle`` (what it adds to ``allocated_bytes``)."""
        try:
            block = self._live[handle]
        except (KeyError, TypeError):
            raise self._unknown_handle(handle) from None
        return 0 if block is None else block.size

    # -- segments and OOM -------------------------------------------------------------------

    def _new_segment(self, nbytes, rounded, small, stream, fl):
        size = _segment_size(rounded)
        cap = self.capacity_bytes
        if cap is not None and self.reserved_bytes + size > cap:
            fits = (self.max_split_size_bytes is not None
                    and self._release_oversize(fl, rounded)
                    and self.reserved_bytes + size <= cap)
            if not fits:
                self.empty_cache()
                self.num_alloc_retries += 1
                if self.reserved_bytes + size > cap:
                    self.num_ooms += 1
                    raise OutOfMemory(
                        f"pytorch allocator: alloc of {nbytes} B (rounded {rounded} B) on stream "
                        f"{stream} needs a new {size} B segment, but {self.reserved_bytes} B "
                        f"reserved + {size} B > capacity {cap} B after releasing cached segments "
                        f"({self.allocated_bytes} B allocated)",
                        requested_bytes=nbytes, short_bytes=self.reserved_bytes + size - cap)
        if self._window_after is not None:
            self._open_pending_window()
        if self._made < len(self._addresses):
            addr = self._addresses[self._made]
        elif self.segment_placement == "driver":
            window = self._window
            if small:
                addr, self._bottom = self._bottom, self._bottom + size
            elif window is not None and window[0] + size <= window[1]:
                addr = window[0]
                window[0] += size
            else:
                self._top -= size
                addr = self._top
        else:
            addr = self._next_addr
            self._next_addr = addr + size
        self._made += 1
        if self.device_frees:
            # the model starts from an empty cache; in a steady-state iteration the segments
            # made before the first release are still cached from the previous iteration, so
            # only creations after a release are cudaMalloc calls
            self.device_mallocs += 1
        self.num_segments += 1
        self.reserved_bytes += size
        if self.reserved_bytes > self.peak_reserved_bytes:
            self.peak_reserved_bytes = self.reserved_bytes
        return _Block(addr, size, stream, small)

    def open_lazy_window(self):
        """The first training step's first operation has run: under lazy module loading the
        driver now has ``lazy_window_bytes`` of address space above every segment made so far
        (the H200's fresh-process histories, ``traces/h200/plans_history``: the first step's
        segments are placed from 414 MiB below the lowest 2 MiB segment made before it upward,
        while those made before the step go each below the last). Opens once; later calls do
        nothing."""
        if self._window is None and self.lazy_window_bytes:
            # above the top-down segments (which start below 1 << 56) and below nothing
            self._window = [1 << 56, (1 << 56) + self.lazy_window_bytes]

    def open_lazy_window_after(self, allocations):
        """Open the window (:meth:`open_lazy_window`) once more than ``allocations``
        allocations have been made: the engine's first training step opens it after the
        step's first allocation, as a capture's recorded history does."""
        self._window_after = int(allocations)

    def _open_pending_window(self):
        if self.allocations > self._window_after:
            self._window_after = None
            self.open_lazy_window()

    def map_into_window(self, nbytes):
        """Memory the driver maps at the open window's next address, outside the caching
        allocator (cuBLAS's first GEMM: 64 MiB on the H200, the hole after transformer_encoder's
        first ``in_proj`` output in its histories and before the GEMM's workspace in
        ``scripts/va_probe.py``'s); nothing if the window is not open or it does not fit."""
        if self._window_after is not None:
            self._open_pending_window()
        window = self._window
        if window is not None and window[0] + nbytes <= window[1]:
            window[0] += nbytes

    def _release_oversize(self, fl, rounded):
        """torch's ``release_available_cached_blocks``: free oversize cached blocks of this pool
        and stream, one large enough or else the largest ones until enough bytes are freed.
        Returns whether enough was freed; what was freed stays freed either way."""
        mss = self.max_split_size_bytes
        want = max(rounded, mss)
        keys, blocks = fl
        i = bisect_left(keys, want << _ADDR_BITS)
        if i < len(keys):
            self._release_segment(fl, i)
            return True
        released = 0
        i = len(keys) - 1
        while released < want and i >= 0 and blocks[i].size >= mss:
            released += blocks[i].size
            self._release_segment(fl, i)
            i -= 1
        return released >= want

    def _release_segment(self, fl, i):
        # an oversize free block is always a whole segment: requests >= max_split never split
        block = fl[1][i]
        del fl[0][i], fl[1][i]
        self.num_segments -= 1
        self.device_frees += 1
        self.reserved_bytes -= block.size
        self.cached_segment_bytes -= block.size

    def check_invariants(self):
        """Check blocks, free lists and counters; raise AssertionError on a mismatch.

        O(n log n); meant for tests and debugging, never the hot path.
        """
        free_blocks = []
        for (small, stream), (keys, blocks) in sorted(self._free.items()):
            _require(keys == sorted(keys), "free list not sorted")
            _require(len(keys) == len(blocks), "free list keys and blocks differ")
            for k, b in zip(keys, blocks):
                _require(k == (b.size << _ADDR_BITS) | b.addr, "stale free-list key")
                _require(not b.allocated and b.small == small and b.stream == stream,
                         "free list holds a wrong block")
                free_blocks.append(b)
        live = [b for b in self._live.values() if b is not None]
        _require(all(b.allocated for b in live), "live block not marked allocated")
        heads = [b for b in free_blocks + live if b.prev is None]
        _require(len(heads) == self.num_segments, "num_segments drift")
        seen = reserved = cached = 0
        for head in heads:
            b, size, stream = head, 0, head.stream
            while b is not None:
                _require(b.stream == stream and b.small == head.small, "mixed segment")
                if b.next is not None:
                    _require(b.next.prev is b and b.addr + b.size == b.next.addr, "broken chain")
                    _require(b.allocated or b.next.allocated, "adjacent free blocks not merged")
                size += b.size
                seen += 1
                b = b.next
            reserved += size
            if not head.allocated and head.next is None:
                cached += size
        _require(seen == len(free_blocks) + len(live), "blocks outside any segment")
        _require(reserved == self.reserved_bytes, "reserved_bytes drift")
        _require(cached == self.cached_segment_bytes, "cached_segment_bytes drift")
        _require(sum(b.size for b in live) == self.allocated_bytes, "allocated_bytes drift")
        _require(sum(b.requested for b in live) == self.requested_bytes, "requested_bytes drift")


def replay_history(doc, window_bytes, gemm_at=None, cublas_bytes=0, empty_cache_after=None,
                   allocator=None):
    """Peak reserved bytes of a real caching allocator's event history replayed through
    :class:`PytorchAllocator` with the "driver" placement.

    ``doc`` is a history of ``scripts/plan_alloc_history.py`` (``events`` ``[action, addr,
    size, stream]``, ``iterations``): its requests and completed frees in order, the
    lazy-loading window of ``window_bytes`` opened after the first training step's first
    allocation (as the engine opens it after the step's first operation; a history without
    iteration marks takes no window), and cuBLAS's ``cublas_bytes`` mapped into it before
    allocation number ``gemm_at`` (the one after the first GEMM's output, where a recorded
    program maps it: :func:`snsim.torchsim.build.build_program`'s ``warmup_first_gemm``).
    ``empty_cache_after``: the index of the event after which ``empty_cache()`` runs and the
    peak starts again (what a process that emptied the cache there would reserve).
    Where the history itself released segments (``segment_free``: the process called
    ``empty_cache()``, e.g. the ZeRO executor after its discovery look), the replay empties its
    cache there too, once per run of such events. ``allocator``: a subclass of
    :class:`PytorchAllocator` to replay through instead (another placement rule,
    ``scripts/segment_tails.py``).
    """
    a = (allocator or PytorchAllocator)(segment_placement="driver",
                                        lazy_window_bytes=window_bytes)
    # allocations made before the first step
    first = doc["iterations"][0][0] if window_bytes else None
    live, n = {}, 0
    for i, (action, addr, size, stream) in enumerate(doc["events"]):
        if action == "alloc":
            if n == gemm_at:
                a.map_into_window(cublas_bytes)
            live[addr] = a.alloc(size, stream)
            n += 1
            if window_bytes and n == first + 1:
                a.open_lazy_window()
        elif action == "free_completed":
            a.free(live.pop(addr))
        elif action == "segment_free" and i and doc["events"][i - 1][0] != "segment_free":
            a.empty_cache()
        if i == empty_cache_after:
            a.empty_cache()
            a.peak_reserved_bytes = a.reserved_bytes
    return a.peak_reserved_bytes


def _segment_size(rounded):
    """torch's ``get_allocation_size``: bytes of the segment created for a rounded request."""
    if rounded <= _SMALL_SIZE:
        return _SMALL_BUFFER
    if rounded < _MIN_LARGE_ALLOC:
        return _LARGE_BUFFER
    return (rounded + _ROUND_LARGE - 1) & -_ROUND_LARGE


def _require(condition, what):
    if not condition:
        raise AssertionError(f"allocator invariant broken: {what}")


# ---------------------------------------------------------------------------------------------
# registry

_REGISTRY = {cls.name: cls for cls in (IdealAllocator, PoolAllocator, PytorchAllocator)}
ALLOCATORS = tuple(_REGISTRY)


MODULE_LOADINGS = ("lazy", "eager")


def module_loading(value=None):
    """How the modelled run loads CUDA modules: ``"lazy"`` (CUDA's default since 12.2, and
    torch's) or ``"eager"``. ``value`` None reads ``CUDA_MODULE_LOADING`` from the
    environment, as the CUDA driver does for a training run started from the same shell
    (unset: lazy). Eager loading maps every module before the first cudaMalloc and opens no
    address window (traces/h200/plans_history/*_eager)."""
    where = "allocator option module_loading"
    if value is None:
        value = os.environ.get("CUDA_MODULE_LOADING", "").strip().lower() or "lazy"
        where = "environment variable CUDA_MODULE_LOADING"
        if value not in MODULE_LOADINGS:
            raise ConfigError(f"{where} (={value!r}) must be one of "
                              f"{', '.join(m.upper() for m in MODULE_LOADINGS)}")
    if value not in MODULE_LOADINGS:
        raise ConfigError(f"{where} (={value!r}) must be one of {', '.join(MODULE_LOADINGS)}")
    return value


def make_allocator(name, capacity_bytes, **options):
    """Build the allocator model called ``name``.

    Parameters
    ----------
    name : str
        One of :data:`ALLOCATORS`: ``"ideal"``, ``"pool"``, ``"pytorch"``.
    capacity_bytes : int or None
        Device bytes the model may use; None means unlimited.
    **options
        Model options. ``pytorch`` takes ``max_split_size_bytes`` and
        ``expandable_segments`` (False only); the others take none.

    Returns
    -------
    Allocator

    Raises
    ------
    UnknownNameError
        ``name`` is not a known allocator.
    ConfigError
        An option is unknown to the model or has a bad value, or ``capacity_bytes`` is not > 0.

    Examples
    --------
    >>> a = make_allocator("pytorch", 80 * 2**30)
    >>> h = a.alloc(21 * 2**20)          # 21 MiB gets a 22 MiB segment and keeps all of it
    >>> a.allocated_bytes // 2**20, a.reserved_bytes // 2**20
    (22, 22)
    >>> a.free(h)
    >>> a.allocated_bytes, a.reserved_bytes // 2**20   # the segment stays cached
    (0, 22)
    >>> make_allocator("ideal", None).alloc(100)
    1
    """
    try:
        cls = _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownNameError(
            f"unknown allocator {name!r}; known allocators: {', '.join(ALLOCATORS)}") from None
    unknown = [k for k in options if k not in cls._OPTIONS]
    if unknown:
        accepted = ", ".join(cls._OPTIONS) or "none"
        raise ConfigError(
            f"allocator {name!r} got unknown option(s) {', '.join(map(repr, unknown))}; "
            f"accepted options: {accepted}")
    return cls(capacity_bytes, **options)
