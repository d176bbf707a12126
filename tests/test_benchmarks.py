"""benchmarks/run_all.py writes a whole BENCHMARKS.md even when a target is missed (issue 9)."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_missed_target_and_crash_still_give_the_whole_document(tmp_path, monkeypatch, capsys):
    (tmp_path / "fast.py").write_text("print('## fast\\n\\n| a | 1 s |')\n")
    (tmp_path / "slow.py").write_text("import sys\nprint('## slow\\n\\nmedian 12 s (NOT met)')\n"
                                      "sys.exit(1)\n")
    (tmp_path / "broken.py").write_text("print('## broken')\nraise RuntimeError('boom')\n")
    (tmp_path / "last.py").write_text("print('## last')\n")
    mod = _load("run_all")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    monkeypatch.setattr(mod, "SCRIPTS", ["fast.py", "slow.py", "broken.py", "last.py"])
    assert mod.main() == 1
    out = capsys.readouterr().out
    assert out.startswith("# snsim benchmarks\n") and "are medians" in out
    assert "| a | 1 s |" in out and "median 12 s (NOT met)" in out and "## last" in out
    assert "**slow.py: a target above was missed** (exit status 1)" in out
    assert "**broken.py failed** (exit status 1): `RuntimeError: boom`" in out


def test_all_targets_met_exits_zero(tmp_path, monkeypatch, capsys):
    (tmp_path / "ok.py").write_text("print('## ok')\n")
    mod = _load("run_all")
    monkeypatch.setattr(mod, "HERE", tmp_path)
    monkeypatch.setattr(mod, "SCRIPTS", ["ok.py"])
    assert mod.main() == 0
    assert capsys.readouterr().out.endswith("## ok\n")


def test_maxdepth_verdict_is_the_median():
    mod = _load("bench_maxdepth")
    assert mod.TARGET_S == mod.BEFORE_S / 3 and mod.ALL_POLICIES_LIMIT_S == 1.5 * mod.BEFORE_S
    t = mod.TARGET_S
    assert not mod.target_met([0.5 * t, 1.1 * t, 1.2 * t])   # the minimum alone would say "met"
    assert mod.target_met([0.9 * t, t, 3 * t])
