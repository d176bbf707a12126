"""Issue 9: every input is checked once, where it enters, and fails as one line.

Each test is a repro from the issue (D3-D7, D9, D12) turned into a regression test.
"""
import dataclasses
import math
import re

import pytest

from snsim.api import simulate
from snsim.cli import main
from snsim.errors import ConfigError
from snsim.hardware import load_hardware
from snsim.policies import get_policy
from snsim.units import parse_bytes


def cli_error(capsys, *argv):
    """Run the CLI in process; return its one-line error (and fail on a traceback)."""
    rc = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert rc == 2, (rc, err)
    assert err.startswith("snsim: error: ") and "\n" not in err, err
    return err


# -- D3: byte sizes -----------------------------------------------------------------------------
@pytest.mark.parametrize("budget, rule", [
    ("1e400", "must be a finite byte size"), ("nan", "must be a byte size"),
    ("inf", "must be a byte size"), ("-1", "must be a byte size"),
])
def test_cli_budget_that_is_not_a_finite_size(capsys, budget, rule):
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--budget", budget)
    assert f"--budget (='{budget}') {rule}" in err


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), -float("inf"), 1e400, -1, True,
                                    [1], 10**400])
def test_api_budget_that_is_not_a_finite_size(budget):
    with pytest.raises(ConfigError, match=r"budget \(=.*\) must be"):
        simulate("lenet", batch=1, budget_bytes=budget)


def test_integer_budgets_stay_integers():          # D12
    assert parse_bytes(10**30) == 10**30
    assert parse_bytes(str(10**30 + 1)) == 10**30 + 1
    assert parse_bytes("3GiB") == 3 * 2**30 and parse_bytes(2.6) == 3
    r = simulate("lenet", batch=1, budget_bytes=10**30)
    assert r.budget_bytes == 10**30 and type(r.budget_bytes) is int and r.feasible


# -- D3, D7: policy options ---------------------------------------------------------------------
@pytest.mark.parametrize("policy, option, rule", [
    ("chen_sqrt", "every=abc", "option every (='abc') must be an integer >= 1 or none"),
    ("chen_sqrt", "every=0", "option every (='0') must be an integer >= 1 or none"),
    ("offload", "prefetch_depth=abc", "option prefetch_depth (='abc') must be an integer >= 0"),
    ("offload", "prefetch_depth=-1", "option prefetch_depth (='-1') must be an integer >= 0"),
    ("offload", "offload_types=5", "option offload_types (='5') must be one or more layer types"),
    ("offload", "offload_types=CONVX", "option offload_types (='CONVX') must be one or more"),
    ("offload", "offload_types=[]", "option offload_types (='[]') must be one or more"),
    ("offload", "lru=maybe", "option lru (='maybe') must be true or false"),
    ("recompute", "mode=[unclosed", "option mode (='[unclosed') must be one of speed, memory, "
                                    "cost-aware"),
    ("vdnn", "layers=some", "option layers (='some') must be one of conv, all"),
    ("workspace", "ws_policy=best", "option ws_policy (='best') must be one of none, dynamic"),
])
def test_cli_bad_policy_option(capsys, policy, option, rule):
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--policy", policy,
                    "--option", option)
    assert f"policy '{policy}': {rule}" in err


@pytest.mark.parametrize("text", ["CONV", "conv", "CONV,FC", "[CONV, FC]", " [ CONV ] "])
def test_offload_types_accepts_one_type_a_list_or_brackets(text):       # D7
    types = get_policy("offload", offload_types=text).options["offload_types"]
    assert types[0] == "CONV" and set(types) <= {"CONV", "FC"}
    assert get_policy("offload", offload_types=["CONV", "FC"]).options["offload_types"] == \
        ("CONV", "FC")


def test_offload_types_conv_without_brackets_offloads_conv_outputs():   # D7
    plain = simulate("lenet", batch=8, policy="offload")
    one = simulate("lenet", batch=8, policy="offload", policy_options={"offload_types": "CONV"})
    both = simulate("lenet", batch=8, policy="offload",
                    policy_options={"offload_types": "CONV,FC"})
    assert plain.d2h_bytes > 0 and one.d2h_bytes == plain.d2h_bytes
    assert both.d2h_bytes > one.d2h_bytes


