"""The contiguous copies a CUDA kernel makes of its non-contiguous arguments (LayerNorm's,
cuDNN convolution backward's grad_output): recorded with the op by a fake run
(:func:`snsim.torchsim.record.copy_calls`), timed as strided clones and issued from C++
(:func:`snsim.torchsim.opcost.copy_ops`)."""
import pytest

torch = pytest.importorskip("torch")


def _record_layer_norm(transposed):
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from snsim.torchsim.predict import cuda_like_dispatch
    from snsim.torchsim.record import Recorder
    rec = Recorder(device_type="cpu")
    with FakeTensorMode(), cuda_like_dispatch():
        w = torch.randn(64, requires_grad=True)
        b = torch.randn(64, requires_grad=True)
        # ViT's case: [tokens, batch, 64] transposed back to batch-first (not contiguous)
        x = torch.randn(10, 4, 64, requires_grad=True)
        rec.register(w, "w"), rec.register(b, "b"), rec.register(x, "x")
        with rec.active():
            rec.mark("fwd", "F")
            xin = x.transpose(0, 1) if transposed else x
            y = F.layer_norm(xin, (64,), w, b)
            rec.mark("bwd", "B")
            y.backward(torch.ones_like(y).transpose(0, 1).contiguous().transpose(0, 1)
                       if transposed else torch.ones_like(y))
    return rec


def test_layer_norm_on_a_transposed_input_records_its_kernels_copies():
    rec = _record_layer_norm(transposed=True)
    fwd = next(op for op in rec.ops if op[1] == "native_layer_norm")
    bwd = next(op for op in rec.ops if op[1] == "native_layer_norm_backward")
    nbytes = 10 * 4 * 64 * 4                 # fp32 [4, 10, 64]
    # forward: the input's copy (read and written); backward: the input's and dY's
    assert [(c[1], c[2]) for c in fwd[8]] == [(2 * nbytes, "strided")]
    assert [c[1] for c in bwd[8]] == [2 * nbytes, 2 * nbytes]
    assert all(c[0].startswith("clone float32[4, 10, 64]") for c in fwd[8] + bwd[8])


def test_layer_norm_on_a_contiguous_input_records_no_copy():
    rec = _record_layer_norm(transposed=False)
    assert all(op[8] == () for op in rec.ops if op[1].startswith("native_layer_norm"))


def test_a_copy_is_charged_as_a_strided_clone_on_the_gpu_and_its_issue_on_the_host():
    """The op's GPU time is its own plus the clone's (the table's strided rows), its host time
    its own plus the clone's tight-loop issue times the clone family's in-network ratio."""
    from snsim.hardware.spec import load_hardware
    from snsim.kernel_table import load_host_costs, load_kernel_table
    from snsim.torchsim.opcost import copy_ops, host_issue_s, op_times_s
    rec = _record_layer_norm(transposed=True)
    hw, table, costs = load_hardware("h200"), load_kernel_table("h200"), load_host_costs("h200")
    bare = [op[:8] for op in rec.ops]
    with_copies = op_times_s(rec.ops, hw, table=table, host=False)
    without = op_times_s(bare, hw, table=table, host=False)
    k = next(i for i, op in enumerate(rec.ops) if op[1] == "native_layer_norm")
    clone_gpu = op_times_s(copy_ops(rec.ops[k]), hw, table=table, host=False)
    assert with_copies[k] == pytest.approx(without[k] + clone_gpu[0], rel=1e-12)
    assert clone_gpu[0] > 0
    host = host_issue_s(rec.ops, rec.marks, table, costs)
    host_bare = host_issue_s(bare, rec.marks, table, costs)
    inn = costs["innet"]
    ratio = inn["ratio"].get("clone", inn["ratio"]["*"])
    issue = table.issue_s("clone", **_clone_args(copy_ops(rec.ops[k])[0]))
    assert issue > 0
    assert host[k] - host_bare[k] == pytest.approx(issue * ratio, rel=1e-9)
    others = [i for i, op in enumerate(rec.ops) if not op[8]]
    assert all(with_copies[i] == without[i] and host[i] == host_bare[i] for i in others)


def _clone_args(op):
    from snsim.torchsim.opcost import _lookup_args
    from snsim.kernel_table import load_kernel_table
    fam, kw = _lookup_args(load_kernel_table("h200"), op)
    assert fam == "clone_strided"
    return {**kw, "cls": "", "dtype": "float32"}
