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
    # resnet18's layers were probed at batches 8-256 in fp32 and bf16 (seed 5's log); batch 40
    # at none
    main(["--models", "resnet18", "--batches", "32", "--dtypes", "float32,bfloat16"])
    assert "resnet18" in capsys.readouterr().out.split("100.0 % in the table")[0]
    main(["--models", "resnet18", "--batches", "40", "--dtypes", "float32"])
    assert "  0.0 % in the table" in capsys.readouterr().out


def test_bad_arguments_get_one_line():
    with pytest.raises(SystemExit, match="--models: nosuchnet is not a torchvision"):
        main(["--models", "nosuchnet"])
    with pytest.raises(SystemExit, match="--dtypes"):
        main(["--dtypes", "int8"])
    with pytest.raises(SystemExit, match="--batches"):
        main(["--batches", "0"])
