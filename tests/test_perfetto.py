"""Chrome/Perfetto trace export (SPEC §13): structure, per-thread order, counters, gzip."""
import gzip
import json
from collections import defaultdict

import pytest

from snsim.api import make_program, simulate
from snsim.cli import main
from snsim.perfetto import TID_COMPUTE, TID_D2H, TID_H2D, chrome_trace, write_chrome_trace

OFFLOADING = dict(batch=8, policy="superneurons", budget_bytes="1.2GiB",
                  policy_options={"free_after_offload": True})


@pytest.fixture(scope="module")
def offloading_run():
    return simulate("resnet50", **OFFLOADING)


def _ns(us):
    # Perfetto reads µs as a double and keeps integer ns: compare in that domain
    return round(us * 1000)


def check_trace(doc, result):
    """The invariants CI promises for every exported trace."""
    assert set(doc) == {"traceEvents", "displayTimeUnit", "otherData"}
    assert doc["displayTimeUnit"] == "ms"
    json.dumps(doc)  # plain JSON, no numpy scalars or tuples left over
    events = doc["traceEvents"]
    for e in events:
        assert {"ph", "pid", "name"} <= set(e), e
        assert e["pid"] == 0
    meta = {(e["name"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert "simulated GPU" in meta[("process_name", 0)]["name"]
    assert {meta[("thread_name", t)]["name"] for t in (1, 2, 3)} == {"compute", "H2D copy",
                                                                     "D2H copy"}
    by_tid = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            assert e["tid"] in (TID_COMPUTE, TID_H2D, TID_D2H)
            assert e["dur"] >= 0 and e["ts"] >= 0
            by_tid[e["tid"]].append(e)
    for tid, xs in by_tid.items():
        starts = [_ns(e["ts"]) for e in xs]
        assert starts == sorted(starts), f"tid {tid} not in time order"
        for a, b in zip(xs, xs[1:]):
            assert _ns(a["ts"]) + _ns(a["dur"]) <= _ns(b["ts"]), f"tid {tid}: {a} overlaps {b}"
    kernels = [e for e in by_tid[TID_COMPUTE] if e["cat"] == "kernel"]
    assert len(kernels) == len(result.steps)
    for e in kernels:
        assert set(e["args"]) >= {"layer", "phase", "step"}
        assert e["name"] == f"{e['args']['layer']} {e['args']['phase']}"
    copies = by_tid[TID_H2D] + by_tid[TID_D2H]
    assert len(copies) == len(result.transfers)
    for e in copies:
        assert e["cat"] == "gpu_memcpy"
        assert e["name"].startswith("Memcpy HtoD" if e["tid"] == TID_H2D else "Memcpy DtoH")
        assert e["args"]["bytes"] > 0 and isinstance(e["args"]["tensor_id"], int)
    mem = [e for e in events if e["ph"] == "C" and e["name"] == "memory"]
    assert mem, "no memory counter"
    ts = [e["ts"] for e in mem]
    assert ts == sorted(ts)
    for e in events:
        if e["ph"] == "C":
            assert all(v >= 0 for v in e["args"].values()), e
    for e in mem:
        assert e["args"]["reserved"] >= e["args"]["allocated"]
    return by_tid, mem


def test_offloading_run_trace(offloading_run):
    r = offloading_run
    assert r.feasible and r.transfers and r.h2d_bytes > 0 and r.d2h_bytes > 0
    doc = chrome_trace(r)
    by_tid, mem = check_trace(doc, r)
    assert by_tid[TID_H2D] and by_tid[TID_D2H]
    assert by_tid[TID_D2H][0]["name"] == "Memcpy DtoH (Device -> Pinned)"
    assert by_tid[TID_H2D][0]["name"] == "Memcpy HtoD (Pinned -> Device)"
    # the counter reaches the engine's peak and starts from the static footprint
    assert max(e["args"]["allocated"] for e in mem) == r.peak_ideal_bytes
    assert mem[0]["args"]["allocated"] >= r.static_bytes
    cats = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "memory by category"]
    assert cats[0]["args"]["parameter"] == r.static_breakdown["parameter"]
    assert cats[-1]["args"]["parameter"] == r.static_breakdown["parameter"]
    # ideal allocator: reserved is allocated
    assert all(e["args"]["reserved"] == e["args"]["allocated"] for e in mem)
    # offload -> prefetch flows pair up
    s = [e for e in doc["traceEvents"] if e["ph"] == "s"]
    f = [e for e in doc["traceEvents"] if e["ph"] == "f"]
    assert s and len(s) == len(f) and {e["id"] for e in s} == {e["id"] for e in f}
    other = doc["otherData"]
    assert other["network"] == "resnet50" and other["batch"] == 8
    assert other["policy"] == "superneurons" and other["policy_options"]["free_after_offload"]
    assert other["budget_bytes"] == r.budget_bytes and other["run_id"] == r.run_id
    # last kernel ends at the compute stream's end
    last = by_tid[TID_COMPUTE][-1]
    assert abs((last["ts"] + last["dur"]) / 1e6 - max(st[4] for st in r.steps)) < 1e-6


def test_kernel_times_match_steps(offloading_run):
    r = offloading_run
    kernels = [e for e in chrome_trace(r)["traceEvents"] if e.get("cat") == "kernel"]
    by_step = {e["args"]["step"]: e for e in kernels if e["args"]["phase"] != "R"}
    for step, _layer, phase, start_s, end_s, *_ in r.steps:
        if phase == "R":
            continue
        e = by_step[step]
        assert abs(e["ts"] - start_s * 1e6) < 1e-2
        assert abs(e["dur"] - (end_s - start_s) * 1e6) < 1e-2


def test_tensor_ids_with_program():
    p = make_program("lenet", batch=4)
    r = simulate(p, policy="liveness")
    doc = chrome_trace(r, program=p)
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert all(isinstance(e["args"]["tensor_ids"], list) for e in kernels)
    assert any(e["args"]["tensor_ids"] for e in kernels)


@pytest.mark.parametrize("policy,allocator", [("keep_all", "ideal"), ("recompute", "pytorch"),
                                              ("offload", "pool")])
def test_other_policies_and_allocators(policy, allocator):
    r = simulate("cifar_resnet32", batch=16, policy=policy, allocator=allocator)
    _, mem = check_trace(chrome_trace(r), r)
    if policy == "recompute":
        assert any(st[2] == "R" for st in r.steps)
    if allocator != "ideal":  # reserved is the running high-water of allocated: never drops
        res = [e["args"]["reserved"] for e in mem]
        assert res == sorted(res)


def test_rounding_clamps_overlaps():
    # two copies that touch in float but would overlap after rounding to ns
    r = simulate("lenet", batch=4, policy="offload")
    r.transfers = [(0, "d2h", 1000, 0.0, 1e-6, 2.0000004e-6, True),
                   (1, "d2h", 1000, 0.0, 2.0000001e-6, 3e-6, True)]
    doc = chrome_trace(r)
    d2h = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == TID_D2H]
    assert _ns(d2h[0]["ts"]) + _ns(d2h[0]["dur"]) <= _ns(d2h[1]["ts"])


def test_infeasible_run_marks_oom():
    r = simulate("alexnet", batch=64, policy="keep_all", budget_bytes="600MiB")
    assert not r.feasible
    doc = chrome_trace(r)
    check_trace(doc, r)
    assert [e for e in doc["traceEvents"] if e["ph"] == "i" and e["cat"] == "oom"]
    assert doc["otherData"]["feasible"] is False


@pytest.mark.parametrize("name", ["trace.json", "trace.json.gz"])
def test_write_round_trip(tmp_path, offloading_run, name):
    path = write_chrome_trace(offloading_run, tmp_path / "sub" / name)
    opener = gzip.open if name.endswith(".gz") else open
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    with opener(path, "rt") as f:
        doc = json.load(f)
    assert doc == json.loads(json.dumps(chrome_trace(offloading_run)))


def test_cli_trace_out(tmp_path, capsys):
    out = tmp_path / "run.json.gz"
    rc = main(["run", "--network", "resnet50", "--batch", "8", "--policy", "superneurons",
               "--budget", "1.2GiB", "--option", "free_after_offload=true",
               "--trace-out", str(out), "--format", "json"])
    assert rc == 0
    with gzip.open(out, "rt") as f:
        doc = json.load(f)
    assert any(e.get("cat") == "gpu_memcpy" for e in doc["traceEvents"])


def test_doctests():
    import doctest

    import snsim.perfetto as module
    assert doctest.testmod(module).failed == 0
