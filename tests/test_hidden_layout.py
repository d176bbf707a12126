"""A convolution's cuDNN workspaces depend on its memory layout (snsim.torchsim.hidden).

ATen sends a depthwise convolution whose input suggests channels-last to cuDNN
(``use_cudnn_depthwise``), and cuDNN's NHWC depthwise backward takes large workspaces where the
NCHW call (ATen's own kernel) takes none. ConvNeXt feeds its 7x7 depthwise convolutions NHWC
activations (its blocks permute back from NHWC), so a prediction that looked up the NCHW rows
missed them: ConvNeXt-T b32's reserved peak came out 16.65% low under recompute. Its 2x2
downsampling convolutions see channels-last activations too, and cuDNN's NHWC engines then
transpose none of them into their workspace: ConvNeXt-S b48 bf16's H100 allocator history
(traces/h100/plans_history/convnext_small_b48_adamw_bf16_plain) took each forward's filter
bytes alone, where the NCHW probe's rows hold the two activations as well (reserved +12.0 %
under superneurons in held-out set 45).
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
    # probed with an NHWC input on the H100 (scripts/conv_workspace_probe.py --nets
    # convnext_tiny,... --layout channels_last, seed 7): the H200 capture's figure to the byte
    sizes, how, slots = hidden.lookup_slots(tables, DW_BWD, 32, layout="channels_last")
    assert how == "probe"
    assert sizes[0] == MEASURED_FIRST_BYTES
    assert slots[0] == 2   # after grad_input and grad_weight, as the probe recorded


# ConvNeXt-S's first downsampling convolution at batch 48, bf16, forward
DOWN_FWD = ("convolution bfloat16[48, 96, 56, 56] bfloat16[192, 96, 2, 2] bfloat16[192] "
            "2 2 0 0 1 1 False 0 0 1")
FILTER_BYTES = 192 * 96 * 2 * 2 * 2
# the two activations an NCHW call transposes: x (48x96x56x56) and y (48x192x28x28), bf16
ACTIVATION_BYTES = (48 * 96 * 56 * 56 + 48 * 192 * 28 * 28) * 2


def test_channels_last_dense_convolution_transposes_no_activation(tables):
    nchw, _, _ = hidden.lookup_slots(tables, DOWN_FWD, 48)
    nhwc, how, _ = hidden.lookup_slots(tables, DOWN_FWD, 48, layout="channels_last")
    # the allocator history's workspace: the filter's bytes (147,456 B)
    assert how == "probe" and nhwc == [FILTER_BYTES]
    assert nchw[0] >= ACTIVATION_BYTES + FILTER_BYTES


def test_nchw_rows_lose_their_activation_transposes(tables):
    # without the channels-last table the NCHW row is read, less its transposed activations
    nhwc, how, _ = hidden.lookup_slots({**tables, "probe_channels_last": {
        "exact": {}, "scaled": {}, "slots": {}}}, DOWN_FWD, 48, layout="channels_last")
    nchw, _, _ = hidden.lookup_slots(tables, DOWN_FWD, 48)
    assert how == "probe" and nhwc == [nchw[0] - ACTIVATION_BYTES]
    assert 0 < nhwc[0] <= 2 * FILTER_BYTES + (8 << 20)


def test_missing_channels_last_table_falls_back(tables):
    sizes, _, _ = hidden.lookup_slots({**tables, "probe_channels_last": None}, DW_BWD, 32,
                                      layout="channels_last")
    assert sizes == []


def test_cublas_maps_its_memory_after_the_first_gemm_output():
    # the driver maps cuBLAS's memory into the lazy-loading window as cuBLAS starts, once the
    # first GEMM's output exists; under autocast the Linear's casts come first. ConvNeXt-S b48
    # bf16 superneurons' H100 history: measured 1,933,574,144 B reserved, replayed to it with
    # the mapping after that output (allocation 368) and 2,109,734,912 B (+9.11 %) with it
    # before the casts (allocation 364)
    import gzip
    import json
    import os
    from snsim.engine.allocators import replay_history
    from snsim.hardware.spec import load_hardware
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import predict_plan
    path = os.path.join("traces", "h100", "plans_history",
                        "convnext_small_b48_adamw_bf16_superneurons.json.gz")
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    hw = load_hardware("h100")
    w, c = hw.lazy_loading_window_bytes, hw.lazy_loading_cublas_bytes
    meas = doc["measured"]["peak_reserved_bytes"]
    assert replay_history(doc, w, 368, c) == meas
    assert replay_history(doc, w, 364, c) == 2_109_734_912
    # a recorded program's mapping point: the event after the first GEMM's output (ResNet-18's
    # fc under bf16 autocast: its bias, weight and input casts, then addmm's 2 x 1000 output)
    _, prog = predict_plan("torchvision:resnet18", 2, "plain", input_shape=(3, 32, 32),
                           optimizer=TrainSetup.parse("sgd", "foreach", "bf16"))
    ev, at = prog["warmup_events"], prog["warmup_first_gemm"]
    first = prog["warmup_iteration_starts"][0]
    made = [e[2] for e in ev[first:at] if e[0] == "alloc"]
    assert made[-1] == 2 * 1000 * 2
    assert sorted(made[-4:-1]) == sorted([1000 * 2, 1000 * 512 * 2, 2 * 512 * 2])


def test_backward_gemm_maps_cublas_again():
    """cuBLAS maps its memory once per thread that issues GEMMs: the first forward GEMM's and
    the first backward one's, on the autograd engine's thread (traces/h100/window_mappings:
    +64 MiB at each in four runs). A recorded program marks the second after the backward
    GEMM's output (ResNet-18's fc: grad_input, 2 x 512 fp32); ConvNeXt-T b20 sgd
    superneurons, whose predicted requests equal its H100 history's, then predicts that run's
    measured reserved peak (1,350,565,888 B, traces/h100/plans_history; +7.30 % with one
    mapping) within 0.2 %."""
    pytest.importorskip("torchvision")
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import predict_plan
    _, prog = predict_plan("torchvision:resnet18", 2, "plain", input_shape=(3, 32, 32),
                           optimizer=TrainSetup.parse("sgd"))
    first, second = prog["warmup_first_gemm"], prog["warmup_first_backward_gemm"]
    assert prog["warmup_iteration_starts"][0] < first < second < \
        prog["warmup_iteration_starts"][1]
    assert prog["warmup_events"][second - 1][::2] == ["alloc", 2 * 512 * 4]
    r, _ = predict_plan("torchvision:convnext_tiny", 20, "superneurons", gpu="h100",
                        optimizer=TrainSetup.parse("sgd"))
    assert abs(r["peak_reserved_bytes"] / 1_350_565_888 - 1) < 0.002
