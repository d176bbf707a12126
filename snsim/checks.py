"""The value rules every input is checked against, once, where it enters snsim.

CLI flags, policy options, hardware and sweep YAML, traces and user graphs are checked at the
edge with these predicates; code past that edge trusts its inputs. A failure is one line that
names the source, the field, the value and the rule (``field (=value) must be rule``).
"""
from __future__ import annotations

import math
import numbers

#: Largest count or byte size accepted anywhere (a tensor, a parameter count, a MAC count):
#: far beyond any GPU, small enough that every sum and float conversion stays finite.
MAX_COUNT = 2**62
#: Longest time accepted for one step of a layer (about 11.6 days): a larger figure is
#: a units mistake, and sums of allowed times stay finite.
MAX_TIME_S = 1e6


def is_int(v):
    """An integer that is not a boolean."""
    return type(v) is int or (isinstance(v, numbers.Integral) and not isinstance(v, bool))


def is_real(v):
    """A finite real number that is not a boolean."""
    if type(v) is float or type(v) is int:      # the common case, without the ABC checks
        return math.isfinite(v)
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def show(value, limit=80):
    """``repr(value)`` cut to one short line, for messages."""
    text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def int_in(lo, hi=MAX_COUNT):
    """``(rule, predicate)`` for an integer in ``[lo, hi]``."""
    rule = f"an integer >= {lo}" if hi == MAX_COUNT else f"an integer in [{lo}, {hi}]"
    # type(v) is int first: is_int's own common case, without a call per attribute of every
    # layer of every graph
    return rule, lambda v: (type(v) is int or is_int(v)) and lo <= v <= hi


def real_in(lo, hi):
    """``(rule, predicate)`` for a finite number in ``[lo, hi]``."""
    return f"a number in [{lo:g}, {hi:g}]", lambda v: is_real(v) and lo <= v <= hi


def _shape_ok(v):
    if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= 8:
        return False
    for d in v:     # a loop, not all(...): this runs for every layer of every graph
        if not ((type(d) is int or is_int(d)) and 1 <= d):
            return False
    return math.prod(v) <= MAX_COUNT


def _pair_ok(lo):
    def ok(v):
        if is_int(v):
            return lo <= v <= MAX_COUNT
        return (isinstance(v, (list, tuple)) and len(v) == 2
                and all(is_int(d) and lo <= d <= MAX_COUNT for d in v))
    return ok


COUNT = int_in(0)
POSITIVE = int_in(1)
TIME_S = (f"a number of seconds in [0, {MAX_TIME_S:g}]",
          lambda v: is_real(v) and 0 <= v <= MAX_TIME_S)
FINITE = ("a finite number", is_real)
PROBABILITY = real_in(0, 1)
TEXT = ("a string", lambda v: isinstance(v, str))
FLAG = ("true or false", lambda v: isinstance(v, bool))
SHAPE = ("a list of 1 to 8 integers >= 1", _shape_ok)
def _shapes_ok(v):
    if not isinstance(v, (list, tuple)):
        return False
    for s in v:     # a loop, not all(...), as in _shape_ok
        if not _shape_ok(s):
            return False
    return True


SHAPES = ("a list of shapes (lists of integers >= 1)", _shapes_ok)
PAIR_POSITIVE = ("an integer >= 1 or a pair of them", _pair_ok(1))
PAIR_COUNT = ("an integer >= 0 or a pair of them", _pair_ok(0))
