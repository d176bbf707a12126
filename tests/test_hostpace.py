"""The launching thread's pace (snsim.torchsim.hostpace, ``snsim predict --host-gauge-us``,
``snsim gauge``): CPU only."""
import doctest

import pytest

from snsim.cli import main
from snsim.errors import ConfigError


def test_doctests():
    from snsim.torchsim import hostpace
    assert doctest.testmod(hostpace).failed == 0


def test_pace_factor_rejects_what_is_not_a_time():
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.hostpace import pace_factor
    table = load_kernel_table("h200")
    for bad in (0, -1e-6, float("nan"), float("inf"), "fast"):
        with pytest.raises(ConfigError, match="--host-gauge-us"):
            pace_factor(bad, table)
    with pytest.raises(ConfigError, match="no host costs"):
        pace_factor(1e-5, None)


def test_gauge_on_the_cpu_is_a_positive_time():
    pytest.importorskip("torch")
    from snsim.torchsim.hostpace import gauge_add_s
    g = gauge_add_s("cpu", n=50, rounds=2)
    assert 0 < g < 1e-2


def test_host_gauge_scales_the_host_and_nothing_else():
    """A small CNN at batch 2 is host-bound: its host seconds at twice the table's pace double
    its step (within what the GPU overlaps); the table's own gauge changes nothing; the peaks
    are untouched."""
    pytest.importorskip("torchvision")
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.execute import predict_plan
    ref = load_kernel_table("h200").aten_host["add"]
    runs = {}
    for name, gauge in (("none", None), ("same", ref), ("double", 2 * ref)):
        runs[name], _ = predict_plan("torchvision:resnet18", 2, "plain", input_shape=(3, 64, 64),
                                     host_gauge_s=gauge)
    assert runs["same"]["step_time_s"] == runs["none"]["step_time_s"]
    assert runs["none"]["host_pace_factor"] == 1.0 and runs["double"]["host_pace_factor"] == 2.0
    ratio = runs["double"]["step_time_s"] / runs["none"]["step_time_s"]
    assert 1.8 < ratio <= 2.0
    for key in ("peak_allocated_bytes", "peak_reserved_bytes"):
        assert runs["double"][key] == runs["none"][key]


