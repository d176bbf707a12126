"""``snsim calibrate`` end to end on the CPU (a smoke test of the code; its times mean nothing)."""
import re

import pytest

torch = pytest.importorskip("torch")


def test_calibrate_cpu_smoke_roundtrip(tmp_path):
    from snsim.kernel_table import KernelTable
    from snsim.torchsim.calibrate import run, write_table
    rows, prov = run(device="cpu", scale=0.01, max_seconds=30)
    assert prov["kind"] == "cpu-smoke-test" and prov["torch"] == torch.__version__
    fams = {r["family"] for r in rows}
    assert {"convolution", "convolution_backward", "relu_", "_foreach_add_"} <= fams
    path = tmp_path / "t.csv.gz"
    write_table(rows, prov, path)
    tab = KernelTable.read(path)
    assert tab.meta["tool"] == "snsim calibrate"
    conv = next(r for r in rows if r["family"] == "convolution")
    t, src = tab.time_s("convolution", flops=conv["flops"], nbytes=conv["bytes"],
                        cls=conv["cls"], math_="tf32")
    assert src == "table" and t == pytest.approx(conv["time_s"], rel=0.05)
    bn = [r for r in rows if r["family"].startswith("native_batch_norm")]
    assert {r["family"] for r in bn} == {"native_batch_norm", "native_batch_norm_backward"}
    assert all(r["cls"].startswith("c") and "hw" in r["cls"] for r in bn)


def test_batch_norm_rows_count_bytes_as_the_recorder_does():
    """BN rows time the aten op CUDA/CPU dispatches to, called directly, with the recorder's
    byte definition (every input and output tensor of native_batch_norm(_backward))."""
    from snsim.torchsim.calibrate import Calibrator
    cal = Calibrator(device="cpu", max_seconds=30)
    cal._batch_norm_one(2, 32, 7, torch.float32)
    fwd, bwd = cal.rows
    x, c = 2 * 32 * 7 * 7 * 4, 32 * 4
    assert (fwd["family"], fwd["cls"], fwd["bytes"]) == ("native_batch_norm", "c32hw49",
                                                           2 * x + 6 * c)
    assert (bwd["family"], bwd["bytes"]) == ("native_batch_norm_backward", 3 * x + 7 * c)
    assert "native" in fwd["shape"]      # no cuDNN on the CPU


def test_calibrate_only_bn_merges_into_a_table(tmp_path):
    from snsim.cli import main
    from snsim.kernel_table import KernelTable
    from snsim.torchsim.calibrate import read_table, write_table
    base = tmp_path / "base.csv.gz"
    old = [{"family": f, "dtype": "float32", "math": "float32", "cls": "", "flops": 0,
            "bytes": 1000 * (i + 1), "ntensors": 0, "time_s": 1e-5, "host_s": 1e-6,
            "shape": "old", "ops": ""}
           for i, f in enumerate(["relu_", "native_batch_norm", "native_batch_norm_backward",
                                  "add", "convolution"])]
    old.append(dict(old[-1], shape="net resnet50 an earlier conv run", math="tf32"))
    write_table(old, {"tool": "snsim calibrate", "gpu": "base-gpu"}, base)
    out = tmp_path / "merged.csv.gz"
    assert main(["calibrate", "--device", "cpu", "--only", "bn,conv", "--merge", str(base),
                 "--out", str(out), "--max-seconds", "60"]) == 0
    rows, meta = read_table(out)
    assert meta["gpu"] == "base-gpu" and meta["remeasured_kind"] == "cpu-smoke-test"
    # bn replaces every BN row; conv adds its network layers, replacing an earlier conv run's
    assert {r["family"] for r in rows if r["shape"] == "old"} == {"relu_", "add",
                                                                   "convolution"}
    net = [r for r in rows if r["shape"].startswith("net ")]
    assert {r["family"] for r in net} == {"convolution", "convolution_backward"}
    assert all("earlier" not in r["shape"] for r in net) and all(r["cls"] for r in net)
    bn = [r for r in rows if r["family"].startswith("native_batch_norm")]
    assert bn and all(r["cls"] for r in bn)
    assert "native_batch_norm" in KernelTable.read(out).families()
    assert main(["calibrate", "--device", "cpu", "--merge", str(base), "--out",
                 str(out)]) == 2     # --merge needs --only
    assert main(["calibrate", "--device", "cpu", "--only", "bn,xyz", "--out", str(out)]) == 2


