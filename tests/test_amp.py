"""Mixed precision (CUDA's autocast emulated on CPU fake tensors), GradScaler and optimizers."""
import contextlib
import json
import textwrap

import pytest

torch = pytest.importorskip("torch")   # the `torch` extra
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from snsim.errors import ConfigError  # noqa: E402
from snsim.torchsim.amp import TrainSetup, cuda_autocast_on_cpu, cuda_autocast_policy


@pytest.fixture
def mlp(tmp_path, monkeypatch):
    """A user package with a two-layer MLP (16 -> 32 -> 5), importable as snsim_amp_models."""
    (tmp_path / "snsim_amp_models.py").write_text(textwrap.dedent("""
        from torch import nn

        def mlp():
            return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
        mlp.input_shape = (16,)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "snsim_amp_models:mlp"


def _saved(fn):
    """``[(dtype, nbytes)]`` of every tensor autograd saves while ``fn`` runs."""
    out = []

    def pack(t):
        out.append((t.dtype, t.numel() * t.element_size()))
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        res = fn()
    return out, res


def test_policy_lists_are_cuda_autocast_kernels():
    """The lists parsed from autocast_mode.h are CUDA autocast's registered kernels."""
    policy = cuda_autocast_policy()
    # aten only: torchvision registers its own autocast kernels (nms, roi_align: the same code
    # for CPU and CUDA; deform_conv2d, ps_roi_*, roi_pool: CUDA only, not emulated)
    cuda = {n for n in torch._C._dispatch_get_all_op_names()
            if n.startswith("aten::")
            and torch._C._dispatch_has_kernel_for_dispatch_key(n, "AutocastCUDA")}
    assert policy["aten::linear"] == "lower" and policy["aten::mm"] == "lower"
    assert policy["aten::native_layer_norm"] == "fp32"
    assert policy["aten::softmax.int"] == "fp32_set_opt_dtype"
    assert policy["aten::addcmul"] == "promote"
    assert set(policy) <= cuda
    # one registered CUDA kernel outside the header and our table (torch 2.14):
    # linalg_matrix_sqrth, not met by training models; a new one in a later torch fails here
    assert cuda - set(policy) <= {"aten::linalg_matrix_sqrth"}


class _CastLog(torch.utils._python_dispatch.TorchDispatchMode):
    """Appends ``entry(args, kwargs)`` of every ``aten._to_copy`` (an autocast cast) to
    ``log``; by default the shape of the tensor cast."""

    def __init__(self, log, entry=lambda args, kwargs: tuple(args[0].shape)):
        super().__init__()
        self.log, self.entry = log, entry

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._to_copy.default:
            self.log.append(self.entry(args, kwargs or {}))
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _region(dtype):
    """One autocast region with CUDA's policy on the CPU (the scope and the region at once)."""
    with cuda_autocast_on_cpu(dtype), torch.autocast("cpu", dtype=dtype):
        yield


def test_checkpoint_recompute_casts_as_in_forward():
    """torch.utils.checkpoint re-enters autocast for its recompute in backward: inside the step
    scope it gets CUDA's policy again (LayerNorm's output fp32, Linear's bf16), so the
    recomputed tensors have the metadata of the forward's (else checkpoint raises), and the
    weight is cast anew (the forward region's cache was cleared when it ended)."""
    casts = []

    def Count():
        return _CastLog(casts, lambda args, kwargs: (tuple(args[0].shape), args[0].dtype,
                                                     kwargs.get("dtype")))

    with FakeTensorMode():
        block = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16),
                                    torch.nn.Linear(16, 4))
        x = torch.empty(2, 8, requires_grad=True)
        with Count(), cuda_autocast_on_cpu(torch.bfloat16):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            n_forward = len(casts)
            y.float().sum().backward()
    assert y.dtype == torch.bfloat16
    # forward: x, w1, b1 (bf16), h1 -> fp32 for layer_norm, its output, w2, b2 (bf16) = 7
    assert n_forward == 7
    # the first weight (16x8) is cast fp32 -> bf16 once in forward and once more in the
    # recompute (a cache kept from forward would serve the recompute with no cast)
    w1 = ((16, 8), torch.float32, torch.bfloat16)
    assert casts[:n_forward].count(w1) == 1
    assert casts.count(w1) == 2
    assert block[0].weight.grad.dtype == torch.float32


def test_linear_bf16_saves_low_precision_input_and_weight_copy():
    n, k, m = 8, 16, 4
    with FakeTensorMode():
        lin = torch.nn.Linear(k, m)
        x = torch.empty(n, k, requires_grad=True)
        with _region(torch.bfloat16):
            saved, y = _saved(lambda: lin(x))
    assert y.dtype == torch.bfloat16
    # addmm(bias, x, w.t()) saves its bf16 input and the bf16 weight copy (hand calculation):
    # n*k*2 = 256 B and k*m*2 = 128 B
    assert sorted(saved) == sorted([(torch.bfloat16, n * k * 2), (torch.bfloat16, k * m * 2)])


def test_fp32_ops_and_loss_under_bf16():
    with FakeTensorMode():
        net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16))
        x = torch.empty(4, 8)
        y = torch.zeros(4, dtype=torch.long)
        with _region(torch.bfloat16):
            h = net[0](x)
            saved, z = _saved(lambda: net[1](h))
            s = h.softmax(-1)
            loss = torch.nn.functional.cross_entropy(h, y)
    assert h.dtype == torch.bfloat16
    assert z.dtype == torch.float32          # layer_norm: fp32 policy (an fp32 copy of h)
    # layer_norm saves the fp32 copy of its input (4*16*4 = 256 B), weight, bias (16*4 B) and
    # the fp32 mean and rstd (4*1*4 B each)
    assert (torch.float32, 4 * 16 * 4) in saved
    assert s.dtype == torch.float32          # softmax: dtype=float32 set, input not copied
    assert loss.dtype == torch.float32       # log_softmax keeps bf16 (cross_entropy passes the
    #                                          dtype); nll_loss casts to fp32


def test_weight_cast_is_cached_per_region():
    """Two calls of one Linear in one region: the weight and bias are cast once."""
    casts = []
    with FakeTensorMode():
        lin = torch.nn.Linear(8, 8)
        x = torch.empty(2, 8)
        with _CastLog(casts), _region(torch.float16):
            lin(lin(x))
        n_in_region = len(casts)
        with _CastLog(casts), _region(torch.float16):
            lin(x)
    # region 1: x (not a leaf that requires grad: not cached), weight, bias; the second call
    # casts nothing (its input is already fp16, weight and bias hit the cache) = 3
    assert n_in_region == 3
    # region 2: the cache was cleared when region 1 ended: x, weight, bias again = 3 more
    assert len(casts) == 6


def test_autocast_casts_are_recorded_as_nested_ops(mlp):
    """The casts autocast issues inside a Linear's call are marked as issued from C++ (the
    host model charges them no Python-level cost); the model's own ops are not."""
    from snsim.torchsim.predict import record_fake, resolve_model
    rec = record_fake(resolve_model(mlp), 4, TrainSetup("sgd-momentum", "foreach", "bf16"),
                      iterations=1)["rec"]
    from snsim.kernel_table import NO_KERNEL_OPS
    nested = {rec.ops[i][1] for i in rec.nested_ops} - NO_KERNEL_OPS
    fwd = [i for i, op in enumerate(rec.ops) if op[0] >= 0 and rec.marks[op[0]][1] == "F"]
    # forward: two Linears, each casting its input, weight and bias to bf16 (6 casts); the
    # loss's fp32 casts (nll_loss's input) are autocast's too
    assert nested == {"_to_copy"}
    assert sum(i in rec.nested_ops for i in fwd) >= 6
    assert not any(rec.ops[i][1] in ("addmm", "relu", "relu_") for i in rec.nested_ops)
    # backward's casts back to fp32 are autograd nodes' ops (ToCopyBackward0), not nested
    bwd = [i for i, op in enumerate(rec.ops) if op[0] >= 0 and rec.marks[op[0]][1] == "B"]
    assert any(rec.ops[i][1] == "_to_copy" for i in bwd)
    assert not any(i in rec.nested_ops for i in bwd)