def test_host_gauge_bad_input_is_one_line(capsys):
    rc = main(["predict", "--model", "torchvision:resnet18", "--batch", "2",
               "--host-gauge-us", "0"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0
    assert err == ("snsim: error: --host-gauge-us (=0.0) must be a positive number of "
                   "microseconds (snsim gauge prints it)")


def test_gauge_command_without_cuda_is_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main(["gauge"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no CUDA device" in err
    assert main(["gauge", "--device", "cpu", "--format", "json"]) == 0
    assert '"host_gauge_add_us"' in capsys.readouterr().out


def test_measure_gauges_the_host_after_the_steps_only(monkeypatch):
    # the gauge's CUDA work before the model would move the driver's later segments and so
    # the measured reserved peak (execute.measure's docstring): it runs once, after the steps
    pytest.importorskip("torchvision")
    import snsim.torchsim.hostpace as hostpace
    import snsim.torchsim.record as record
    from snsim.torchsim.execute import measure
    calls = []
    gauge, step = hostpace.gauge_add_s, record.train_step
    monkeypatch.setattr(hostpace, "gauge_add_s",
                        lambda *a, **k: calls.append("gauge") or gauge(*a, **k))
    monkeypatch.setattr(record, "train_step",
                        lambda *a, **k: calls.append("step") or step(*a, **k))
    m = measure("torchvision:resnet18", 2, "plain", input_shape=(3, 32, 32), warmup_iters=1,
                iters=1, device="cpu")
    assert calls == ["step", "step", "gauge"]
    assert m["host_gauge_add_s_after"] > 0 and "host_gauge_add_s_before" not in m


def test_measure_times_the_launching_thread_of_each_step():
    # the host's pace during the timed steps (host_issue_s), not only the gauge after them;
    # on a CPU a step is synchronous, so the thread's time is the step's
    pytest.importorskip("torchvision")
    import statistics
    from snsim.torchsim.execute import measure
    from snsim.torchsim.suite import _summary_row
    m = measure("torchvision:resnet18", 2, "plain", input_shape=(3, 32, 32), warmup_iters=1,
                iters=3, device="cpu")
    assert len(m["host_issue_times_s"]) == 3 and m["host_issue_times_s"] == m["step_times_s"]
    assert m["host_issue_s"] == pytest.approx(statistics.median(m["host_issue_times_s"]),
                                              abs=1e-6)
    row = _summary_row({"name": "r", "status": "ok", "measured": m,
                        "prediction": {"host_issue_s": 0.5}})
    assert row["meas_host_issue_s"] == m["host_issue_s"] > 0
    assert row["pred_host_issue_s"] == 0.5


def test_gauge_command_compares_with_the_table(monkeypatch, capsys):
    """The CUDA path of ``snsim gauge`` with the GPU's parts stubbed: the gauge in us and its
    ratio to the h200 table's own add (8.201 us)."""
    torch = pytest.importorskip("torch")
    from snsim.torchsim import capture, hostpace
    monkeypatch.setattr(capture, "require_cuda", lambda: torch)
    monkeypatch.setattr(hostpace, "gauge_add_s", lambda device: 8.201e-6 * 1.5)
    assert main(["gauge", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert '"host_gauge_add_us": 12.302' in out and '"pace_vs_h200_table": 1.5' in out


def test_a_host_bound_prediction_says_its_step_moves_with_the_cpu(capsys):
    """The table of `snsim predict` adds one line when most of the step is the GPU waiting for
    the launching thread at the table's pace, and none once the machine is gauged."""
    pytest.importorskip("torchvision")
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.cli import host_bound_note
    argv = ["predict", "--model", "torchvision:resnet18", "--batch", "2",
            "--input-shape", "3,64,64"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "host-bound: " in out and "--host-gauge-us" in out
    for factor in (1, 2):      # gauged, at the table's own pace or another: no line
        gauge_us = load_kernel_table("h200").aten_host["add"] * factor * 1e6
        assert main(argv + ["--host-gauge-us", f"{gauge_us:.6f}"]) == 0
        assert "host-bound: " not in capsys.readouterr().out
    assert host_bound_note(0.001, 0.010, gauged=False) is None    # a GPU-bound step: no line


def test_host_range_is_the_step_at_the_groups_gauges():
    """``step_time_host_range_s`` is the same prediction at the preset's fast and slow groups'
    gauges: equal to ``--host-gauge-us`` at those gauges, bracketing the table's pace; none
    once the machine is gauged, nor on a preset whose machines were never gauged."""
    pytest.importorskip("torchvision")
    from snsim.hardware import load_hardware
    from snsim.torchsim.execute import predict_plan
    hw = load_hardware("h200")
    kw = dict(input_shape=(3, 64, 64))
    r, _ = predict_plan("torchvision:resnet18", 2, "plain", **kw)
    fast, slow = r["step_time_host_range_s"]
    assert fast < r["step_time_s"] < slow
    for gauge_s, expect in ((hw.host_gauge_fast_s, fast), (hw.host_gauge_slow_s, slow)):
        g, _ = predict_plan("torchvision:resnet18", 2, "plain", host_gauge_s=gauge_s, **kw)
        assert g["step_time_s"] == pytest.approx(expect, rel=1e-12)
        assert g["step_time_host_range_s"] is None
    k, _ = predict_plan("torchvision:resnet18", 2, "plain", gpu="k40c", **kw)
    assert k["step_time_host_range_s"] is None


def test_predicted_host_issue_time_scales_with_the_gauge():
    """``host_issue_s``, the launching thread's modelled issue time for a step (what the plan
    suite's ``meas_host_issue_s`` measures), moves with the host's pace: twice the table's
    own gauge, twice the time."""
    pytest.importorskip("torchvision")
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.execute import predict_plan
    kw = dict(input_shape=(3, 64, 64))
    r, _ = predict_plan("torchvision:resnet18", 2, "plain", **kw)
    slow, _ = predict_plan("torchvision:resnet18", 2, "plain",
                           host_gauge_s=2 * load_kernel_table("h200").aten_host["add"], **kw)
    assert 0 < r["host_issue_s"] <= r["step_time_s"]
    assert slow["host_issue_s"] == pytest.approx(2 * r["host_issue_s"], rel=1e-9)


def test_preset_pace_groups_are_the_committed_gauges():
    """The h200 and h100 presets' group paces are the medians of the plan suite's gauged
    processes (snsim.torchsim.hostpace.pace_groups_us over traces/<gpu>/plans_*/summary.csv),
    to 0.1 us: a set added since moves them a little, a wrong figure more."""
    import glob
    from pathlib import Path
    from snsim.hardware import load_hardware
    from snsim.torchsim.hostpace import pace_groups_us
    root = Path(__file__).resolve().parents[1] / "traces"
    for gpu in ("h200", "h100"):
        fast, slow, n_fast, n_slow = pace_groups_us(sorted(glob.glob(
            str(root / gpu / "plans_*" / "summary.csv"))))
        hw = load_hardware(gpu)
        assert n_fast > 20 and n_slow > 20
        assert abs(hw.host_gauge_fast_s * 1e6 - fast) < 0.1
        assert abs(hw.host_gauge_slow_s * 1e6 - slow) < 0.1


def test_pace_groups_need_both_groups(tmp_path):
    from snsim.torchsim.hostpace import pace_groups_us
    p = tmp_path / "summary.csv"
    p.write_text("run,host_gauge_add_us_after\na,6.5\nb,7.0\nc,\n")
    with pytest.raises(ConfigError, match="2 processes gauged below 8.0 us and 0 at or above"):
        pace_groups_us([str(p)])
    p.write_text("run,host_gauge_add_us_after\na,6.5\nb,7.5\nc,10.0\n")
    assert pace_groups_us([str(p)]) == (7.0, 10.0, 2, 1)


def test_host_range_section_counts_runs_inside(tmp_path, monkeypatch):
    """VALIDATION 1ar's table from repredict_plans.py's range columns: runs inside the range
    (distance 0), the point prediction's and the range's |err|, the range's width."""
    from snsim.torchsim import report
    p = tmp_path / "r.csv"
    p.write_text("run,repred_err_pct,range_err_pct,repred_fast_step_s,repred_slow_step_s\n"
                 "a,-10.0,0.00,0.9,1.2\nb,12.0,4.00,1.0,1.1\nc,1.0,,1.0,1.0\n")
    monkeypatch.setattr(report, "HOST_RANGE_CSVS", (("test", str(p)),))
    text = "".join(report.host_range_section())
    assert "| test | 2 | 1 | 11.00 | 12.00 | 2.00 | 4.00 | 21.7 | 33.3 |" in text
    monkeypatch.setattr(report, "HOST_RANGE_CSVS", (("none", str(tmp_path / "no.csv")),))
    assert report.host_range_section() == []