def test_calibrate_only_amp_adds_fp16_and_fused_rows(tmp_path):
    """--only amp keeps the base's fp32/tf32/bf16 rows and adds fp16 convolutions and
    matmuls, bf16 network convolutions and the fused-optimizer/GradScaler kernels."""
    from snsim.cli import main
    from snsim.torchsim.calibrate import read_table, write_table
    base = tmp_path / "base.csv.gz"
    old = [{"family": "convolution", "dtype": d, "math": m, "cls": "", "flops": 10,
            "bytes": 1000, "ntensors": 0, "time_s": 1e-5, "host_s": 1e-6, "shape": "old",
            "ops": ""} for d, m in (("float32", "tf32"), ("bfloat16", "bf16"))]
    write_table(old, {"tool": "snsim calibrate", "gpu": "base-gpu"}, base)
    out = tmp_path / "merged.csv.gz"
    # --scale 0.01: one sampled fp16 convolution and matmul shape (fp16 convolutions are slow
    # on the CPU: the further shapes of --scale 0.05 took ~25 s and add no family)
    assert main(["calibrate", "--device", "cpu", "--only", "amp", "--merge", str(base),
                 "--out", str(out), "--max-seconds", "60", "--scale", "0.01"]) == 0
    rows, _ = read_table(out)
    assert sum(r["shape"] == "old" for r in rows) == 2
    fams = {(r["family"], r["math"]) for r in rows if r["shape"] != "old"}
    assert ("convolution", "fp16") in fams and ("_fused_adamw_", "fp32") in fams
    assert ("_amp_foreach_non_finite_check_and_unscale_", "fp32") in fams
    assert all(r["math"] != "tf32" for r in rows if r["shape"] != "old")


def test_calibrate_command_needs_a_gpu_or_cpu_flag(capsys):
    from snsim.cli import main
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["calibrate", "--out", "/nonexistent/x.csv.gz"]) == 2
    assert "CUDA GPU and none is visible" in capsys.readouterr().err


def test_backward_rows_time_the_nodes_aten_call_alone():
    """Layer norm's backward row times ``native_layer_norm_backward`` called directly: the op
    the node runs inside a real backward, without ``torch.autograd.grad``'s graph task (whose
    setup and device-thread hand-off had been read as the op's host cost)."""
    import torch.nn.functional as F

    from snsim.torchsim.calibrate import _node_call
    x = torch.randn(8, 16, requires_grad=True)
    w, b = torch.ones(16, requires_grad=True), torch.zeros(16, requires_grad=True)
    out = F.layer_norm(x, (16,), w, b)
    dout = torch.randn_like(out)
    call = _node_call(torch, lambda: torch.autograd.grad(out, (x, w, b), dout,
                                                         retain_graph=True),
                      "native_layer_norm_backward")
    seen = []

    class Names(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func._overloadpacket.__name__)
            return func(*args, **(kwargs or {}))
    with Names():
        got = call()
    assert seen == ["native_layer_norm_backward"]     # one aten call, no autograd engine
    want = torch.autograd.grad(out, (x, w, b), dout, retain_graph=True)
    assert all(torch.allclose(g, e) for g, e in zip(got, want))
    with pytest.raises(RuntimeError, match="no convolution_backward call"):
        _node_call(torch, lambda: torch.autograd.grad(out, (x,), dout, retain_graph=True),
                   "convolution_backward")


def test_conv_bias_rows_time_atens_bias_kernels():
    """conv_bias_add is ATen's in-place broadcast add after cuDNN's convolution, conv_bias_grad
    convolution_backward's grad_output.sum([0, 2, 3]); bytes as the lookup counts them."""
    from snsim.torchsim.calibrate import Calibrator
    cal = Calibrator(device="cpu", max_seconds=30)
    cal._conv_bias_one(2, 16, 7, torch.bfloat16, "")
    cal._conv_bias_one(2, 16, 7, torch.bfloat16, "_cl")
    add, grad, add_cl, grad_cl = cal.rows
    y = 2 * 16 * 7 * 7 * 2          # the output's bytes, bf16
    assert (add["family"], add["cls"], add["bytes"]) == ("conv_bias_add", "c16hw49",
                                                         2 * y + 16 * 2)
    assert (grad["family"], grad["bytes"]) == ("conv_bias_grad", y + 16 * 2)
    assert (add_cl["family"], grad_cl["family"]) == ("conv_bias_add_cl", "conv_bias_grad_cl")
    assert add_cl["shape"].endswith("channels_last") and add["dtype"] == "bfloat16"


