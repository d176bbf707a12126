"""Copies slow compute (issue 10 item 4): the engine stretches a step that runs while a copy
stream is busy, by the measured fraction (snsim.engine.contention)."""
import dataclasses
import math

import pytest

import snsim.engine.core as core
from snsim.api import simulate
from snsim.engine.contention import copy_slowdown, slowed_duration_s, summarize
from snsim.errors import ConfigError
from snsim.hardware import load_hardware


def _offload_run(monkeypatch, tiny_chain, k):
    monkeypatch.setattr(core, "copy_slowdown", lambda name: {("h2d", True): k, ("d2h", True): k})
    # a 0.5 ms copy latency and no launch overhead make the copy long and the times round
    hw = dataclasses.replace(load_hardware("k40c"), copy_latency_s=0.5e-3, launch_overhead_s=0.0)
    return simulate(tiny_chain, hardware=hw, policy="offload")


def test_offload_plan_is_slowed_by_its_copy(monkeypatch, tiny_chain):
    # tiny_chain: data -> conv -> relu -> fc -> softmax, 1 ms per forward step, 2 ms backward.
    # The offload plan copies conv's output (128 B) to the host when conv ends (t = 2 ms: data,
    # conv): the D2H stream is busy 0.5 ms + 128 B / 11e9 B/s = 0.5000116 ms, all of it while
    # relu's forward runs. At k = 1 relu runs at half speed meanwhile: in 0.5000116 ms it does
    # 0.2500058 ms of work, the other 0.7499942 ms at full speed: relu takes 1.2500058 ms,
    # +0.2500058 ms. Nothing else overlaps a copy (the copy stays cached: no prefetch).
    base = _offload_run(monkeypatch, tiny_chain, 0.0)
    slow = _offload_run(monkeypatch, tiny_chain, 1.0)
    assert len(slow.transfers) == 1 and slow.transfers[0][1] == "d2h"
    copy_s = 0.5e-3 + 128 / 11e9
    assert slow.step_time_s - base.step_time_s == pytest.approx(copy_s * 1.0 / 2.0, rel=1e-9)
    # without slowdown: 5 forward steps (data included) x 1 ms + 4 backward x 2 ms + 2 updates
    # (conv, fc) x 0.1 ms = 13.2 ms; the copy overlaps compute and costs nothing
    assert base.step_time_s == pytest.approx(13.2e-3)


def test_slowed_duration_two_directions():
    # both streams busy for 1 s (k 0.25 + 0.25: rate 1/1.5), then only D2H until 2 s (rate
    # 1/1.25): 3 s of work = 1/1.5 + 1/1.25 = 1.4667 s done by t = 2, 1.5333 s more at full speed
    t = slowed_duration_s(3.0, 0.0, {"h2d": 1.0, "d2h": 2.0}, {"h2d": 0.25, "d2h": 0.25})
    assert t == pytest.approx(2.0 + 3.0 - (1 / 1.5 + 1 / 1.25))
    # a copy that ended before the step starts changes nothing
    assert slowed_duration_s(3.0, 5.0, {"h2d": 1.0}, {"h2d": 0.25}) == 3.0


def test_summary_of_the_probe_grid_and_bad_table(tmp_path, monkeypatch):
    grid = [{"kernel": kn, "copy": d, "pinned": p, "copy_bytes": b, "slowdown": s}
            for kn, s in (("conv", 1.10), ("gemm", 1.02), ("add", 1.30))
            for d in ("h2d", "d2h", "both") for p in (0, 1) for b in (2**20, 2**28)]
    rows = summarize(grid)
    # median over the three kernels at the largest size: 1.10 - 1 = 0.10; "both" left out
    assert {(r["direction"], r["pinned"]): r["slowdown_fraction"] for r in rows} == {
        ("d2h", 0): 0.1, ("d2h", 1): 0.1, ("h2d", 0): 0.1, ("h2d", 1): 0.1}
    import snsim.engine.contention as con
    bad = tmp_path / "x_copy_slowdown.csv"
    bad.write_text("direction,pinned,slowdown_fraction\nsideways,1,0.1\n")
    monkeypatch.setattr(con, "table_path", lambda preset: bad)
    copy_slowdown.cache_clear()
    with pytest.raises(ConfigError, match=r"x_copy_slowdown.csv:2: direction must be"):
        copy_slowdown("x")
    copy_slowdown.cache_clear()


def test_pageable_copies_serialise_kernels():
    # A kernel of 1 ms alone, 3 reps, beside 256 MiB copies at 13.4 GB/s (20 ms each, as the
    # H200's pageable D2H): pinned, the 3 kernels take 0.1 ms more in all (memory contention,
    # k = 0.0333); pageable, 19 ms more -- they waited a whole copy out: serialised (inf).
    big = 2**28
    bw = big / 0.020
    grid = [{"kernel": "conv", "copy": "none", "pinned": "", "copy_bytes": 0,
             "kernel_s": "1e-3", "slowdown": "1.0", "reps": 3}]
    for p, extra_s in ((1, 0.1e-3), (0, 19e-3)):
        t = 1e-3 + extra_s / 3
        grid.append({"kernel": "conv", "copy": "d2h", "pinned": p, "copy_bytes": big,
                     "kernel_s": t, "slowdown": t / 1e-3, "reps": 3,
                     "copy_bytes_per_s_wall": bw})
    k = {(r["direction"], r["pinned"]): r["slowdown_fraction"] for r in summarize(grid)}
    assert k == {("d2h", 1): pytest.approx(0.0333, abs=1e-4), ("d2h", 0): math.inf}
    # a serialised copy: the kernel makes no progress until it ends, then runs its 1 ms
    assert slowed_duration_s(1e-3, 0.0, {"d2h": 20e-3}, {"d2h": math.inf}) == pytest.approx(21e-3)
    assert slowed_duration_s(0.0, 0.0, {"d2h": 20e-3}, {"d2h": math.inf}) == 0.0
