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

Usage (no GPU):

    PYTHONPATH=$PWD python scripts/segment_tails.py [HISTORY ...]
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


def main(argv=None):
    paths = (argv if argv is not None else sys.argv[1:]) or sorted(
        glob.glob("traces/h*/plans_history/*.json.gz"))
    chose, made = count(paths)
    print(f"{len(paths)} histories")
    for what, n in chose.items():
        print(f"  placed {what}: {n}")
    for what, n in made.items():
        print(f"  not in a tail (a new range: 32 MiB-aligned but a few), {what}: {n}")


if __name__ == "__main__":
    main()
