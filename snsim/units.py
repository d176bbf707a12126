"""Parse human byte sizes once, at the config boundary."""
import re

from .errors import ConfigError

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_bytes(text, *, field="size"):
    """Return the number of bytes in ``text`` ("12GiB", "11.5 GB", "4096", 12e9).

    Examples
    --------
    >>> parse_bytes("12GiB")
    12884901888
    >>> parse_bytes("1.5kB")
    1500
    """
    if isinstance(text, bool):
        raise ConfigError(f"{field} (={text!r}) must be a byte size such as 12GiB")
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        m = _SIZE_RE.match(str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise ConfigError(f"{field} (={text!r}) must be a byte size such as 12GiB, 11.5GB or 4096")
        value, unit = float(m.group(1)), m.group(2).lower()
    nbytes = value * _UNITS[unit]
    if nbytes < 0:
        raise ConfigError(f"{field} (={text!r}) must be >= 0")
    return int(round(nbytes))


def format_bytes(nbytes):
    """Format a byte count with a binary unit, e.g. ``format_bytes(3 * 2**30) == '3.00 GiB'``."""
    n = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"