def test_fp16_grad_scaler_buffers_and_kernels(mlp):
    from snsim.torchsim.predict import record_fake, resolve_model
    spec = resolve_model(mlp)
    r = record_fake(spec, 4, TrainSetup("sgd-momentum", "foreach", "fp16"))
    names = [op[1] for op in r["rec"].ops]
    assert "_amp_foreach_non_finite_check_and_unscale_" in names
    assert "_amp_update_scale_" in names
    # the scale (fp32) and growth tracker (int32): 1 element each, 4 B, alive between steps
    fours = [s for s in r["rec"].storages if s[0] == 4]
    assert len(fours) >= 2


@pytest.mark.parametrize("impl", ["foreach", "fused"])
def test_adamw_state_sizes(mlp, impl):
    from snsim.torchsim.predict import record_fake, resolve_model
    spec = resolve_model(mlp)
    r = record_fake(spec, 4, TrainSetup("adamw", impl))
    rec, static = r["rec"], r["static_names"]
    state = sum(rec.storages[sid][0] for sid, (_, kind) in static.items()
                if kind == "optimizer_state")
    n_params = 16 * 32 + 32 + 32 * 5 + 5          # 709 parameters in 4 tensors
    # exp_avg and exp_avg_sq: 2 fp32 per parameter; fused keeps the 4 step counters on the
    # device (fp32 scalars, 4 B each), foreach on the host (not device memory)
    assert state == 2 * 4 * n_params + (4 * 4 if impl == "fused" else 0)
    fused_ops = [op[1] for op in rec.ops if op[1] == "_fused_adamw_"]
    assert bool(fused_ops) == (impl == "fused")


def test_capture_on_cpu_matches_fake_prediction_under_bf16(mlp):
    """The emulation on real CPU tensors (capture) and on fake ones (predict): same events."""
    from snsim.torchsim.capture import capture
    from snsim.torchsim.predict import predict
    # sgd-momentum: adam's foreach step counters live on the host on CUDA (predict leaves
    # them out) but are CPU tensors in a CPU capture
    setup = TrainSetup("sgd-momentum", "foreach", "bf16")
    doc = capture(mlp, 4, optimizer=setup, device="cpu", timing_iters=1, plain_iters=1)
    r = predict(mlp, 4, optimizer=setup, hidden=False)   # no cuBLAS workspaces on a CPU
    assert r["amp"] == "bf16" and doc["provenance"]["amp"] == "bf16"
    assert r["peak_allocated_bytes"] == doc["measured"]["peak_allocated_bytes"]
    # the same allocations and frees (the reads follow each run's own op calls)
    assert [e for e in r["program"]["events"] if e[1] in ("alloc", "free")] == \
        [e for e in doc["program"]["events"] if e[1] in ("alloc", "free")]


def test_bf16_saves_less_than_fp32(mlp):
    from snsim.torchsim.predict import predict
    fp32 = predict(mlp, 64)
    bf16 = predict(mlp, 64, optimizer=TrainSetup(amp="bf16"))
    assert bf16["static_bytes"] == fp32["static_bytes"]     # fp32 master weights
    assert bf16["peak_requested_bytes"] != fp32["peak_requested_bytes"]


@pytest.mark.parametrize("args, rule", [
    (("adamw", "fast", None), "--optimizer-impl 'fast' is unknown"),
    (("lamb", "foreach", None), "--optimizer 'lamb' is unknown"),
    (("sgd", "foreach", "fp8"), "--amp 'fp8' is unknown"),
    (("sgd", "foreach", "bf16", 1), "only fp16's GradScaler skips"),
    (("sgd", "foreach", "fp16", -1), "--skipped-steps -1 must be an integer from 0"),
    (("sgd", "foreach", "fp16", 1.5), "--skipped-steps 1.5 must be an integer"),
    (("sgd", "foreach", None, 0, "tf32"), "--matmul-precision 'tf32' is unknown; known: "
                                          "highest, high, medium"),
])
def test_bad_setup_is_one_line(args, rule):
    with pytest.raises(ConfigError, match=rule):
        TrainSetup.parse(*args)


def test_tf32_matmuls_are_recorded_and_priced_as_tf32(mlp):
    """--matmul-precision high: the recording marks each fp32 matmul as CUDA would run it
    (cuBLAS reads the precision per call), the memory is the same, the matmuls read the
    table's tf32 rows (a GEMM on TF32 tensor cores is faster than one in fp32), and the
    setting is back to torch's own after the step."""
    from snsim.kernel_table import TF32_PREFIX, load_kernel_table
    from snsim.torchsim.opcost import _table_args
    from snsim.torchsim.predict import predict, record_fake, resolve_model
    before = torch.get_float32_matmul_precision()
    recs = {p: record_fake(resolve_model(mlp), 4, TrainSetup(matmul_precision=p),
                           iterations=1)["rec"]
            for p in ("highest", "high")}
    assert torch.get_float32_matmul_precision() == before
    mm = {p: [op for op in rec.ops if op[1] in ("mm", "addmm")] for p, rec in recs.items()}
    # two Linears: forward addmm each, input gradient of the second, weight gradients
    assert len(mm["high"]) == len(mm["highest"]) >= 4
    assert all(op[7].startswith(TF32_PREFIX) for op in mm["high"])
    assert not any(op[7].startswith(TF32_PREFIX) for op in mm["highest"])
    assert {_table_args(op)[1]["math_"] for op in mm["high"]} == {"tf32"}
    assert {_table_args(op)[1]["math_"] for op in mm["highest"]} == {"fp32"}
    # the layout after the prefix is what an fp32 call's lookup reads
    assert [_table_args(op)[1]["cls"] for op in mm["high"]] == \
        [_table_args(op)[1]["cls"] for op in mm["highest"]]
    # under autocast the operands are bf16: no TF32 mark, the bf16 rows
    bf16 = record_fake(resolve_model(mlp), 4, TrainSetup(amp="bf16", matmul_precision="high"),
                       iterations=1)["rec"]
    assert not any(op[7].startswith(TF32_PREFIX) for op in bf16.ops if op[1] == "addmm")
    # a large GEMM: the table's tf32 rows read faster than its fp32 rows
    table = load_kernel_table("h200")
    big = dict(flops=2 * 4096 ** 3, nbytes=3 * 4096 * 4096 * 4, dtype="float32", cls="a8")
    tf32, _ = table.time_s("mm", math_="tf32", **big)
    fp32, _ = table.time_s("mm", math_="fp32", **big)
    assert tf32 < 0.6 * fp32
    r = {p: predict(mlp, 4, optimizer=TrainSetup(matmul_precision=p)) for p in ("highest", "high")}
    assert r["high"]["peak_allocated_bytes"] == r["highest"]["peak_allocated_bytes"]
    assert r["high"]["matmul_precision"] == "high" and "matmul_precision" not in r["highest"]


def test_half_precision_costs():
    from snsim.hardware import load_hardware
    from snsim.torchsim.opcost import op_time_s
    hw = load_hardware("h200")
    flops = 1e12
    # the tensor cores' half peak (989 TFLOPS) is twice TF32's (494): bf16 GEMMs are faster
    assert op_time_s("mm", flops, 0, hw, "bfloat16") < op_time_s("mm", flops, 0, hw)
    assert op_time_s("convolution", flops, 0, hw, "float16") < \
        op_time_s("convolution", flops, 0, hw)