def test_options_parse_typed_and_text_values_alike():
    a = get_policy("superneurons", release="true", prefetch_depth="2", free_after_offload="no")
    b = get_policy("superneurons", release=True, prefetch_depth=2, free_after_offload=False)
    assert a.options == b.options
    assert get_policy("chen_sqrt", every="none").options["every"] is None
    with pytest.raises(ConfigError, match=r"option prefetch_depth \(=True\) must be an integer"):
        get_policy("offload", prefetch_depth=True)
    with pytest.raises(ConfigError, match=r"option every \(=2.5\)"):
        get_policy("chen_sqrt", every=2.5)


# -- D3: YAML files and output paths ------------------------------------------------------------
@pytest.mark.parametrize("content, rule", [
    (b"name: \xff\n", "is not UTF-8 text: byte 0xff at offset 6"),
    (b"name: a\x01b\n", "is not valid YAML: character U+0001 at offset 7 is not allowed"),
])
def test_yaml_that_is_not_text(capsys, tmp_path, content, rule):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--gpu", str(path))
    assert f"hardware file {path} {rule}" in err
    err = cli_error(capsys, "sweep", str(path))
    assert f"sweep file {path} {rule}" in err


def test_output_path_under_a_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--trace-out",
                    "f/t.json")
    assert err == "snsim: error: --trace-out f/t.json: f is a file, not a folder"
    err = cli_error(capsys, "export", "lenet", "--batch", "2", "--out", "f/x")
    assert err == "snsim: error: --out f/x: f is a file, not a folder"
    (tmp_path / "d").mkdir()
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--trace-out", "d")
    assert err == "snsim: error: --trace-out d is a folder; give a file name"


# -- D9: degenerate but finite hardware numbers ----------------------------------------------
@pytest.mark.parametrize("field, value, rule", [
    ("peak_flops_fp32", 5e-324, "must be in [1e+06, 1e+18]"),
    ("mem_bytes_per_s", 1e300, "must be in [1e+06, 1e+18]"),
    ("h2d_pinned_bytes_per_s", 1e-300, "must be in [1e+06, 1e+18]"),
    ("launch_overhead_s", 1e308, "must be in [0, 1] s"),
    ("copy_latency_s", 2.0, "must be in [0, 1] s"),
    ("dram_bytes", 2**70, "must be <= 2**62"),
])
def test_degenerate_hardware_numbers(field, value, rule):
    hw = load_hardware("k40c")
    message = f"hardware.{field} (={value!r}) {rule}"
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        dataclasses.replace(hw, **{field: value})


def test_tiny_efficiencies_are_refused():
    hw = load_hardware("k40c")
    tiny = tuple((k, 1e-300 if k == "conv" else v) for k, v in hw.efficiency)
    with pytest.raises(ConfigError, match=r"efficiency\.conv \(=1e-300\) must be in \[0\.01, 1\]"):
        dataclasses.replace(hw, efficiency=tiny)
    with pytest.raises(ConfigError, match=r"copy_efficiency_by_bytes\[0\]"):
        dataclasses.replace(hw, copy_efficiency_by_bytes=((1024, 1e-9),))


def test_extreme_valid_hardware_gives_finite_times():
    hw = load_hardware("k40c")
    lo_rate = {f: 1e6 for f in ("peak_flops_fp32", "mem_bytes_per_s", "h2d_pinned_bytes_per_s",
                                "d2h_pinned_bytes_per_s")}
    slow = dataclasses.replace(hw, **lo_rate, copy_latency_s=1.0, launch_overhead_s=1.0,
                               efficiency=tuple((k, 0.01) for k, _ in hw.efficiency))
    r = simulate("resnet18", batch=8, hardware=slow, policy="offload")
    assert r.feasible and math.isfinite(r.step_time_s) and r.step_time_s > 1e3
