"""Parse human byte sizes once, at the config boundary."""
import math
import numbers
import re
import sys

from .checks import show
from .errors import ConfigError

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
# the largest float: any budget beyond it is meaningless and breaks float arithmetic
_MAX_BYTES = int(sys.float_info.max)
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_bytes(text, *, field="size"):
    """Return the number of bytes in ``text`` ("12GiB", "11.5 GB", "4096", 12e9, 10**30).

    Integers (and integer literals with an integer unit) stay exact; other values must be
    finite and are rounded to whole bytes.

    Examples
    --------
    >>> parse_bytes("12GiB")
    12884901888
    >>> parse_bytes("1.5kB")
    1500
    >>> parse_bytes(10**30) == 10**30
    True
    """
    if isinstance(text, bool) or not isinstance(text, (str, numbers.Real)):
        raise ConfigError(f"{field} (={show(text)}) must be a byte size such as 12GiB")
    if isinstance(text, numbers.Integral):
        nbytes = int(text)
    elif isinstance(text, numbers.Real):
        nbytes = _finite_bytes(float(text), text, field)
    else:
        m = _SIZE_RE.match(text)
        if not m or m.group(2).lower() not in _UNITS:
            raise ConfigError(f"{field} (={show(text)}) must be a byte size such as 12GiB, "
                              f"11.5GB or 4096")
        number, unit = m.group(1), _UNITS[m.group(2).lower()]
        if number.isdigit():
            nbytes = int(number) * unit
        else:
            nbytes = _finite_bytes(float(number) * unit, text, field)
    if nbytes < 0:
        raise ConfigError(f"{field} (={show(text)}) must be >= 0")
    if nbytes > _MAX_BYTES:
        raise ConfigError(f"{field} (={show(text)}) must be at most {_MAX_BYTES:.3g} bytes")
    return nbytes


def _finite_bytes(value, text, field):
    if not math.isfinite(value):
        raise ConfigError(f"{field} (={show(text)}) must be a finite byte size")
    return int(round(value))


def format_bytes(nbytes):
    """Format a byte count with a binary unit, e.g. ``format_bytes(3 * 2**30) == '3.00 GiB'``."""
    n = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"
