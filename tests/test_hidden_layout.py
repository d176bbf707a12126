"""A depthwise convolution's cuDNN workspaces depend on its memory layout (snsim.torchsim.hidden).

ATen sends a depthwise convolution whose input suggests channels-last to cuDNN
(``use_cudnn_depthwise``), and cuDNN's NHWC depthwise backward takes large workspaces where the
NCHW call (ATen's own kernel) takes none. ConvNeXt feeds its 7x7 depthwise convolutions NHWC
activations (its blocks permute back from NHWC), so a prediction that looked up the NCHW rows
missed them: ConvNeXt-T b32's reserved peak came out 16.65% low under recompute.
"""
import pytest

from snsim.torchsim import hidden

# ConvNeXt-T's stage-1 depthwise backward at batch 32, fp32
DW_BWD = ("convolution_backward float32[32, 96, 56, 56] float32[32, 96, 56, 56] "
          "float32[96, 1, 7, 7] 96 1 1 3 3 1 1 False 0 0 96 True True True")
# measured on the H200 (torch 2.11, cuDNN 9.19): the call's first workspace, in the hidden table
# of traces/h200/plans_on_fresh_captures/convnext_tiny_b32.json.gz and, called alone with an
# NHWC input, from scripts/conv_workspace_probe.py's run_one (NCHW input: none)
MEASURED_FIRST_BYTES = 318_219_895


@pytest.fixture(scope="module")
def tables():
    t = hidden.load_tables("h200")
    if t.get("probe") is None or t.get("probe_channels_last") is None:
        pytest.skip("no probed H200 workspace tables")
    return t


def test_nchw_depthwise_takes_no_workspace(tables):
    sizes, _, _ = hidden.lookup_slots(tables, DW_BWD, 32)
    assert sizes == []


def test_channels_last_depthwise_takes_cudnn_workspace(tables):
    # the channels-last table does not hold this shape: its nearest probed neighbour,
    # scaled by activation bytes, must come within 5% of the measured workspace
    sizes, how, slots = hidden.lookup_slots(tables, DW_BWD, 32, layout="channels_last")
    assert how == "probe_near"
    assert sizes and abs(sizes[0] - MEASURED_FIRST_BYTES) / MEASURED_FIRST_BYTES < 0.05
    assert slots == [2]   # after grad_input and grad_weight, as the probe recorded


def test_layout_changes_only_depthwise_lookups(tables):
    dense = ("convolution_backward float32[32, 192, 28, 28] float32[32, 96, 56, 56] "
             "float32[192, 96, 2, 2] 192 2 2 0 0 1 1 False 0 0 1 True True True")
    assert hidden.lookup_slots(tables, dense, 32, layout="channels_last") == \
        hidden.lookup_slots(tables, dense, 32)


def test_missing_channels_last_table_falls_back(tables):
    sizes, _, _ = hidden.lookup_slots({**tables, "probe_channels_last": None}, DW_BWD, 32,
                                      layout="channels_last")
    assert sizes == []
