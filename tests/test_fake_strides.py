"""scripts/fake_stride_check.py: a fake run's output strides against a real CPU step's, and
the recorder's restriding of LayerNorm's backward (record.cuda_output_layout)."""
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from fake_stride_check import compare, main, step_ops, strides_of  # noqa: E402


@pytest.fixture
def pooled_norm(tmp_path, monkeypatch):
    """Swin's classifier in small: a LayerNorm over a channels-last view, pooled over the
    permuted (NCHW) view of its output, so that its backward gets an NCHW-strided dY."""
    (tmp_path / "snsim_stride_models.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class PooledNorm(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3, padding=1)
                self.norm = nn.LayerNorm(8)
                self.fc = nn.Linear(8, 8)
                self.head = nn.Linear(8, 5)

            def forward(self, x):
                h = self.conv(x).permute(0, 2, 3, 1)
                h = h + self.fc(self.norm(h))
                return self.head(self.norm(h).permute(0, 3, 1, 2).mean((2, 3)))

        def make():
            return PooledNorm()
        make.input_shape = (3, 6, 6)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    from snsim.torchsim.models import resolve_sized
    return resolve_sized("snsim_stride_models:make")


def test_size_one_dims_strides_are_left_out():
    t = torch.empty(2, 1, 3).transpose(0, 2)
    assert strides_of(t) == ((3, 1), (2, 3))


def test_layer_norm_backward_dx_is_found_and_restrided(pooled_norm):
    real = step_ops(pooled_norm, 2, fake=False, amp=False)
    fake = step_ops(pooled_norm, 2, fake=True, amp=False)
    diff, first, only = compare(real, fake)
    assert "native_layer_norm_backward" in diff
    real_dx, fake_dx = (s[0][1] for s in first["native_layer_norm_backward"])
    assert real_dx == ((2, 288), (6, 48), (6, 8), (8, 1))      # contiguous, as CUDA's
    assert fake_dx != real_dx
    fixed = step_ops(pooled_norm, 2, fake=True, amp=False, restride=True)
    assert compare(real, fixed) == ({}, {}, {})


def test_bad_argument_is_one_line(capsys):
    assert main(["torchvision:resnet18"]) == 2
    assert "expected MODEL:BATCH[:bf16]" in capsys.readouterr().err
