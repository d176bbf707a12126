"""Published K40 timings against the k40c preset (issue 10 item 6): snsim.published and the
VALIDATION.md section it feeds."""
import math

import pytest

from snsim.errors import ConfigError, UnknownNameError
from snsim.hardware import load_hardware
from snsim.published import (alexnet_owt, caffenet, fit_conv_efficiency, load_published,
                             modelled_time_s, published_rows)


def test_every_row_has_a_source_and_the_fitted_efficiency_is_the_preset_s():
    rows = published_rows("k40c")
    assert len(rows) >= 2
    for r in rows:
        assert r["source"].strip() and "http" in r["source"]
        assert math.isfinite(r["error"])
    # the preset's efficiency.conv is the one the fit gives (rounded to 3 digits in the YAML)
    assert fit_conv_efficiency("k40c") == pytest.approx(load_hardware("k40c").eff("conv"),
                                                        abs=1e-3)
    fitted = [r for r in rows if r["fit"]]
    assert all(abs(r["error"]) < 0.01 for r in fitted)   # one parameter, one fitted row
    # the held-out check: CaffeNet on Caffe + cuDNN (BVLC docs) within 20% (it is -13.4%)
    checks = [r for r in rows if not r["fit"]]
    assert checks and all(abs(r["error"]) < 0.20 for r in checks)


def test_the_benchmark_networks_are_as_published():
    # AlexNet "One Weird Trick" of convnet-benchmarks: 0.714 GMAC conv+FC per image
    # (hand sum: conv 70.3+223.9+112.1+149.5+99.7 M, FC 37.7+16.8+4.1 M = 714.1 M)
    G = alexnet_owt(1)
    macs = sum(a["macs"] for _, a in G.nodes(data=True))
    assert macs == pytest.approx(714.1e6, rel=1e-3)
    # CaffeNet: 60,965,224 parameters (Caffe's bvlc_reference_caffenet, grouped conv2/4/5)
    G = caffenet(1)
    assert sum(a["params"] for _, a in G.nodes(data=True)) == 60_965_224


def test_clock_scales_compute_bound_time():
    hw = load_hardware("k40c")
    row = {"network": "alexnet_owt", "batch": 128, "clock_mhz": 745, "passes": ["forward"]}
    t745 = modelled_time_s(row, hw)
    t875 = modelled_time_s({**row, "clock_mhz": 875}, hw)
    # AlexNet's convs are compute-bound: a faster SM clock shortens them, not past 745/875
    assert 745 / 875 * t745 <= t875 < t745


def test_bad_published_file_is_one_clear_line(tmp_path, monkeypatch):
    import snsim.published as pub
    monkeypatch.setattr(pub, "PUBLISHED_DIR", tmp_path)
    with pytest.raises(UnknownNameError, match="no published timings"):
        load_published("k40c")
    (tmp_path / "k40c.yaml").write_text(
        "timings:\n  - {network: lenet9, batch: 1, clock_mhz: 745, library: x, "
        "passes: [forward], time_s: 1, source: s, fit: true}\n")
    with pytest.raises(UnknownNameError, match=r"timings\[0\]: network 'lenet9'"):
        load_published("k40c")
    (tmp_path / "k40c.yaml").write_text(
        "timings:\n  - {network: caffenet, batch: 1, clock_mhz: 745, library: x, "
        "passes: [update], time_s: 1, source: s, fit: true}\n")
    with pytest.raises(ConfigError, match="update pass needs optimizer"):
        load_published("k40c")


def test_validation_section_lists_every_row():
    from snsim.torchsim.report import k40c_section
    text = k40c_section()
    for r in load_published("k40c")["timings"]:
        assert f"| {r['network']} | {r['batch']} |" in text
    assert f"efficiency.conv ({load_hardware('k40c').eff('conv'):g})" in text


def test_fit_moves_with_the_published_time(tmp_path, monkeypatch):
    # doubling the fitted row's published time roughly halves the fitted conv efficiency
    # (conv dominates AlexNet's modelled time)
    import snsim.published as pub
    import yaml
    doc = load_published("k40c")
    e1 = fit_conv_efficiency("k40c")
    for r in doc["timings"]:
        if r["fit"]:
            r["time_s"] *= 2
    (tmp_path / "k40c.yaml").write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(pub, "PUBLISHED_DIR", tmp_path)
    e2 = fit_conv_efficiency("k40c")
    assert 0.4 * e1 < e2 < 0.6 * e1
