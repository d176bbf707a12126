"""Hardware presets and their loader (SPEC §9)."""
import dataclasses
import doctest
import math
import re
from pathlib import Path

import pytest
import yaml

import snsim.hardware.spec as spec_module
from snsim.errors import ConfigError, UnknownNameError
from snsim.hardware import (DEFAULT_HARDWARE, EFFICIENCY_KEYS, HardwareSpec, list_hardware,
                            load_hardware)

REPO = Path(__file__).resolve().parents[1]
CONFIG_DIR = REPO / "configs" / "hardware"
PACKAGE_DIR = REPO / "snsim" / "presets" / "hardware"
PRESETS = ["a100-40gb", "h100", "h200", "k40c", "p100", "v100"]
NUMERIC_KEYS = [f.name for f in dataclasses.fields(HardwareSpec)
                if f.name.endswith(("_bytes", "_s", "_fp32", "_per_s")) or f.name == "copy_engines"
                if f.name != "copy_efficiency_by_bytes"]


# -- presets ---------------------------------------------------------------------------------
def test_list_hardware_is_sorted_and_complete():
    assert list_hardware() == PRESETS
    assert DEFAULT_HARDWARE == "k40c"


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_and_is_sourced(name):
    hw = load_hardware(name)
    assert hw.name == name
    assert hw.source_path == f"configs/hardware/{name}.yaml"
    assert 0 < hw.budget_bytes < hw.dram_bytes
    assert set(hw.efficiency_map) == set(EFFICIENCY_KEYS)
    assert all(0 < v <= 1 for v in hw.efficiency_map.values())
    # every figure says where it came from
    missing = [k for k in NUMERIC_KEYS + ["efficiency"] if not hw.source_of(k)]
    assert missing == []
    assert all(any(w in hw.source_of(k) for w in ("datasheet", "measured", "estimate",
                                                   "deviceQuery", "default"))
               for k in NUMERIC_KEYS)
    hash(hw)  # frozen and hashable: usable as a cache key


def test_preset_copies_are_identical():
    canonical = sorted(p.name for p in CONFIG_DIR.glob("*.yaml"))
    packaged = sorted(p.name for p in PACKAGE_DIR.glob("*.yaml"))
    assert canonical == packaged == [f"{n}.yaml" for n in PRESETS]
    for n in canonical:
        assert (CONFIG_DIR / n).read_bytes() == (PACKAGE_DIR / n).read_bytes(), n


def test_preset_values_are_plain_numbers_with_units_in_keys():
    for path in CONFIG_DIR.glob("*.yaml"):
        data = yaml.load(path.read_text(), Loader=spec_module._Loader)
        for key in NUMERIC_KEYS:
            assert isinstance(data[key], (int, float)) and not isinstance(data[key], bool), \
                (path.name, key, data[key])


def test_k40c_figures():
    hw = load_hardware("k40c")
    assert hw.dram_bytes == 12_079_136_768              # deviceQuery, ECC on
    assert hw.context_bytes == 300 * 2**20
    assert hw.reserve_bytes == 0
    assert hw.budget_bytes == 12_079_136_768 - 314_572_800 == 11_764_563_968
    assert hw.peak_flops_fp32 == 4.29e12
    # the figure is the arithmetic its source states: cores x FLOP per cycle x clock
    cores, flop, mhz = map(float, re.search(r"\((\d+) cores x (\d+) FLOP x (\d+) MHz",
                                            hw.source_of("peak_flops_fp32")).groups())
    assert math.isclose(cores * flop * mhz * 1e6, hw.peak_flops_fp32, rel_tol=1e-3)
    assert hw.mem_bytes_per_s == 288e9
    assert hw.h2d_pinned_bytes_per_s == hw.d2h_pinned_bytes_per_s == 11e9
    assert hw.h2d_pageable_bytes_per_s == hw.d2h_pageable_bytes_per_s == 5e9
    assert (hw.copy_latency_s, hw.launch_overhead_s, hw.copy_engines) == (10e-6, 5e-6, 2)
    assert hw.link_shared is False
    assert hw.host_pinned_bytes == 64 * 2**30


