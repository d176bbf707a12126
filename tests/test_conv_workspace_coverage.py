"""scripts/conv_workspace_coverage.py: the signatures a network's convolutions record, and the
share the committed probe table holds."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchvision")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from conv_workspace_coverage import main, model_signatures  # noqa: E402


def test_resnet18_layers_record_a_forward_and_a_backward_each():
    sigs, n_layers = model_signatures("resnet18", (32,), ("float32",))
    # ResNet-18's distinct square conv layers (stem, 3x3 and 1x1 downsampling): each records a
    # convolution and a convolution_backward signature at one batch and dtype
    assert n_layers == 11
    assert len(sigs) == 2 * n_layers
    assert sum(s.startswith("convolution_backward ") for s in sigs) == n_layers
    assert all("float32[32, " in s for s in sigs)


def test_the_table_holds_the_probed_networks_and_not_an_unprobed_batch(capsys):
    # resnet18's layers were probed at batches 8-256 in fp32 and bf16 (seed 5's log, session
    # 62's off-grid batches 20-56, session 64's 44-60); batch 72 at none
    main(["--models", "resnet18", "--batches", "32", "--dtypes", "float32,bfloat16"])
    assert "resnet18" in capsys.readouterr().out.split("100.0 % in the table")[0]
    main(["--models", "resnet18", "--batches", "72", "--dtypes", "float32"])
    assert "  0.0 % in the table" in capsys.readouterr().out


def test_bad_arguments_get_one_line():
    with pytest.raises(SystemExit, match="--models: nosuchnet is not a torchvision"):
        main(["--models", "nosuchnet"])
    with pytest.raises(SystemExit, match="--dtypes"):
        main(["--dtypes", "int8"])
    with pytest.raises(SystemExit, match="--batches"):
        main(["--batches", "0"])


def test_predict_says_what_its_workspaces_rest_on(capsys):
    """``snsim predict``'s ``workspace_sources``: ResNet-18 at batch 32 (its layers probed at
    8-256) reads every workspace measured; at a 200x200 input, whose layer shapes no probe
    row holds at any batch, the probed neighbours give them, and the table output says so in
    one line (snsim.torchsim.cli.guessed_workspaces_note)."""
    import json

    from snsim.cli import main
    from snsim.torchsim import cli as tcli
    from snsim.torchsim import hidden
    args = ["predict", "--model", "torchvision:resnet18", "--batch", "32", "--gpu", "h200"]
    assert main(args + ["--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)["workspace_sources"]
    assert got["measured"] > 0 and got["neighbours"] == got["modelled"] == 0
    assert main(args + ["--input-shape", "3,200,200"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("workspaces: "))
    assert "calls from probed neighbours or the first-principles model" in line
    assert hidden.workspace_sources({"hidden_lookup_probe": 3, "hidden_lookup_half_sibling": 1,
                                     "hidden_lookup_probe_scaled": 2, "hidden_lookup_dtype": 1,
                                     "hidden_lookup_probe_near": 2, "hidden_lookup_none": 9}) \
        == {"measured": 4, "other_batch": 2, "other_dtype": 1, "neighbours": 2, "modelled": 0}
    assert tcli.guessed_workspaces_note(dict(got), 32) is None


def test_the_probe_keeps_dilated_layers_and_runs_them_dilated():
    # DeepLabV3-MobileNetV3's ASPP: 3x3 convolutions of 960 channels on 30x30 maps (480x480
    # input) at dilations 12, 24 and 36, padding equal to the dilation; the signature's
    # dilation field follows (record.signature: stride, padding, dilation, ...)
    import torch
    import torch.nn.functional as F
    import conv_workspace_probe as probe_mod
    layers = probe_mod._net_layers(("deeplabv3_mobilenet_v3_large",))
    aspp = sorted(d for c, h, co, k, s, pad, g, bias, d in layers
                  if (c, h, k, g) == (960, 30, 3, 1) and d > 1)
    assert aspp == [12, 24, 36]
    probe = probe_mod._Probe(torch, device="meta")
    probe_mod.run_one(torch, F, probe, 2, 960, 30, 256, 3, 1, 24, 1, False, "float32",
                      device="meta", dilation=24)
    fwd = probe.calls[0][0]
    assert fwd.startswith("convolution float32[2, 960, 30, 30] float32[256, 960, 3, 3]")
    assert " 1 1 24 24 24 24 False " in fwd


def test_predict_at_an_unprobed_batch_says_its_workspaces_were_interpolated(capsys):
    # ResNet-18's layers are probed at 64 and 80, not 72: its workspaces are read between them
    import json

    from snsim.cli import main
    args = ["predict", "--model", "torchvision:resnet18", "--batch", "72", "--gpu", "h200"]
    assert main(args + ["--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)["workspace_sources"]
    assert got["other_batch"] > 0 and got["measured"] == 0
    assert main(args) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("workspaces: ")]
    assert len(lines) == 1 and "read at batches other than 72" in lines[0]
    assert "--net-batches 72" in lines[0]
