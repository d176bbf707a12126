"""The command line: the README's commands, output formats and one-line errors."""
import json
import subprocess
import sys

import pytest

from snsim.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_describe_resnet50_prints_parameters(capsys):
    code, out, _ = run_cli(capsys, "describe", "--network", "resnet50", "--batch", "32")
    assert code == 0
    assert "25,557,032" in out
    assert "lower_bound_bytes" in out and "keep_all_bytes" in out


def test_describe_json_and_layers(capsys):
    code, out, _ = run_cli(capsys, "describe", "--network", "alexnet", "--batch", "8",
                           "--format", "json")
    d = json.loads(out)
    assert d["parameters"] == 61_100_840 and d["fwd_time_s"] > 0
    code, out, _ = run_cli(capsys, "describe", "--network", "lenet", "--batch", "1", "--layers",
                           "--format", "csv")
    assert out.splitlines()[0].startswith("layer_id,name,type")
    assert len(out.splitlines()) == 1 + 9


def test_run_json_keys(capsys):
    code, out, _ = run_cli(capsys, "run", "--network", "resnet18", "--batch", "4", "--policy",
                           "liveness", "--format", "json")
    d = json.loads(out)
    for key in ("feasible", "peak_ideal_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
                "step_time_s"):
        assert key in d
    assert d["feasible"] is True


def test_compare_lists_every_policy(capsys):
    code, out, err = run_cli(capsys, "compare", "--network", "lenet", "--batch", "4",
                             "--format", "csv")
    lines = out.strip().splitlines()
    assert lines[0].startswith("policy,feasible")
    assert {l.split(",")[0] for l in lines[1:]} == {
        "keep_all", "liveness", "offload", "recompute", "superneurons", "workspace", "vdnn",
        "chen_sqrt", "cpu_offload"}
    # checkpoint wraps block classes; LeNet has none: said, not run
    assert "not run: checkpoint ('lenet' has no repeated block class" in err


def test_infeasible_run_exits_zero_and_says_so(capsys):
    code, out, _ = run_cli(capsys, "run", "--network", "vgg16", "--batch", "128", "--policy",
                           "keep_all", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["feasible"] is False and "out of memory" in d["failure"]


@pytest.mark.parametrize("argv,message", [
    (["describe", "--network", "resnet7"], "network 'resnet7' is unknown"),
    (["run", "--policy", "magic", "--network", "lenet"], "policy 'magic' is unknown"),
    (["run", "--network", "lenet", "--gpu", "k80"], "k80"),
    (["run", "--network", "resnet50", "--budget", "10MiB"], "below the static bytes"),
    (["run", "--network", "lenet", "--budget", "12 parsecs"], "--budget"),
    (["describe", "--network", "lenet", "--batch", "0"], "--batch (=0)"),
    (["describe", "--trace", "/nonexistent/t.json"], "no such file"),
])
def test_errors_are_one_line_and_nonzero(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.startswith("snsim: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_bad_hardware_yaml_via_cli(capsys, tmp_path):
    bad = tmp_path / "gpu.yaml"
    bad.write_text("name: x\ndram_bytes: [1, 2\n")
    code, _, err = run_cli(capsys, "describe", "--network", "lenet", "--gpu", str(bad))
    assert code == 2 and "gpu.yaml" in err and len(err.strip().splitlines()) == 1


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "snsim.cli", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert "superneurons" in out and "k40c" in out
