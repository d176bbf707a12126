"""VALIDATION section 6's repeatability table (snsim.torchsim.report)."""
import gzip
import json

from snsim.torchsim.report import _repeatability_text, repeated_runs


def _bundle(path, runs):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump({"suite": "plans", "runs": runs}, f)


def _run(name, step, torch="2.11"):
    return {"name": name, "status": "ok", "measured": {"step_time_s": step},
            "provenance": {"torch": torch}}


def test_repeated_runs_keeps_names_run_twice_with_one_torch(tmp_path):
    _bundle(tmp_path / "plans_a" / "plain.json.gz", [_run("x", 0.010), _run("y", 0.020),
                                                      _run("z", 0.030)])
    _bundle(tmp_path / "plans_b" / "plain.json.gz", [_run("x", 0.012), _run("z", 0.031, "2.9")])
    # a document of a plans_ folder that is no bundle (a capture, as plans_history keeps
    # them) is skipped
    with gzip.open(tmp_path / "plans_b" / "capture.json.gz", "wt") as f:
        json.dump({"config": {}, "measured": {"step_time_s": 0.5}, "events": []}, f)
    assert repeated_runs(str(tmp_path)) == {"x": [("plans_a", 0.010), ("plans_b", 0.012)]}


def test_repeatability_distances_by_hand():
    runs = {"x": [("a", 0.010), ("b", 0.012), ("c", 0.020)]}
    priced = [{"folder": "a", "run": "x", "repriced_step_s": "0.012"}]
    text = "".join(_repeatability_text(runs, priced))
    # median 12 ms: runs 10, 12, 20 lie 16.7, 0 and 66.7 % from it (mean 27.8, median 16.7,
    # max 66.7)
    assert "| one run against the median of its repeats | 3 | 27.8 | 16.7 | 16.7 | 66.7 |" \
        in text
    # the prediction (12 ms) against each run: 20.0, 0.0, 40.0 % (mean 20.0, median 20.0)
    assert "| re-priced prediction against each run | 3 | 20.0 | 20.0 |" in text
    assert "| re-priced prediction against the median of the repeats | 1 | 0.0 | 0.0 |" in text
    assert "| x | 3 | 10.0 / 12.0 / 20.0 | 100.0 |" in text


def test_lease_section_spread_and_prediction_by_hand(tmp_path):
    from snsim.torchsim.report import _lease_section
    _bundle(tmp_path / "plans_a" / "plain.json.gz", [_run("x", 0.010), _run("y", 0.020),
                                                      _run("solo", 0.5)])
    _bundle(tmp_path / "plans_b" / "plain.json.gz", [_run("x", 0.015)])
    _bundle(tmp_path / "plans_c" / "plain.json.gz", [_run("x", 0.012), _run("y", 0.020)])
    pred = tmp_path / "pred.csv"
    pred.write_text("run,step_time_s\nx,0.012\ny,0.030\n")
    text = "".join(_lease_section(str(tmp_path), "plans_a", "plans_b", "plans_c",
                                  predicted_csv=str(pred)))
    # x: 10, 15, 12 ms, slowest over fastest 1.5; 12 ms predicted is +20 % on the fastest and
    # -20 % on the slowest; y measured twice (20 ms), 30 ms predicted is +50 % on both; "solo"
    # was measured once and is left out
    assert "| x | 10.0 | 15.0 | 12.0 | 1.50 | 12.0 | +20.00 | -20.00 |" in text
    assert "| y | 20.0 |  | 20.0 | 1.00 | 30.0 | +50.00 | +50.00 |" in text
    assert "solo" not in text
    assert "median 1.25, range 1.00-1.50, over 2 runs" in text


