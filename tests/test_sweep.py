"""Sweeps: YAML checks, tidy frame, resumability, and Dask runs equal to in-process runs.

The Dask tests start one 2-worker LocalCluster for the module; they are marked ``slow`` and
named ``test_dask_*`` (select them with ``-k dask``), and they run by default.
"""
import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from snsim.cli import main
from snsim.errors import ConfigError
from snsim.sweep import (CONFIG_COLUMNS, WALL_COLUMNS, load_sweep, run_one, run_sweep)

REPO = Path(__file__).resolve().parents[1]

# 3 networks x 2 batches x 6 policies x 3 budgets x 2 allocators = 216 small runs
GRID = """\
name: grid
networks: [lenet, alexnet, cifar_resnet32]
batches: [8, 32]
policies: [keep_all, liveness, recompute, offload, workspace, superneurons]
budgets: [default, 900MiB, 2GiB]
allocators: [ideal, pool]
"""
GRID_RUNS = 216

SMALL = """\
networks: [lenet, cifar_resnet32]
batches: [4]
policies: [liveness, superneurons]
"""


def write(tmp_path, text, name="sweep.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def comparable(df):
    return df.drop(columns=[c for c in WALL_COLUMNS if c in df.columns]).reset_index(drop=True)


@contextlib.contextmanager
def deadline(seconds):
    """Fail instead of hanging CI if a cluster misbehaves."""
    def boom(*_):
        raise TimeoutError(f"gave up after {seconds} s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class Stop(Exception):
    pass


def stop_after(k, seen=None):
    seen = [] if seen is None else seen

    def hook(row):
        seen.append(row["run_key"])
        if len(seen) >= k:
            raise Stop(f"interrupted after {k} runs")
    return hook


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory):
    return write(tmp_path_factory.mktemp("grid"), GRID)


@pytest.fixture(scope="module")
def reference(grid_file):
    """The grid run in-process: the frame every other way of running must reproduce."""
    return run_sweep(grid_file)


# -- loading and checking ------------------------------------------------------------------------
def test_grid_expands_to_every_combination(grid_file):
    s = load_sweep(grid_file)
    assert len(s) == GRID_RUNS
    assert len({r.run_key for r in s.runs}) == GRID_RUNS
    # keys are stable: the same file gives the same keys
    assert [r.run_key for r in load_sweep(grid_file).runs] == [r.run_key for r in s.runs]


def test_frame_is_tidy_and_sorted(reference):
    df = reference
    assert len(df) == GRID_RUNS and df["run_key"].is_unique
    assert list(df.columns[:len(CONFIG_COLUMNS) + 1]) == ["run_key", *CONFIG_COLUMNS]
    for col in ("feasible", "peak_ideal_bytes", "peak_reserved_bytes", "step_time_s",
                "h2d_bytes", "evictions", "sim_wall_s"):
        assert col in df.columns
    keys = ["network", "batch", "gpu", "policy", "policy_options", "allocator", "budget_bytes"]
    assert df.equals(df.sort_values(keys, kind="mergesort").reset_index(drop=True))
    assert df["feasible"].any() and not df["feasible"].all()  # alexnet at 900MiB does not fit
    assert set(df["budget"]) == {"default", "900MiB", "2GiB"}
    assert (df.loc[df.budget == "2GiB", "budget_bytes"] == 2 * 2**30).all()


def test_row_matches_simulate(grid_file):
    from snsim.api import simulate
    cfg = load_sweep(grid_file).runs[-1]
    row = run_one(cfg)
    r = simulate(cfg.network, batch=cfg.batch, policy=cfg.policy, budget_bytes=cfg.budget_bytes,
                 allocator=cfg.allocator)
    for k in ("peak_ideal_bytes", "peak_reserved_bytes", "step_time_s", "feasible"):
        assert row[k] == getattr(r, k)


def test_policy_variants_and_options(tmp_path):
    p = write(tmp_path, """\
networks: [resnet50]
batches: [8]
policies:
  - superneurons
  - {name: superneurons, options: {free_after_offload: true}}
policy_options:
  superneurons: {prefetch_depth: 2}
budgets: [1.2GiB]
""")
    df = run_sweep(p)
    assert len(df) == 2
    opts = [json.loads(o) for o in df["policy_options"]]
    assert all(o["prefetch_depth"] == 2 for o in opts)
    assert sorted(o.get("free_after_offload", False) for o in opts) == [False, True]
    assert df["h2d_bytes"].iloc[0] != df["h2d_bytes"].iloc[1]


BAD = [
    ("networks: [lenet\nbatches: [1]\n", r"sweep file .*sweep\.yaml:\d+:\d+ is not valid YAML"),
    ("networks: [lenet]\nbatches: [8]\n", r"sweep\.policies is missing \(.*sweep\.yaml\)"),
    ("netwroks: [lenet]\nbatches: [8]\npolicies: [liveness]\n",
     r"sweep\.netwroks is not a known key \(.*sweep\.yaml:1\); did you mean networks\?"),
    ("networks: [lenet]\nbatches: []\npolicies: [liveness]\n",
     r"sweep\.batches is empty; list at least one value \(.*sweep\.yaml:2\)"),
    ("networks: [lenet]\nbatches:\n  - 8\n  - -4\npolicies: [liveness]\n",
     r"sweep\.batches\[1\] \(=-4\) must be a positive integer \(.*sweep\.yaml:4\)"),
    ("networks: [lenet]\nbatches: [8.5]\npolicies: [liveness]\n",
     r"sweep\.batches\[0\] \(=8\.5\) must be a positive integer"),
    ("networks: [lenet, resnet51]\nbatches: [8]\npolicies: [liveness]\n",
     r"sweep\.networks\[1\] \(='resnet51'\) is not usable: network 'resnet51' is unknown"),
    ("networks: [lenet]\nbatches: [8]\npolicies: [liveness, magic]\n",
     r"sweep\.policies\[1\] \(='magic'\) is not usable: policy 'magic' is unknown.*sweep\.yaml:3"),
    ("networks: [lenet]\nbatches: [8]\npolicies: [liveness]\ngpus: [k41c]\n",
     r"sweep\.gpus\[0\] \(='k41c'\) is not usable: hardware preset 'k41c' is unknown"),
    ("networks: [lenet]\nbatches: [8]\npolicies: [liveness]\nbudgets: [-1GiB]\n",
     r"sweep\.budgets\[0\] \(='-1GiB'\) must be a byte size.*sweep\.yaml:4"),
    ("networks: [lenet]\nbatches: [8]\npolicies: [liveness]\nallocators: [buddy]\n",
     r"sweep\.allocators\[0\] \(='buddy'\) must be one of ideal, pool, pytorch"),
    ("networks: [lenet]\nbatches: [8]\npolicies:\n  - {name: offload, options: {warp: 9}}\n",
     r"sweep\.policies\[0\] .*unknown option\(s\) warp"),
    ("networks: [lenet]\nbatches: [8, 8]\npolicies: [liveness]\n",
     r"sweep\.batches\[1\] \(=8\) repeats batches\[0\]"),
    ("- lenet\n", r"must hold a mapping"),
    ("networks: [lenet]\nbatches: [8]\npolicies: [liveness]\npolicy_options: {offload: {}}\n",
     r"sweep\.policy_options\.offload names a policy that is not in sweep\.policies"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_malformed_sweep_is_one_clear_line(tmp_path, text, message):
    p = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as e:
        load_sweep(p)
    assert "\n" not in str(e.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="sweep file nowhere.yaml does not exist"):
        load_sweep("nowhere.yaml")


def test_cli_error_exits_2(tmp_path, capsys):
    p = write(tmp_path, "networks: [lenet]\nbatches: [0]\npolicies: [liveness]\n")
    assert main(["sweep", str(p), "--out", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("snsim: error: sweep.batches[0] (=0)")


def test_shipped_sweep_files_load():
    assert 0 < len(load_sweep(REPO / "configs/sweeps/example.yaml")) <= 100
    paper = load_sweep(REPO / "configs/sweeps/paper.yaml")
    assert {r.gpu for r in paper.runs} == {"k40c"}
    assert {r.policy for r in paper.runs} >= {"keep_all", "liveness", "superneurons"}


# -- output and resumability ---------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_output_round_trip_and_rerun_skips(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    p = write(tmp_path, SMALL)
    out = tmp_path / f"r{suffix}"
    df = run_sweep(p, out=out)
    assert out.exists() and not Path(str(out) + ".journal.jsonl").exists()
    back = pd.read_parquet(out) if suffix == ".parquet" else \
        pd.read_csv(out, keep_default_na=False, dtype={"run_key": str, "run_id": str})
    pd.testing.assert_frame_equal(comparable(back), comparable(df), check_dtype=False)
    computed = []
    again = run_sweep(p, out=out, on_result=computed.append)
    assert computed == []
    pd.testing.assert_frame_equal(again, df, check_dtype=False)


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, grid_file, reference):
    pytest.importorskip("pyarrow")      # the `dask` extra writes Parquet
    out = tmp_path / "r.parquet"
    journal = Path(str(out) + ".journal.jsonl")
    first = []
    with pytest.raises(Stop):
        run_sweep(grid_file, out=out, on_result=stop_after(40, first))
    assert not out.exists()
    assert len(journal.read_text().splitlines()) == 40
    with open(journal, "a") as f:  # a crash in the middle of a write leaves a torn line
        f.write('{"run_key": "abc", "peak')
    second = []
    df = run_sweep(grid_file, out=out, on_result=lambda row: second.append(row["run_key"]))
    assert len(second) == GRID_RUNS - 40
    assert not set(first) & set(second)
    pd.testing.assert_frame_equal(comparable(df), comparable(reference))
    pd.testing.assert_frame_equal(comparable(pd.read_parquet(out)), comparable(reference))


def test_grown_grid_computes_only_new_runs(tmp_path):
    out = tmp_path / "r.csv"
    run_sweep(write(tmp_path, SMALL), out=out)
    bigger = SMALL.replace("batches: [4]", "batches: [4, 8]")
    computed = []
    df = run_sweep(write(tmp_path, bigger), out=out, on_result=computed.append)
    assert len(df) == 8 and len(computed) == 4 and {r["batch"] for r in computed} == {8}
    fresh = []
    run_sweep(write(tmp_path, bigger), out=out, fresh=True, on_result=fresh.append)
    assert len(fresh) == 8


def test_rows_of_an_older_version_are_recomputed(tmp_path):
    pytest.importorskip("pyarrow")      # the `dask` extra writes Parquet
    p = write(tmp_path, SMALL)
    out = tmp_path / "r.parquet"
    with pytest.raises(Stop):
        run_sweep(p, out=out, on_result=stop_after(2))
    journal = Path(str(out) + ".journal.jsonl")
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    del rows[0]["step_time_s"]  # as if written before that metric existed
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    computed = []
    df = run_sweep(p, out=out, on_result=lambda row: computed.append(row["run_key"]))
    assert len(computed) == 3 and rows[0]["run_key"] in computed and df["step_time_s"].notna().all()


def test_bad_out_suffix(tmp_path):
    with pytest.raises(ConfigError, match=r"must end in \.parquet or \.csv"):
        run_sweep(write(tmp_path, SMALL), out=tmp_path / "r.xlsx")


def test_cli_in_process(tmp_path, capsys):
    p = write(tmp_path, SMALL)
    out = tmp_path / "r.csv"
    assert main(["sweep", str(p), "--out", str(out), "--quiet"]) == 0
    assert "4 runs (4 computed, 0 resumed)" in capsys.readouterr().out
    assert main(["sweep", str(p), "--out", str(out), "--quiet"]) == 0
    assert "4 runs (0 computed, 4 resumed)" in capsys.readouterr().out


# -- Dask ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("pyarrow")
    distributed = pytest.importorskip("distributed")     # the `dask` extra
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    with deadline(60):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
        client.wait_for_workers(2, timeout=30)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
def test_dask_two_workers_equal_in_process(grid_file, reference, dask_client):
    with deadline(60):
        df = run_sweep(grid_file, client=dask_client)
    assert len(df) == GRID_RUNS
    pd.testing.assert_frame_equal(comparable(df), comparable(reference))


@pytest.mark.slow
def test_dask_interrupted_then_resumed(tmp_path, grid_file, reference, dask_client):
    out = tmp_path / "r.parquet"
    first = []
    with deadline(60), pytest.raises(Stop):
        run_sweep(grid_file, out=out, client=dask_client, on_result=stop_after(30, first))
    journal = Path(str(out) + ".journal.jsonl")
    assert len(journal.read_text().splitlines()) == 30
    second = []
    with deadline(60):
        df = run_sweep(grid_file, out=out, client=dask_client,
                       on_result=lambda row: second.append(row["run_key"]))
    assert len(second) == GRID_RUNS - 30 and not set(first) & set(second)
    pd.testing.assert_frame_equal(comparable(df), comparable(reference))


@pytest.mark.slow
def test_dask_worker_killed_mid_sweep(tmp_path, grid_file, reference, dask_client):
    pids = dask_client.run(os.getpid)  # {worker address: pid}; the workers are local processes
    victim = sorted(pids)[0]
    killed = []

    def kill_one(row):
        if not killed and len(kill_one.rows) == 10:
            os.kill(pids[victim], signal.SIGKILL)
            killed.append(victim)
        kill_one.rows.append(row["run_key"])
    kill_one.rows = []

    out = tmp_path / "r.csv"
    with deadline(90):
        df = run_sweep(grid_file, out=out, client=dask_client, on_result=kill_one)
    assert killed, "the worker was never killed"
    assert len(kill_one.rows) == GRID_RUNS  # every run finished exactly once
    pd.testing.assert_frame_equal(comparable(df), comparable(reference))
    # the victim really died (its nanny restarts it under a new address)
    t0 = time.monotonic()
    while victim in dask_client.scheduler_info()["workers"] and time.monotonic() - t0 < 20:
        time.sleep(0.1)
    assert victim not in dask_client.scheduler_info()["workers"]
    with deadline(60):
        dask_client.wait_for_workers(2, timeout=30)


@pytest.mark.slow
def test_dask_scheduler_address(tmp_path, dask_client):
    p = write(tmp_path, SMALL)
    address = dask_client.scheduler.address
    with deadline(60):
        df = run_sweep(p, scheduler=address)
    pd.testing.assert_frame_equal(comparable(df), comparable(run_sweep(p)))


@pytest.mark.slow
def test_dask_cli_local_cluster(tmp_path, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")      # the `dask` extra writes Parquet
    p = write(tmp_path, SMALL)
    out = tmp_path / "r.parquet"
    with deadline(90):
        assert main(["sweep", str(p), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "4 runs (4 computed, 0 resumed)" in printed and "2 Dask workers" in printed
    assert len(pd.read_parquet(out)) == 4


def test_doctests(monkeypatch):
    import doctest

    import snsim.sweep as module
    monkeypatch.chdir(REPO)  # the examples name configs/sweeps/example.yaml
    assert doctest.testmod(module).failed == 0


def test_parquet_without_pyarrow_fails_before_computing(tmp_path, monkeypatch):
    import snsim.sweep as sweep_module
    monkeypatch.setattr(sweep_module, "parquet_available", lambda: False)
    computed = []
    with pytest.raises(ConfigError, match="writing Parquet needs pyarrow"):
        run_sweep(write(tmp_path, SMALL), out=tmp_path / "r.parquet",
                  on_result=computed.append)
    assert computed == [] and not (tmp_path / "r.parquet.journal.jsonl").exists()
