"""The launching thread's pace: one gauge for the machine a step runs on (issue 10).

Eager PyTorch issues every kernel from one CPU thread, and a step whose kernels are short waits
for it (:func:`snsim.kernel_table.host_stream`). How fast that thread is differs between
machines, and on the H200 lent here between processes and within minutes (docs/DESIGN.md's
known limits: DenseNet-161 b24 fp16 stepped in 59 to 133 ms in processes whose gauge read 6.5
to 11 us). The kernel table's host costs are in the pace of the process that measured them;
:func:`gauge_add_s` reads the pace of this one, and :func:`pace_factor` is the ratio that
scales the modelled host seconds (``snsim predict --host-gauge-us``).

The gauge: a small ``torch.add`` (1024 fp32 elements) issued 2000 times in a tight loop, the
best of 3 rounds, in seconds per call. The kernel table's reference is its own ``add`` issue
cost (calibrate's smallest call, :attr:`snsim.kernel_table.KernelTable.aten_host`), the
quantity the in-network host model was put in (``scripts/host_innet_fit.py``'s lease factor:
the table's ``add`` over its probe processes' gauges).
"""
from __future__ import annotations

import time

from ..errors import ConfigError

#: tight-loop calls per round, and rounds (the best one counts)
GAUGE_CALLS = 2000
GAUGE_ROUNDS = 3


def gauge_add_s(device="cuda", n=GAUGE_CALLS, rounds=GAUGE_ROUNDS):
    """Host seconds of one small ``torch.add`` issued in a tight loop on ``device``, best of
    ``rounds``: this thread's pace now. Allocates one 4 KiB tensor (freed on return).

    On ``cpu`` the add runs its own arithmetic on the thread, so the figure is not a launch
    cost and not comparable with a CUDA table's (tests and dry runs only).
    """
    import torch
    a = torch.ones(1024, device=device)
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            torch.add(a, a)
        best = min(best, (time.perf_counter() - t0) / n)
        if a.is_cuda:
            torch.cuda.synchronize()
    return best


def pace_factor(gauge_s, table, source="--host-gauge-us"):
    """``gauge_s`` over the kernel table's own ``add`` issue cost: what the modelled host
    seconds are multiplied by for a machine whose gauge reads ``gauge_s``.

    Raises
    ------
    ConfigError
        A gauge that is not a positive number, or a table without host costs.

    Examples
    --------
    >>> from snsim.kernel_table import load_kernel_table
    >>> round(pace_factor(8.201e-6 * 1.5, load_kernel_table("h200")), 6)
    1.5
    """
    try:
        g = float(gauge_s)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {gauge_s!r} is not a number") from None
    if not g > 0 or g == float("inf"):
        raise ConfigError(f"{source} (={gauge_s}) must be a positive, finite time")
    ref = table.aten_host.get("add") if table is not None else None
    if not ref:
        raise ConfigError(f"{source}: the hardware preset's kernel table has no host costs "
                          "(no 'add' issue time), so there is no host model to scale")
    return g / ref


def host_pace_groups(hw):
    """The pace factors (over the kernel table's own) of the two groups the launching
    thread's gauge fell into on preset ``hw``'s machines (``host_gauge_fast_s``,
    ``host_gauge_slow_s``: docs/DESIGN.md, the host's pace), or None where the preset has
    no such measurement or no kernel table with host costs."""
    from ..kernel_table import load_kernel_table
    table = load_kernel_table(hw.name)
    if not (hw.host_gauge_fast_s and hw.host_gauge_slow_s and table is not None
            and table.aten_host.get("add")):
        return None
    return tuple(pace_factor(g, table, source=f"hardware.{name}")
                 for g, name in ((hw.host_gauge_fast_s, "host_gauge_fast_s"),
                                 (hw.host_gauge_slow_s, "host_gauge_slow_s")))


#: the gauges (us per add) that split the plan suite's processes into a fast and a slow group:
#: below the first, and at or above the second (few processes fall between: 37 of 365 on the
#: H200, 6 of 114 on the H100, docs/DESIGN.md)
GROUP_SPLIT_US = (8.0, 9.0)


def pace_groups_us(summary_csvs):
    """The medians of the fast and the slow group of the gauges (``host_gauge_add_us_after``,
    each process's gauge after its steps) in the plan suite's ``summary.csv`` files: the
    figures a hardware preset's ``host_gauge_fast_s`` and ``host_gauge_slow_s`` hold.

    Returns
    -------
    (float, float, int, int)
        The fast group's median, the slow group's (us per add) and the two group sizes.

    Raises
    ------
    ConfigError
        No gauged process in either group.
    """
    import csv
    import statistics
    gauges = []
    for path in summary_csvs:
        with open(path, newline="") as f:
            gauges += [float(row["host_gauge_add_us_after"]) for row in csv.DictReader(f)
                       if row.get("host_gauge_add_us_after")]
    fast = [g for g in gauges if g < GROUP_SPLIT_US[0]]
    slow = [g for g in gauges if g >= GROUP_SPLIT_US[1]]
    if not fast or not slow:
        raise ConfigError(f"pace groups: {len(fast)} processes gauged below "
                          f"{GROUP_SPLIT_US[0]} us and {len(slow)} at or above "
                          f"{GROUP_SPLIT_US[1]} us in {len(summary_csvs)} summaries; "
                          "both groups need one")
    return statistics.median(fast), statistics.median(slow), len(fast), len(slow)