def test_h200_figures():
    hw = load_hardware("h200")
    assert hw.dram_bytes == 150_109_880_320
    assert hw.context_bytes == 554_500_096
    assert hw.budget_bytes == 149_555_380_224
    assert (hw.peak_flops_fp32, hw.mem_bytes_per_s) == (67e12, 4.8e12)
    assert hw.h2d_pinned_bytes_per_s == hw.d2h_pinned_bytes_per_s == 55e9
    assert hw.h2d_pageable_bytes_per_s == 20e9
    assert "measured" in hw.source_of("dram_bytes")
    assert "estimate" in hw.source_of("d2h_pageable_bytes_per_s")


def test_other_presets_figures():
    assert load_hardware("p100").peak_flops_fp32 == 9.3e12
    assert load_hardware("p100").mem_bytes_per_s == 732e9
    assert load_hardware("v100").peak_flops_fp32 == 15.7e12
    assert load_hardware("v100").mem_bytes_per_s == 900e9
    assert load_hardware("a100-40gb").peak_flops_fp32 == 19.5e12
    assert load_hardware("a100-40gb").mem_bytes_per_s == 1555e9
    assert load_hardware("h100").peak_flops_fp32 == 67e12
    assert load_hardware("h100").mem_bytes_per_s == 3.35e12


def test_names_are_case_insensitive_and_aliased():
    assert load_hardware("K40C") == load_hardware("k40c")
    assert load_hardware("a100").name == "a100-40gb"
    assert load_hardware("A100_40GB").name == "a100-40gb"
    assert load_hardware().name == "k40c"
    hw = load_hardware("h200")
    assert load_hardware(hw) is hw


def test_load_by_path(tmp_path):
    p = tmp_path / "mine.yaml"
    p.write_text((CONFIG_DIR / "k40c.yaml").read_text().replace("name: k40c", "name: mine"))
    hw = load_hardware(p)
    assert hw.name == "mine" and hw.source_path == str(p)
    assert load_hardware(str(p)) == hw


def test_unknown_preset_lists_known_ones():
    with pytest.raises(UnknownNameError, match=r"hardware preset 'gtx1080' is unknown; known: "
                                               r"a100-40gb, h100, h200, k40c, p100, v100"):
        load_hardware("gtx1080")


# -- derived quantities ---------------------------------------------------------------------------
def test_transfer_time_by_hand():
    hw = load_hardware("k40c")
    # 10 us + 1e8 B / 11e9 B/s = 10e-6 + 9.0909e-3
    assert math.isclose(hw.transfer_time_s(100_000_000), 10e-6 + 1e8 / 11e9)
    assert math.isclose(hw.transfer_time_s(100_000_000, "d2h", pinned=False), 10e-6 + 0.02)
    assert hw.transfer_time_s(0) == hw.copy_latency_s
    h200 = load_hardware("h200")
    assert math.isclose(h200.transfer_time_s(256 * 2**20, "h2d"), 1e-5 + 268_435_456 / 55e9)
    with pytest.raises(ConfigError, match=r"direction \(='up'\) must be 'h2d' or 'd2h'"):
        hw.transfer_time_s(1, "up")
    with pytest.raises(ConfigError, match=r"nbytes \(=-1\) must be a number >= 0"):
        hw.transfer_time_s(-1)


def test_copy_efficiency_is_piecewise_linear_in_log2_bytes():
    hw = dataclasses.replace(load_hardware("k40c"),
                             copy_efficiency_by_bytes=[[2**10, 0.1], [2**20, 0.9]])
    assert hw.copy_efficiency(2**5) == 0.1          # clamped below
    assert math.isclose(hw.copy_efficiency(2**15), 0.5)  # halfway in log2
    assert hw.copy_efficiency(2**30) == 0.9         # clamped above
    assert math.isclose(hw.transfer_time_s(2**15), 10e-6 + 2**15 / (11e9 * 0.5))
    assert load_hardware("k40c").copy_efficiency(123) == 1.0


