"""scripts/gpu_busy_compare.py: a profiled token model is compared at the sequence length it
ran at, which its summary row does not name."""
import csv
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from gpu_busy_compare import sized_model  # noqa: E402


def _write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_token_model_takes_its_profiled_length(tmp_path):
    summary = tmp_path / "profile_summary.csv"
    row = {"config": "pythia-410m_b4_adamw_bf16", "model": "hf:EleutherAI/pythia-410m"}
    _write(summary, [row])
    _write(tmp_path / "profile_ops.csv", [
        {"config": "pythia-410m_b4_adamw_bf16", "family": "embedding_dense_backward",
         "phase": "B", "shapes": "[[4, 1024, 1024], [4, 1024], [], []]"},
        {"config": "pythia-410m_b4_adamw_bf16", "family": "embedding", "phase": "F",
         "shapes": "[[50304, 1024], [4, 1024], [], [], []]"}])
    assert sized_model(row, summary) == "hf:EleutherAI/pythia-410m@1024"
    # a sized spec, an image model (no embedding call) and a summary without ops stay as named
    assert sized_model(dict(row, model="hf:gpt2@512"), summary) == "hf:gpt2@512"
    assert sized_model(dict(row, config="resnet50_b64"), summary) == row["model"]
    (tmp_path / "profile_ops.csv").unlink()
    assert sized_model(row, summary) == row["model"]


def test_a_compressed_ops_file_is_read(tmp_path):
    """A committed profile keeps its ops as ``profile_ops.csv.gz`` beside the summary."""
    summary = tmp_path / "profile_summary.csv"
    row = {"config": "gpt2_b4_adamw", "model": "hf:gpt2"}
    _write(summary, [row])
    _write(tmp_path / "profile_ops.csv", [
        {"config": "gpt2_b4_adamw", "family": "embedding", "phase": "F",
         "shapes": "[[50257, 768], [4, 512], [], [], []]"}])
    raw = (tmp_path / "profile_ops.csv").read_bytes()
    (tmp_path / "profile_ops.csv").unlink()
    (tmp_path / "profile_ops.csv.gz").write_bytes(gzip.compress(raw, mtime=0))
    assert sized_model(row, summary) == "hf:gpt2@512"
