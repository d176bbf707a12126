"""Where the driver put new large segments, in recorded allocator histories (issue 8: the
reserved misses that come from segment placement, ResNet-18 b64's +1.57 % on the H100).

In every history of ``scripts/plan_alloc_history.py`` (``traces/h*/plans_history``), a new
large segment (not the allocator's 2 MiB small-pool ones) either starts at a 32 MiB-aligned
address (a new address range, rounded up to 32 MiB) or right where an earlier segment ends, in
the unused tail of that segment's range. The engine's "driver" placement knows only the first
(each new large segment below every earlier one). This counts, over all histories: segments
placed in a tail; of those with several tails that fitted, how often the chosen one was the
newest range's, the lowest-addressed, or the best fit; and new ranges made although a tail
fitted (tails that something the history does not see - lazily loaded modules - may have
taken). The figures decide whether a tail rule belongs in the engine.

``--replay``: also replays each history's requests (as ``snsim.engine.allocators.
replay_history`` does, with its preset's lazy-loading window) through the engine's allocator
twice - its "driver" placement, and the same with a tail rule (a new large segment outside the
window goes into the newest range's tail that fits, else into a new 32 MiB-aligned range below
every earlier one) - and prints the histories whose reserved peak the rule moves, against the
measured peak (session 71: 96 histories replayed, 76 exact with the engine's placement, 78
with the rule; ResNet-18 b64 +1.57 -> 0 % in both processes and Swin-B b24 fp16 superneurons
+8.56 -> 0 %, but ConvNeXt-S b48 superneurons 0 -> +9.11 %).

Usage (no GPU):

    PYTHONPATH=$PWD python scripts/segment_tails.py [--replay] [HISTORY ...]
"""
import collections
import glob
import gzip
import json
import sys

_MIB = 1 << 20
_RANGE = 32 * _MIB


def count(paths):
    """``(tail choices, new ranges)``: two Counters over the histories ``paths``."""
    chose, made = collections.Counter(), collections.Counter()
    for path in paths:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        tails = {}   # start address -> (end address, creation index of the range's segment)
        k = 0
        for action, addr, size, _stream in doc["events"]:
            if action != "segment_alloc" or size == 2 * _MIB:
                continue
            k += 1
            fits = [(s, e, o) for s, (e, o) in tails.items() if e - s >= size]
            if addr in tails:
                end, owner = tails.pop(addr)
                chose["in a tail"] += 1
                if len(fits) > 1:
                    chose["in a tail, several fitted"] += 1
                    chose["the newest range's"] += owner == max(o for _, _, o in fits)
                    chose["the lowest-addressed"] += addr == min(s for s, _, _ in fits)
                    best = min(fits, key=lambda t: (t[1] - t[0], t[0]))
                    chose["the best fit (lowest address on ties)"] += best[0] == addr
                if addr + size < end:
                    tails[addr + size] = (end, owner)
                continue
            made["a tail fitted" if fits else "no tail fitted"] += 1
            if addr % _RANGE == 0:
                span = -(-size // _RANGE) * _RANGE
                if span > size:
                    tails[addr + size] = (addr + span, k)
    return chose, made


def _tail_allocator():
    from snsim.engine.allocators import PytorchAllocator

    class TailPlacement(PytorchAllocator):
        """The engine's "driver" placement, with new large segments outside the lazy-loading
        window moved into the newest fitting tail or a new 32 MiB-aligned range."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._tails, self._low, self._ranges = [], 1 << 56, 0

        def _new_segment(self, nbytes, rounded, small, stream, fl):
            block = super()._new_segment(nbytes, rounded, small, stream, fl)
            if small or block.addr >= 1 << 56:      # the small pool, or in the window
                return block
            size = block.size
            self._ranges += 1
            fits = [t for t in self._tails if t[1] - t[0] >= size]
            if fits:
                tail = max(fits, key=lambda t: t[2])
                self._tails.remove(tail)
                block.addr = tail[0]
                if tail[0] + size < tail[1]:
                    self._tails.append((tail[0] + size, tail[1], tail[2]))
            else:
                start = (self._low - size) // _RANGE * _RANGE
                if start + size < self._low:
                    self._tails.append((start + size, self._low, self._ranges))
                block.addr, self._low = start, start
            return block
    return TailPlacement


def compare_replays(paths):
    """``(replayed, exact with the engine's placement, exact with the tail rule, [(history,
    err % engine, err % rule) where they differ])``."""
    from snsim.engine.allocators import replay_history
    from snsim.hardware.spec import load_hardware
    tail = _tail_allocator()
    n = base_exact = tail_exact = 0
    moved = []
    for path in paths:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        meas = (doc.get("measured") or {}).get("peak_reserved_bytes")
        if not doc.get("iterations") or not meas:
            continue
        hw = load_hardware("h100" if "/h100/" in path else "h200")
        window = 0 if (doc.get("config") or {}).get("tag") == "eager" \
            else hw.lazy_loading_window_bytes
        errs = [100 * (replay_history(doc, window, allocator=cls) - meas) / meas
                for cls in (None, tail)]
        n += 1
        base_exact += abs(errs[0]) < 1e-2
        tail_exact += abs(errs[1]) < 1e-2
        if abs(errs[0] - errs[1]) >= 1e-2:
            moved.append((path, round(errs[0], 2), round(errs[1], 2)))
    return n, base_exact, tail_exact, moved


def main(argv=None):
    args = list(argv if argv is not None else sys.argv[1:])
    replays = "--replay" in args
    args = [a for a in args if a != "--replay"]
    paths = args or sorted(glob.glob("traces/h*/plans_history/*.json.gz"))
    chose, made = count(paths)
    print(f"{len(paths)} histories")
    for what, n in chose.items():
        print(f"  placed {what}: {n}")
    for what, n in made.items():
        print(f"  not in a tail (a new range: 32 MiB-aligned but a few), {what}: {n}")
    if replays:
        n, base, tail, moved = compare_replays(paths)
        print(f"replayed {n}: reserved exact (within 0.01 %) {base} with the engine's placement, "
              f"{tail} with the tail rule")
        for path, e0, e1 in moved:
            print(f"  {path}: {e0:+.2f} % -> {e1:+.2f} %")


if __name__ == "__main__":
    main()
