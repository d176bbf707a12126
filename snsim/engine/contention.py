"""Compute slowed by host copies in flight (issue 10 item 4).

A kernel that runs while the copy engines move data over PCIe shares device memory with them,
and a pageable copy also holds a host thread and the driver's staging buffers. The slowdown is
measured, not assumed: ``scripts/steptime_probe.py copy`` times conv, GEMM, elementwise and
batch-norm kernels alone and while H2D / D2H copies of a size run on other streams, pinned and
pageable (``copy_slowdown.csv``). :func:`summarize` reduces that grid to one fraction ``k`` per
(direction, pinned): the median over kernels of ``t_with_copies / t_alone - 1`` at the largest
copy size (copies back to back, as an offload plan issues them), and it is committed as
``configs/kernels/<preset>_copy_slowdown.csv``. A preset without that file has no slowdown.

Two mechanisms show in the H200 grid (torch 2.11, 256 MiB copies):

* pinned copies (DMA on a copy stream) share device memory with the kernels: the kernels run a
  few percent slower (median ``k`` 0.04 D2H, 0.06 H2D; 0.02-0.45 by kernel);
* pageable copies stage through the driver, which holds the device while it does: the kernels'
  extra time is 0.76-0.96 of a whole copy's time, for every kernel kind -- they wait the copy
  out, whatever their memory traffic. That is not a slowdown fraction but serialisation;
  :func:`summarize` writes ``k = inf`` for it (the kernels' extra time per copy at least
  :data:`SERIAL_WAIT` of the copy's own time).

While a copy stream is busy, a kernel progresses at ``1 / (1 + k)`` of its speed (``k`` summed
over the directions busy at that moment; ``inf``: no progress until the copy ends);
:func:`slowed_duration_s` gives the wall time of a step of ``duration_s`` of work that starts
at ``start_s`` with copy streams busy until given times.
"""
from __future__ import annotations

import csv
import functools
import math
import statistics
from pathlib import Path

from ..errors import ConfigError

DIRECTIONS = ("h2d", "d2h")
# a kernel whose extra time under a copy is at least this share of the copy's own time waited
# the copy out (serialised); memory contention alone costs a few percent of it (pinned: 0.02-0.05)
SERIAL_WAIT = 0.5


def table_path(preset):
    """Where the preset's summary lives: next to its kernel table (package, then repository;
    a sibling's for a preset that reads another's tables, :func:`snsim.kernel_table.tables_of`)."""
    from ..kernel_table import tables_of
    preset = tables_of(preset)
    here = Path(__file__).resolve().parents[1]
    paths = [here / "presets" / "kernels" / f"{preset}_copy_slowdown.csv",
             here.parent / "configs" / "kernels" / f"{preset}_copy_slowdown.csv"]
    return next((p for p in paths if p.exists()), paths[-1])


@functools.lru_cache(maxsize=16)
def copy_slowdown(preset):
    """``{(direction, pinned): k}`` for ``preset`` from its committed summary, or ``{}``."""
    path = table_path(preset)
    if not path.exists():
        return {}
    out = {}
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), 2):
            try:
                d, pinned, k = r["direction"], int(r["pinned"]), float(r["slowdown_fraction"])
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"{path}:{i}: needs direction, pinned (0/1) and "
                                  f"slowdown_fraction") from None
            if d not in DIRECTIONS or not (0.0 <= k < 10.0 or k == math.inf):
                raise ConfigError(f"{path}:{i}: direction must be h2d or d2h and "
                                  f"slowdown_fraction in [0, 10) or inf (serialised), "
                                  f"not {d!r}, {k!r}")
            out[(d, bool(pinned))] = k
    return out


def summarize(grid_rows):
    """Rows of the probe's ``copy_slowdown.csv`` -> ``[{direction, pinned, slowdown_fraction,
    kernels}]`` (median over kernels at the largest copy size; "both" directions are left out:
    the engine sums the two single-direction fractions). Where the grid has each kernel's time
    alone and the copies' bandwidth, a (direction, pinned) whose kernels waited at least
    :data:`SERIAL_WAIT` of a copy's time per copy is serialised: ``slowdown_fraction`` inf."""
    alone = {r["kernel"]: float(r["kernel_s"]) for r in grid_rows
             if r["copy"] == "none" and r.get("kernel_s")}
    by, wait = {}, {}
    big = max((int(r["copy_bytes"]) for r in grid_rows if r["copy"] in DIRECTIONS), default=0)
    for r in grid_rows:
        if r["copy"] in DIRECTIONS and int(r["copy_bytes"]) == big:
            key = (r["copy"], int(r["pinned"]))
            by.setdefault(key, []).append(float(r["slowdown"]) - 1.0)
            if r["kernel"] in alone and r.get("copy_bytes_per_s_wall") and r.get("reps"):
                extra_s = (float(r["kernel_s"]) - alone[r["kernel"]]) * int(r["reps"])
                copy_s = big / float(r["copy_bytes_per_s_wall"])
                wait.setdefault(key, []).append(extra_s / copy_s)
    out = []
    for (d, p), v in sorted(by.items()):
        waits = wait.get((d, p))
        serial = bool(waits) and statistics.median(waits) >= SERIAL_WAIT
        k = math.inf if serial else round(max(0.0, statistics.median(v)), 4)
        out.append({"direction": d, "pinned": p, "slowdown_fraction": k, "kernels": len(v)})
    return out


def slowed_duration_s(duration_s, start_s, busy_until_s, slowdown):
    """Wall seconds of ``duration_s`` of kernel work from ``start_s`` while the copy streams
    are busy until ``busy_until_s`` (``{direction: time}``), with fractions ``slowdown``
    (``{direction: k}``).

    Examples
    --------
    >>> slowed_duration_s(1.0, 0.0, {"h2d": 10.0}, {"h2d": 0.25})   # copies outlast the step
    1.25
    >>> slowed_duration_s(1.0, 0.0, {"h2d": 0.5}, {"h2d": 0.25})    # 0.5 s at 1/1.25 speed
    1.1
    >>> slowed_duration_s(1.0, 0.0, {"h2d": 0.0}, {"h2d": 0.25})    # no copy in flight
    1.0
    >>> slowed_duration_s(1.0, 0.0, {"d2h": 3.0}, {"d2h": math.inf})  # pageable: waits it out
    4.0
    """
    if duration_s <= 0:
        return duration_s
    t, left = start_s, duration_s
    ends = sorted(u for d, u in busy_until_s.items() if slowdown.get(d, 0.0) > 0 and u > t)
    for end in ends:
        k = sum(slowdown.get(d, 0.0) for d, u in busy_until_s.items() if u >= end)
        rate = 1.0 / (1.0 + k)      # 0 when a serialising copy is in flight
        if left <= (end - t) * rate:
            return t + left / rate - start_s
        left -= (end - t) * rate
        t = end
    return t + left - start_s
