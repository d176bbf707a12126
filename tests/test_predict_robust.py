"""``snsim predict`` on inputs nobody tried: each test is the smallest reproduction of a failure
``scripts/predict_sweep.py`` found, kept so it stays fixed (a traceback or a misleading line)."""
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from snsim.cli import main  # noqa: E402


@pytest.fixture()
def models(tmp_path, monkeypatch):
    """A user package ``snsim_robust_models`` with tiny models."""
    (tmp_path / "snsim_robust_models.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class InplaceConvs(nn.Module):
            # VGG's pattern: a convolution's output goes straight into ReLU(inplace=True)
            input_shape = (3, 8, 8)

            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(True),
                                              nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1),
                                              nn.ReLU(True), nn.MaxPool2d(2))
                self.fc = nn.Linear(16, 3)

            def forward(self, x):
                return self.fc(self.features(x).flatten(1))

        class Wide(nn.Module):
            # 3 x 2048 x 2048 fp32 weights: 48 MiB of parameters, 144 MiB with gradients and
            # momentum (hand count), more than the 64 MiB GPU of the test
            input_shape = (2048,)

            def __init__(self):
                super().__init__()
                self.fcs = nn.Sequential(*[nn.Linear(2048, 2048, bias=False) for _ in range(3)])

            def forward(self, x):
                return self.fcs(x)

        class PooledBN(nn.Module):
            # inception_v3's aux head: BatchNorm on a 1x1 map, which training refuses at batch 1
            input_shape = (3, 4, 4)

            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3, padding=1)
                self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.BatchNorm2d(4))
                self.fc = nn.Linear(4, 3)

            def forward(self, x):
                return self.fc(self.head(self.conv(x)).flatten(1))
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SNSIM_TRACES", str(tmp_path / "no_traces"))
    sys.modules.pop("snsim_robust_models", None)
    yield "snsim_robust_models"
    sys.modules.pop("snsim_robust_models", None)


def _predict(capsys, *argv):
    rc = main(["predict", "--format", "json", *argv])
    return rc, capsys.readouterr()


def test_selective_checkpoint_of_an_inplace_relu_is_one_line_naming_the_rule(models, capsys):
    # torchvision:vgg11 --policy checkpoint --option selective=true: the conv output the
    # selective checkpoint saves is then modified by ReLU(inplace=True); torch.utils.checkpoint
    # refuses that on any device. It used to read "cannot be trained under FakeTensorMode".
    rc, out = _predict(capsys, "--model", f"{models}:InplaceConvs", "--batch", "2",
                       "--policy", "checkpoint", "--option", "selective=true")
    err = out.err.strip()
    assert rc == 2 and out.out == ""
    assert err.count("\n") == 0 and err.startswith("snsim: error: --option selective=true")
    assert "in place" in err and "FakeTensorMode" not in err
    # the same model without selective=true is predicted
    rc, out = _predict(capsys, "--model", f"{models}:InplaceConvs", "--batch", "2",
                       "--policy", "checkpoint")
    assert rc == 0 and out.err == ""


def test_a_models_own_error_names_the_module_and_the_input(models, capsys):
    # torchvision:inception_v3 --batch 1: BatchNorm of the aux head sees one value per channel
    rc, out = _predict(capsys, "--model", f"{models}:PooledBN", "--batch", "1")
    err = out.err.strip()
    assert rc == 2 and err.count("\n") == 0
    assert "cannot be trained on input (1, 3, 4, 4)" in err
    assert "module 'head.1' (BatchNorm2d)" in err and "Expected more than 1 value" in err
    rc, out = _predict(capsys, "--model", f"{models}:PooledBN", "--batch", "2")
    assert rc == 0
    # torchvision:resnet18 --input-shape 1,64,64: the first convolution wants 3 channels
    rc, out = _predict(capsys, "--model", f"{models}:InplaceConvs", "--batch", "2",
                       "--input-shape", "1,8,8")
    err = out.err.strip()
    assert rc == 2 and err.count("\n") == 0
    assert "cannot be traced on input (2, 1, 8, 8) (in module 'features.0' (Conv2d))" in err


def test_a_token_shape_for_an_image_model_is_refused_before_it_runs(capsys):
    pytest.importorskip("torchvision")
    # --seq on a torchvision model used to reach the first convolution and fail there
    rc, out = _predict(capsys, "--model", "torchvision:resnet18", "--batch", "2", "--seq", "128")
    err = out.err.strip()
    assert rc == 2 and err.count("\n") == 0
    assert "takes images" in err and "(128,)" in err and "--seq is for token models" in err
    rc, out = _predict(capsys, "--model", "torchvision:resnet18", "--batch", "2",
                       "--input-shape", "224,224")
    assert rc == 2 and "takes images" in out.err


def test_budget_must_be_within_the_gpu(capsys):
    # --budget 1TiB on an H200 used to "fit" in 1 TiB; 0 named the allocator's capacity_bytes
    for budget in ("1TiB", "0"):
        rc, out = _predict(capsys, "--model", "torchvision:resnet18", "--batch", "2",
                           "--budget", budget)
        err = out.err.strip()
        assert rc == 2 and err.count("\n") == 0
        assert err.startswith(f"snsim: error: --budget (={budget}) must be > 0 and at most h200's")


def test_a_step_larger_than_the_gpu_says_what_it_needs(models, capsys, tmp_path):
    # a step that needs more than the device has used to report the peaks of its replay in
    # the device's memory, which stopped at the first allocation that failed: "needs 48 MiB"
    # under a 64 MiB budget, for a step that needs more than 144 MiB
    gpu = tmp_path / "small.yaml"
    gpu.write_text("base: h200\nname: small\ndram_bytes: 64MiB\ncontext_bytes: 0\n")
    rc, out = _predict(capsys, "--model", f"{models}:Wide", "--batch", "4", "--gpu", str(gpu),
                       "--optimizer", "sgd-momentum")
    assert rc == 3, out.err
    import json
    r = json.loads(out.out)
    params_bytes = 3 * 2048 * 2048 * 4      # hand count: three bias-free 2048 x 2048 layers
    assert not r["feasible"] and r["budget_bytes"] == 64 * 2**20
    # weights, gradients and momentum are all live at the optimizer step
    assert r["peak_allocated_bytes"] >= 3 * params_bytes > r["budget_bytes"]
    assert r["peak_reserved_bytes"] >= r["peak_allocated_bytes"]


def test_the_verdict_of_a_run_that_stopped_below_its_budget_gives_no_need():
    # a ZeRO run that does not fit stops where it fails: its peaks are below the budget, and
    # "needs 1.20 MiB reserved, budget 30 MiB" read as a contradiction
    from snsim.torchsim.cli import predict_verdict
    r = {"feasible": False, "budget_bytes": 30 * 2**20, "peak_reserved_bytes": 2**20,
         "failure": "out of memory during setup"}
    assert predict_verdict(r) == "does not fit in 0.03 GiB: out of memory during setup"
    r["peak_reserved_bytes"] = 40 * 2**20
    assert predict_verdict(r).startswith("does not fit: needs 0.04 GiB reserved")