def test_conv_rows_are_timed_without_bias():
    from snsim.torchsim.calibrate import Calibrator
    cal = Calibrator(device="cpu", max_seconds=30)
    cal._conv(1, 8, 7, 7, 16, 3, 3, 1, 1, "", torch.float32, "tf32")
    fwd, bwd = cal.rows
    assert "bias0" in fwd["shape"] and bwd["shape"].endswith("mask[True, True, False]")


def test_net_bias_models_are_the_net_models_with_conv_bias():
    """NET_BIAS_MODELS (whose layers convbias re-times bias-free) are exactly the
    Calibrator.NET_MODELS that have a conv with a bias, traced on the meta device."""
    tv = pytest.importorskip("torchvision")
    from snsim.torchsim.calibrate import NET_BIAS_MODELS, Calibrator
    biased = set()
    for name in Calibrator.NET_MODELS:
        kw = {"init_weights": False, "aux_logits": False} if name == "inception_v3" else {}
        with torch.device("meta"):
            m = getattr(tv.models, name)(**kw)
        if any(isinstance(x, torch.nn.Conv2d) and x.bias is not None for x in m.modules()):
            biased.add(name)
    assert biased == set(NET_BIAS_MODELS)


def test_calibrate_only_convbias_replaces_bias_and_biased_net_rows(tmp_path):
    from snsim.cli import main
    from snsim.kernel_table import KernelTable
    from snsim.torchsim.calibrate import read_table, write_table
    base = tmp_path / "base.csv.gz"

    def row(fam, shape, math_="tf32"):
        return {"family": fam, "dtype": "float32", "math": math_, "cls": "k3x3s1",
                "flops": 10, "bytes": 1000, "ntensors": 0, "time_s": 1e-5, "host_s": 1e-6,
                "shape": shape, "ops": ""}
    old = [row("convolution", "net vgg16 x[32, 64, 224, 224] old bias1"),
           row("convolution", "net resnet50 x[32, 64, 56, 56] old bias0"),
           row("conv_bias_add", "bias old", "float32"), row("relu_", "old", "float32")]
    write_table(old, {"tool": "snsim calibrate", "gpu": "base-gpu"}, base)
    out = tmp_path / "merged.csv.gz"
    assert main(["calibrate", "--device", "cpu", "--only", "convbias", "--merge", str(base),
                 "--out", str(out), "--max-seconds", "120"]) == 0
    rows, _ = read_table(out)
    kept = {(r["family"], r["shape"]) for r in rows if "old" in r["shape"]}
    assert kept == {("convolution", "net resnet50 x[32, 64, 56, 56] old bias0"),
                    ("relu_", "old")}
    vgg = [r for r in rows if r["shape"].startswith("net vgg16 ")]
    assert vgg and all("bias0" in r["shape"] for r in vgg)
    assert {r["math"] for r in vgg} == {"tf32", "bf16", "fp16"}
    fams = {r["family"] for r in rows if r["shape"].startswith("bias y")}
    assert fams == {"conv_bias_add", "conv_bias_grad", "conv_bias_add_cl", "conv_bias_grad_cl"}
    assert "conv_bias_add" in KernelTable.read(out).families()


def test_bnlarge_adds_batch_norm_rows_past_batch_256_and_keeps_the_others():
    """--only bnlarge keeps every BN row of the base table (batches up to 256) and adds the
    new run's rows from batch BN_LARGE on; a new row below it is not the group's."""
    from snsim.torchsim.calibrate import Calibrator, merge_rows

    def row(n, t):
        return {"family": "native_batch_norm", "dtype": "float32", "math": "float32",
                "cls": "c64hw196", "flops": 0, "bytes": n * 64 * 196 * 8, "ntensors": 0,
                "time_s": t, "host_s": 1e-6, "shape": f"x[{n}, 64, 14, 14] cudnn", "ops": ""}
    base = [row(16, 1e-5), row(256, 4e-5)]
    new = [row(64, 9.0), row(Calibrator.BN_LARGE, 1e-4), row(1024, 3e-4)]
    rows, meta = merge_rows(base, {}, new, {"date": "now"}, "bnlarge")
    assert sorted((r["shape"], r["time_s"]) for r in rows) == sorted(
        [("x[16, 64, 14, 14] cudnn", 1e-5), ("x[256, 64, 14, 14] cudnn", 4e-5),
         ("x[512, 64, 14, 14] cudnn", 1e-4), ("x[1024, 64, 14, 14] cudnn", 3e-4)])
    assert meta["remeasured_date"] == "now"