class _Ops(torch.utils._python_dispatch.TorchDispatchMode):
    """``ops``: ``["op (out dtypes)"]`` of every aten op below autograd; ``calls``: the same
    ops as ``(op, [(dtype, bytes) per output tensor])``."""

    def __init__(self):
        super().__init__()
        self.ops, self.calls = [], []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func._overloadpacket.__name__
        if name not in ("device", "detach"):     # fake CUDA's device queries; views
            outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                    if isinstance(o, torch.Tensor)]
            self.ops.append(f"{name} {[str(o.dtype) for o in outs]}")
            self.calls.append((name, [(o.dtype, o.numel() * o.element_size()) for o in outs]))
        return out


def test_fp16_softmax_into_fp32_is_one_kernel_as_on_cuda():
    # ATen's softmax sends a CUDA fp16 input with dtype=float32 to _softmax(half_to_float=True):
    # no fp32 copy of the input (the H200 history of MViT-V2-S b6 fp16, traces/h200/
    # plans_history); its backward hands back an fp16 gradient. bf16 is copied, on CUDA too.
    with FakeTensorMode():
        h = torch.empty(4, 16, dtype=torch.float16, requires_grad=True)
        b = torch.empty(4, 16, dtype=torch.bfloat16)
        with _Ops() as ops, _region(torch.float16):
            s = h.softmax(-1)
            s.sum().backward()
        with _Ops() as ops_bf16, _region(torch.bfloat16):
            b.softmax(-1)
    assert s.dtype == torch.float32 and h.grad.dtype == torch.float16
    assert ops.ops[0] == "_softmax ['torch.float32']"
    assert not any(o.startswith("_to_copy") for o in ops.ops)
    assert "_softmax_backward_data ['torch.float16']" in ops.ops
    assert ops_bf16.ops[:2] == ["_to_copy ['torch.float32']", "_softmax ['torch.float32']"]


