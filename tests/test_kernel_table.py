"""Kernel-table interpolation and the host as a stream (issue 10), on synthetic tables."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from snsim.kernel_table import KernelTable, conv_class, family_of, host_stream
from snsim.torchsim.opcost import op_times_s


def _truth(flops, nbytes):
    # a smooth "GPU": 300 TFLOP/s, 3 TB/s, 4 µs floor
    return max(flops / 300e12, nbytes / 3e12) + 4e-6


def _table(seed=0, host_step_rows=False):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(300):
        flops = float(np.exp(rng.uniform(np.log(1e6), np.log(1e13))))
        nbytes = float(np.exp(rng.uniform(np.log(1e4), np.log(1e9))))
        rows.append({"family": "convolution", "dtype": "float32", "math": "tf32",
                     "cls": "k3x3s1", "flops": flops, "bytes": nbytes, "ntensors": 0,
                     "time_s": _truth(flops, nbytes), "host_s": 5e-6, "shape": ""})
    for nb in np.geomspace(4096, 2e9, 12):
        rows.append({"family": "relu_", "dtype": "float32", "math": "float32", "cls": "",
                     "flops": 0, "bytes": nb, "ntensors": 0, "time_s": _truth(0, nb),
                     "host_s": 4e-6, "shape": ""})
    for phase in ("F", "B") if host_step_rows else ():
        rows.append({"family": "host_step", "dtype": "float32", "math": "", "cls": phase,
                     "flops": 0, "bytes": 0, "ntensors": 10, "time_s": 4e-5, "host_s": 4e-4,
                     "shape": "synthetic"})
    return KernelTable(pd.DataFrame(rows), {"kind": "synthetic"})


def test_interpolation_recovers_unseen_shapes():
    tab = _table()
    rng = np.random.default_rng(1)
    errs = []
    for _ in range(200):
        flops = float(np.exp(rng.uniform(np.log(1e7), np.log(5e12))))
        nbytes = float(np.exp(rng.uniform(np.log(1e5), np.log(5e8))))
        t, src = tab.time_s("convolution", flops=flops, nbytes=nbytes, cls="k3x3s1")
        assert src == "table"
        errs.append(abs(t / _truth(flops, nbytes) - 1))
    assert np.median(errs) < 0.05 and max(errs) < 0.35


def test_bandwidth_family_by_bytes_and_fallbacks():
    tab = _table()
    t, src = tab.time_s("relu_", nbytes=3e7)
    assert src == "table" and t == pytest.approx(_truth(0, 3e7), rel=0.05)
    t, src = tab.time_s("threshold_backward", nbytes=3e7)   # not timed: a proxy family?
    assert src == "roofline" and t is None                   # no proxy family in this table
    t, src = tab.time_s("convolution", flops=1e16, nbytes=1e9, cls="k3x3s1")
    assert src == "fitted" and t == pytest.approx(1e16 / 300e12, rel=0.2)
    assert tab.time_s("mm", flops=1e9, nbytes=1e6, math_="fp32") == (None, "roofline")


def test_names_and_conv_class():
    assert family_of("cudnn_batch_norm") == "native_batch_norm"
    assert conv_class("convolution float32[8, 32, 56, 56] float32[32, 1, 3, 3] None 2 2 1 1 "
                      "1 1 False 0 0 32") == "dwk3x3s2:c32o32hw3136"
    assert conv_class("convolution_backward float32[8, 64, 56, 56] float32[8, 64, 56, 56] "
                      "float32[64, 64, 1, 1] None 1 1 0 0 1 1 False 0 0 1 True True False"
                      ) == "k1x1s1:c64o64hw3136"


def test_host_stream_is_the_makespan_of_two_resources():
    gpu = [1.0, 0.1, 0.1, 2.0, 0.1]
    host = [0.5] * 5
    shares = host_stream(gpu, host)
    # issue at 0.5,1,1.5,2,2.5; run 0.5-1.5, 1.5-1.6, 1.6-1.7, 2.0-4.0, 4.0-4.1
    assert sum(shares) == pytest.approx(4.1)
    assert sum(host_stream(gpu, [0.0] * 5)) == pytest.approx(sum(gpu))
    assert sum(host_stream([1e-3] * 100, [1e-2] * 100)) == pytest.approx(1.0 + 1e-3)
    # a new iteration starts from idle clocks
    assert host_stream([1.0, 1.0], [2.0, 2.0], iterations=[0, 1]) == [3.0, 3.0]


def test_tables_with_host_step_rows_read_them_as_no_family():
    # tables calibrated before 2026-12-01 carry calibrate's per-phase host_step rows (the
    # zoo's host model before the in-network one): no family, no lookup changes
    old, new = _table(host_step_rows=True), _table()
    assert "host_step" not in old.families() and old.families() == new.families()
    assert old.time_s("relu_", nbytes=1e6, math_="float32") == \
        new.time_s("relu_", nbytes=1e6, math_="float32")


def test_op_times_cpu_bound_and_report():
    from snsim.hardware import load_hardware
    hw = load_hardware("h200")
    tab = _table()
    # relu_ costs 4 µs to issue in a tight loop; in-network ratio 2.5 and 10 µs per forward
    # call: 20 µs (F) and 10 µs (B) per op; no module call or autograd node marks (kinds "")
    costs = {"innet": {"ratio": {"*": 2.5}, "per_call_s": {"F": 10e-6, "B": 0.0},
                       "per_module_s": 0.0, "per_node_s": 0.0, "per_param_s": 0.0,
                       "per_read_s": 0.0}}
    marks = [("a", "F", "", 0), ("a.b", "B", "", 0)]
    small = [(0, "relu_", (0,), (), 0, 4096 * 2), (1, "relu_", (0,), (), 0, 4096 * 2)] * 50
    big = [(0, "relu_", (0,), (), 0, 2e9), (1, "relu_", (0,), (), 0, 2e9)] * 50
    rep = {}
    t_small = sum(op_times_s(small, hw, marks, table=tab, report=rep, host_costs=costs))
    assert t_small == pytest.approx(50 * 30e-6 + _truth(0, 8192), rel=0.02)
    assert rep["host_s"] == pytest.approx(50 * 30e-6) and rep["wait_s"] > 0
    assert rep["table_s"] == pytest.approx(rep["gpu_s"])
    t_big = sum(op_times_s(big, hw, marks, table=tab, host_costs=costs))
    assert t_big == pytest.approx(100 * _truth(0, 2e9) + 20e-6, rel=0.02)
    # without a table: the roofline, no host
    rep = {}
    op_times_s(small, hw, marks, table=None, report=rep)
    assert rep["roofline_s"] == pytest.approx(rep["gpu_s"]) and rep["host_s"] == 0


def test_zoo_pytorch_program_takes_table_times_and_the_host():
    from snsim.hardware import load_hardware
    from snsim.program_torch import build_torch_program
    from snsim.zoo import build_network
    rows = []
    for fam in ("convolution", "convolution_backward", "native_batch_norm",
                "native_batch_norm_backward", "relu_", "threshold_backward",
                "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "add_", "mean",
                "div", "addmm", "mm", "sum", "_log_softmax", "nll_loss_forward",
                "nll_loss_backward", "_log_softmax_backward_data", "_foreach_add_"):
        for nb in np.geomspace(1e3, 1e10, 15):
            rows.append({"family": fam, "dtype": "float32",
                         "math": {"mm": "fp32", "addmm": "fp32"}.get(fam, "tf32"), "cls": "",
                         "flops": nb * 100 if "conv" in fam or "mm" in fam else 0,
                         "bytes": nb, "ntensors": 100 if "foreach" in fam else 0,
                         "time_s": 1e-6 + nb / 1e12, "host_s": 5e-6, "shape": ""})
    hw = load_hardware("h200")
    G = build_network("resnet18", batch=2, twin=True)
    fast = KernelTable(pd.DataFrame(rows))
    p = build_torch_program(G, hardware=hw, kernel_table="none")
    q = build_torch_program(G, hardware=hw, kernel_table=fast)
    assert [s.name for s in p.steps] == [s.name for s in q.steps]
    t_q = sum(s.time_s for s in q.steps)
    assert t_q != pytest.approx(sum(s.time_s for s in p.steps))
    # every aten call 1 ms to issue: each forward step that launches kernels costs the host
    # at least that (the preset's in-network ratios of these families are >= 1), the GPU waits
    slow_host = pd.DataFrame([{**r, "host_s": 1e-3} for r in rows])
    r = build_torch_program(G, hardware=hw, kernel_table=KernelTable(slow_host))
    n_f = sum(1 for s in r.steps if s.phase == "F" and s.time_s > 0)
    assert sum(s.time_s for s in r.steps) > n_f * 1e-3 > t_q     # CPU-bound: the host's pace


def test_copy_model_fits_rates_by_size():
    rows = [{"family": "copy_h2d_pinned", "dtype": "float32", "math": "", "cls": "",
             "flops": 0, "bytes": nb, "ntensors": 0, "time_s": 10e-6 + nb / 50e9,
             "host_s": 5e-6, "shape": ""} for nb in (4096, 2**20, 2**28)]
    m = KernelTable(pd.DataFrame(rows)).copy_model()["h2d_pinned"]
    assert m["bytes_per_s"] == pytest.approx(2**28 / (10e-6 + 2**28 / 50e9))
    effs = [e for _, e in m["efficiency_by_bytes"]]
    assert effs == sorted(effs) and effs[-1] == 1.0 and effs[0] < 0.01


def _bn_time(c, hw, nbytes):
    # a synthetic GPU whose BN rate depends on the channel count and spatial size, not bytes
    # alone: few channels over a large image reduce slowly (the 64-channel calibration trap)
    return nbytes / 3e12 * (1 + 4 * 64 / c * (hw / 12544) ** 0.5) + 5e-6


def test_batch_norm_lookup_uses_channels_and_spatial_size():
    from snsim.kernel_table import bn_class
    rows = []
    for fam, k in (("native_batch_norm", 2), ("native_batch_norm_backward", 3)):
        for c in (32, 64, 128, 256, 512, 1024, 2048):
            for side in (7, 14, 28, 56, 112):
                for n in (16, 64, 256):
                    nb = k * n * c * side * side * 4
                    rows.append({"family": fam, "dtype": "float32", "math": "float32",
                                 "cls": f"c{c}hw{side * side}", "flops": 0, "bytes": nb,
                                 "ntensors": 0, "time_s": _bn_time(c, side * side, nb),
                                 "host_s": 5e-6, "shape": ""})
    tab = KernelTable(pd.DataFrame(rows), {})
    # ResNet-50 b128 layers: same bytes, different shapes, different times
    for c, side in ((64, 112), (256, 56), (512, 28), (2048, 7), (96, 56), (1000, 14)):
        sig = f"native_batch_norm float32[128, {c}, {side}, {side}] float32[{c}]"
        assert bn_class(sig) == f"c{c}hw{side * side}"
        nb = 2 * 128 * c * side * side * 4
        t, src = tab.time_s("native_batch_norm", nbytes=nb, cls=bn_class(sig),
                            dtype="float32")
        assert src == "table"
        assert t == pytest.approx(_bn_time(c, side * side, nb), rel=0.15), (c, side)
    # a measured class at a batch between its rows reads that class's rows alone: another
    # channel count at the call's bytes reduces over another length (ResNet-50 b192 bf16's
    # batch norms were 17 % over their own b64 and b256 rows through 48- and 32-channel rows)
    for c, side in ((64, 56), (32, 112), (256, 14)):
        nb = 2 * 192 * c * side * side * 4
        t, src = tab.time_s("native_batch_norm", nbytes=nb, cls=f"c{c}hw{side * side}",
                            dtype="float32")
        assert t == pytest.approx(_bn_time(c, side * side, nb), rel=0.03), (c, side)
    # an old table's BN rows (no class) still answer a classed query by bytes
    old = KernelTable(pd.DataFrame([dict(r, cls="") for r in rows]), {})
    t, src = old.time_s("native_batch_norm", nbytes=2e8, cls="c64hw3136", dtype="float32")
    assert src == "table" and t > 0


def _bn_length_time(c, n, hw):
    # cuDNN's batch norm by reduction length: one read of N x H*W per channel up to 16,384
    # elements, a multi-pass kernel at 3x the time per element beyond
    per = 2e-12 if n * hw <= 16384 else 6e-12
    return c * n * hw * 2 * per + 3e-6


def test_batch_norm_lookup_reads_the_reduction_length():
    # DeepLabV3 b4 at 60 x 60: N x H*W = 14,400, a map no row has. Rows at 56 x 56 and b16
    # reduce over 50,176 (the slow kernel); rows of 28 x 28 at b16 over 12,544 (the fast one)
    rows = []
    for c in (64, 256, 1024):
        for side in (14, 28, 56, 112):
            for n in (16, 64, 256):
                rows.append({"family": "native_batch_norm_backward", "dtype": "float16",
                             "math": "float16", "cls": f"c{c}hw{side * side}", "flops": 0,
                             "bytes": 3 * n * c * side * side * 2, "ntensors": 0,
                             "time_s": _bn_length_time(c, n, side * side), "host_s": 5e-6,
                             "shape": ""})
    tab = KernelTable(pd.DataFrame(rows), {})
    for c in (256, 1024):
        t, src = tab.time_s("native_batch_norm_backward", nbytes=3 * 4 * c * 3600 * 2,
                            cls=f"c{c}hw3600", dtype="float16", math_="float16")
        assert src == "table"
        # nearer the fast kernel's time than the slow one's (interpolation across a step in
        # kernel choice cannot be exact; by bytes and map the lookup read the slow kernel's)
        fast = _bn_length_time(c, 4, 3600)
        slow = c * 4 * 3600 * 2 * 6e-12 + 3e-6
        assert fast * 0.9 < t < (fast + slow) / 2, c


def test_opcost_passes_the_bn_class():
    from snsim.torchsim.opcost import _table_time

    class Spy:
        def time_s(self, fam, **kw):
            self.seen = (fam, kw["cls"])
            return 1.0, "table"
    spy = Spy()
    op = (0, "cudnn_batch_norm_backward", (), (), 0, 1000,
          "cudnn_batch_norm_backward float32[8, 256, 14, 14] float32[8, 256, 14, 14]")
    _table_time(spy, op)
    assert spy.seen == ("native_batch_norm_backward", "c256hw196")


def test_slice_backward_is_a_fill_and_a_strided_copy():
    # ATen's slice_backward: zeros of the input's size, then the gradient copied into the
    # slice. Timed as those two kernels from the table's fill_ and clone_strided rows, not as
    # one contiguous copy of the op's bytes
    from snsim.torchsim.opcost import _table_time
    rows = []
    for fam, per_byte in (("fill_", 1 / 3e12), ("clone_strided", 1 / 2e12), ("clone", 1 / 4e12)):
        for nb, dtype in itertools.product(np.geomspace(4096, 2e9, 12), ("bfloat16", "float32")):
            rows.append({"family": fam, "dtype": dtype, "math": "", "cls": "",
                         "flops": 0, "bytes": nb, "ntensors": 0, "time_s": nb * per_byte + 2e-6,
                         "host_s": 4e-6, "shape": ""})
    tab = KernelTable(pd.DataFrame(rows), {})
    grad = 8 * 4 * 1568 * 96 * 2                 # MViT's attention slice, bf16
    out = 8 * 4 * 1569 * 96 * 2
    op = (0, "slice_backward", (), (), 0, grad + out,
          "slice_backward bfloat16[8, 4, 1568, 96] 8 4 1569 96 2 1 9223372036854775807 1")
    t, src = _table_time(tab, op)
    want = (out / 3e12 + 2e-6) + (2 * grad / 2e12 + 2e-6)
    assert src == "table" and t == pytest.approx(want, rel=0.1)   # interpolated rows
    # a recording without its signature (made before): one copy of its bytes, as before
    t_old, _ = _table_time(tab, op[:6] + ("",))
    assert t_old < 0.8 * t


def test_embedding_backward_is_a_fill_of_its_table_and_a_scatter_of_its_rows():
    # embedding_dense_backward zeroes the whole gradient table, then scatters the gradient's
    # rows: a synthetic GPU whose scatter costs 25 ns an index, whose fill runs at 3 TB/s.
    # Calibrate's rows (v d n) at other tables: a call is its table's fill plus the scatter
    # of rows at its index count; by bytes alone a small table's many indices and a large
    # table's few were one lookup
    from snsim.torchsim.opcost import _table_time

    def fill(nb):
        return nb / 3e12 + 2e-6

    def scatter(n):
        return 25e-9 * n + 3e-6
    rows = [{"family": "fill_", "dtype": "float32", "math": "", "cls": "", "flops": 0,
             "bytes": nb, "ntensors": 0, "time_s": fill(nb), "host_s": 4e-6, "shape": ""}
            for nb in np.geomspace(4096, 4e9, 14)]
    for v, n in ((3000, 500), (60000, 500), (4000, 2000), (90000, 2000), (5000, 8000),
                 (70000, 8000)):
        rows.append({"family": "embedding_dense_backward", "dtype": "float32", "math": "fp32",
                     "cls": "", "flops": 0, "bytes": n * 8 + n * 768 * 4 + v * 768 * 4,
                     "ntensors": 0, "time_s": fill(v * 768 * 4) + scatter(n),
                     "host_s": 9e-6, "shape": f"v{v} d768 n{n}"})
    tab = KernelTable(pd.DataFrame(rows), {})
    t, src = tab.embedding_backward_s(2000, 768, 50257)
    assert src == "table"
    assert t == pytest.approx(fill(50257 * 768 * 4) + scatter(2000), rel=0.02)
    # a recorded call reads it through its signature; the zoo's layer the same way
    op = (0, "embedding_dense_backward", (), (), 0, 2000 * (8 + 768 * 4) + 50257 * 768 * 4,
          "embedding_dense_backward float32[4, 500, 768] int64[4, 500] 50257 -1 False")
    assert _table_time(tab, op) == (t, src)
    # a table without such rows: None, and the call falls back to the rows by bytes
    bare = KernelTable(pd.DataFrame(rows[:14]), {})
    assert bare.embedding_backward_s(2000, 768, 50257) == (None, "roofline")


def _ln_time(d, r, nbytes):
    # a synthetic GPU whose layer norm runs one block per row: short rows waste the block
    return nbytes / 3e12 * (1 + 8 * (96 / d) ** 1.5) + 4e-6


def test_layer_norm_and_sum_rows_lookup_uses_row_length_and_count():
    """Layer norm and ``sum_rows`` rows are read by their row length D and row count R
    (class ``d<D>r<R>``), not bytes alone: on a GPU where short rows run slower, ConvNeXt's
    D = 96 on 200k rows and a transformer's D = 768 on 25k rows -- the same bytes -- get
    their own times."""
    from snsim.kernel_table import ln_class, sum_rows_class
    rows = []
    for fam, k in (("native_layer_norm", 2), ("native_layer_norm_backward", 3),
                   ("sum_rows", 1)):
        for d in (64, 96, 128, 192, 384, 768, 1536, 4096):
            for r in (2 ** p for p in range(6, 19, 2)):
                nb = k * d * r * 4
                rows.append({"family": fam, "dtype": "float32", "math": "float32",
                             "cls": f"d{d}r{r}", "flops": 0, "bytes": nb, "ntensors": 0,
                             "time_s": _ln_time(d, r, nb), "host_s": 5e-6, "shape": ""})
    tab = KernelTable(pd.DataFrame(rows), {})
    short = "native_layer_norm float32[64, 56, 56, 96] 96 float32[96] float32[96] 1e-06"
    long_ = "native_layer_norm float32[32, 784, 768] 768 float32[768] float32[768] 1e-06"
    times = {}
    for sig in (short, long_):
        cls = ln_class(sig)
        d, r = (int(v) for v in cls[1:].split("r"))
        nb = 2 * d * r * 4
        times[d], src = tab.time_s("native_layer_norm", nbytes=nb, cls=cls, dtype="float32")
        assert src == "table"
        assert times[d] == pytest.approx(_ln_time(d, r, nb), rel=0.15), sig
    assert times[96] > 2 * times[768]      # same bytes (200704 x 96 = 25088 x 768 elements)
    # a Linear's grad_bias and a channels-last tensor summed over all but its channels
    cls = sum_rows_class("sum float32[64, 96, 56, 56] 0 2 3 True")
    assert cls == "d96r200704" == sum_rows_class("sum float32[200704, 96] 0 True")
    t, src = tab.time_s("sum_rows", nbytes=200704 * 96 * 4, cls=cls, dtype="float32")
    assert src == "table" and t == pytest.approx(_ln_time(96, 200704, 200704 * 96 * 4),
                                                 rel=0.15)


def test_row_classes_of_other_calls_are_empty():
    from snsim.kernel_table import ln_class, sum_rows_class
    # group norm maps to layer norm's family but is not a layer norm over rows
    assert ln_class("native_group_norm float32[8, 64, 28, 28] float32[64] float32[64] 8 64 "
                    "784 32 1e-05") == ""
    assert ln_class("native_layer_norm float32[4, 10, 12] 10 12 None None 1e-05") == "d120r4"
    assert sum_rows_class("sum float32[64, 1000]") == ""                 # every element
    assert sum_rows_class("sum float32[8, 16] 0 1 False") == ""          # every dim
    assert sum_rows_class("sum float32[8, 16, 32] -1 True") == "d128r32"


def test_opcost_reads_sum_rows_by_the_recorded_layout_and_falls_back_to_sum():
    from snsim.torchsim.opcost import _lookup_args

    class Tab:
        def __init__(self, fams):
            self.fams = fams

        def families(self):
            return self.fams
    sig = "sum float32[12544, 1536] 0 True"
    rows_op = (0, "sum", (), (), 0, 12544 * 1536 * 4, sig, "rows")
    fam, kw = _lookup_args(Tab(["sum", "sum_rows"]), rows_op)
    assert (fam, kw["cls"]) == ("sum_rows", "d1536r12544")
    fam, kw = _lookup_args(Tab(["sum"]), rows_op)        # a table before sum_rows
    assert (fam, kw["cls"]) == ("sum", "")
    nchw = (0, "sum", (), (), 0, 1, "sum float32[64, 96, 56, 56] 0 2 3 True", "")
    assert _lookup_args(Tab(["sum", "sum_rows"]), nchw)[0] == "sum"
    ln = (0, "native_layer_norm", (), (), 0, 1,
          "native_layer_norm float32[8, 197, 768] 768 float32[768] float32[768] 1e-06", "")
    assert _lookup_args(Tab(["native_layer_norm"]), ln)[1]["cls"] == "d768r1576"


def test_pools_read_rows_of_their_window_and_stride():
    """A 3x3 average pool at stride 1 reads its own class's rows (here 9x the time per byte
    of the 2x2 / 2 rows, made up); a table without avg_pool2d_backward reads the max pool's
    backward rows for it; opcost passes the class of the recorded call."""
    from snsim.kernel_table import pool_class
    from snsim.torchsim.opcost import _lookup_args
    rows = [{"family": fam, "dtype": "float32", "math": "float32", "cls": cls, "flops": 0,
             "bytes": nb, "ntensors": 0, "time_s": 2e-6 + k * nb / 3e12, "host_s": 5e-6,
             "shape": ""}
            for fam in ("avg_pool2d", "avg_pool2d_backward")
            for cls, k in (("k3x3s1", 9.0), ("k2x2s2", 1.0))
            for nb in np.geomspace(1e5, 1e10, 12)]
    tab = KernelTable(pd.DataFrame(rows))
    sig = "avg_pool2d float32[128, 192, 35, 35] 3 3 1 1 1 1"
    nb = 2 * 128 * 192 * 35 * 35 * 4
    t, src = tab.time_s("avg_pool2d", nbytes=nb, cls=pool_class(sig), dtype="float32")
    assert src == "table" and t == pytest.approx(2e-6 + 9 * nb / 3e12, rel=0.05)
    t2, _ = tab.time_s("avg_pool2d", nbytes=nb, cls="k2x2s2", dtype="float32")
    assert t > 5 * t2
    op = (0, "avg_pool2d_backward", (), (), 0, nb,
          "avg_pool2d_backward float32[8, 4, 9, 9] float32[8, 4, 9, 9] 3 3 1 1 1 1 False "
          "True None", "")

    class Tab:
        def __init__(self, fams):
            self.fams = fams

        def families(self):
            return self.fams
    assert _lookup_args(Tab(["avg_pool2d_backward"]), op)[0] == "avg_pool2d_backward"
    assert _lookup_args(Tab(["avg_pool2d_backward"]), op)[1]["cls"] == "k3x3s1"
    assert _lookup_args(Tab(["max_pool2d_with_indices_backward"]), op)[0] == \
        "max_pool2d_with_indices_backward"


def test_half_attention_reads_cudnn_rows_and_flash_without_them():
    """A CPU recording names its own attention kernel; in half precision CUDA runs cuDNN's
    attention on Hopper, so the call reads sdpa_cudnn rows, or flash's where a table has
    none; fp32 stays memory-efficient."""
    from snsim.torchsim.opcost import _lookup_args

    class Tab:
        def __init__(self, fams):
            self.fams = fams

        def families(self):
            return self.fams
    sig = ("_scaled_dot_product_flash_attention_for_cpu bfloat16[4, 12, 512, 64] "
           "bfloat16[4, 12, 512, 64] bfloat16[4, 12, 512, 64] 0.0 True")
    op = (0, "_scaled_dot_product_flash_attention_for_cpu", (), (), 1e9, 1e7, sig, "")
    assert _lookup_args(Tab(["sdpa_cudnn", "sdpa_flash"]), op)[0] == "sdpa_cudnn"
    assert _lookup_args(Tab(["sdpa_flash"]), op)[0] == "sdpa_flash"
    op32 = (0, op[1], (), (), 1e9, 1e7, sig.replace("bfloat16", "float32"), "")
    assert _lookup_args(Tab(["sdpa_cudnn", "sdpa_efficient"]), op32)[0] == "sdpa_efficient"


def _mm_rows(cls, tflops, dtype="bfloat16", math_="bf16"):
    return [{"family": "mm", "dtype": dtype, "math": math_, "cls": cls, "flops": f,
             "bytes": 1e7, "ntensors": 0, "time_s": f / (tflops * 1e12), "host_s": 5e-6,
             "shape": ""} for f in np.geomspace(1e9, 1e12, 8)]


def test_aligned_matmuls_use_aligned_rows_and_the_other_half_type_only_as_fallback():
    """An aligned half-precision GEMM takes the aligned rows (here 600 TFLOP/s, unaligned
    100); a table without aligned rows cannot place it (the roofline), while fp32 ones read
    such a table without classes. fp16 queries read bf16 rows only while the table has no fp16
    row of their class; with fp16 rows of it (here 800 TFLOP/s, made-up rates) those."""
    both = KernelTable(pd.DataFrame(_mm_rows("a8", 600) + _mm_rows("", 100)))
    only = KernelTable(pd.DataFrame(_mm_rows("", 100)))
    f = 3e10
    for dtype, math_ in (("bfloat16", "bf16"), ("float16", "fp16")):
        t, src = both.time_s("mm", flops=f, nbytes=1e7, cls="a8", dtype=dtype, math_=math_)
        assert src == "table" and f / t / 1e12 == pytest.approx(600, rel=0.02)
        t, _ = both.time_s("mm", flops=f, nbytes=1e7, cls="", dtype=dtype, math_=math_)
        assert f / t / 1e12 == pytest.approx(100, rel=0.02)
        assert only.time_s("mm", flops=f, nbytes=1e7, cls="a8", dtype=dtype,
                           math_=math_) == (None, "roofline")
    # fp16 rows of the unaligned class only: an aligned fp16 call falls back to bf16's a8 rows,
    # an unaligned one reads its own fp16 rows (300), bf16 calls never read fp16 rows
    mixed = KernelTable(pd.DataFrame(_mm_rows("a8", 600) + _mm_rows("", 100)
                                     + _mm_rows("", 300, "float16", "fp16")))
    rate = {(d, m, c): f / mixed.time_s("mm", flops=f, nbytes=1e7, cls=c, dtype=d,
                                         math_=m)[0] / 1e12
            for d, m in (("bfloat16", "bf16"), ("float16", "fp16")) for c in ("a8", "")}
    assert rate == pytest.approx({("bfloat16", "bf16", "a8"): 600, ("bfloat16", "bf16", ""): 100,
                                  ("float16", "fp16", "a8"): 600, ("float16", "fp16", ""): 300},
                                 rel=0.02)
    own = KernelTable(pd.DataFrame(_mm_rows("a8", 600) + _mm_rows("a8", 800, "float16", "fp16")))
    t, src = own.time_s("mm", flops=f, nbytes=1e7, cls="a8", dtype="float16", math_="fp16")
    assert src == "table" and f / t / 1e12 == pytest.approx(800, rel=0.02)
    fp32 = KernelTable(pd.DataFrame(_mm_rows("", 40, "float32", "fp32")))
    t, src = fp32.time_s("mm", flops=f, nbytes=1e7, cls="a8", dtype="float32", math_="fp32")
    assert src == "table" and f / t / 1e12 == pytest.approx(40, rel=0.02)


def _conv_rows(cls, shape, us, dtype="bfloat16", math_="bf16", host_us=30.0):
    """Made-up conv rows at a fixed rate over a range of sizes: ``us`` per call at 1e10
    FLOPs (the time relative to the roofline is the same for every row, so the lookup's
    mean of the nearest rows says which rows it read, whatever its weights)."""
    return [{"family": "convolution", "dtype": dtype, "math": math_, "cls": cls, "flops": f,
             "bytes": f / 100, "ntensors": 0, "time_s": us * 1e-6 * f / 1e10,
             "host_s": host_us * 1e-6, "shape": shape} for f in np.geomspace(1e9, 1e11, 6)]


def test_conv_reads_its_own_half_type_and_falls_back_per_grouping():
    """fp16 dense convs read the fp16 rows (made-up 100 us; bf16's 200 us) once the table has
    them; an fp16 depthwise call, with no fp16 depthwise row, reads bf16's depthwise rows
    (50 us) rather than fp16's dense ones."""
    t = KernelTable(pd.DataFrame(
        _conv_rows("k3x3s1", "x g1", 200) + _conv_rows("dwk3x3s1", "x g64", 50)
        + _conv_rows("k3x3s1", "x g1", 100, "float16", "fp16")))
    f = 1e10
    for dtype, math_, cls, us in (("float16", "fp16", "k3x3s1", 100),
                                  ("bfloat16", "bf16", "k3x3s1", 200),
                                  ("float16", "fp16", "dwk3x3s1", 50)):
        got, src = t.time_s("convolution", flops=f, nbytes=f / 100, cls=cls, dtype=dtype,
                            math_=math_)
        # rows 2x apart: 5% tells which were read (interpolation over sizes is not exact)
        assert src == "table" and got == pytest.approx(us * 1e-6, rel=0.05), (dtype, cls)


def test_grouped_conv_lookup_weighs_the_group_count():
    """Rows at 4 and 32 groups (made-up host costs 40 and 1000 us per call) of the same FLOPs
    and bytes (the 32-group rows at 8x the batch: conv_flops counts C_in / groups): a 4-group
    call takes the 4-group rows' cost, a 32-group call the 32-group rows', and the class the
    recorder gives such a call carries its count."""
    rows = []
    for g, host_us, batches in ((4, 40, (1, 2, 4, 8, 16, 32)), (32, 1000, (8, 16, 32, 64, 128,
                                                                            256))):
        for n in batches:
            f = 2 * n * 128 * 784 * (128 // g) * 9      # conv_flops of the shape below
            rows.append({"family": "convolution", "dtype": "float32", "math": "tf32",
                         "cls": "gk3x3s1", "flops": f, "bytes": f / 100, "ntensors": 0,
                         "time_s": 60e-6, "host_s": host_us * 1e-6,
                         "shape": f"x[{n}, 128, 28, 28] w[128, {128 // g}, 3, 3] s1 g{g} bias0"})
    t = KernelTable(pd.DataFrame(rows))
    f = 2 * 4 * 128 * 784 * 32 * 9        # batch 4 at 4 groups = batch 32 at 32 groups
    host = {g: t.issue_s("convolution", flops=f, nbytes=f / 100, cls=f"g{g}k3x3s1",
                         dtype="float32", math_="tf32") for g in (4, 32)}
    assert host[4] == pytest.approx(40e-6, rel=0.05)
    assert host[32] == pytest.approx(1000e-6, rel=0.05)
    sig = ("convolution float32[8, 128, 28, 28] float32[128, 32, 3, 3] None 1 1 1 1 1 1 "
           "False 0 0 4")
    assert conv_class(sig) == "g4k3x3s1:c128o128hw784"


def test_grouped_conv_lookup_weighs_the_channels_per_group(monkeypatch):
    """Made-up TF32 grouped 3x3 rows: 16 channels a group at 10 TFLOP/s (48 channels in 3
    groups, 80 in 5), 24 a group at 1 TFLOP/s (72 in 3, 48 in 2) -- cuDNN's engine follows the
    channels each group holds (RegNetY's 16 vs the 24 of other stage rows, kernel_table's
    GROUP_WIDTH_WEIGHT). A 64-channel 4-group call (16 a group) reads the 16-a-group rows,
    though the 72-channel 3-group rows are as near in channels and count; without the term it
    reads them."""
    import snsim.kernel_table as kt
    rows = []
    for c, g, rate in ((48, 3, 10e12), (80, 5, 10e12), (72, 3, 1e12), (48, 2, 1e12)):
        for n in (16, 64, 256):
            f = 2 * n * c * 3136 * (c // g) * 9
            rows.append({"family": "convolution", "dtype": "float32", "math": "tf32",
                         "cls": "gk3x3s1", "flops": f, "bytes": 4 * 2 * n * c * 3136,
                         "ntensors": 0, "time_s": f / rate, "host_s": 3e-5,
                         "shape": f"stage x[{n}, {c}, 56, 56] w[{c}, {c // g}, 3, 3] s1 "
                                  f"p[1, 1] g{g} bias0"})
    tab = KernelTable(pd.DataFrame(rows))
    f = 2 * 64 * 64 * 3136 * 16 * 9

    def lookup():
        return tab.time_s("convolution", flops=f, nbytes=4 * 2 * 64 * 64 * 3136,
                          cls="g4k3x3s1:c64o64hw3136", math_="tf32")
    t, src = lookup()
    assert src == "table" and t == pytest.approx(f / 10e12, rel=0.15)
    monkeypatch.setattr(kt, "GROUP_WIDTH_WEIGHT", 0.0)
    assert lookup()[0] > 2 * f / 10e12


def test_fp16_batch_norm_reads_cudnn_fp32_rows_at_its_shape_not_bf16_native_rows():
    """Autocast's fp16 batch norm runs in cuDNN (torch._batch_norm_impl_index), bf16 in ATen's
    native kernels: without fp16 rows, an fp16 call reads the fp32 rows of its shape (their
    bytes: twice its own), never bf16's. Made-up rates: fp32 1 TB/s, bf16 0.3 TB/s."""
    rows = []
    for dtype, el, rate in (("float32", 4, 1e12), ("bfloat16", 2, 0.3e12)):
        for n in (16, 64, 256):
            nb = 2 * n * 256 * 3136 * el
            rows.append({"family": "native_batch_norm", "dtype": dtype, "math": dtype,
                         "cls": "c256hw3136", "flops": 0, "bytes": nb, "ntensors": 0,
                         "time_s": nb / rate, "host_s": 5e-6, "shape": ""})
    tab = KernelTable(pd.DataFrame(rows), {})
    nb16 = 2 * 64 * 256 * 3136 * 2
    fp32_same_shape_s = 2 * nb16 / 1e12
    t, src = tab.time_s("native_batch_norm", nbytes=nb16, cls="c256hw3136", dtype="float16")
    assert src == "table" and t == pytest.approx(fp32_same_shape_s, rel=1e-6)
    t, _ = tab.time_s("native_batch_norm", nbytes=nb16, cls="c256hw3136", dtype="bfloat16")
    assert t == pytest.approx(nb16 / 0.3e12, rel=1e-6)
    # with fp16 rows of its own (made-up 1.5 TB/s), an fp16 call reads those
    own = KernelTable(pd.DataFrame(rows + [dict(r, dtype="float16", math="float16",
                                                time_s=r["bytes"] / 1.5e12)
                                           for r in rows if r["dtype"] == "bfloat16"]), {})
    t, _ = own.time_s("native_batch_norm", nbytes=nb16, cls="c256hw3136", dtype="float16")
    assert t == pytest.approx(nb16 / 1.5e12, rel=1e-6)


def test_fitted_efficiency_is_per_grouping():
    """Far from every row (beyond a factor 8), a depthwise call takes the depthwise rows'
    fitted efficiency, not the dense rows' (made-up: dense at the reference roofline, depthwise
    20x slower), and a dense call the dense rows'."""
    rows = []
    for cls, slow in (("k3x3s1", 1.0), ("dwk3x3s1", 20.0)):
        for f in np.geomspace(1e10, 1e11, 4):
            rows.append({"family": "convolution", "dtype": "float32", "math": "tf32",
                         "cls": cls, "flops": f, "bytes": f / 100, "ntensors": 0,
                         "time_s": slow * max(f / 1e15, f / 100 / 5e12), "host_s": 3e-5,
                         "shape": ""})
    t = KernelTable(pd.DataFrame(rows))
    f = 1e14     # 1000x the largest row
    ref = max(f / 1e15, f / 100 / 5e12)
    dense, src = t.time_s("convolution", flops=f, nbytes=f / 100, cls="k3x3s1", math_="tf32")
    dw, src_dw = t.time_s("convolution", flops=f, nbytes=f / 100, cls="dwk3x3s1", math_="tf32")
    assert src == src_dw == "fitted"
    assert dense == pytest.approx(ref, rel=1e-6) and dw == pytest.approx(20 * ref, rel=1e-6)


def test_attention_rows_are_interpolated_not_fitted():
    """calibrate names an attention row's direction in its class ("fwd"/"bwd"), which the
    family already says; a recorded call (no class) near a row reads the table."""
    rows = [{"family": "sdpa_flash_backward", "dtype": "bfloat16", "math": "bf16", "cls": "bwd",
             "flops": f, "bytes": f / 100, "ntensors": 0, "time_s": f / 300e12, "host_s": 1e-4,
             "shape": ""} for f in np.geomspace(1e9, 1e12, 6)]
    t, src = KernelTable(pd.DataFrame(rows)).time_s(
        "sdpa_flash_backward", flops=1e10, nbytes=1e8, dtype="bfloat16", math_="bf16")
    assert src == "table" and t == pytest.approx(1e10 / 300e12, rel=0.05)


def test_conv_lookup_weighs_channels_and_map_size():
    """Two 1x1 layers within a factor 3 in FLOPs and bytes (made-up: 1024->256 on 14x14 at
    60 us, 320->1280 on 7x7 at 110 us per batch 96, rows at batches 64 and 128): a batch-96 call
    of the first reads its own layer's rows (without the channel/map distance the other
    layer's rows pull it 10%+ off)."""
    rows = []
    for (c, co, hw, us) in ((1024, 256, 196, 60.0), (320, 1280, 49, 110.0)):
        side = int(hw ** 0.5)
        for n in (64, 128):
            f = 2 * n * hw * c * co
            rows.append({"family": "convolution", "dtype": "float32", "math": "tf32",
                         "cls": "k1x1s1", "flops": f, "bytes": 4 * (n * hw * (c + co) + c * co),
                         "ntensors": 0, "time_s": us * 1e-6 * n / 96, "host_s": 3e-5,
                         "shape": f"net x[{n}, {c}, {side}, {side}] w[{co}, {c}, 1, 1] s1"})
    t = KernelTable(pd.DataFrame(rows))
    n = 96
    sig = ("convolution float32[96, 1024, 14, 14] float32[256, 1024, 1, 1] None 1 1 0 0 1 1 "
           "False 0 0 1")
    f, nb = 2 * n * 196 * 1024 * 256, 4 * (n * 196 * (1024 + 256) + 1024 * 256)
    got, src = t.time_s("convolution", flops=f, nbytes=nb, cls=conv_class(sig), math_="tf32")
    assert src == "table" and got == pytest.approx(60e-6, rel=0.1)


def test_a_3d_convolution_reads_the_3d_rows_of_its_kernel():
    """A video model's 3x3x3 convolution (r3d_18's layer1, fp16 b16) among made-up 2-D 3x3
    rows at 100 us and 3-D 3x3x3 rows at 300 us per 1e10 FLOPs, of the same FLOPs and bytes:
    it reads the 3-D rows (its class, ``k3x3x3s1``, and D*H*W as the map size); a 2-D 3x3 call
    of the same FLOPs reads the 2-D ones."""
    sig3 = ("convolution float16[16, 64, 16, 56, 56] float16[64, 64, 3, 3, 3] None 1 1 1 1 1 1 "
            "1 1 1 False 0 0 0 1")
    sig2 = "convolution float16[16, 64, 224, 224] float16[64, 64, 3, 3] None 1 1 1 1 1 1 False 0 0 1"
    assert conv_class(sig3) == "k3x3x3s1:c64o64hw50176"
    assert conv_class(sig2) == "k3x3s1:c64o64hw50176"
    # the shapes give the maps and channels but no stride, so the made-up FLOPs stand (a row
    # with its full geometry is counted from it: test_calibrate_rows_count_flops_as_...)
    t = KernelTable(pd.DataFrame(
        _conv_rows("k3x3s1", "net x[16, 64, 224, 224] w[64, 64, 3, 3]", 100.0, "float16", "fp16")
        + _conv_rows("k3x3x3s1", "net3d x[16, 64, 16, 56, 56] w[64, 64, 3, 3, 3]",
                     300.0, "float16", "fp16")))
    f = 1e10
    got3, src = t.time_s("convolution", flops=f, nbytes=f / 100, cls=conv_class(sig3),
                         dtype="float16", math_="fp16")
    got2, _ = t.time_s("convolution", flops=f, nbytes=f / 100, cls=conv_class(sig2),
                       dtype="float16", math_="fp16")
    assert src == "table"
    assert got3 == pytest.approx(300e-6, rel=0.05) and got2 == pytest.approx(100e-6, rel=0.05)


# -- a convolution's bias (conv_bias_add / conv_bias_grad) ------------------------------------
# SqueezeNet-like layer: [256, 16, 55, 55] -> 64 channels, 3x3, pad 1: output [256, 64, 55, 55]
# = 49,561,600 bf16 elements; the add reads and writes it and reads the 64-element bias:
# (2 * 49,561,600 + 64) * 2 B = 198,246,528 B; grad_bias reads grad_output and writes 64:
# (49,561,600 + 64) * 2 B = 99,123,328 B
_SIG_FWD = ("convolution bfloat16[256, 16, 55, 55] bfloat16[64, 16, 3, 3] {bias} 1 1 1 1 1 1 "
            "False 0 0 1")
_SIG_BWD = ("convolution_backward bfloat16[256, 64, 55, 55] bfloat16[256, 16, 55, 55] "
            "bfloat16[64, 16, 3, 3] {sizes} 1 1 1 1 1 1 False 0 0 1 True True {gb}")
ADD_BYTES, GRAD_BYTES = 198_246_528, 99_123_328


def _biasfree_conv_rows(math_="bf16", dtype="bfloat16", shape=""):
    rng = np.random.default_rng(3)
    rows = []
    for fam in ("convolution", "convolution_backward"):
        for _ in range(200):
            flops = float(np.exp(rng.uniform(np.log(1e9), np.log(1e13))))
            nbytes = float(np.exp(rng.uniform(np.log(1e6), np.log(1e9))))
            rows.append({"family": fam, "dtype": dtype, "math": math_, "cls": "k3x3s1",
                         "flops": flops, "bytes": nbytes, "ntensors": 0,
                         "time_s": _truth(flops, nbytes), "host_s": 5e-6, "shape": shape})
    return rows


def _bw_rows(family, bytes_per_s, cls="", dtype="bfloat16"):
    # time proportional to bytes above the 2 us floor (1e7 B / 5e12 B/s): the lookup's ratio to
    # its reference is constant, so interpolation returns bytes / rate exactly
    return [{"family": family, "dtype": dtype, "math": dtype, "cls": cls, "flops": 0,
             "bytes": nb, "ntensors": 0, "time_s": nb / bytes_per_s, "host_s": 8e-6,
             "shape": ""} for nb in np.geomspace(1e7, 2e9, 9)]


def _op(sig, name="convolution"):
    return (0, name, (), (), 2 * 256 * 64 * 3025 * 16 * 9, 3e8, sig)


def test_conv_lookup_ignores_rows_timed_with_a_bias():
    """Rows timed with their bias (shape ``bias1``, tables before 2026-11-30) include the add:
    at read they are dropped, so a 10x slower bias1 copy of every row changes nothing."""
    rows = _biasfree_conv_rows(math_="tf32", dtype="float32", shape="x[...] bias0")
    slow = [dict(r, time_s=10 * r["time_s"], shape="x[...] bias1") for r in rows]
    tab = KernelTable(pd.DataFrame(rows + slow))
    for flops, nbytes in ((3e11, 5e7), (2e12, 3e8)):
        t, src = tab.time_s("convolution", flops=flops, nbytes=nbytes, cls="k3x3s1")
        assert src == "table" and t == pytest.approx(_truth(flops, nbytes), rel=0.05)


def test_conv_with_bias_costs_the_conv_plus_the_bias_kernels():
    from snsim.hardware import load_hardware
    hw = load_hardware("h200")
    rows = (_biasfree_conv_rows() + _bw_rows("conv_bias_add", 1.3e12, "c64hw3025")
            + _bw_rows("conv_bias_add", 1.3e12, "c16hw196")
            + _bw_rows("conv_bias_grad", 1.1e12, "c64hw3025"))
    tab = KernelTable(pd.DataFrame(rows))
    fwd_b, fwd = _op(_SIG_FWD.format(bias="bfloat16[64]")), _op(_SIG_FWD.format(bias="None"))
    conv_s, src = tab.time_s("convolution", flops=fwd[4], nbytes=fwd[5],
                             cls="k3x3s1:c16o64hw3025", dtype="bfloat16", math_="bf16")
    assert src == "table"
    [t_b], [t] = op_times_s([fwd_b], hw, table=tab), op_times_s([fwd], hw, table=tab)
    assert t == pytest.approx(conv_s)
    assert t_b == pytest.approx(conv_s + ADD_BYTES / 1.3e12, rel=1e-6)   # + 152.5 us
    # backward: grad_bias only where the output mask's third entry asks for it
    bwd = [_op(_SIG_BWD.format(sizes=s, gb=g), "convolution_backward")
           for s, g in (("64", "True"), ("None", "False"))]
    t_gb, t_no = op_times_s(bwd, hw, table=tab)
    assert t_gb - t_no == pytest.approx(GRAD_BYTES / 1.1e12, rel=1e-6)   # + 90.1 us
    # a depthwise conv's bias is added inside ATen's depthwise kernel: nothing more
    dw = "convolution bfloat16[8, 96, 56, 56] bfloat16[96, 1, 7, 7] {} 1 1 3 3 1 1 False 0 0 96"
    t_dwb, t_dw = op_times_s([_op(dw.format("bfloat16[96]")), _op(dw.format("None"))], hw,
                             table=tab)
    assert t_dwb == t_dw


def test_conv_bias_without_bias_rows_is_charged_as_add_and_sum_by_bytes():
    """A table made before the convbias group: the add as add_, grad_bias as sum, by bytes;
    no table at all: the preset's roofline of those ops."""
    from snsim.hardware import load_hardware
    from snsim.torchsim.opcost import op_time_s
    hw = load_hardware("h200")
    tab = KernelTable(pd.DataFrame(_biasfree_conv_rows() + _bw_rows("add_", 2e12)
                                   + _bw_rows("sum", 2.5e12)))
    fwd = [_op(_SIG_FWD.format(bias=b)) for b in ("bfloat16[64]", "None")]
    bwd = [_op(_SIG_BWD.format(sizes=s, gb=g), "convolution_backward")
           for s, g in (("64", "True"), ("None", "False"))]
    t_b, t = op_times_s(fwd, hw, table=tab)
    assert t_b - t == pytest.approx(ADD_BYTES / 2e12, rel=1e-6)          # 99.1 us
    t_gb, t_no = op_times_s(bwd, hw, table=tab)
    assert t_gb - t_no == pytest.approx(GRAD_BYTES / 2.5e12, rel=1e-6)   # 39.6 us
    t_b, t = op_times_s(fwd, hw, table=None)
    assert t_b - t == pytest.approx(op_time_s("add_", 0, ADD_BYTES, hw, "bfloat16"))
    assert t_b - t > ADD_BYTES / hw.mem_bytes_per_s          # not zero: at most peak bandwidth


def _dw_backward_rows(channels, batches, bytes_per_s, family="convolution_backward",
                      dtype="float32", math_="tf32"):
    """Depthwise 3x3 backward rows, as calibrate writes them: torch's FLOP count (grad_weight
    counted dense: x C), the call's bytes, a made-up bandwidth-bound time (bytes / rate)."""
    rows = []
    for c in channels:
        for n in batches:
            act = n * c * 28 * 28 * 4                      # one fp32 map
            nbytes = 4 * act + 2 * c * 9 * 4               # dy, x read; dx written; w, dw
            dgrad = 2 * n * c * 28 * 28 * 9                # torch.utils.flop_counter's terms
            torch_flops = dgrad + dgrad * c
            rows.append({"family": family, "dtype": dtype, "math": math_, "cls": "dwk3x3s1",
                         "flops": torch_flops, "bytes": nbytes, "ntensors": 0,
                         "time_s": nbytes / bytes_per_s, "host_s": 10e-6,
                         "shape": f"grouped x[{n}, {c}, 28, 28] w[{c}, 1, 3, 3] s1 p[1, 1] g{c} "
                                  "bias0 mask[True, True, False]"})
    return rows


def test_depthwise_backward_is_read_by_its_true_flops_across_channel_counts():
    """torch counts a grouped backward's grad_weight as a dense convolution (x the group
    count), so a depthwise layer's 'FLOPs' grow as C^2 while its time grows as its bytes (C).
    Read by conv_flops (2 * the forward's multiply-adds), a call at channels between the rows'
    gets the rows' bandwidth (made-up 0.5 TB/s) within 10%."""
    from snsim.hardware import load_hardware
    hw = load_hardware("h200")
    tab = KernelTable(pd.DataFrame(_dw_backward_rows((64, 1024), (8, 32, 128), 0.5e12)))
    n, c = 16, 256
    sig = (f"convolution_backward float32[{n}, {c}, 28, 28] float32[{n}, {c}, 28, 28] "
           f"float32[{c}, 1, 3, 3] None 1 1 1 1 1 1 False 0 0 {c} True True False")
    nbytes = 4 * n * c * 28 * 28 * 4 + 2 * c * 9 * 4
    dgrad = 2 * n * c * 28 * 28 * 9
    [t] = op_times_s([(0, "convolution_backward", (), (), dgrad * (1 + c), nbytes, sig)], hw,
                     table=tab)
    assert t == pytest.approx(nbytes / 0.5e12, rel=0.10)


def test_channels_last_conv_reads_its_own_rows_else_the_nchw_ones():
    """A convolution recorded channels-last (op[7]) reads the convolution_backward_cl rows
    (made-up 4 TB/s) where the table has them, the NCHW rows (0.5 TB/s) where it has not; its
    bias gradient is the channels-last reduction."""
    from snsim.hardware import load_hardware
    hw = load_hardware("h200")
    nchw = _dw_backward_rows((64, 1024), (8, 32, 128), 0.5e12)
    cl = _dw_backward_rows((64, 1024), (8, 32, 128), 4e12, family="convolution_backward_cl")
    n, c = 16, 256
    sig = (f"convolution_backward float32[{n}, {c}, 28, 28] float32[{n}, {c}, 28, 28] "
           f"float32[{c}, 1, 3, 3] None 1 1 1 1 1 1 False 0 0 {c} True True False")
    nbytes = 4 * n * c * 28 * 28 * 4 + 2 * c * 9 * 4
    op = (0, "convolution_backward", (), (), 0, nbytes, sig, "channels_last")
    [t_cl] = op_times_s([op], hw, table=KernelTable(pd.DataFrame(nchw + cl)))
    [t_old] = op_times_s([op], hw, table=KernelTable(pd.DataFrame(nchw)))
    [t_nchw] = op_times_s([op[:7] + ("",)], hw, table=KernelTable(pd.DataFrame(nchw + cl)))
    assert t_cl == pytest.approx(nbytes / 4e12, rel=0.10)
    assert t_old == pytest.approx(nbytes / 0.5e12, rel=0.10) == t_nchw
    from snsim.kernel_table import conv_bias_calls
    gb = sig.replace("True True False", "True True True")
    assert [f for f, *_ in conv_bias_calls(gb, "channels_last")] == ["conv_bias_grad_cl"]
    assert [f for f, *_ in conv_bias_calls(gb)] == ["conv_bias_grad"]


def test_recorder_names_the_layout_cudnn_runs_a_convolution_in():
    """cudnn_conv_suggest_memory_format: channels-last when the input (ConvNeXt: a permuted
    NHWC tensor) or the weight is; a depthwise weight [C, 1, k, k] is both and counts as NCHW."""
    torch = pytest.importorskip("torch")
    from snsim.torchsim.record import conv_layout
    x = torch.zeros(2, 8, 5, 5)
    w = torch.zeros(8, 1, 3, 3)
    nhwc = torch.zeros(2, 5, 5, 8).permute(0, 3, 1, 2)
    assert conv_layout("convolution", (x, w)) == ""
    assert conv_layout("convolution", (nhwc, w)) == "channels_last"
    assert conv_layout("convolution", (x, torch.zeros(8, 8, 3, 3).contiguous(
        memory_format=torch.channels_last))) == "channels_last"
    assert conv_layout("convolution_backward", (x, nhwc, w)) == "channels_last"
    assert conv_layout("convolution_backward", (nhwc, x, w)) == ""   # grad_output's is cuDNN's
    assert conv_layout("addmm", (x, w)) == ""


def test_recorder_names_strided_copies():
    """copy_layout: ShuffleNet's channel shuffle and a cat of a chunk view are strided, an
    NCHW->NHWC permute's clone is permuted, contiguous copies and other ops are neither."""
    torch = pytest.importorskip("torch")
    from snsim.torchsim.record import copy_layout
    x = torch.zeros(2, 8, 5, 5)
    shuffle = x.view(2, 2, 4, 5, 5).transpose(1, 2)
    half, _ = x.chunk(2, 1)
    assert copy_layout("clone", (shuffle,)) == "strided"
    assert copy_layout("cat", ([half, torch.zeros(2, 4, 5, 5)], 1)) == "strided"
    assert copy_layout("clone", (x.permute(0, 2, 3, 1),)) == "permuted"
    assert copy_layout("clone", (x,)) == "" == copy_layout("cat", ([x, x], 1))
    assert copy_layout("relu", (shuffle,)) == ""
    assert copy_layout("clone", (torch.zeros(3, 4)[:1],)) == ""   # a slice of whole rows


def test_recorder_names_column_sums():
    """reduction_layout: a sum over the dims slowest in memory that keeps the innermost (a
    Linear's grad_bias, a channels-last tensor summed over all but its channels) is ``rows``;
    an NCHW tensor summed over (0, 2, 3), a sum over the last dim, a sum of every element,
    and a strided view are not; and a CPU recording of a Linear's backward says so."""
    torch = pytest.importorskip("torch")
    from snsim.torchsim.record import reduction_layout
    x = torch.zeros(2, 8, 5, 5)
    cl = x.contiguous(memory_format=torch.channels_last)
    assert reduction_layout("sum", (torch.zeros(6, 4), [0], False)) == "rows"
    assert reduction_layout("sum", (torch.zeros(3, 6, 4), [0, 1], False)) == "rows"
    assert reduction_layout("sum", (cl, [0, 2, 3], True)) == "rows"
    assert reduction_layout("sum", (x, [0, 2, 3], True)) == ""
    assert reduction_layout("sum", (torch.zeros(6, 4), [-1], False)) == ""
    assert reduction_layout("sum", (torch.zeros(6, 4), [0, 1], False)) == ""
    assert reduction_layout("sum", (torch.zeros(6, 4)[:, :2], [0], False)) == ""
    assert reduction_layout("mean", (torch.zeros(6, 4), [0], False)) == ""
    from snsim.torchsim.record import Recorder
    lin = torch.nn.Linear(16, 8)
    rec = Recorder(device_type="cpu")
    inp = torch.randn(32, 16)
    with rec.active():
        lin(inp).backward(torch.randn(32, 8))     # a dense gradient, as a real loss gives
    sums = [op for op in rec.ops if op[1] == "sum" and op[7] == "rows"]
    assert sums and "float32[32, 8]" in sums[0][6]


def test_strided_copy_reads_its_own_rows_and_contiguous_ones_without():
    """A clone of a strided source reads the clone_strided rows (made up: 1 TB/s, contiguous
    clones at 4 TB/s) of its class; a table without them reads the contiguous clone rows, as
    every lookup did before (no class); a contiguous clone is unaffected."""
    from snsim.hardware import load_hardware
    from snsim.torchsim.opcost import op_times_s
    hw = load_hardware("h200")

    def rows(fam, cls, rate):
        return [{"family": fam, "dtype": "bfloat16", "math": "bfloat16", "cls": cls,
                 "flops": 0, "bytes": b, "ntensors": 0, "time_s": b / rate, "host_s": 1e-5,
                 "shape": ""} for b in (2e7, 1e8, 1e9, 1e10)]   # above the 2 us floor
    contiguous = rows("clone", "", 4e12)
    strided = rows("clone_strided", "", 1e12) + rows("clone_strided", "perm", 0.5e12)
    nbytes = 3e8
    ops = [(0, "clone", (), (), 0, nbytes, "", layout)
           for layout in ("strided", "permuted", "")]
    ops = [op[:6] + ("clone bfloat16[256, 176, 2, 14, 14]",) + op[7:] for op in ops]
    new = op_times_s(ops, hw, table=KernelTable(pd.DataFrame(contiguous + strided)))
    old = op_times_s(ops, hw, table=KernelTable(pd.DataFrame(contiguous)))
    assert new == pytest.approx([nbytes / 1e12, nbytes / 0.5e12, nbytes / 4e12], rel=0.05)
    assert old == pytest.approx([nbytes / 4e12] * 3, rel=0.05)


def test_recorder_names_elementwise_ops_on_the_generic_kernel():
    """elementwise_layout: a broadcast operand (squeeze-excitation's channel scale, a weight
    over the last dim), a stride-0 expand and a non-dense output take TensorIterator's generic
    kernel, with the output's dtype; operands alike in shape and strides (channels-last ones
    too), Python and one-element scalars, and non-elementwise ops do not."""
    torch = pytest.importorskip("torch")
    from snsim.torchsim.record import elementwise_layout
    x = torch.zeros(2, 8, 5, 5, dtype=torch.bfloat16)
    s = torch.zeros(2, 8, 1, 1, dtype=torch.bfloat16)
    cl = x.contiguous(memory_format=torch.channels_last)
    assert elementwise_layout("mul", (x, s), [x]) == "generic:bfloat16"
    assert elementwise_layout("mul", (torch.zeros(5), x.float()), [x.float()]) == \
        "generic:float32"
    assert elementwise_layout("div", (s.expand(2, 8, 5, 5), 25), [x]) == "generic:bfloat16"
    assert elementwise_layout("relu_", (x[:, :4],), [x[:, :4]]) == "generic:bfloat16"
    assert elementwise_layout("silu_backward", (x, cl), [x]) == "generic:bfloat16"
    assert elementwise_layout("mul", (x, x), [x]) == ""
    assert elementwise_layout("add", (cl, cl), [cl]) == ""
    assert elementwise_layout("mul", (x, 0.5), [x]) == ""
    assert elementwise_layout("mul", (x, torch.ones(())), [x]) == ""
    assert elementwise_layout("convolution", (x, s), [x]) == ""
    # an operand of another dtype than the output: dynamic casting, never vectorized (a bf16
    # linear output added to an fp32 residual under autocast)
    assert elementwise_layout("add", (x, x.float()), [x.float()]) == "generic:float32"
    # broadcast and of another dtype: the casting indexing kernel (GPT-Neo's fp32 mask added
    # to bf16 scores)
    assert elementwise_layout("add", (x, s.float()), [x.float()]) == "generic_cast:float32"


def test_matmul_class_is_the_leading_dimensions_alignment():
    """matmul_layout: a Linear over 4 x 257 = 1028 tokens (ViT-H/14 at batch 4) has leading
    dimensions 1280 and 5120 in its forward and both backward GEMMs (the tokens are rows or
    the reduction, never a leading dimension): aligned, class a8, where the shapes alone
    (1028 % 8 = 4) said unaligned; attention scores over 197 tokens, an odd width and a
    view at an odd offset are not; other ops have no matmul layout. After the ``/``, the
    operands' form: the forward reads the weight transposed (``nt``), the weight gradient
    ``dy`` (``tn``), which picks cuBLAS's kernel (ViT-B/16 b64's forward fc2 alone: 1297 us
    ``nn``, 1441 ``nt``, 1208 ``tn``; traces/h200/gemm_context)."""
    torch = pytest.importorskip("torch")
    from snsim.kernel_table import matmul_align, matmul_class
    from snsim.torchsim.record import matmul_layout
    x, w, dy = torch.zeros(1028, 1280), torch.zeros(5120, 1280), torch.zeros(1028, 5120)
    assert matmul_layout("addmm", (torch.zeros(5120), x, w.t()), [dy]) == "aligned/nt"
    assert matmul_layout("mm", (dy, w), [x]) == "aligned/nn"
    assert matmul_layout("mm", (dy.t(), x), [w]) == "aligned/tn"
    assert matmul_layout("bmm", (torch.zeros(8, 197, 64), torch.zeros(8, 64, 197)),
                         [torch.zeros(8, 197, 197)]) == "unaligned:1/nn"
    assert matmul_layout("mm", (torch.zeros(16, 255), torch.zeros(255, 64)),
                         [torch.zeros(16, 64)]) == "unaligned:1/nn"
    assert matmul_layout("mm", (torch.zeros(16, 72)[:, 3:67], torch.zeros(64, 64)),
                         [torch.zeros(16, 64)]) == "unaligned:1/nn"
    # how far: scores over 196 tokens (a 14 x 14 map) load 4-element vectors, over 50 two
    assert matmul_layout("bmm", (torch.zeros(8, 196, 64), torch.zeros(8, 64, 196)),
                         [torch.zeros(8, 196, 196)]) == "unaligned:4/nn"
    assert matmul_layout("bmm", (torch.zeros(8, 50, 64), torch.zeros(8, 64, 50)),
                         [torch.zeros(8, 50, 50)]) == "unaligned:2/nn"
    assert matmul_layout("relu", (x,), [x]) == ""
    sig = "addmm bfloat16[5120] bfloat16[1028, 1280] bfloat16[1280, 5120]"
    assert matmul_class(sig) == "" and matmul_class(sig, "aligned") == "a8"
    assert matmul_class("mm bfloat16[64, 64] bfloat16[64, 64]", "unaligned") == ""
    assert matmul_class(sig, "aligned/nt") == "a8" and matmul_align("unaligned:2/tn") == 2


def test_cpu_attention_counts_flops_as_calibrate_does():
    """A CPU recording's flash attention (no flop formula in torch) counts the CUDA kernels'
    FLOPs: 4*b*h*s_q*s_k*d forward (hand count: 4*8*9*512*512*64 = 4,831,838,208), 2.5x that
    backward (torch's sdpa_backward_flop_count), halved when causal as calibrate's causal
    rows are; grouped-query keys count at the query's 9 heads."""
    torch = pytest.importorskip("torch")
    from snsim.torchsim.record import SIGNATURE_OPS, causal_attention, cpu_attention_flops
    q, kv = torch.zeros(8, 9, 512, 64), torch.zeros(8, 3, 512, 64)
    fwd = "_scaled_dot_product_flash_attention_for_cpu"
    aten = torch.ops.aten
    cpu_op = aten._scaled_dot_product_flash_attention_for_cpu.default
    for args, kwargs, causal in (((q, kv, kv, 0.0, False), {}, False),
                                 ((q, kv, kv, 0.0, True), {}, True),
                                 ((q, kv, kv), {"is_causal": True}, True)):
        assert causal_attention(cpu_op, args, kwargs) is causal
        assert cpu_attention_flops(fwd, args, causal) == (2 if causal else 4) * \
            8 * 9 * 512 * 512 * 64
    # CUDA's kernels: is_causal found by the op's schema wherever it sits
    eff_bwd = aten._scaled_dot_product_efficient_attention_backward.default
    assert causal_attention(eff_bwd, (q, q, kv, kv, None, q, q, q, q, 0.0,
                                      [True, True, True, False], True))
    assert not causal_attention(aten._scaled_dot_product_efficient_attention.default,
                                (q, kv, kv, None, True, 0.0, False))
    assert not causal_attention(aten.mm.default, (q, q))
    assert cpu_attention_flops(fwd + "_backward", (q, q, kv, kv, q, q, 0.0, False)) == \
        10 * 8 * 9 * 512 * 512 * 64
    assert cpu_attention_flops("mm", (q, kv)) == 0
    # the signature carries the dtype: a bf16 call reads the flash rows, not fp32 efficient
    assert fwd in SIGNATURE_OPS and fwd + "_backward" in SIGNATURE_OPS


def test_generic_elementwise_reads_its_rows_else_the_strided_copies():
    """A broadcast mul (layout ``generic:float16``) reads the elementwise_generic rows (made
    up: 1 TB/s, contiguous mul at 4 TB/s) in its own dtype; a table without them reads the
    strided copies' (0.5 TB/s), one without those the contiguous mul rows; a contiguous mul is
    unaffected. Its host cost is the mul's either way."""
    from snsim.hardware import load_hardware
    from snsim.torchsim.opcost import _issue_s, op_times_s
    hw = load_hardware("h200")

    def rows(fam, dtype, rate, host_s=1e-5):
        return [{"family": fam, "dtype": dtype, "math": dtype, "cls": "", "flops": 0,
                 "bytes": b, "ntensors": 0, "time_s": b / rate, "host_s": host_s,
                 "shape": ""} for b in (2e7, 1e8, 1e9, 1e10)]   # above the 2 us floor
    mul = rows("mul", "float32", 4e12, 7e-6)
    generic = rows("elementwise_generic", "float16", 1e12) + rows(
        "elementwise_generic", "float32", 2e12)
    strided = rows("clone_strided", "float16", 0.5e12)
    nbytes = 3e8
    ops = [(0, "mul", (), (), 0, nbytes, "", "generic:float16"),
           (0, "mul", (), (), 0, nbytes, "", "")]
    full = KernelTable(pd.DataFrame(mul + generic + strided))
    assert op_times_s(ops, hw, table=full) == pytest.approx([nbytes / 1e12, nbytes / 4e12],
                                                            rel=0.05)
    assert op_times_s(ops, hw, table=KernelTable(pd.DataFrame(mul + strided))) == \
        pytest.approx([nbytes / 0.5e12, nbytes / 4e12], rel=0.05)
    assert op_times_s(ops, hw, table=KernelTable(pd.DataFrame(mul))) == \
        pytest.approx([nbytes / 4e12] * 2, rel=0.05)
    assert _issue_s(full, ops[0], {}) == pytest.approx(7e-6)


def test_conv_reads_its_own_kernel_class_when_one_is_measured_within_far():
    """Made-up depthwise forward rows: 3x3 at 2 TB/s on the call's own map and channels, 7x7 at
    0.2 TB/s at half and double the batch (another size, other channels). A 7x7 call reads the
    7x7 rows -- a factor 2 away, within FAR -- not the 3x3 rows nearer in size; a 5x5 call,
    with no row of its class, still reads across classes."""
    rows = []
    for k, rate, spec in ((3, 2e12, ((32, 256),)), (7, 0.2e12, ((16, 192), (64, 192)))):
        for n, c in spec:
            nbytes = 2 * n * c * 28 * 28 * 4
            rows.append({"family": "convolution", "dtype": "float32", "math": "tf32",
                         "cls": f"dwk{k}x{k}s1", "flops": 2 * n * c * 784 * k * k,
                         "bytes": nbytes, "ntensors": 0, "time_s": nbytes / rate,
                         "host_s": 1e-5, "shape": f"grouped x[{n}, {c}, 28, 28] "
                         f"w[{c}, 1, {k}, {k}] s1 p[{k // 2}, {k // 2}] g{c} bias0"})
    tab = KernelTable(pd.DataFrame(rows))
    n, c = 32, 256
    nbytes = 2 * n * c * 784 * 4
    for k, rate in ((7, 0.2e12), (3, 2e12)):
        t, src = tab.time_s("convolution", flops=2 * n * c * 784 * k * k, nbytes=nbytes,
                            cls=f"dwk{k}x{k}s1:c{c}o{c}hw784", dtype="float32", math_="tf32")
        assert src == "table" and t == pytest.approx(nbytes / rate, rel=0.10), k
    t5, _ = tab.time_s("convolution", flops=2 * n * c * 784 * 25, nbytes=nbytes,
                       cls=f"dwk5x5s1:c{c}o{c}hw784", dtype="float32", math_="tf32")
    assert nbytes / 2e12 < t5 < nbytes / 0.2e12


def test_pageable_copies_above_the_mmap_threshold_take_the_new_memory_rows():
    # synthetic rates: a recycled host buffer at 16 GB/s, new host memory (fresh pages) at
    # 2 GB/s; a save_on_cpu() pack of 8 MiB reads the first, one of 128 MiB the second, and a
    # table made before the pattern rows existed reads the tight loop's for both
    from snsim.torchsim.opcost import FRESH_PAGES_BYTES, _table_time

    def rows(fam, rate):
        return [{"family": fam, "dtype": "float32", "math": "", "cls": "", "flops": 0,
                 "bytes": nb, "ntensors": 0, "time_s": nb / rate, "host_s": nb / rate,
                 "shape": ""} for nb in (2**20, 2**22, 2**24, 2**26, 2**28, 2**30)]
    assert FRESH_PAGES_BYTES == 32 << 20     # glibc's DEFAULT_MMAP_THRESHOLD_MAX, 64-bit
    both = KernelTable(pd.DataFrame(rows("copy_d2h_pageable", 16e9)
                                    + rows("copy_d2h_pageable_new", 2e9)))
    old = KernelTable(pd.DataFrame(rows("copy_d2h_pageable", 16e9)))
    small, large = (0, "d2h_pageable", (1,), (), 0, 2**23), (0, "d2h_pageable", (1,), (), 0, 2**27)
    # (the lookup interpolates between rows: within a factor of 1.5 of the rate it reads,
    # the two rates a factor of 8 apart)
    assert _table_time(both, small)[0] == pytest.approx(2**23 / 16e9, rel=0.5)
    assert _table_time(both, large)[0] == pytest.approx(2**27 / 2e9, rel=0.5)
    assert _table_time(old, large)[0] == pytest.approx(2**27 / 16e9, rel=0.5)


def test_grouped_conv_lookup_takes_the_mean_of_rows_that_straddle_an_engine_switch():
    """Two made-up TF32 grouped conv rows the same distance from a call, one 10x the other's
    time per FLOP (another cuDNN engine): the call's time is their arithmetic mean (5.5x), the
    expected time, not the geometric (3.2x) that under-predicts a step's sum; dense conv rows
    and a bandwidth family's (one kernel, a smooth rate) keep the geometric mean."""
    rows = [{"family": fam, "dtype": "float32", "math": "tf32" if fam == "convolution" else
             "float32", "cls": cls, "flops": f, "bytes": b, "ntensors": 0, "time_s": t,
             "host_s": 1e-5, "shape": ""}
            for fam, cls, f in (("convolution", "gk3x3s1", 1e12),
                                ("convolution", "k3x3s1", 1e12), ("relu_", "", 0))
            for b, t in ((1e9, 1e-3), (4e9, 4e-2))]
    tab = KernelTable(pd.DataFrame(rows))
    t, src = tab.time_s("convolution", flops=1e12, nbytes=2e9, cls="k3x3s1", math_="tf32")
    assert src == "table" and t == pytest.approx(2e-3 * math.sqrt(10), rel=1e-6)
    # the conv reference: the best measured rates (1e12 / 1e-3 FLOP/s, 1e9 / 1e-3 B/s) give
    # ratios 1 and 10 for the two rows; the call, halfway in ln bytes, has the reference of
    # its 2e9 bytes
    t, src = tab.time_s("convolution", flops=1e12, nbytes=2e9, cls="gk3x3s1", math_="tf32")
    assert src == "table" and t == pytest.approx(2e-3 * (1 + 10) / 2, rel=1e-6)
    # relu_: ratios 1e-3 / (1e9 / 5e12) and 4e-2 / (4e9 / 5e12), geometric mean, times 2e9 / 5e12
    t, _ = tab.time_s("relu_", nbytes=2e9, dtype="float32")
    assert t == pytest.approx(2e9 / 5e12 * math.sqrt(5.0 * 50.0), rel=1e-6)


def test_conv_lookup_weighs_channel_alignment():
    """Made-up bf16 grouped 3x3 rows: 256 and 264 channels (multiples of 8) at 1 ms, 260 and 252
    channels (not) at 5 ms -- cuDNN's vectorized engines need 16-byte channel rows. An aligned
    call of 256 channels reads the aligned rows, an unaligned one of 254 the unaligned ones,
    though every row is as near in FLOPs, bytes and channels."""
    from snsim.kernel_table import conv_aligned
    rows = []
    for c, ms in ((256, 1.0), (264, 1.0), (260, 5.0), (252, 5.0)):
        f = 2 * 64 * c * 784 * 4 * 9
        rows.append({"family": "convolution", "dtype": "bfloat16", "math": "bf16",
                     "cls": "gk3x3s1", "flops": f, "bytes": 4 * 64 * c * 784,
                     "ntensors": 0, "time_s": ms * 1e-3 * f / (2 * 64 * 256 * 784 * 4 * 9),
                     "host_s": 3e-5, "shape": f"stage x[64, {c}, 28, 28] w[{c}, 4, 3, 3] s1 "
                     f"p[1, 1] g{c // 4} bias0"})
    tab = KernelTable(pd.DataFrame(rows))
    for c, ms in ((256, 1.0), (254, 5.0)):
        assert conv_aligned(c, c, "bfloat16") == (ms == 1.0)
        f = 2 * 64 * c * 784 * 4 * 9
        t, src = tab.time_s("convolution", flops=f, nbytes=4 * 64 * c * 784,
                            cls=f"g{c // 4}k3x3s1:c{c}o{c}hw784", dtype="bfloat16",
                            math_="bf16")
        assert src == "table" and t == pytest.approx(
            ms * 1e-3 * f / (2 * 64 * 256 * 784 * 4 * 9), rel=0.15), c


def test_zoo_conv_bias_kernels_are_the_recorded_calls():
    # one rule for a convolution's bias kernels: a zoo layer (output shape, input channels,
    # groups) and the recorded call's signature give the same calls; AlexNet's first conv,
    # 224 -> 55 at stride 4, 11x11, pad 2 (conv_bias_calls' doctest)
    from snsim.costs import table_layer_times
    from snsim.graph import GraphBuilder
    from snsim.kernel_table import bias_calls, bias_time_s, conv_bias_calls
    sig = ("convolution bfloat16[256, 3, 224, 224] bfloat16[64, 3, 11, 11] bfloat16[64] "
           "4 4 2 2 1 1 False 0 0 1")
    assert bias_calls((256, 64, 55, 55), 3, 1, True, backward=False, dtype="bfloat16") == \
        conv_bias_calls(sig)
    bwd = ("convolution_backward float32[8, 96, 56, 56] float32[8, 96, 56, 56] "
           "float32[96, 1, 7, 7] 96 1 1 3 3 1 1 False 0 0 96 True True True")
    assert bias_calls((8, 96, 56, 56), 96, 96, True, backward=True) == conv_bias_calls(bwd)
    # the zoo's layer time holds them: with a bias, forward + the add (output read and
    # written, the bias read: (2 * 2*4*8*8 + 4) * 4 B), backward + the grad_bias reduction
    rows = [{"family": fam, "dtype": "float32", "math": math_, "cls": "",
             "flops": nb * 10 if fam.startswith("conv") else 0,
             "bytes": nb, "ntensors": 0, "time_s": 1e-6 + nb / 1e12, "host_s": 5e-6,
             "shape": ""}
            for fam, math_ in (("convolution", "tf32"), ("convolution_backward", "tf32"),
                               ("add_", "float32"), ("sum", "float32"))
            for nb in np.geomspace(1e3, 1e9, 10)]
    tab = KernelTable(pd.DataFrame(rows))
    times = []
    for bias in (False, True):
        b = GraphBuilder("c", batch=2, input_shape=(3, 8, 8))
        G = b.finish(b.conv(b.data(), 4, 3, 1, 1, bias=bias, name="conv"))
        n = next(n for n, a in G.nodes(data=True) if a["type"] == "CONV")
        times.append(table_layer_times(G, tab)[0][n][:2])
    add = bias_time_s(tab, "conv_bias_add", (2 * 2 * 4 * 8 * 8 + 4) * 4, "c4hw64", "float32")
    grad = bias_time_s(tab, "conv_bias_grad", (2 * 4 * 8 * 8 + 4) * 4, "c4hw64", "float32")
    assert add[1] == grad[1] == "table"     # the add_ / sum rows of a table without bias rows
    # (rel: the bias's 16 B also enter the convolution's own bytes, 1e-5 of its time here)
    assert times[1][0] - times[0][0] == pytest.approx(add[0], rel=1e-3)
    assert times[1][1] - times[0][1] == pytest.approx(grad[0], rel=1e-3)


def test_copy_time_is_linear_between_measured_sizes_and_floored_below():
    # latency 2 µs + bytes at 50 GB/s, measured a factor 4 apart from 4 KiB: a copy between two
    # rows takes its linear share, one below the smallest row that row's time (the latency
    # floor), one above the largest the last segment's slope
    sizes = [4096 * 4 ** k for k in range(6)]
    rows = [{"family": "copy_d2h_pinned", "dtype": "float32", "math": "", "cls": "",
             "flops": 0, "bytes": nb, "ntensors": 0, "time_s": 2e-6 + nb / 50e9,
             "host_s": 5e-6, "shape": ""} for nb in sizes]
    tab = KernelTable(pd.DataFrame(rows))
    for nb in (5000, 3 << 20, 3_000_000):
        assert tab.copy_time_s("copy_d2h_pinned", nb)[0] == pytest.approx(2e-6 + nb / 50e9)
    assert tab.copy_time_s("copy_d2h_pinned", 256)[0] == pytest.approx(2e-6 + 4096 / 50e9)
    assert tab.copy_time_s("copy_d2h_pinned", 1 << 30)[0] == pytest.approx(2e-6 + 2**30 / 50e9)
    assert tab.copy_time_s("copy_h2d_pinned", 4096) == (None, "roofline")


def test_upsample_backward_is_read_by_its_contention_not_its_bytes():
    """F.interpolate's backward adds each grad_output element into grad_input with atomics:
    its time follows outputs x outputs per input element (kernel_table.upsample_backward_work).
    The recorder writes the call's signature, the lookup reads the work from it, and the
    committed H200 table (calibrate's pooled-branch rows, traces/h200/profile_seg) prices
    DeepLabV3's ASPP pooling branch (8 x 256 channels, 1x1 -> 60x60, fp32 under bf16
    autocast: 3600 outputs per input) within 10 % of the 13.50 ms the H200 profiler measured
    in a real step on another lease (traces/h200/profile_heldout11/profile_ops.csv.gz,
    deeplabv3_resnet50_b8_adamw_bf16); read by its 29 MB alone, rows of that size say under
    1 ms (0.10 ms before the pooled rows)."""
    torch = pytest.importorskip("torch")
    from snsim.kernel_table import call_upsample_work, load_kernel_table, upsample_backward_work
    from snsim.torchsim.opcost import _table_args, _table_time
    from snsim.torchsim.record import Recorder, signature
    dy = torch.zeros(8, 256, 60, 60)
    sig = signature("upsample_bilinear2d_backward", (dy, [60, 60], [8, 256, 1, 1], False),
                    {})
    work = upsample_backward_work(8 * 256 * 3600, 8 * 256)
    assert call_upsample_work(sig) == work == 8 * 256 * 3600 * 3600
    # a real recording of the pooling branch's backward names its work
    x = torch.zeros(2, 4, 1, 1, requires_grad=True)
    rec = Recorder(device_type="cpu")
    rec.register(x, "x")
    with rec.active():
        y = torch.nn.functional.interpolate(x, size=(6, 6), mode="bilinear",
                                            align_corners=False)
        y.sum().backward()
    ups = [op for op in rec.ops if op[1] == "upsample_bilinear2d_backward"]
    assert len(ups) == 1
    assert _table_args(ups[0])[1]["flops"] == upsample_backward_work(2 * 4 * 36, 2 * 4)
    table = load_kernel_table("h200")
    if table is None:
        pytest.skip("no H200 kernel table")
    op = (0, "upsample_bilinear2d_backward", (), (), 0, 29499392, sig, "")
    got, src = _table_time(table, op)
    assert src == "table" and got == pytest.approx(13.50e-3, rel=0.1)
    bytes_only, _ = table.time_s("upsample_bilinear2d_backward", nbytes=29499392,
                                 dtype="float32", math_="float32")
    assert bytes_only < 1e-3


@pytest.mark.parametrize("shape, sig", [
    # MViT's pooling: a 3-D depthwise, strided convolution (calibrate's net3d rows)
    ("net3d mvit_v2_s x[4, 96, 8, 14, 14] w[96, 1, 3, 3, 3] s[1, 2, 2] p[1, 1, 1] g96 bias0 "
     "mask[True, True, False]",
     "convolution_backward bfloat16[4, 96, 8, 7, 7] bfloat16[4, 96, 8, 14, 14] "
     "bfloat16[96, 1, 3, 3, 3] None 1 2 2 1 1 1 1 1 1 False 0 0 0 96 True True False"),
    # a dilated convolution (DeepLab's), list strides and dilation written
    ("dilated fcn_resnet50 x[2, 256, 60, 60] w[256, 256, 3, 3] s[1, 1] p[2, 2] d[2, 2] g1 "
     "bias0 mask[True, True, False]",
     "convolution_backward float32[2, 256, 60, 60] float32[2, 256, 60, 60] "
     "float32[256, 256, 3, 3] None 1 1 2 2 2 2 False 0 0 1 True True False"),
    # ViT's patch embedding: stride 16, grad_input of the 3-channel image not asked for
    ("patchify vit_b_16 x[2, 3, 224, 224] w[768, 3, 16, 16] s[16, 16] p[0, 0] d[1, 1] g1 bias0",
     "convolution_backward float32[2, 768, 14, 14] float32[2, 3, 224, 224] "
     "float32[768, 3, 16, 16] None 16 16 0 0 1 1 False 0 0 1 False True False"),
])
def test_calibrate_rows_count_flops_as_the_recorded_call(shape, sig):
    """A calibrate row and the recorded call of the same convolution get one FLOP count, so
    the lookup's distance between them is their true distance: rows written with list
    strides, padding or dilation (3-D, dilated, segmentation and patch rows) kept torch's
    own count before, which counts a depthwise backward's grad_weight as dense (96x here) and
    put MViT's pooling convolutions next to rows of 1/24 their batch."""
    from snsim.kernel_table import call_conv_flops, row_conv_flops
    assert row_conv_flops(shape, backward=True) == call_conv_flops(sig)
    # hand count of the first: grad_input and grad_weight, each 4*96*8*7*7 outputs x 27 MACs
    if "mvit" in shape:
        assert call_conv_flops(sig) == 2 * 4 * 96 * 8 * 7 * 7 * 27 * 2


def test_unaligned_matmul_reads_rows_of_its_own_vector_width():
    """Made-up unaligned bf16 bmm rows of equal FLOPs and bytes, those whose shapes allow
    4-element vectors (196 tokens) at 80 us and those allowing 1 (393 tokens) at 160 us: a call
    recorded as 1-element-aligned reads the slow rows, a 4-element one the fast; a call whose
    recording does not say how far (an older one) reads both."""
    from snsim.kernel_table import matmul_lookup_class
    rows = []
    for toks, us in ((196, 80.0), (393, 160.0)):
        for f in np.geomspace(1e9, 1e11, 6):
            rows.append({"family": "bmm", "dtype": "bfloat16", "math": "bf16", "cls": "",
                         "flops": f, "bytes": f / 100, "ntensors": 0,
                         "time_s": us * 1e-6 * f / 1e10, "host_s": 1e-5,
                         "shape": f"attn av b64 m1569 k{toks} n96"})
    t = KernelTable(pd.DataFrame(rows))
    sig = "bmm bfloat16[64, 1569, 393] bfloat16[64, 393, 96]"
    got = {lay: t.time_s("bmm", flops=1e10, nbytes=1e8, cls=matmul_lookup_class(sig, lay),
                         dtype="bfloat16", math_="bf16")
           for lay in ("unaligned:1", "unaligned:4", "unaligned")}
    assert got["unaligned:1"][1] == "table"
    assert got["unaligned:1"][0] == pytest.approx(160e-6, rel=0.05)
    assert got["unaligned:4"][0] == pytest.approx(80e-6, rel=0.05)
    assert 80e-6 * 1.05 < got["unaligned"][0] < 160e-6 * 0.95


def test_an_accumulating_index_put_reads_the_accumulating_rows():
    """autograd's backward of a gather (index_put with accumulate: sort, then sum each run)
    reads the table's ``acc`` rows (made-up 120 us), a plain ``t[idx] = v`` the others (15 us),
    both by bytes; the recorder's signature says which."""
    from snsim.torchsim.opcost import _lookup_args
    rows = [{"family": "index_put", "dtype": "float32", "math": "float32", "cls": cls,
             "flops": 0, "bytes": nb, "ntensors": 0, "time_s": us * 1e-6, "host_s": 1e-5,
             "shape": "index"}
            for cls, us in (("acc", 120.0), ("", 15.0)) for nb in np.geomspace(1e6, 1e8, 5)]
    t = KernelTable(pd.DataFrame(rows))
    got = {}
    for acc in (True, False):
        sig = f"index_put float32[2535, 12] int64[153664] float32[153664, 12] {acc}"
        op = (0, "index_put", (), (), 0, 9e6, sig, "", ())
        fam, kw = _lookup_args(t, op)
        got[acc] = t.time_s(fam, **kw)
    assert got[True][1] == "table" and got[True][0] == pytest.approx(120e-6, rel=0.05)
    assert got[False][0] == pytest.approx(15e-6, rel=0.05)


def test_host_ratios_were_fitted_against_this_table():
    """Each in-network ratio is a family's in-sequence host cost over the kernel table's
    tight-loop issue cost of the same calls (scripts/host_innet_fit.py): physically 1-2x (a
    step's mix of calls refetches code and data), and far outside that only when the table's
    issue cost changed after the fit -- index_put's 16.4, fitted when a bandwidth proxy priced
    it at ~10 us, charged 2.5 ms per call once the table had its own ~150 us rows (session 19:
    MViT-V2-S b4's backward host 128 ms modelled, 19 ms profiled). Refit after a table change."""
    from snsim.kernel_table import load_host_costs
    ratios = load_host_costs("h200")["innet"]["ratio"]
    off = {f: r for f, r in ratios.items() if not 0.5 <= r <= 4.0}
    assert not off, off


def test_a_matmul_reads_rows_of_its_operands_form_and_tiling():
    """cuBLAS's kernel follows the operands' form and how evenly tiles cover the output:
    ViT-B/16 b64's forward fc2 (12608 x 3072 x 768 FP32) ran 1297 us with both operands
    contiguous, 1441 us with the weight transposed as a Linear's forward reads it, 1208 us
    with the first transposed (traces/h200/gemm_context). Made-up FP32 rows of equal FLOPs
    and bytes: a Linear's forward (``nt``) at 1.4 ms, its input gradient (``nn``) at 1.3,
    its weight gradient (``tn``) at 1.2, each at 8192 rows; and forward rows of 8256 rows
    (a multiple of 64, not of 128) at 1.9 ms. A call reads the rows of its own form, and a
    forward over 12608 rows (also 64's) the 8256-row rows rather than 8192's."""
    from snsim.kernel_table import linear_gemm_classes, matmul_lookup_class
    rows = []
    for shape, us in (("net fwd b1 m8192 k3072 n768", 1400.0),
                      ("net dgrad b1 m8192 k3072 n768", 1300.0),
                      ("net wgrad b1 m8192 k3072 n768", 1200.0),
                      ("net fwd b1 m8256 k3072 n768", 1900.0)):
        fam = "addmm" if "fwd" in shape else "mm"
        rows.append({"family": fam, "dtype": "float32", "math": "fp32", "cls": "a8",
                     "flops": 3.9e10, "bytes": 1.3e8, "ntensors": 0, "time_s": us * 1e-6,
                     "host_s": 1e-5, "shape": shape})
    t = KernelTable(pd.DataFrame(rows))
    sig = "mm float32[8192, 3072] float32[3072, 768]"
    got = {form: t.time_s("mm", flops=3.9e10, nbytes=1.3e8,
                          cls=matmul_lookup_class(sig, "aligned/" + form), math_="fp32")[0]
           for form in ("nt", "nn", "tn")}
    assert got["nt"] < 1.9e-3 and got["nt"] == pytest.approx(1.4e-3, rel=0.15)
    assert got["tn"] < got["nn"] < got["nt"]
    # the same forward over 12608 rows (12608 = 98.5 x 128): the 8256-row rows, not 8192's
    fwd = linear_gemm_classes(12608, 3072, 768)[0]
    slow = t.time_s("mm", flops=3.9e10, nbytes=1.3e8, cls=fwd, math_="fp32")[0]
    even = t.time_s("mm", flops=3.9e10, nbytes=1.3e8,
                    cls=linear_gemm_classes(8192, 3072, 768)[0], math_="fp32")[0]
    assert slow > 1.6e-3 > even
    # an empty product has no shape to place: its class alone
    assert matmul_lookup_class("mm float32[0, 64] float32[64, 8]", "aligned/nn") == "a8"


def test_a_one_wave_batched_gemm_takes_its_reduction_serially():
    """cuBLAS's strided-batched GEMM splits no reduction: a bmm whose output tiles fit in one
    wave takes its k serially. MViT-V2-S b4's relative-position weight gradients on the H200
    (traces/h200/profile_s19/profile_ops.csv.gz, backward, per call): [8, 96, 3136] @ [8, 3136, 8]
    104 us, [8, 96, 12544] @ [8, 12544, 8] 417 us, [4, 96, 25089] @ [4, 25089, 393] 883 us,
    where their FLOPs and bytes read 4, 16 and 270 us off the table's dense rows (21 % of the
    measured sum). The committed H200 table's own one-wave long-k bmm rows give the rate per k
    (22 ns in FP32; these calls' transposed operand ran at 33-35): 64 % of the sum. A batch
    of one (a plain GEMM, which cuBLAS may split) and a call of many tiles are left to their
    neighbours."""
    from snsim.kernel_table import load_kernel_table, serial_k_call
    table = load_kernel_table("h200")

    def us(b, m, k, n):
        cls = f":al1@b{b}m{m}k{k}n{n}nt"
        flops, nbytes = 2 * b * m * k * n, 4 * b * (m * k + k * n + m * n)
        return table.time_s("bmm", flops=flops, nbytes=nbytes, cls=cls, dtype="float32",
                            math_="fp32")[0] * 1e6

    measured = {(8, 96, 3136, 8): 104.3, (8, 96, 12544, 8): 417.4, (4, 96, 25089, 393): 883.5}
    got = {d: us(*d) for d in measured}
    assert 0.55 < sum(got.values()) / sum(measured.values()) < 1.2
    for d, t in got.items():
        assert 0.55 < t / measured[d] < 1.5, (d, t)
    assert serial_k_call(8, 96, 3136, 8, 132) and not serial_k_call(1, 96, 3136, 8, 132)
    assert not serial_k_call(64, 512, 4096, 512, 132)   # 4,096 tiles: many waves
    assert not serial_k_call(8, 96, 512, 8, 132)        # a short reduction
    # bf16 (mvit_v2_s_b8_adamw_bf16, traces/h200/profile_heldout11/profile_ops.csv.gz, per
    # call): [14, 96, 3584] @ [14, 3584, 7] (operands not aligned to 8 elements, no
    # tensor-core kernel) took 89 us, [8, 96, 6272] @ [8, 6272, 8] 12.8 us; the floor holds
    # the first (at least 3,584 x the unaligned rows' rate), not the second
    half = {}
    for (b, m, k, n), al in (((14, 96, 3584, 7), ":al1"), ((8, 96, 6272, 8), "a8")):
        cls = f"{al}@b{b}m{m}k{k}n{n}nt"
        flops, nbytes = 2 * b * m * k * n, 2 * b * (m * k + k * n + m * n)
        half[n] = table.time_s("bmm", flops=flops, nbytes=nbytes, cls=cls, dtype="bfloat16",
                               math_="bf16")[0] * 1e6
    assert half[7] > 3584 * 8e-3 and half[8] < 12.8 * 1.5


def test_serial_reduction_rate_comes_from_the_tables_own_rows():
    """Made-up FP32 rows: dense short-k bmm rows at ~40 TFLOP/s and two one-wave rows of k
    4,096 and 16,384 at 20 ns per k. A one-wave call of k 8,192 takes at least 8,192 x 20 ns,
    which its FLOPs alone (1.3 us at the dense rows' rate) would not give; a table of another
    GPU, or with one such row only, reads the neighbours alone."""
    rows = [{"family": "bmm", "dtype": "float32", "math": "fp32", "cls": "a8",
             "flops": 2.0 * b * m * k * n, "bytes": 4.0 * b * (m * k + k * n + m * n),
             "ntensors": 0, "time_s": t, "host_s": 1e-5, "shape": f"b{b} m{m} k{k} n{n}"}
            for b, m, k, n, t in ((32, 512, 64, 512, 2.6e-5), (64, 256, 128, 256, 1.8e-5),
                                  (8, 16, 4096, 16, 4096 * 20e-9),
                                  (8, 16, 16384, 16, 16384 * 20e-9))]
    call = {"flops": 2.0 * 8 * 16 * 8192 * 16, "nbytes": 4.0 * 8 * (2 * 16 * 8192 + 256),
            "cls": ":al8@b8m16k8192n16nt", "dtype": "float32", "math_": "fp32"}
    h200 = KernelTable(pd.DataFrame(rows), {"gpu_preset": "h200"})
    assert h200.time_s("bmm", **call)[0] >= 8192 * 20e-9
    for meta, kept in (({}, rows), ({"gpu_preset": "h200"}, rows[:3])):
        other = KernelTable(pd.DataFrame(kept), meta)
        assert other.time_s("bmm", **call)[0] < 8192 * 20e-9


def test_a_roll_over_k_dims_is_k_passes_of_its_kernel():
    """ATen rolls one dim per call (roll_common: the first dim, then the rest recursively), so
    Swin3D's shifted-window roll over (D, H, W) is three roll_cuda_kernel passes over the whole
    tensor. H200 profile (traces/h200/profile_s19/profile_ops.csv.gz, swin3d_t_b4_adamw_bf16, per
    call): roll of fp32 [4, 8, 56, 56, 96] 135.2 us, [4, 8, 14, 14, 384] 33.4 us; Swin-T b32's
    2-dim [32, 56, 56, 96] (profile_s19_heldout) 91.5 us. Read as one pass of the vectorized
    copy the table had them at 22, 6 and 22 us; as k passes of the strided copy's indexing
    kernel (no table has roll rows yet), 0.6-0.75x of the measured: roll's own kernel is slower
    per pass (64-bit index division), which `snsim calibrate --only roll` measures."""
    from snsim.kernel_table import load_kernel_table, roll_passes
    from snsim.torchsim.opcost import _table_time
    table = load_kernel_table("h200")

    def roll_op(shape, shifts, dims):
        nbytes = 2 * 4 * math.prod(shape)             # read and written, as recorded
        sig = f"roll float32{list(shape)} " + " ".join(map(str, [*shifts, *dims]))
        return (0, "roll", (1,), (2,), 0, nbytes, sig, "")

    measured = {((4, 8, 56, 56, 96), (-4, -3, -3), (1, 2, 3)): 135.2e-6,
                ((4, 8, 14, 14, 384), (-4, -3, -3), (1, 2, 3)): 33.4e-6,
                ((32, 56, 56, 96), (-3, -3), (1, 2)): 91.5e-6}
    for (shape, shifts, dims), t in measured.items():
        op = roll_op(shape, shifts, dims)
        got = _table_time(table, op)[0]
        assert roll_passes(op[6]) == len(dims)
        assert 0.55 < got / t < 1.0, (shape, got, t)
        # one dim rolled: one pass, the same rows
        one = _table_time(table, roll_op(shape, shifts[:1], dims[:1]))[0]
        assert got == pytest.approx(len(dims) * one)
    # a recording made before roll kept its signature: one pass
    assert roll_passes("") == 1


def test_a_gather_of_whole_16_byte_slices_takes_a_block_per_index():
    """torch 2.11 gathers with vectorized_gather_kernel<16> (one block per index) when each
    slice is whole 16-byte vectors, else with the elementwise index kernel. Swin3D-T b4's
    relative-position bias on the H200 (traces/h200/profile_s19/profile_ops.csv.gz, forward, per
    call): 153,664 indices into an fp32 [2535, 12] table 94.0 us (48-byte slices), into
    [2535, 6] 8.6 us (24 bytes). Read by bytes alone the first was 18.4 us; by the kernel's
    class and the index count, calibrate's row of that shape gives it."""
    from snsim.kernel_table import index_class, index_count, load_kernel_table
    from snsim.torchsim.opcost import _table_time
    table = load_kernel_table("h200")

    def gather_us(heads, n=153664, rows=2535):
        sig = f"index float32[{rows}, {heads}] int64[{n}]"
        nbytes = 4 * rows * heads + 8 * n + 4 * n * heads     # input, index, output
        return _table_time(table, (0, "index", (1, 2), (3,), 0, nbytes, sig, ""))[0] * 1e6

    assert index_class("index float32[2535, 12] int64[153664]") == "vec16"
    assert index_class("index float32[2535, 6] int64[153664]") == ""
    assert index_count("index float32[2535, 6] int64[153664]") == 153664
    assert 0.8 < gather_us(12) / 94.0 < 1.2
    assert 0.5 < gather_us(6) / 8.6 < 1.2
    # few indices: the vectorized kernel's blocks are few, a few microseconds either way
    assert gather_us(12, n=2401) < 10


def test_the_h100_reads_the_h200s_measured_tables():
    """A preset without measured tables of its own reads its sibling's (kernel_table.
    TABLES_OF: the H100 and the H200 are both GH100 with the same cuDNN); one with its own
    reads those, and one without a sibling has none (the roofline)."""
    from snsim.engine.contention import table_path
    from snsim.kernel_table import load_host_costs, load_kernel_table, tables_of
    from snsim.torchsim.hidden import probe_path
    assert (tables_of("h100"), tables_of("h200"), tables_of("k40c")) == ("h200", "h200", "k40c")
    assert load_kernel_table("h100").aten_host == load_kernel_table("h200").aten_host
    assert load_host_costs("h100")["innet"] == load_host_costs("h200")["innet"]
    assert table_path("h100") == table_path("h200")
    assert probe_path("h100") == probe_path("h200")
    assert load_kernel_table("k40c") is None and load_host_costs("k40c") == {}


def test_h100_reads_the_h200_table_scaled_by_measured_slowdowns(tmp_path, monkeypatch):
    # the H100 borrows the H200's table (the same GH100), each time scaled by the slowdown
    # calibrate measured on both for the op's family and size (configs/kernels/
    # h100_over_h200.csv, scripts/sibling_ratios.py): an add of 1 GiB beyond the L2 about
    # 1.4x, a bf16 GEMM about 1x
    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_sibling_ratios, sibling_ratio_of
    from snsim.torchsim.opcost import op_times_s
    h100, h200 = load_hardware("h100"), load_hardware("h200")
    ratios = load_sibling_ratios("h100")
    n = 1 << 28
    add = (0, "add", (0, 1), (2,), n, 3 * 4 * n, f"float32[{n}] float32[{n}]")
    mm = (0, "mm", (0, 1), (2,), 2 * 8192 ** 3, 3 * 2 * 8192 ** 2,
          "bfloat16[8192, 8192] bfloat16[8192, 8192]")
    assert sibling_ratio_of(ratios, "add", add[5]) == pytest.approx(1.4, abs=0.05)
    assert sibling_ratio_of(ratios, "mm", mm[5]) == pytest.approx(1.0, abs=0.1)
    for op, fam in ((add, "add"), (mm, "mm")):
        t100, = op_times_s([op], h100, host=False)
        t200, = op_times_s([op], h200, host=False)
        assert t100 / t200 == pytest.approx(sibling_ratio_of(ratios, fam, op[5]))
    assert load_sibling_ratios("h200") == {}       # its own table: nothing to scale


def test_sibling_ratio_file_with_a_bad_ratio_is_one_line(tmp_path, monkeypatch):
    from snsim.errors import ConfigError
    import snsim.kernel_table as kt
    (tmp_path / "h100_over_h200.csv").write_text(
        "family,bytes_lo,bytes_hi,ratio,rows\nadd,0,1024,-1,3\n")
    monkeypatch.setattr(kt, "_own_table_paths", lambda name: [tmp_path / f"{name}.csv.gz"])
    kt._read_sibling_ratios.cache_clear()
    with pytest.raises(ConfigError, match="line 2: ratio must be > 0"):
        kt._read_sibling_ratios("h100", "h200")
    kt._read_sibling_ratios.cache_clear()