def test_merge_puts_the_new_rows_host_costs_at_the_base_tables_pace(tmp_path):
    """A --merge scales the new rows' host_s by the base table's add over the run's host
    gauge (calibrate.host_scale): a run gauged at twice the H200 table's add (8.2 us) merges
    its host costs halved; its GPU times and the base's rows are untouched; no gauge, no
    scaling. The header keeps the gauges and the factor."""
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.calibrate import host_scale, merge_rows
    table = load_kernel_table("h200")
    assert host_scale(table, [2 * 8.201e-6, 2 * 8.201e-6]) == pytest.approx(0.5, rel=1e-3)
    assert host_scale(table, []) == 1.0

    def row(n, host_s):
        return {"family": "native_batch_norm", "dtype": "float32", "math": "float32",
                "cls": "c64hw196", "flops": 0, "bytes": n, "ntensors": 0, "time_s": 1e-5,
                "host_s": host_s, "shape": f"x[{n}]", "ops": ""}
    rows, meta = merge_rows([row(1, 3e-6)], {}, [row(2, 4e-6)],
                            {"date": "now", "host_scale": "0.5000"}, "bn", 0.5)
    assert sorted((r["shape"], r["host_s"], r["time_s"]) for r in rows) == [
        ("x[2]", 2e-6, 1e-5)]
    assert meta["remeasured_host_scale"] == "0.5000"


def test_channels_last_conv_rows_are_their_own_families():
    from snsim.torchsim.calibrate import Calibrator
    cal = Calibrator(device="cpu", max_seconds=60)
    cal._conv(1, 8, 7, 7, 8, 3, 3, 1, 8, "dw", torch.float32, "tf32", None, "grouped ", "_cl")
    fams = {r["family"]: r["shape"] for r in cal.rows}
    assert set(fams) == {"convolution_cl", "convolution_backward_cl"}
    assert fams["convolution_cl"].startswith("grouped channels_last x[1, 8, 7, 7]")