def test_spec_is_frozen_and_revalidated_on_replace():
    hw = load_hardware("k40c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.dram_bytes = 1
    with pytest.raises(ConfigError, match=r"^hardware\.dram_bytes \(=-1\) must be > 0 "
                                          r"\(configs/hardware/k40c\.yaml\)$"):
        dataclasses.replace(hw, dram_bytes=-1)
    smaller = dataclasses.replace(hw, reserve_bytes=2**30)
    assert smaller.budget_bytes == hw.budget_bytes - 2**30
    with pytest.raises(UnknownNameError, match="efficiency kind 'tpu' is unknown"):
        hw.eff("tpu")
    assert hw.eff("CONV") == hw.efficiency_map["conv"]


# -- bad files: one clear line naming file, key and rule ------------------------------------------
def _write(tmp_path, text, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _k40c_text():
    return (CONFIG_DIR / "k40c.yaml").read_text()


def _line_of(text, key):
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(key))


def _error(path):
    with pytest.raises(ConfigError) as info:
        load_hardware(path)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert str(path) in msg
    return msg


def test_malformed_yaml_names_file_and_line(tmp_path):
    text = _k40c_text().replace("copy_engines: 2", "copy_engines: [2, 3")
    p = _write(tmp_path, text)
    msg = _error(p)
    assert msg.startswith(f"hardware file {p}:")
    assert "is not valid YAML" in msg


def test_not_a_mapping(tmp_path):
    msg = _error(_write(tmp_path, "- 1\n- 2\n"))
    assert "must hold a mapping of keys to values, not list" in msg


def test_missing_key(tmp_path):
    text = "\n".join(line for line in _k40c_text().splitlines()
                     if not line.startswith("copy_engines:"))
    p = _write(tmp_path, text)
    assert _error(p) == (f"hardware.copy_engines is missing ({p}); a hardware file must set "
                         f"every key (missing: copy_engines)")


def test_unknown_key(tmp_path):
    text = _k40c_text() + "dram_gb: 12\n"
    p = _write(tmp_path, text)
    line = _line_of(text, "dram_gb")
    msg = _error(p)
    assert msg.startswith(f"hardware.dram_gb is not a known key ({p}:{line})")
    assert "did you mean dram_bytes?" in msg


def test_negative_number(tmp_path):
    text = _k40c_text().replace("context_bytes: 314_572_800", "context_bytes: -5")
    p = _write(tmp_path, text)
    line = _line_of(text, "context_bytes")
    assert _error(p) == f"hardware.context_bytes (=-5) must be >= 0 ({p}:{line})"


def test_zero_bandwidth(tmp_path):
    text = _k40c_text().replace("mem_bytes_per_s: 288e9", "mem_bytes_per_s: 0")
    p = _write(tmp_path, text)
    assert "hardware.mem_bytes_per_s (=0) must be in [1000, 1e+18]" in _error(p)


def test_string_with_units(tmp_path):
    # a user's file may write sizes, rates and times with units (issue 11: your own GPU)
    text = (_k40c_text().replace("dram_bytes: 12_079_136_768", "dram_bytes: 12GB")
            .replace("mem_bytes_per_s: 288e9", "mem_bytes_per_s: 288 GB/s")
            .replace("copy_latency_s: 10e-6", "copy_latency_s: 10us")
            .replace("peak_flops_fp32: 4.29e12", "peak_flops_fp32: 4.29 TFLOPS"))
    hw = load_hardware(_write(tmp_path, text, "units.yaml"))
    assert hw.dram_bytes == 12 * 10**9 and hw.mem_bytes_per_s == 288e9
    assert math.isclose(hw.copy_latency_s, 10e-6) and hw.peak_flops_fp32 == 4.29e12
    text = _k40c_text().replace("dram_bytes: 12_079_136_768", "dram_bytes: 12 parsecs")
    p = _write(tmp_path, text)
    line = _line_of(text, "dram_bytes")
    assert _error(p) == (f"hardware.dram_bytes (='12 parsecs') must be a byte size such as "
                         f"12GiB, 11.5GB or 4096 ({p}:{line})")
    text = _k40c_text().replace("mem_bytes_per_s: 288e9", "mem_bytes_per_s: 288 GB")
    assert "must be a rate such as 11 GB/s" in _error(_write(tmp_path, text, "b2.yaml"))


def test_base_preset_plus_overrides(tmp_path):
    p = _write(tmp_path, "base: k40c\nname: my-k40\ndram_bytes: 12GiB\n"
               "h2d_pinned_bytes_per_s: 12 GB/s\nefficiency: {conv: 0.8}\n", "mine.yaml")
    hw, k40c = load_hardware(p), load_hardware("k40c")
    assert hw.name == "my-k40" and hw.dram_bytes == 12 * 2**30
    assert hw.h2d_pinned_bytes_per_s == 12e9 and hw.eff("conv") == 0.8
    assert hw.eff("fc") == k40c.eff("fc") and hw.mem_bytes_per_s == k40c.mem_bytes_per_s
    assert str(p) in hw.source_of("dram_bytes")      # the override's source is the user file
    assert hw.source_of("mem_bytes_per_s") == k40c.source_of("mem_bytes_per_s")
    assert "is not a preset" in _error(_write(tmp_path, "base: k80\n", "b3.yaml"))


def test_sources_optional_in_user_files(tmp_path):
    text = _k40c_text()
    text = text[:text.index("sources:")]
    hw = load_hardware(_write(tmp_path, text, "nosources.yaml"))
    assert hw.sources == () and hw.dram_bytes == load_hardware("k40c").dram_bytes


def test_bool_where_number_needed(tmp_path):
    text = _k40c_text().replace("copy_latency_s: 10e-6", "copy_latency_s: yes")
    p = _write(tmp_path, text)
    line = _line_of(text, "copy_latency_s")
    assert _error(p) == (f"hardware.copy_latency_s (=True) must be a number, not a boolean "
                         f"({p}:{line})")


def test_fractional_bytes_and_bad_engine_count(tmp_path):
    text = _k40c_text().replace("reserve_bytes: 0", "reserve_bytes: 12.5")
    assert "hardware.reserve_bytes (=12.5) must be a whole number of bytes" in \
        _error(_write(tmp_path, text))
    text = _k40c_text().replace("copy_engines: 2", "copy_engines: 0")
    assert "hardware.copy_engines (=0) must be an integer >= 1" in \
        _error(_write(tmp_path, text, "b2.yaml"))
    text = _k40c_text().replace("link_shared: false", "link_shared: 1")
    assert "hardware.link_shared (=1) must be true or false" in \
        _error(_write(tmp_path, text, "b3.yaml"))


def test_efficiency_rules(tmp_path):
    text = _k40c_text().replace("  conv: 0.264", "  conv: 1.5")
    p = _write(tmp_path, text)
    line = _line_of(text, "  conv:")
    assert _error(p) == f"hardware.efficiency.conv (=1.5) must be in [0.01, 1] ({p}:{line})"
    text = _k40c_text().replace("  lrn: 0.40\n", "")
    assert "hardware.efficiency is missing lrn" in _error(_write(tmp_path, text, "b2.yaml"))
    text = _k40c_text().replace("  lrn: 0.40\n", "  lrn: 0.40\n  gelu: 0.5\n")
    assert "hardware.efficiency.gelu is not a known key" in _error(_write(tmp_path, text, "b3.yaml"))


def test_budget_must_be_positive(tmp_path):
    text = _k40c_text().replace("context_bytes: 314_572_800", "context_bytes: 12_079_136_768")
    assert ("hardware.context_bytes + reserve_bytes (=12079136768) must be < dram_bytes "
            "(=12079136768)") in _error(_write(tmp_path, text))


def test_duplicate_key(tmp_path):
    text = _k40c_text() + "dram_bytes: 1\n"
    p = _write(tmp_path, text)
    assert _error(p).startswith("hardware.dram_bytes is set twice")


def test_sources_must_name_keys(tmp_path):
    text = _k40c_text().replace("  launch_overhead_s: estimate",
                                "  launch_overhead_s: estimate\n  speed: fast")
    assert "hardware.sources.speed is not a known key" in _error(_write(tmp_path, text))


def test_missing_file(tmp_path):
    p = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"hardware file .*nope\.yaml does not exist"):
        load_hardware(p)


