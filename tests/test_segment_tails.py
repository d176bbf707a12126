"""scripts/segment_tails.py: a new large segment placed where an earlier one ends counts as
placed in that segment's 32 MiB range's tail; one placed elsewhere while a tail fitted counts
as a new range made although a tail fitted."""
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from segment_tails import count  # noqa: E402

MIB = 1 << 20


def _history(path, segments):
    events = [["segment_alloc", addr, size, 0] for addr, size in segments]
    with gzip.open(path, "wt") as f:
        json.dump({"events": events}, f)
    return path


def test_a_segment_at_an_earlier_ones_end_is_in_its_tail(tmp_path):
    a = 1 << 40
    # 36 MiB at an aligned address: a 64 MiB range, a 28 MiB tail; 22 MiB go into it, then
    # 2 MiB (the small pool: not counted) and a 30 MiB segment no tail fits
    path = _history(tmp_path / "h.json.gz", [(a, 36 * MIB), (a + 36 * MIB, 22 * MIB),
                                             (a + 58 * MIB, 2 * MIB), (a - 64 * MIB, 30 * MIB)])
    chose, made = count([path])
    assert chose["in a tail"] == 1 and chose["in a tail, several fitted"] == 0
    assert made == {"no tail fitted": 2}


def test_a_new_range_while_a_tail_fitted_is_counted_apart(tmp_path):
    a = 1 << 40
    # 40 MiB leave a 24 MiB tail; the 20 MiB segment goes to a new aligned range instead
    path = _history(tmp_path / "h.json.gz", [(a, 40 * MIB), (a - 32 * MIB, 20 * MIB)])
    chose, made = count([path])
    assert chose["in a tail"] == 0 and made["a tail fitted"] == 1


def test_replays_compare_the_engines_placement_with_the_tail_rule(tmp_path):
    from segment_tails import compare_replays
    # one 5 MiB request: a 20 MiB segment under either placement, the measured peak
    path = tmp_path / "h.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"events": [["alloc", 1, 5 * MIB, 0], ["free_completed", 1, 5 * MIB, 0]],
                   "iterations": [[0, 0]], "measured": {"peak_reserved_bytes": 20 * MIB}}, f)
    assert compare_replays([str(path)]) == (1, 1, 1, [])