def test_layout_convs_sample_stages_group_widths_and_small_dense_convs():
    """The stage group's shapes (Calibrator.layout_convs) as a GPU run would time them:
    grouped 3x3 convs with a width from LAYOUT_GROUP_WIDTHS and at least 2 groups, depthwise
    ones, dense 1x1/3x3 at small widths; stride 2 only where the input map is twice a
    stage's; every row's shape tagged ``stage`` so a --merge can replace it."""
    from snsim.torchsim.calibrate import Calibrator
    cal = Calibrator(device="cpu", max_seconds=60)
    cal.device = "cuda"          # the GPU's grid, without running it
    got = []
    cal.guarded = lambda family, fn, *args: got.append(args)
    cal.layout_convs(600, torch.float32, "tf32")
    assert len(got) == 600
    kinds = {"g": 0, "dw": 0, "": 0}
    stages = {h for h, _, _ in Calibrator.LAYOUT_STAGES}
    for n, c, h, w, co, kh, kw, s, g, cls_g, _, _, _, tag, _ in got:
        kinds[cls_g] += 1
        assert tag == "stage "
        assert n & (n - 1) == 0 and n <= max(Calibrator.LAYOUT_BATCHES)  # halved to fit
        assert max(n * c * h * w, n * co * (h // s) ** 2) * 4 <= 1.5 * 2**31 or n == 1
        if cls_g == "g":
            assert kh == 3 and g >= 2 and c == co and c // g in Calibrator.LAYOUT_GROUP_WIDTHS
            assert c % g == 0 and c % 8 == 0 and h // s in stages
        elif cls_g == "dw":
            assert g == c == co and h // s in stages
        else:
            assert g == 1 and c in Calibrator.LAYOUT_DENSE_CHANNELS and kh in (1, 3)
    # 60 / 15 / 25 % of the draws (less the grouped draws with fewer than 2 groups)
    assert kinds["g"] > 250 and kinds["dw"] > 50 and kinds[""] > 100
    assert {s for *_, s, _, _, _, _, _, _, _ in got} == {1, 2}


def test_row_ops_rows_count_bytes_and_classes_as_a_recording_does():
    """Calibrator.row_ops's rows (layer norm forward and backward, sum_rows) carry the class
    and bytes that the recorder and opcost give the same calls in a real step: a row and a
    recorded call of one shape are the same point of the table."""
    from snsim.kernel_table import family_of
    from snsim.torchsim.calibrate import Calibrator
    from snsim.torchsim.opcost import _table_args
    from snsim.torchsim.record import Recorder
    cal = Calibrator(device="cpu", max_seconds=60)
    cal.row_ops(torch.float32)
    rows = {(r["family"], r["cls"]): r for r in cal.rows}
    assert {f for f, _ in rows} == {"native_layer_norm", "native_layer_norm_backward",
                                    "sum_rows"}
    ln = torch.nn.LayerNorm(64)
    lin = torch.nn.Linear(64, 64)
    x = torch.randn(16, 64, requires_grad=True)
    rec = Recorder(device_type="cpu")
    with rec.active():
        lin(ln(x)).backward(torch.randn(16, 64))
    seen = 0
    for op in rec.ops:
        fam, kw = _table_args(op)
        if (fam, kw["cls"]) in rows:
            assert family_of(op[1]) in ("native_layer_norm", "native_layer_norm_backward",
                                        "sum")
            assert int(rows[fam, kw["cls"]]["bytes"]) == op[5], (fam, op[6])
            seen += 1
    assert seen == 3      # layer norm, its backward, the Linear's grad_bias


def test_pool_rows_count_bytes_and_classes_as_a_recording_does():
    """Calibrator.pools's rows carry the class and bytes the recorder and opcost give the
    same pooling calls (a max pool's int64 indices included), forward and backward."""
    from snsim.torchsim.calibrate import Calibrator
    from snsim.torchsim.opcost import _table_args
    from snsim.torchsim.record import Recorder
    cal = Calibrator(device="cpu", max_seconds=60)
    cal.pools(torch.float32)
    rows = {}
    for r in cal.rows:    # (family, class) -> bytes of its rows (3x3/2 with and without padding)
        rows.setdefault((r["family"], r["cls"]), set()).add(int(r["bytes"]))
    assert {c for _, c in rows} == {"k3x3s2", "k2x2s2", "k3x3s1"}
    rec = Recorder(device_type="cpu")
    x = torch.randn(2, 8, 9, 9, requires_grad=True)
    with rec.active():
        y = torch.nn.AvgPool2d(3, 1, 1)(torch.nn.MaxPool2d(3, 2, 1)(x) * 1.0)
        y.backward(torch.randn_like(y))
    # the smoke grid's calls are on 9x9 inputs: the max pool's own, the average pool's not
    matched = set()
    for op in rec.ops:
        fam, kw = _table_args(op)
        tensors = re.findall(r"\w+\[[\d, ]*\]", op[6])
        if "pool" in fam and tensors[int(fam.endswith("_backward"))] == "float32[2, 8, 9, 9]":
            assert op[5] in rows[fam, kw["cls"]], op[6]
            matched.add(fam)
    assert matched == {"max_pool2d_with_indices", "max_pool2d_with_indices_backward"}


def test_dw_cl_convs_span_the_grid_channels_last():
    from snsim.torchsim.calibrate import Calibrator
    cal = Calibrator(device="cpu", max_seconds=60)
    cal.device = "cuda"          # the GPU's grid, without running it
    got = []
    cal.guarded = lambda family, fn, *args: got.append(args)
    cal.dw_cl_convs(torch.float32, "tf32")
    assert len(got) == len(set(got)) > 200
    for n, c, h, w, co, kh, kw, s, g, cls_g, _, _, _, tag, layout in got:
        assert (g, co, cls_g, tag, layout, s) == (c, c, "dw", "dwcl ", "_cl", 1)
        assert n in Calibrator.DW_CL_BATCHES[kh] and n * c * h * w * 4 <= 1.5 * 2**31
    assert {(c, h) for _, c, h, *_ in got} == {(c, h) for c in Calibrator.DW_CL_CHANNELS
                                               for h in Calibrator.DW_CL_MAPS}


def test_calibrate_only_stage_replaces_only_its_rows(tmp_path):
    from snsim.cli import main
    from snsim.torchsim.calibrate import read_table, write_table
    base = tmp_path / "base.csv.gz"
    old = [{"family": "convolution", "dtype": "float32", "math": "tf32", "cls": "gk3x3s1",
            "flops": 1e9, "bytes": 1e6, "ntensors": 0, "time_s": 1e-4, "host_s": 1e-5,
            "shape": sh, "ops": ""}
           for sh in ("grouped x[8, 64, 7, 7] w[64, 16, 3, 3] s1 g4 bias0",
                      "stage x[8, 64, 7, 7] w[64, 16, 3, 3] s1 an earlier stage run")]
    write_table(old, {"tool": "snsim calibrate"}, base)
    out = tmp_path / "merged.csv.gz"
    assert main(["calibrate", "--device", "cpu", "--only", "stage", "--merge", str(base),
                 "--out", str(out), "--max-seconds", "20", "--scale", "0.01"]) == 0
    rows, _ = read_table(out)
    shapes = [r["shape"] for r in rows]
    assert old[0]["shape"] in shapes and old[1]["shape"] not in shapes
    assert any(sh.startswith("stage x[") for sh in shapes)


def test_calibrate_only_generic_matnet_adds_their_rows_and_keeps_the_others(tmp_path):
    """--only generic,matnet adds elementwise_generic rows (four broadcast variants) and a
    Linear's three GEMMs at model widths (shape ``net fwd|dgrad|wgrad``, classed by their
    leading dimensions: all aligned at these widths), replacing an earlier run's, and keeps
    the random matmul rows."""
    old = [{"family": "mm", "dtype": "float32", "math": "fp32", "cls": "", "flops": 1e9,
            "bytes": 1e6, "ntensors": 0, "time_s": 1e-4, "host_s": 1e-5, "shape": sh,
            "ops": ""} for sh in ("b1 m775 k255 n6365", "net dgrad b1 m512 k384 n384")]
    rows = _merged_rows(tmp_path, old, "generic,matnet", "20", "0.05")
    shapes = [r["shape"] for r in rows]
    assert old[0]["shape"] in shapes and old[1]["shape"] not in shapes
    generic = {r["shape"].split()[1] for r in rows if r["family"] == "elementwise_generic"}
    assert generic == {"channel_scale", "row_scale", "last_dim_weight", "expand_div"}
    net = [r for r in rows if str(r["shape"]).startswith("net ")]
    assert {r["shape"].split()[1] for r in net} == {"fwd", "dgrad", "wgrad"}
    assert {r["family"] for r in net} == {"addmm", "mm"}
    assert all(r["cls"] == "a8" for r in net)


def test_calibrate_only_lmhead_times_vocabulary_gemms_classed_by_alignment(tmp_path,
                                                                           monkeypatch):
    """--only lmhead adds an LM head's three bias-free GEMMs (shape ``vocab fwd|dgrad|wgrad``,
    all ``mm``) against vocabularies, classed by their operands' leading dimensions: GPT-2's
    50257 unaligned (``""``), 32000 aligned (``a8``); a --merge replaces an earlier run's
    vocab rows and keeps the Linear rows. Tiny tokens and widths (the class attributes) keep
    the CPU smoke test fast."""
    from snsim.cli import main
    from snsim.torchsim.calibrate import Calibrator, read_table, write_table
    monkeypatch.setattr(Calibrator, "HEAD_TOKENS", (8,))
    monkeypatch.setattr(Calibrator, "HEAD_WIDTHS", (16,))
    monkeypatch.setattr(Calibrator, "VOCABS", (50257, 32000))
    base = tmp_path / "base.csv.gz"
    old = [{"family": "mm", "dtype": "float16", "math": "fp16", "cls": "", "flops": 1e9,
            "bytes": 1e6, "ntensors": 0, "time_s": 1e-4, "host_s": 1e-5, "shape": sh,
            "ops": ""} for sh in ("net dgrad b1 m512 k384 n384", "vocab fwd b1 m8 k16 n7")]
    write_table(old, {"tool": "snsim calibrate"}, base)
    out = tmp_path / "merged.csv.gz"
    assert main(["calibrate", "--device", "cpu", "--only", "lmhead", "--merge", str(base),
                 "--out", str(out), "--max-seconds", "20", "--scale", "0.5"]) == 0
    rows, _ = read_table(out)
    shapes = [r["shape"] for r in rows]
    assert old[0]["shape"] in shapes and old[1]["shape"] not in shapes
    vocab = [r for r in rows if str(r["shape"]).startswith("vocab ")]
    assert {r["shape"].split()[1] for r in vocab} == {"fwd", "dgrad", "wgrad"}
    assert {r["family"] for r in vocab} == {"mm"}
    assert {r["cls"] for r in vocab} == {"", "a8"}
    for r in vocab:
        dims = [int(v[1:]) for v in r["shape"].split()[3:]]
        assert r["cls"] == ("" if 50257 in dims else "a8"), r["shape"]


def test_calibrate_only_segnet_times_segmentation_layers_and_keeps_the_dilated_rows(tmp_path):
    """--only segnet adds rows of the segmentation models' undilated Conv2d layers (shape
    ``segnet <model> ...``; on the CPU the smallest layer at batch 1, forward and backward)
    and keeps a base table's dilated rows; the tracer finds the LR-ASPP backbone's 16 -> 64
    1x1 layer on its 240x240 map and no dilated layer."""
    pytest.importorskip("torchvision")
    from snsim.cli import main
    from snsim.torchsim.calibrate import (read_table, traced_segmentation_conv2d_calls,
                                          write_table)
    layers = traced_segmentation_conv2d_calls()
    assert all(max(m.dilation) == 1 for _, _, m in layers)
    assert any(shape == (16, 240, 240) and m.out_channels == 64 and m.kernel_size == (1, 1)
               for _, shape, m in layers)
    base = tmp_path / "base.csv.gz"
    old = [{"family": "convolution", "dtype": "float32", "math": "tf32", "cls": "k3x3s1d2",
            "flops": 1e9, "bytes": 1e6, "ntensors": 0, "time_s": 1e-4, "host_s": 1e-5,
            "shape": "dilated fcn_resnet50 x[2, 256, 60, 60] w[256, 256, 3, 3] s[1, 1]",
            "ops": ""}]
    write_table(old, {"tool": "snsim calibrate"}, base)
    out = tmp_path / "merged.csv.gz"
    assert main(["calibrate", "--device", "cpu", "--only", "segnet", "--merge", str(base),
                 "--out", str(out), "--max-seconds", "60"]) == 0
    rows, _ = read_table(out)
    seg = [r for r in rows if str(r["shape"]).startswith("segnet ")]
    assert {r["family"] for r in seg} == {"convolution", "convolution_backward"}
    assert old[0]["shape"] in [r["shape"] for r in rows]


def test_calibrate_only_patchify_times_non_overlapping_convolutions(tmp_path):
    """--only patchify adds rows of the patch embeddings and patch-wise downsampling
    (kernel = stride > 1; shape ``patchify <model> ...``) in their own classes (k16x16s16, ...),
    which no other calibrated class has; the tracer finds ViT-B/16's 3 -> 768 16x16 and
    ConvNeXt-T's 2x2 downsampling, and nothing overlapping."""
    pytest.importorskip("torchvision")
    from snsim.cli import main
    from snsim.torchsim.calibrate import read_table, traced_patchify_conv2d_calls
    layers = traced_patchify_conv2d_calls()
    assert all(m.kernel_size == m.stride and max(m.kernel_size) > 1 for _, _, m in layers)
    assert any(model == "vit_b_16" and shape == (3, 224, 224) and m.out_channels == 768
               and m.kernel_size == (16, 16) for model, shape, m in layers)
    assert any(model == "convnext_tiny" and m.kernel_size == (2, 2) for model, _, m in layers)
    out = tmp_path / "patchify.csv.gz"
    assert main(["calibrate", "--device", "cpu", "--only", "patchify", "--out", str(out),
                 "--max-seconds", "60"]) == 0
    rows, _ = read_table(out)
    assert rows and all(str(r["shape"]).startswith("patchify ") for r in rows)
    assert {r["family"] for r in rows} == {"convolution", "convolution_backward"}
    assert all(r["cls"].startswith(("k2x2s2", "k4x4s4", "k14x14s14", "k16x16s16", "k32x32s32"))
               for r in rows)


def test_layer_tracing_builds_a_network_whose_constructor_reads_values():
    # RegNet computes its widths from tensors: it cannot be built on the meta device, so
    # the workspace probe's --nets regnet_y_3_2gf stopped with 'Cannot copy out of meta tensor'
    import torch
    from snsim.torchsim.calibrate import traced_layer_calls
    calls = traced_layer_calls(["regnet_y_400mf"], torch.nn.Conv2d)
    groups = {mod.groups for _name, _shape, mod in calls}
    assert calls[0][1] == (3, 224, 224) and max(groups) > 1      # grouped 3x3s, group width 8
    assert all(p.is_meta for _n, _s, mod in calls for p in mod.parameters())


def test_calibrate_only_wide_dense_big_replace_only_their_rows(tmp_path):
    """--only wide,dense,big re-measures grouped 3x3 convs of wide groups, dense convs at
    stages' channels and convs at batches from 512, each under its own shape prefix; a merge
    replaces an earlier run's rows of those prefixes and keeps the stage rows."""
    from snsim.torchsim.calibrate import Calibrator
    old = [{"family": "convolution", "dtype": "float32", "math": "tf32", "cls": "gk3x3s1",
            "flops": 1e9, "bytes": 1e6, "ntensors": 0, "time_s": 1e-4, "host_s": 1e-5,
            "shape": sh, "ops": ""}
           for sh in ("stage x[8, 512, 7, 7] w[512, 256, 3, 3] s1 g2 bias0",
                      "wide x[8, 528, 7, 7] w[528, 264, 3, 3] s1 g2 an earlier wide run",
                      "dense x[8, 64, 7, 7] w[64, 64, 1, 1] s1 g1 an earlier dense run",
                      "big x[512, 3, 7, 7] w[16, 3, 1, 1] s1 g1 an earlier big run")]
    shapes = [r["shape"] for r in _merged_rows(tmp_path, old, "wide,dense,big", "60", "0.01")]
    assert shapes.count(old[0]["shape"]) == 1
    assert not set(shapes) & {o["shape"] for o in old[1:]}
    wide = [sh for sh in shapes if sh.startswith("wide x[")]
    assert wide and all(f"w[{sh.split('w[')[1].split(', ')[0]}, " in sh for sh in wide)
    widths = {int(sh.split("w[")[1].split(", ")[1]) for sh in wide}
    assert widths <= set(Calibrator.WIDE_GROUP_WIDTHS)
    assert any(sh.startswith("dense x[") and " g1 " in sh for sh in shapes)
    assert any(sh.startswith("big x[") for sh in shapes)


def test_sibling_rows_divide_one_groups_times_by_the_measured_ratio(tmp_path):
    """scripts/sibling_rows.py divides the time of the named group's rows (and only theirs)
    by the sibling's measured ratio of their family and size band, and says so in the
    header: an h100-timed wide row read back by the h100 preset is its H100 time again."""
    import importlib.util
    from pathlib import Path
    from snsim.kernel_table import load_sibling_ratios, sibling_ratio_of
    from snsim.torchsim.calibrate import read_table, write_table
    spec = importlib.util.spec_from_file_location(
        "sibling_rows", Path(__file__).parent.parent / "scripts" / "sibling_rows.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = [{"family": "convolution_backward", "dtype": "float16", "math": "fp16",
             "cls": "gk3x3s1", "flops": 1e9, "bytes": str(b), "ntensors": 0,
             "time_s": "0.001", "host_s": "1e-05", "shape": sh, "ops": ""}
            for sh, b in (("wide x[16, 2904, 14, 14] w[2904, 264, 3, 3] s1 g11 bias0",
                           40_000_000),
                          ("stage x[16, 1680, 14, 14] w[1680, 112, 3, 3] s1 g15 bias0",
                           40_000_000))]
    src, dst = tmp_path / "in.csv.gz", tmp_path / "out.csv.gz"
    write_table(rows, {"gpu_preset": "h200", "remeasured_gpu": "NVIDIA H100 80GB HBM3"}, src)
    assert mod.main([str(src), "--group", "wide", "--sibling", "h100", "--out", str(dst)]) == 0
    out, meta = read_table(dst)
    ratio = sibling_ratio_of(load_sibling_ratios("h100"), "convolution_backward", 40_000_000)
    assert ratio != 1.0     # configs/kernels/h100_over_h200.csv has this band
    assert abs(float(out[0]["time_s"]) * ratio - 0.001) < 1e-6
    assert out[1]["time_s"] == "0.001"
    assert meta["wide_rows_from"].startswith("1 rows timed on NVIDIA H100 80GB HBM3")
    assert mod.main([str(src), "--group", "nope", "--sibling", "h100", "--out",
                     str(dst)]) == 2


def _merged_rows(tmp_path, old, only, seconds, scale):
    """The rows ``calibrate --device cpu --only ONLY --merge`` writes from a table of the rows
    ``old``."""
    from snsim.cli import main
    from snsim.torchsim.calibrate import read_table, write_table
    base, out = tmp_path / "base.csv.gz", tmp_path / "merged.csv.gz"
    write_table(old, {"tool": "snsim calibrate"}, base)
    assert main(["calibrate", "--device", "cpu", "--only", only, "--merge", str(base),
                 "--out", str(out), "--max-seconds", seconds, "--scale", scale]) == 0
    return read_table(out)[0]