class _Mixed(torch.nn.Module):
    """conv, BN, GroupNorm, linear, LayerNorm, matmul, softmax, cat, exp, pow, sum."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv, self.bn, self.gn = nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.GroupNorm(2, 8)
        self.fc, self.ln, self.fc2 = nn.Linear(8 * 6 * 6, 16), nn.LayerNorm(16), nn.Linear(16, 5)

    def forward(self, x):
        h = self.gn(self.bn(self.conv(x)).relu()).flatten(1)
        h = self.ln(self.fc(h))
        a = (h @ h.t()).softmax(-1) @ h
        return self.fc2(torch.cat([a, h.exp()], 0)[:x.shape[0]]
                        + h.pow(2).sum(-1, keepdim=True))


def _forward_ops(device, region):
    with FakeTensorMode():
        with torch.device(device):
            net = _Mixed()
        x = torch.empty(4, 3, 8, 8, device=device)
        y = torch.zeros(4, dtype=torch.long, device=device)
        log = _Ops()
        with log, region():
            torch.nn.functional.cross_entropy(net(x), y)
    return log.ops


def test_emulation_matches_real_cuda_autocast_forward():
    """The forward ops and dtypes under the emulation equal those of torch's own CUDA
    autocast on fake CUDA tensors (which runs a forward on a CPU-only torch, not a backward)."""
    import contextlib

    @contextlib.contextmanager
    def real_cuda():
        torch.set_autocast_dtype("cuda", torch.bfloat16)
        torch.set_autocast_enabled("cuda", True)
        try:
            yield
        finally:
            torch.set_autocast_enabled("cuda", False)
            torch.clear_autocast_cache()

    real = _forward_ops("cuda", real_cuda)
    emu = _forward_ops("cpu", lambda: _region(torch.bfloat16))
    # the one difference is not autocast's: CUDA's batch norm keeps its saved mean/invstd in
    # fp32 for bf16 input, the CPU fake kernel in the input dtype (C elements each)
    bn = "native_batch_norm ['torch.bfloat16', 'torch.float32', 'torch.float32']"
    assert bn in real
    real = [o if o != bn else bn.replace("float32", "bfloat16") for o in real]
    assert emu == real
    assert any(o.startswith("addmm ['torch.bfloat16']") for o in emu)
    assert any(o.startswith("native_layer_norm ['torch.float32'") for o in emu)


# -- the committed H200 amp captures (traces/h200/amp, torch 2.11 + CUDA 13) ---------------------
AMP_TRACES = __import__("pathlib").Path(__file__).resolve().parents[1] / "traces" / "h200" / "amp"


@pytest.mark.parametrize("name", ["gpt_b8_adamw_bf16.json.gz",
                                  "resnet50_b64_adamw_fused_fp16.json.gz"])
def test_amp_capture_replays_through_the_engine(name):
    """A bf16 AdamW and an fp16 fused-AdamW (GradScaler) capture: their own alloc/free order
    through the engine's ``pytorch`` allocator gives the measured peaks within the replay
    bounds every fp32 capture is held to (snsim.torchsim.validate.GATES, max)."""
    from snsim.torchsim.validate import GATES, validate_trace
    row = validate_trace(str(AMP_TRACES / name))
    assert abs(row["err_allocated_pct"]) <= GATES["peak_allocated"][1]
    assert abs(row["err_reserved_pct"]) <= GATES["peak_reserved"][0]


@pytest.mark.slow
def test_amp_prediction_matches_the_h200_capture():
    """``snsim predict`` of a bf16 autocast run against its real H200 capture (never in the
    workspace tables: they come from traces/h200/*.json.gz, fp32 only). The tolerance, 2% on
    the allocated peak, is the mean replay gate for captures (validate.GATES; SPEC §12.4:
    LLMem's 1.6%): the prediction records the same program the capture did, so what differs
    is what a CPU cannot see, buffers no tensor owns (measured -1.6% here: the backward
    workspace of cuDNN attention, 16.25 MiB per call in the capture, which no fp32 table
    has). A prediction that missed what autograd saves under autocast (a bf16 copy of each
    weight, fp32 outputs of the fp32-list ops) or the weight-cast cache would be off by
    tens of percent (bf16 vs fp32 activations)."""
    import gzip
    import json
    from snsim.torchsim.predict import predict
    name = "transformer_encoder_b16_bf16.json.gz"
    doc = json.load(gzip.open(AMP_TRACES / name))
    prov = doc["provenance"]
    r = predict(prov["model"], prov["batch"], optimizer=TrainSetup.parse(
        prov["optimizer"], prov["optimizer_impl"], prov["amp"]),
        input_shape=tuple(prov["input_shape"]), hidden_exclude=(name,))
    meas = doc["measured"]["peak_allocated_bytes"]
    assert abs(r["peak_allocated_bytes"] - meas) / meas <= 0.02


@pytest.mark.parametrize("impl, reads", [("foreach", 1), ("fused", 0)])
def test_grad_scaler_found_inf_read_is_recorded(mlp, impl, reads):
    """fp16 with a foreach optimizer: GradScaler reads found_inf back (``.item()``) before
    the step, so the host waits for the GPU there; the fake run records that read. A fused
    optimizer takes found_inf on the device: no read."""
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.predict import record_fake
    r = record_fake(resolve_model(mlp), 4, TrainSetup("adamw", impl, "fp16"), iterations=1)
    rec = r["rec"]
    device_reads = [op for op in rec.ops if op[1] == "_local_scalar_dense"
                    and any(s not in rec.excluded for s in op[2])]
    assert len(device_reads) == reads


def test_half_precision_attention_is_cudnn_on_sm90():
    """torch's sdp_utils prefers cuDNN attention on sm90 for fp16/bf16 (the H200 captures
    ran it for every half-precision call); flash elsewhere; fp32 takes efficient."""
    from snsim.torchsim.predict import cuda_sdpa_backend
    with FakeTensorMode():
        q = torch.empty(2, 4, 16, 64, dtype=torch.bfloat16)
        q32 = torch.empty(2, 4, 16, 64)
        assert cuda_sdpa_backend(q, q, q, cudnn_first=True) == "cudnn"
        assert cuda_sdpa_backend(q, q, q) == "flash"
        assert cuda_sdpa_backend(q32, q32, q32, cudnn_first=True) == "efficient"


def test_a_learned_attention_bias_takes_the_math_composite():
    """T5's relative position bias requires grad. An H200 capture of T5-small (b16 s512,
    fp32 and bf16; traces/h200/t5/) ran each such call as the math composite (``_safe_softmax``,
    ``bmm``) and each cross-attention call, whose bias needs no gradient, on the
    memory-efficient (fp32) or cuDNN (bf16) kernel."""
    from snsim.torchsim.predict import cuda_sdpa_backend
    with FakeTensorMode():
        for dtype, fixed in ((torch.bfloat16, "cudnn"), (torch.float32, "efficient")):
            q = torch.empty(2, 4, 16, 64, dtype=dtype)
            bias = torch.empty(2, 4, 16, 16, dtype=dtype)
            assert cuda_sdpa_backend(q, q, q, bias, cudnn_first=True) == fixed
            assert cuda_sdpa_backend(q, q, q, bias.requires_grad_(), cudnn_first=True) == "math"


def test_the_math_composite_is_cudas_not_the_cpus():
    """What CUDA's ``_scaled_dot_product_attention_math`` allocates (attention.cpp), hand
    counted for b2 x 4 heads x s16: bf16 inputs upcast, so the scores, probabilities and their
    dropout are fp32 (2*4*16*16*4 = 8192 B) even under autocast; the bias is added in place;
    dropout is the fused ``native_dropout`` with a 1-byte mask (2048 B), not the CPU's
    ``bernoulli_`` mask of the scores' dtype; the output is cast back to bf16."""
    from snsim.torchsim.predict import cuda_math_attention

    with FakeTensorMode():
        q = torch.empty(2, 4, 16, 8, dtype=torch.bfloat16, requires_grad=True)
        bias = torch.zeros(2, 4, 16, 16, requires_grad=True)
        with torch.autocast("cpu", torch.bfloat16), _Ops() as log:
            out = cuda_math_attention(q, q, q, bias, dropout_p=0.1)
    names = [n for n, _ in log.calls]
    assert out.dtype == torch.bfloat16
    assert "bernoulli_" not in names and "add" not in names and "add_" in names
    (soft,) = [o for n, o in log.calls if n == "_safe_softmax"]
    assert soft == [(torch.float32, 8192)]
    (drop,) = [o for n, o in log.calls if n == "native_dropout"]
    assert drop == [(torch.float32, 8192), (torch.bool, 2048)]


def test_the_math_composites_upcast_query_lives_until_the_call_returns():
    """``query_acc`` is a local of CUDA's ``_scaled_dot_product_attention_math``: the fp32
    upcast of a bf16 query is freed when the call returns, with the key's and the value's, not
    once its scaled copy is made (T5-small b24 bf16 cpu_offload's H100 allocator history,
    traces/h100/profile_s67: the early free moved later blocks and cost -19.5 % reserved)."""
    import weakref

    from snsim.torchsim.predict import cuda_math_attention

    class Upcasts(torch.utils._python_dispatch.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.first, self.alive_at_softmax = None, None

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._overloadpacket.__name__
            if name == "_safe_softmax":
                self.alive_at_softmax = self.first() is not None
            out = func(*args, **(kwargs or {}))
            if name == "_to_copy" and self.first is None and out.dtype == torch.float32:
                self.first = weakref.ref(out)      # the query's upcast, the first one made
            return out

    with FakeTensorMode():
        q = torch.empty(2, 4, 16, 8, dtype=torch.bfloat16)
        bias = torch.zeros(2, 4, 16, 16, dtype=torch.bfloat16)
        with Upcasts() as log:
            cuda_math_attention(q, q, q, bias)
    assert log.first is not None and log.alive_at_softmax is True
    assert log.first() is None      # and freed once the call has returned


def test_the_math_composites_second_result_is_made_before_its_first():
    """``make_tuple(matmul(attn, value_acc).to(origin), attn.to(origin))``: the probabilities'
    cast back (the second result) is evaluated first, as the T5-small history has it (a
    scores-sized bf16 block before the product's), and the caller drops it."""
    from snsim.torchsim.predict import cuda_math_attention

    with FakeTensorMode():
        q = torch.empty(2, 4, 16, 8, dtype=torch.bfloat16)
        with _Ops() as log:
            cuda_math_attention(q, q, q)
    names = [n for n, _ in log.calls]
    casts = [i for i, (n, o) in enumerate(log.calls)
             if n == "_to_copy" and o == [(torch.bfloat16, 2 * 4 * 16 * 16 * 2)]]
    products = [i for i, n in enumerate(names) if n in ("bmm", "matmul")]
    assert len(casts) == 1 and casts[0] < products[-1]


def test_a_boolean_mask_becomes_a_bias_as_the_modelled_torch_converts_it(monkeypatch):
    """From torch 2.6 (pytorch#139784) ``convert_boolean_attn_mask`` is ``where(mask, 0, fill)``:
    no mask-sized ``logical_not`` (the H200 captures of torch 2.11 hold none); torch 2.5 made
    one. Either way the bias is 0 where attended and the fill elsewhere."""
    from snsim.torchsim.predict import attention_bias
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    q = torch.zeros(1, 1, 4, 8)
    want = torch.zeros(4, 4).masked_fill(~mask, float("-inf"))
    for version, nots in (("2.11.0+cu130", 0), ("2.5.1", 1)):
        monkeypatch.setattr(torch, "__version__", version)
        with _Ops() as log:
            bias = attention_bias(mask, q, q, "math")
        assert [n for n, _ in log.calls].count("logical_not") == nots, (version, log.ops)
        assert torch.equal(bias, want)


def test_attention_backend_is_the_one_the_h200_ran_in_every_probed_case():
    """scripts/sdpa_choice_probe.py on the H200 (torch 2.11, cuDNN 9.19): 510 calls of 8
    shapes, 5 stride layouts, 3 dtypes, with and without masks, dropout and grouped-query
    heads; the kernel each ran (forward and backward) is the one cuda_sdpa_backend names."""
    import csv
    import importlib.util
    from pathlib import Path

    from snsim.torchsim.predict import cuda_sdpa_backend
    from snsim.trace import open_text
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("sdpa_probe",
                                                  root / "scripts/sdpa_choice_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    shapes = {s[0]: s[1:] for s in probe.SHAPES}
    with open_text(root / "traces/h200/sdpa_choice/sdpa_choice.csv.gz") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 510
    ran = {"cudnn": 0, "efficient": 0, "math": 0}
    with FakeTensorMode():
        for r in rows:
            b, h, hkv, s, d = shapes[r["shape"]]
            q, k, v = probe.make_qkv(torch, r["layout"], b, h, hkv, s, d,
                                     getattr(torch, r["dtype"]), "cpu")
            mask = torch.ones(s, s, dtype=torch.bool) if r["mask"] else None
            kind = next((n for n in ("cudnn", "flash", "efficient") if n in r["ran"]), "math")
            assert cuda_sdpa_backend(q, k, v, mask, float(r["dropout"]), hkv != h,
                                     cudnn_first=True) == kind, r
            ran[kind] += 1
    assert ran == {"cudnn": 340, "efficient": 150, "math": 20}


def test_fp32_grouped_query_attention_records_cudas_math_composite(tiny):
    """CUDA runs fp32 grouped-query attention as the math composite (the H200's probe), whose
    scores and probabilities are batch x query heads x s x s; the CPU would run its own flash
    kernel and make neither. Qwen2-0.5B b2 s512 fp32 under zero_offload was predicted
    -15.97 % allocated (traces/h100/plans_heldout35) with the CPU's kernel: its 29,360,128 B
    score matrices were missing."""
    from snsim.torchsim.execute import predict_plan
    r, prog = predict_plan(f"{tiny}:GqaAttn", 2, "plain", hidden=False)
    names = {op[1] for op in prog["ops"]}
    assert not any("flash_attention_for_cpu" in n for n in names)
    scores = 2 * 4 * 128 * 128 * 4
    assert sum(t[3] == scores for t in prog["tensors"]) >= 2      # scores, probabilities
    assert r["feasible"] is True


def test_a_recurrent_layer_is_reported_as_the_cpus_kernel(tiny, capsys):
    """nn.LSTM records oneDNN's CPU RNN (mkldnn_rnn_layer), not cuDNN's: the prediction says
    so, naming the op and the module, in the result, the JSON and a warning line."""
    from snsim.cli import main
    from snsim.torchsim.execute import predict_plan
    r, _ = predict_plan(f"{tiny}:Rnn", 4, "plain", hidden=False)
    assert r["cpu_only_ops"] == ["mkldnn_rnn_layer in rnn", "mkldnn_rnn_layer_backward in rnn"]
    assert main(["predict", "--model", f"{tiny}:Rnn", "--batch", "4", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["cpu_only_ops"][0] == "mkldnn_rnn_layer in rnn"
    assert "warning: mkldnn_rnn_layer in rnn is the CPU's kernel: CUDA runs cuDNN's RNN" in err
    plain, _ = predict_plan(f"{tiny}:Net", 2, "plain", hidden=False)
    assert plain["cpu_only_ops"] == []


def test_attention_bias_is_what_cuda_sdpa_hands_the_kernel():
    """A boolean mask becomes a new additive bias of the query's dtype (-65504 for cuDNN,
    -inf for the memory-efficient kernel, which also pads an unaligned bias to a multiple of
    8 columns and reads it expanded to batch x heads); a float mask is passed as it is."""
    from snsim.torchsim.predict import attention_bias
    q = torch.zeros(2, 3, 50, 8, dtype=torch.bfloat16)
    keep = torch.ones(50, 50, dtype=torch.bool).tril()
    b = attention_bias(keep, q, q, "cudnn")
    assert b.dtype == torch.bfloat16 and b.shape == (50, 50)
    assert b[0, 1].item() < -6e4 and b[1, 0].item() == 0.0   # -65504 rounded to bf16
    e = attention_bias(keep, q.float(), q.float(), "efficient")
    assert e.shape == (2, 3, 50, 50) and e.stride()[:2] == (0, 0)
    assert e.stride(2) == 56 and e[0, 0, 0, 1].item() == float("-inf")   # 50 + 8 - 50 % 8
    f = torch.zeros(64, 64)
    assert attention_bias(f, q.float()[..., :1, :], q.float(), "cudnn") is f
    assert attention_bias(None, q, q, "cudnn") is None


def test_norm_overloads_of_other_torch_releases_get_a_kernel():
    """torch 2.11's autocast_mode.h lists ``norm.names_ScalarOpt_dim`` for fp32_append_dtype
    (every H200 prediction under amp failed on it with a KeyError): any norm overload gets
    the kernel of its ``_dtype`` twin, or an fp32 cast where the running torch has none."""
    from types import SimpleNamespace

    from snsim.torchsim.amp import _CastCache, _kernel
    for name in ("Scalar", "ScalarOpt_dim", "names_ScalarOpt_dim"):
        op = getattr(torch.ops.aten.norm, name, None) or SimpleNamespace(
            _overloadname=name, _schema=SimpleNamespace(arguments=[]))
        assert callable(_kernel(op, "fp32_append_dtype", _CastCache(), torch.bfloat16))


class _Scaler:
    """A GradScaler stand-in: the first ``overflows`` steps overflow (scale halves)."""

    def __init__(self, overflows):
        self.scale, self.overflows = 65536.0, overflows

    def get_scale(self):
        return self.scale

    def step(self):
        if self.overflows:
            self.overflows -= 1
            self.scale /= 2


def test_warm_up_runs_on_until_a_step_is_taken():
    from snsim.torchsim.amp import skipped_since, warm_up
    s = _Scaler(overflows=5)
    calls = []
    # 2 warm-up iterations asked; steps 1-5 overflow, step 6 is the first taken: 6 run
    assert warm_up(lambda: (calls.append(1), s.step()), s, 2) == 5
    assert len(calls) == 6 and s.scale == 65536 / 2 ** 5
    assert skipped_since(s, 65536.0) == 5 and skipped_since(None, 1.0) == 0
    # no scaler (fp32, bf16): exactly the iterations asked
    calls.clear()
    assert warm_up(lambda: calls.append(1), None, 3) == 0 and len(calls) == 3


def test_warm_up_stops_when_no_scale_helps():
    from snsim.torchsim.amp import MAX_SKIPPED_STEPS, warm_up
    s = _Scaler(overflows=10 ** 6)
    with pytest.raises(ConfigError, match="not finite at any scale"):
        warm_up(s.step, s, 2)
    assert s.overflows == 10 ** 6 - MAX_SKIPPED_STEPS


def test_autocast_casts_the_last_argument_first():
    # GCC evaluates the cast pack of autocast_mode.h's wrapper from the last argument: the H200
    # histories (traces/h200/plans_history/swin_s_b32_adamw_bf16_checkpoint) show a linear's
    # bias cast, then its weight, then its input
    casts = []
    with FakeTensorMode():
        lin = torch.nn.Linear(8, 16)
        x = torch.empty(4, 8)
        with _CastLog(casts), cuda_autocast_on_cpu(torch.bfloat16):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                lin(x)
    assert casts == [(16,), (16, 8), (4, 8)]


def test_warm_training_warms_up_until_the_scaler_takes_a_step(monkeypatch):
    """The timing scripts' set-up (scripts/profile_ops.py, host_innet_probe.py) warms up as
    the plan suite does: the H200 profiles of ResNet-152 b32/b48 and Inception-v3 b16 fp16
    were timed with every optimizer step skipped (no optimizer kernel in their
    profile_ops.csv rows) when it stepped a fixed 3 times."""
    from snsim.torchsim import amp, record
    s = _Scaler(overflows=4)
    steps = []
    monkeypatch.setattr(amp.TrainSetup, "grad_scaler", lambda self, device: s)
    monkeypatch.setattr(record, "train_step", lambda *a, **kw: (steps.append(kw["scaler"]),
                                                                s.step()))
    w = record.warm_training("torchvision:resnet18@3x32x32", 2, "sgd-momentum", "foreach", "fp16", "cpu")
    # 3 asked; steps 1-4 overflow, step 5 is the first taken
    assert w.skipped_warmup == 4 and len(steps) == 5 and all(k is s for k in steps)


def test_a_skipped_first_step_gives_the_h200_peaks_to_the_byte():
    # VGG-19-BN b64 fp16 under SuperNeurons' recompute, held-out set 32 on the H200
    # (traces/h200/plans_heldout32/recompute.json.gz): GradScaler skipped 3 warm-up steps, and
    # the run measured 4,421,977,088 B allocated and 5,639,241,728 B reserved. Predicted with
    # no step skipped the reserved peak is 6.02 GiB: the momentum buffers made in the first
    # iteration take new segments; made after a skipped iteration filled the cache, they take
    # its blocks. The default (None) estimates the count (estimate_skipped_steps)
    import gzip
    import json
    from pathlib import Path

    from snsim.torchsim.execute import predict_plan
    path = Path(__file__).parent.parent / "traces/h200/plans_heldout32/recompute.json.gz"
    run = json.load(gzip.open(path))["runs"][0]
    assert run["name"] == "vgg19_bn_b64_fp16_recompute"
    m = run["measured"]
    assert m["skipped_warmup_steps"] == 3
    got = {}
    for k in (0, 1, 3, None):
        r, _ = predict_plan("torchvision:vgg19_bn", 64, "recompute", gpu="h200",
                            optimizer=TrainSetup.parse("sgd-momentum", "foreach", "fp16", k),
                            torch_version="2.11")
        got[k] = (r["peak_allocated_bytes"], r["peak_reserved_bytes"])
    assert got[1] == got[3] == got[None] == (m["peak_allocated_bytes"],
                                             m["peak_reserved_bytes"])
    assert got[0][1] > m["peak_reserved_bytes"] * 1.1
    assert TrainSetup.parse("sgd-momentum", "foreach", "fp16", 1).slug == "_fp16_skip1"


@pytest.mark.parametrize("argv, message", [
    (["--matmul-precision", "tf32"], "--matmul-precision 'tf32' is unknown; known: highest, "
                                     "high, medium"),
    (["--matmul-precision", "high", "--policy", "zero_offload"],
     "--policy zero_offload's executor runs torch's default matmul precision: drop "
     "--matmul-precision high"),
])
def test_matmul_precision_refusals_are_one_line(capsys, argv, message):
    from snsim.cli import main
    code = main(["predict", "--model", "torchvision:resnet18", "--batch", "2", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"snsim: error: {message}"


def test_step_scope_sets_the_matmul_precision_on_every_device():
    """On CUDA the scope sets torch's float32 matmul precision for the step (cuBLAS reads it)
    and puts the previous one back; at the default there is nothing to wrap on CUDA."""
    assert TrainSetup().step_scope("cuda") is None
    before = torch.get_float32_matmul_precision()
    for device in ("cuda", "cpu"):
        scope = TrainSetup(matmul_precision="high").step_scope(device)
        with scope():
            assert torch.get_float32_matmul_precision() == "high"
            assert torch.backends.cuda.matmul.allow_tf32
        assert torch.get_float32_matmul_precision() == before
    assert TrainSetup(matmul_precision="high").slug == "_mmhigh"
    assert TrainSetup(matmul_precision="high").to_dict()["matmul_precision"] == "high"
    assert "matmul_precision" not in TrainSetup().to_dict()


@pytest.mark.parametrize("case", ["mask", "bool", "causal", "gqa", "scale"])
def test_the_math_composite_computes_what_torchs_attention_does(case):
    """cuda_math_attention (predictions and captures run it where CUDA picks the math
    composite) gives torch's scaled_dot_product_attention's values."""
    import torch.nn.functional as F

    from snsim.torchsim.predict import cuda_math_attention
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 16, 8, generator=g)
    kv = torch.randn(2, 2, 16, 8, generator=g) if case == "gqa" else q
    mask = torch.randn(2, 4, 16, 16, generator=g) if case in ("mask", "scale") else None
    if case == "bool":
        mask = torch.rand(2, 1, 16, 16, generator=g) > 0.3
        mask[..., 0] = True   # every row attends somewhere
    kw = {"is_causal": case in ("causal", "gqa"), "enable_gqa": case == "gqa",
          "scale": 0.3 if case == "scale" else None}
    ref = F.scaled_dot_product_attention(q, kv, kv, mask, **kw)
    got = cuda_math_attention(q, kv, kv, mask, **kw)
    assert torch.allclose(got, ref, atol=1e-5)


def test_in_place_bias_linear_casts_bias_weight_input_as_the_autocast_kernel():
    # nn.MultiheadAttention's in-projection of a batch-first input: linear of a non-contiguous
    # 3-D input, whose composite adds the bias in place. Under autocast the kernel casts bias,
    # weight and input first (the H100 allocator history of ViT-H/14 b8 bf16: a 7,680 B bias
    # cast, then the 9,830,400 B weight cast, then the input's), the weight's and bias's casts
    # cached to the region's end; the product then adds the bf16 bias in place.
    from snsim.torchsim.predict import linear_bias_in_place
    e = 16
    with FakeTensorMode():
        mha = torch.nn.MultiheadAttention(e, 2, batch_first=True)
        x = torch.empty(2, 5, e)
        with linear_bias_in_place(), _Ops() as ops, _region(torch.bfloat16):
            mha(x, x, x, need_weights=False)
            mha(x, x, x, need_weights=False)   # the same region: both casts come from cache
    casts = [b for name, outs in ops.calls if name == "_to_copy" for _, b in outs]
    # first call: bias 3e*2 B, weight 3e*e*2 B, input 2*5*e*2 B, then out_proj's bias and
    # weight (e*2, e*e*2); second call: the two inputs only (hand calculation)
    assert casts == [3 * e * 2, 3 * e * e * 2, 2 * 5 * e * 2, e * 2, e * e * 2,
                     2 * 5 * e * 2]
    names = [name for name, _ in ops.calls]
    assert "add_" in names and "add" not in names


@pytest.mark.parametrize("modelled, alive", [("2.11.0+cu130", True), ("installed", None)])
def test_mha_keeps_q_k_v_to_its_return_for_torch_before_2_12(modelled, alive):
    # torch 2.12+ frees the in-projection's q, k, v right after attention (`del q, k, v`);
    # 2.11 keeps them to the function's return, past the out-projection (the allocator
    # histories of ViT-B/16 and ViT-H/14 on torch 2.11): predicted for 2.11, they must be alive
    # when the out-projection runs
    import weakref
    import torch.nn.functional as F
    from snsim.torchsim.plans import modelled_torch, torch_release
    from snsim.torchsim.predict import MHA_FREES_QKV_FROM, mha_qkv_kept_to_return
    frees = "del q, k, v" in __import__("inspect").getsource(F.multi_head_attention_forward)
    if alive and not frees:
        pytest.skip("the installed torch keeps q, k, v itself")
    assert frees == (torch_release(torch.__version__) >= MHA_FREES_QKV_FROM)
    seen, refs = [], []
    orig_sdpa, orig_linear = F.scaled_dot_product_attention, F.linear

    def sdpa(q, k, v, *a, **kw):
        refs.append(weakref.ref(q))
        return orig_sdpa(q, k, v, *a, **kw)

    def linear(x, w, b=None):
        if refs:
            seen.append(refs[-1]() is not None)
        return orig_linear(x, w, b)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(2, 5, 16)
    try:
        F.scaled_dot_product_attention, F.linear = sdpa, linear
        # without autograd, which keeps what attention saves (and their Python objects)
        with modelled_torch(modelled), mha_qkv_kept_to_return(), torch.no_grad():
            mha(x, x, x, need_weights=False)
    finally:
        F.scaled_dot_product_attention, F.linear = orig_sdpa, orig_linear
    assert seen == [alive if alive is not None else not frees]


def test_version_rules_follow_the_modelled_release_not_the_installed_torch():
    # a user with another torch installed predicts for the release that will run the step
    # (--torch-version): _safe_softmax's CUDA kernel writes its `where` into the softmax it
    # made from 2.6 (record.SAFE_SOFTMAX_IN_PLACE_FROM), a boolean attention mask becomes a
    # bias without a logical_not from 2.6 (predict.BOOL_MASK_WITHOUT_NOT_FROM)
    from snsim.torchsim.plans import modelled_release, modelled_torch, torch_release
    from snsim.torchsim.predict import attention_bias
    from snsim.torchsim.record import cuda_temporaries
    x = torch.empty(2, 4, 8, 8)
    with modelled_torch("2.5.1"):
        assert modelled_release() == (2, 5)
        before, after = cuda_temporaries("_safe_softmax", (x, -1), "cpu")
        assert before and not after     # a new tensor for the result, then its `where`
    with modelled_torch("2.11.0+cu130"):
        before, after = cuda_temporaries("_safe_softmax", (x, -1), "cpu")
        assert not before and after
    assert modelled_release() == torch_release(torch.__version__)
    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    q = torch.randn(2, 4, 8, 16)
    from torch.utils._python_dispatch import TorchDispatchMode

    class Names(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func._overloadpacket.__name__)
            return func(*args, **(kwargs or {}))
    for version, negated in (("2.5.1", True), ("2.11", False)):
        with modelled_torch(version), Names() as seen:
            bias = attention_bias(mask, q, q, "math")
        assert ("logical_not" in seen.names) == negated
        # the same additive bias either way: 0 where attended, -inf elsewhere
        assert bias.dtype == q.dtype and bool((bias[mask] == 0).all())
        assert bool(torch.isinf(bias[~mask]).all())


@pytest.mark.parametrize("model, batch, measured", [
    # GradScaler's skipped warm-up steps as GPU runs counted them (measured.skipped_warmup_steps):
    # ResNet-50 b48 fp16 (traces/h200/plans_heldout19), ResNet-34 b128 fp16 (five runs,
    # traces/h200/plans_heldout10 and _gauge), VGG-19-BN b48 fp16 (traces/h100/plans_heldout52
    # and _rerun), GPT-2 b16 s512 (traces/h200/plans_heldout8)
    ("torchvision:resnet50", 48, 3),
    ("torchvision:resnet34", 128, 0),
    ("torchvision:vgg19_bn", 48, 3),
    ("hf:gpt2", 16, 0),
])
def test_the_skipped_steps_estimate_matches_gpu_runs(model, batch, measured):
    from snsim.torchsim.amp import estimate_skipped_steps
    from snsim.torchsim.models import resolve_model
    shape = (512,) if model.startswith("hf:") else None
    steps, top = estimate_skipped_steps(resolve_model(model, input_shape=shape), batch)
    assert steps == measured
    # the count is the halvings of 2**16 until the largest gradient times the scale fits fp16
    assert top * 2.0 ** (16 - steps) <= 65504 < top * 2.0 ** (17 - steps) or steps == 0


def test_swin_v2s_skipped_steps_come_from_the_gradient_of_its_padding_rows():
    """Swin-V2-T b32 fp16 skipped 27 warm-up steps on the H200 (traces/h200/plans_heldout30,
    `offload`; docs/data/fp16_skipped_steps_s69.csv). Its weights' largest gradient would
    give 3: the skips come from ``F.normalize`` of the keys of a window's zero padding rows,
    whose gradient is ``grad / 1e-12`` when it enters the qkv matmul's fp16 backward. The
    seeded probe's initial weights put it 2 steps high (seeds 0-2 at batch 2 span about 3
    steps), far closer than the weights alone."""
    from snsim.torchsim.amp import _largest_gradients, estimate_skipped_steps
    from snsim.torchsim.models import resolve_model
    spec = resolve_model("torchvision:swin_v2_t")
    weights, activations = _largest_gradients(spec, 8, 0)
    assert activations > 1e6 * weights
    steps, _ = estimate_skipped_steps(spec, 32)
    assert abs(steps - 27) <= 3


def test_an_activation_gradient_scales_with_the_loss_terms_not_their_square_root(
        tmp_path, monkeypatch):
    """A normalised zero row's gradient (``grad / eps``) enters the backward's matmul: the
    estimate takes it at the probe's share of the loss terms (8 of 64 samples), the weights'
    at the square root of that share. Hand calculation in the assertions."""
    import math

    from snsim.torchsim.amp import _largest_gradients, estimate_skipped_steps
    from snsim.torchsim.models import resolve_model
    (tmp_path / "snsim_zero_row.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class ZeroRow(nn.Module):
            # a zero padding row through a Linear without bias stays zero; normalising it
            # passes grad / 1e-12 back into that Linear's (fp16, on a GPU) backward
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(4, 4, bias=False), nn.Linear(16, 5)

            def forward(self, x):
                h = self.a(nn.functional.pad(x, (0, 0, 0, 1)))
                return self.b(nn.functional.normalize(h, dim=-1).flatten(1))

        def zero_row():
            return ZeroRow()
        zero_row.input_shape = (3, 4)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = resolve_model("snsim_zero_row:zero_row")
    weights, activations = _largest_gradients(spec, 8, 0)
    assert activations > 1e9 > 1e3 > weights
    steps, top = estimate_skipped_steps(spec, 64)
    assert top == pytest.approx(max(weights * math.sqrt(8 / 64), activations * 8 / 64))
    assert top == pytest.approx(activations * 8 / 64)
    assert steps == math.ceil(math.log2(top * 2 ** 16 / 65504))


def test_predict_estimates_the_skipped_steps_and_says_so(capsys):
    """VGG-19-BN b48 fp16 on the H100 (traces/h100/plans_heldout52: 3 warm-up steps skipped,
    6,912,212,992 B reserved in both measurements): with the estimate the prediction is that
    figure; it was 6,704,594,944 B (-3.00 %) when predictions assumed no step skipped."""
    from snsim.cli import main
    base = ["predict", "--model", "torchvision:vgg19_bn", "--batch", "48", "--gpu", "h100",
            "--amp", "fp16", "--torch-version", "2.11", "--format", "json"]
    got = {}
    for extra in ([], ["--skipped-steps", "0"], ["--skipped-steps", "auto"]):
        assert main(base + extra) == 0
        got[tuple(extra)] = json.loads(capsys.readouterr().out)
    auto = got[()]
    assert auto["skipped_steps"] == 3 and auto["skipped_steps_source"].startswith("estimated")
    assert auto["peak_reserved_bytes"] == 6_912_212_992
    assert got[("--skipped-steps", "auto")]["peak_reserved_bytes"] == 6_912_212_992
    zero = got[("--skipped-steps", "0")]
    assert zero["skipped_steps"] == 0 and zero["skipped_steps_source"] == "given"
    assert zero["peak_reserved_bytes"] == 6_704_594_944


def test_bf16_has_no_skipped_steps_and_a_bad_count_is_one_line(capsys):
    from snsim.cli import main
    assert main(["predict", "--model", "torchvision:resnet18", "--batch", "2", "--amp", "bf16",
                 "--format", "json"]) == 0
    assert "skipped_steps" not in json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(["predict", "--model", "torchvision:resnet18", "--batch", "2", "--amp", "fp16",
              "--skipped-steps", "many"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("argument --skipped-steps: 'many' is neither auto nor a count")


def test_a_long_run_of_skipped_steps_is_recorded_as_three():
    """Swin-V2's GPU runs skipped 26-28 steps: the recording runs 3 skipped iterations (the
    cache the first step taken finds is the same after 3 as after more), the count is kept."""
    from snsim.torchsim.amp import RECORDED_SKIPS_MAX, resolve_skipped_steps
    setup, steps, source = resolve_skipped_steps(TrainSetup(amp="fp16", skipped_steps=28),
                                                 None, 16)
    assert (setup.skipped_steps, steps, source) == (RECORDED_SKIPS_MAX, 28, "given") == \
        (3, 28, "given")
    setup, steps, source = resolve_skipped_steps(TrainSetup(amp="bf16"), None, 16)
    assert (setup.skipped_steps, steps) == (0, 0) and source.startswith("none")


def test_a_model_too_large_for_the_estimate_assumes_none_and_says_so(monkeypatch):
    """The estimate runs a real fp32 step on the CPU: a model whose weights and gradients would
    take more than half of the free memory (at most PROBE_MAX_BYTES) is not probed."""
    from snsim.torchsim import amp
    from snsim.torchsim.models import resolve_model
    spec = resolve_model("torchvision:resnet18")
    assert amp._probe_bytes(spec) == 8 * 11_689_512      # torchvision's ResNet-18 parameters
    monkeypatch.setattr(amp, "_probe_room_bytes", lambda: 64 << 20)
    monkeypatch.setattr(amp, "estimate_skipped_steps",
                        lambda *a: pytest.fail("the step ran"))
    setup, steps, source = amp.resolve_skipped_steps(TrainSetup(amp="fp16"), spec, 32)
    assert (setup.skipped_steps, steps) == (0, 0)
    assert source.startswith("not estimated: one fp32 step needs about 0.1 GiB")
    assert source.endswith("give the count with --skipped-steps N")


def test_fp16s_optimizer_step_is_charged_after_gradscalers_read(mlp):
    """``GradScaler.step`` reads ``found_inf`` (``.item()``: the host waits for the GPU) and only
    then calls ``optimizer.step()``, so the step's per-parameter Python work (``per_param_s``)
    falls after that read, where a GPU-bound step's GPU waits for it; without GradScaler it
    falls on the update's first op."""
    from snsim.torchsim.opcost import HOST_READ_OPS, optimizer_step_starts
    from snsim.torchsim.predict import record_fake, resolve_model
    for amp, after_read in (("fp16", True), ("bf16", False)):
        rec = record_fake(resolve_model(mlp), 4,
                          TrainSetup("sgd-momentum", "foreach", amp, skipped_steps=0),
                          iterations=2)["rec"]
        syncs = {i for i, op in enumerate(rec.ops) if op[1] in HOST_READ_OPS}
        starts = optimizer_step_starts(rec.ops, rec.marks, syncs)
        assert sorted(starts) == [0, 1]
        for it, at in starts.items():
            update = [i for i, op in enumerate(rec.ops)
                      if op[0] >= 0 and rec.marks[op[0]][1:4:2] == ("U", it)]
            unscale = [i for i in update
                       if rec.ops[i][1] == "_amp_foreach_non_finite_check_and_unscale_"]
            if after_read:
                read = min(i for i in syncs if i > unscale[0])
                assert at == min(i for i in update if i > read)
            else:
                assert not unscale and at == update[0]


def test_pure_low_precision_halves_every_static_tensor_by_hand(mlp):
    """--param-dtype bf16/fp16 (model.to(dtype)): the MLP's 709 parameters (16x32 + 32 +
    32x5 + 5) and AdamW's two moments are 2 bytes each, not 4, and so is the 4x16 input
    batch; the static bytes fall by 3 x 709 x 2 + 4 x 16 x 2 = 4,382 B (by hand: gradients
    are freed by zero_grad, not static)."""
    from snsim.torchsim.predict import predict
    r = {d: predict(mlp, 4, optimizer=TrainSetup("adamw", param_dtype=d))
         for d in ("fp32", "bf16", "fp16")}
    assert r["fp32"]["static_bytes"] - r["bf16"]["static_bytes"] == 3 * 709 * 2 + 4 * 16 * 2
    assert r["bf16"]["static_bytes"] == r["fp16"]["static_bytes"]
    assert r["bf16"]["peak_allocated_bytes"] < r["fp32"]["peak_allocated_bytes"]
    assert r["bf16"]["param_dtype"] == "bf16" and "param_dtype" not in r["fp32"]


def test_cast_model_keeps_tied_weights_and_integer_buffers():
    """Each tensor is cast once: a weight two modules share stays one parameter; BN's
    num_batches_tracked (int64) stays an integer; the input batch is cast, token ids not."""
    from snsim.torchsim.models import resolve_model
    emb = torch.nn.Embedding(10, 8)
    head = torch.nn.Linear(8, 10, bias=False)
    head.weight = emb.weight
    net = torch.nn.Sequential(emb, torch.nn.BatchNorm1d(4), head)
    setup = TrainSetup(param_dtype="bf16")
    assert setup.cast_model(net) is net
    assert net[0].weight is net[2].weight and net[0].weight.dtype == torch.bfloat16
    assert isinstance(net[0].weight, torch.nn.Parameter) and net[0].weight.requires_grad
    assert net[1].running_mean.dtype == torch.bfloat16
    assert net[1].num_batches_tracked.dtype == torch.int64
    assert setup.make_input(resolve_model("torchvision:resnet18"), 2).dtype == torch.bfloat16
    assert setup.make_input(resolve_model("snsim:gpt"), 2).dtype == torch.int64
    assert TrainSetup(param_dtype="fp16").slug == "_purefp16"
    fp32 = torch.nn.Linear(2, 2)
    assert TrainSetup().cast_model(fp32).weight.dtype == torch.float32


@pytest.mark.parametrize("argv, message", [
    (["--param-dtype", "int8"], "--param-dtype 'int8' is unknown; known: fp32, bf16, fp16"),
    (["--param-dtype", "bf16", "--amp", "bf16"],
     "--param-dtype bf16 with --amp bf16: autocast keeps fp32 master weights; use one of the "
     "two"),
    (["--param-dtype", "fp16", "--policy", "zero_offload"],
     "--policy zero_offload keeps fp32 master weights on the CPU: drop --param-dtype fp16"),
])
def test_param_dtype_refusals_are_one_line(capsys, argv, message):
    from snsim.cli import main
    code = main(["predict", "--model", "torchvision:resnet18", "--batch", "2", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"snsim: error: {message}"


def test_pure_bf16_step_runs_on_the_cpu_as_predicted(tmp_path, monkeypatch):
    """snsim execute's measurement runs the same pure-bf16 setup for real (on the CPU here):
    the forward sees a bf16 input and bf16 weights, and the record says so."""
    (tmp_path / "snsim_dtype_probe.py").write_text(textwrap.dedent("""
        from torch import nn
        SEEN = []

        class Probe(nn.Linear):
            def forward(self, x):
                SEEN.append((x.dtype, self.weight.dtype))
                return super().forward(x)

        def probe():
            return nn.Sequential(Probe(16, 32), nn.ReLU(), nn.Linear(32, 5))
        probe.input_shape = (16,)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import snsim_dtype_probe
    from snsim.torchsim.execute import measure
    m = measure("snsim_dtype_probe:probe", 4, "plain",
                optimizer=TrainSetup("adamw", param_dtype="bf16"), iters=1, device="cpu")
    assert m["param_dtype"] == "bf16" and m["step_time_s"] > 0
    # the first forward is the fp32 model's, before the cast: the loss target's shape
    # (infer_target_of); then two warm-up steps and the timed one
    first, *steps = snsim_dtype_probe.SEEN
    assert first == (torch.float32, torch.float32)
    assert steps == [(torch.bfloat16, torch.bfloat16)] * 3


def test_pure_bf16_capture_records_half_the_static_bytes(mlp):
    """snsim capture (on the CPU here) of the same pure-bf16 setup: the parameters' 709
    elements at 2 bytes (1,418 B, by hand: 2,836 in fp32), AdamW's moments likewise, the 4x16
    input at 2 bytes beside its int64 targets (4 x 8 B), and the provenance says bf16."""
    from snsim.torchsim.capture import capture
    doc = {d: capture(mlp, 4, optimizer=TrainSetup("adamw", param_dtype=d), device="cpu")
           for d in ("fp32", "bf16")}
    static = {d: doc[d]["program"]["static_bytes"] for d in doc}
    assert static["fp32"]["parameter"] == 709 * 4 and static["bf16"]["parameter"] == 709 * 2
    assert static["bf16"]["input"] == 4 * 16 * 2 + 4 * 8
    assert static["fp32"]["input"] == 4 * 16 * 4 + 4 * 8
    assert static["fp32"]["optimizer_state"] - static["bf16"]["optimizer_state"] == 2 * 709 * 2
    assert doc["bf16"]["provenance"]["param_dtype"] == "bf16"
    assert "param_dtype" not in doc["fp32"]["provenance"]


def test_pure_bf16_input_of_a_users_make_input(tmp_path, monkeypatch):
    """A module:callable's own make_input: a floating tensor it returns is cast, anything
    else (a dict of tensors here) is handed on as it made it."""
    (tmp_path / "snsim_dict_input.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(8, 4)

            def forward(self, batch):
                return self.a(batch["x"].to(self.a.weight.dtype))

        def floating():
            return nn.Linear(8, 4), lambda n, device=None: torch.randn(n, 8, device=device)

        def mapping():
            return Two(), lambda n, device=None: {"x": torch.randn(n, 8, device=device)}
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    from snsim.torchsim.models import resolve_model
    setup = TrainSetup(param_dtype="bf16")
    spec = resolve_model("snsim_dict_input:floating")
    spec.build()
    assert setup.make_input(spec, 3).dtype == torch.bfloat16
    spec = resolve_model("snsim_dict_input:mapping")
    spec.build()
    x = setup.make_input(spec, 3)
    assert isinstance(x, dict) and x["x"].dtype == torch.float32