def test_repredicted_text_per_policy_by_hand():
    from snsim.torchsim.report import _repredicted_s66_text
    rows = [{"policy": "plain", "repred_err_pct": "-10", "repred_err_allocated_pct": "0.1",
             "repred_err_reserved_pct": "-2"},
            {"policy": "plain", "repred_err_pct": "4", "repred_err_allocated_pct": "-0.3",
             "repred_err_reserved_pct": "0"},
            {"policy": "checkpoint", "repred_err_pct": "6", "repred_err_allocated_pct": "0",
             "repred_err_reserved_pct": "1"}]
    text = "".join(_repredicted_s66_text(rows))
    # plain: -10 and +4: signed mean -3.00, |err| mean 7.0, median 7.0, max 10.0; all three:
    # signed mean 0.00, |err| 10, 4, 6: mean 6.7, median 6.0
    assert "| plain | 2 | -3.00 | 7.0 | 7.0 | 10.0 |" in text
    assert "| checkpoint | 1 | +6.00 | 6.0 | 6.0 | 6.0 |" in text
    assert "| all | 3 | +0.00 | 6.7 | 6.0 | 10.0 |" in text
    assert "allocated max |err| 0.30 %, reserved mean 1.00 %, max 2.00 %" in text
    assert _repredicted_s66_text([]) == []


def test_repredicted_again_text_joins_the_runs_by_hand():
    from snsim.torchsim.report import _repredicted_s67_text
    before = [{"folder": "f", "run": "a", "policy": "plain", "repred_err_pct": "-10"},
              {"folder": "f", "run": "b", "policy": "plain", "repred_err_pct": "4"},
              {"folder": "g", "run": "a", "policy": "plain", "repred_err_pct": "30"}]
    after = [{"folder": "f", "run": "a", "policy": "plain", "repred_err_pct": "-6"},
             {"folder": "f", "run": "b", "policy": "plain", "repred_err_pct": "2"},
             {"folder": "h", "run": "c", "policy": "plain", "repred_err_pct": "50"}]
    text = "".join(_repredicted_s67_text(before, after))
    # joined on (folder, run): f/a and f/b only; before |err| 10, 4: median 7.0, signed -3.00;
    # after -6, +2: median 4.0, signed -2.00, mean |err| 4.0, max 6.0
    assert text.startswith("### The same runs after the refit")
    assert "2 of the runs above" in text
    assert "median |err| 7.0 -> 4.0 %, signed mean -3.00 -> -2.00 %" in text
    assert "| plain | 2 | -2.00 | 4.0 | 4.0 | 6.0 |" in text
    assert _repredicted_s67_text(before, []) == []
    assert _repredicted_s67_text(before, after[2:]) == []


def test_prediction_per_measurement_leaves_out_folders_without_the_runs():
    """The lease table's error line: per folder against its own measurements, a folder that
    measured none of the predicted runs left out, and against each run's median."""
    from snsim.torchsim.report import _prediction_per_measurement
    line = _prediction_per_measurement(("a", "b", "c"), [{"x": 1.0}, {"x": 1.2}, {"y": 2.0}],
                                       ["x"], {"x": 1.1})
    assert "`a`: median 10.00 %" in line and "`b`: median 8.33 %" in line
    assert "`c`" not in line and "median measurement: median 0.00 %" in line
    assert _prediction_per_measurement(("a",), [{"x": 1.0}], ["x"], {}) == ""


def test_process_pace_lines_by_hand(tmp_path):
    """VALIDATION 1as's per-process table: modelled F+B host over the wall, its median per
    process, each configuration over it; a GPU-bound configuration left out."""
    from snsim.torchsim.report import _process_pace_lines
    path = tmp_path / "phase.csv"
    head = "folder,config,gpu_busy_s,step_s,F_modelled_ms,B_modelled_ms,F_wall_ms,B_wall_ms"
    rows = ["p1,a,0.5,1.0,10,10,10,10",      # 1.0
            "p1,b,0.5,1.0,12,12,10,10",      # 1.2
            "p1,c,0.5,1.0,8,8,10,10",        # 0.8
            "p1,busy,0.95,1.0,40,40,10,10",  # GPU-bound: out
            "p2,d,0.1,1.0,5,5,10,10"]        # 0.5
    path.write_text("# a comment line\n" + head + "\n" + "\n".join(rows) + "\n")
    text = "".join(_process_pace_lines((("H100", "f", str(path)),)))
    assert "| H100 | `p1` | 3 | 1.00 | 0.80 | 1.20 |" in text
    assert "| H100 | `p2` | 1 | 0.50 | 1.00 | 1.00 |" in text
    assert "2 of 4 within 10 %" in text and "4 within 20 %" in text
    assert _process_pace_lines((("H100", "f", str(tmp_path / "none.csv")),)) == []
