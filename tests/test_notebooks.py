"""The notebooks run top to bottom (small parameters) and are committed without outputs."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")       # the `notebooks` extra
NotebookClient = pytest.importorskip("nbclient").NotebookClient
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = ("quickstart", "compare_policies", "max_depth_k40c", "validation")
TIMEOUT_S = 120   # per cell; the whole set runs in well under a minute


def execute(name, **env):
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits the environment
    try:
        client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
        client.execute()   # raises CellExecutionError on the first failing cell
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def outputs_text(nb):
    parts = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            parts.append(o.get("text", ""))
            parts.extend(str(v) for v in o.get("data", {}).values())
    return "\n".join(parts)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name):
    nb = execute(name, SNSIM_QUICK="1")
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_validation_without_traces_says_so(tmp_path):
    nb = execute("validation", SNSIM_QUICK="1", SNSIM_TRACE_DIR=str(tmp_path))
    assert "No measured traces" in outputs_text(nb)


def test_validation_compares_a_measured_trace(tmp_path):
    # one committed H200 capture (a real run's measured peaks and step time)
    shutil.copy(REPO / "traces" / "h200" / "alexnet_b128.json.gz", tmp_path)
    nb = execute("validation", SNSIM_QUICK="1", SNSIM_TRACE_DIR=str(tmp_path))
    text = outputs_text(nb)
    assert "alexnet_b128.json.gz" in text and "peak_reserved_bytes" in text
    assert "No measured traces" not in text
    assert "False" not in text    # every quantity within its gate


def test_all_notebooks_present_and_valid():
    found = sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb"))
    assert set(NOTEBOOKS) <= set(found)
    for name in found:
        nbformat.validate(nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_without_outputs(name):
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name}: a cell has outputs; run scripts/strip_notebooks.py"
            assert cell.execution_count is None, f"{name}: run scripts/strip_notebooks.py"


def test_strip_script_check():
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "strip_notebooks.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