def test_scientific_notation_without_dot_is_a_number():
    # plain YAML 1.1 reads 288e9 as a string; the loader reads it as a float
    assert yaml.load("a: 288e9\nb: 1e-5\nc: 12_000\nd: 12GB", Loader=spec_module._Loader) == \
        {"a": 288e9, "b": 1e-5, "c": 12000, "d": "12GB"}


def test_doctests():
    assert doctest.testmod(spec_module).failed == 0


def test_pickle_and_to_dict_round_trip():
    import pickle

    hw = load_hardware("h200")
    assert pickle.loads(pickle.dumps(hw)) == hw
    d = hw.to_dict()
    assert d["efficiency"]["conv"] == hw.eff("conv")
    rebuilt = spec_module.spec_from_mapping(d, source_path=hw.source_path)
    assert rebuilt == hw


def test_direct_construction_message_has_no_file():
    d = load_hardware("k40c").to_dict()
    with pytest.raises(ConfigError, match=r"^hardware\.peak_flops_fp32 \(='4.29 TFLOPS'\) must "
                                          r"be a plain number; put the unit in the key name$"):
        HardwareSpec(**{**d, "peak_flops_fp32": "4.29 TFLOPS"})


def test_package_presets_are_used_without_a_repo_checkout(monkeypatch, tmp_path):
    monkeypatch.setattr(spec_module, "_REPO_PRESETS", tmp_path / "absent")
    assert list_hardware() == PRESETS
    hw = load_hardware("k40c")
    assert hw.source_path == "snsim/presets/hardware/k40c.yaml"
    assert dataclasses.replace(hw, source_path=None) == \
        dataclasses.replace(load_hardware(CONFIG_DIR / "k40c.yaml"), source_path=None)


def test_host_dram_bytes_units_inheritance_and_rule(tmp_path):
    # a user file over a preset: a unit string is read once at the boundary; the rest inherits
    f = tmp_path / "big_host.yaml"
    f.write_text("base: k40c\nhost_dram_bytes: 256GiB\n")
    hw = load_hardware(f)
    assert hw.host_dram_bytes == 256 * 2**30
    assert hw.host_pinned_bytes == load_hardware("k40c").host_pinned_bytes
    g = tmp_path / "same.yaml"
    g.write_text("base: h200\nname: h200b\n")
    assert load_hardware(g).host_dram_bytes == load_hardware("h200").host_dram_bytes == 125 * 2**30
    h = tmp_path / "small_host.yaml"
    h.write_text("base: k40c\nhost_dram_bytes: 32GiB\n")
    with pytest.raises(ConfigError, match=r"host_pinned_bytes \(=68719476736\) must be <= "
                                          r"host_dram_bytes \(=34359738368\)"):
        load_hardware(h)
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: k40c\nhost_dram_bytes: lots\n")
    with pytest.raises(ConfigError, match="hardware.host_dram_bytes"):
        load_hardware(bad)
