"""Modelled layer costs and the conv algorithm table (SPEC §6, §9)."""
import dataclasses
import doctest
import math

import networkx as nx
import pytest

import snsim.costs as costs_module
from snsim.costs import (ALGO_EFFICIENCY, DEFAULT_ALGO, PASSES, ZERO_WS_ALGO, ConvAlgo,
                         LayerCost, choose_algo, conv_algorithms, layer_time_s, modeled_costs,
                         update_time_s, with_modeled_times)
from snsim.errors import ConfigError, GraphError, UnknownNameError
from snsim.hardware import EFFICIENCY_KEYS, load_hardware
from snsim.zoo import build_network


@pytest.fixture(scope="module")
def hw():
    """Round numbers for hand calculations: 1 TFLOPS, 100 GB/s, every efficiency 0.5, 1 us."""
    return dataclasses.replace(load_hardware("k40c"), peak_flops_fp32=1e12,
                               mem_bytes_per_s=1e11, launch_overhead_s=1e-6,
                               efficiency={k: 0.5 for k in EFFICIENCY_KEYS})


def conv_node(n=8, c=64, h=56, w=56, k=64, kernel=3, stride=1, pad=1, groups=1, bias=False):
    ho = (h + 2 * pad - kernel) // stride + 1
    wo = (w + 2 * pad - kernel) // stride + 1
    weights = k * (c // groups) * kernel * kernel
    return dict(type="CONV", name="conv", layer_id=7, in_shapes=[(n, c, h, w)],
                out_shape=(n, k, ho, wo), out_channels=k, kernel=(kernel, kernel),
                stride=(stride, stride), pad=(pad, pad), groups=groups, bias=bias,
                macs=n * weights * ho * wo, params=weights + (k if bias else 0),
                param_bytes=(weights + (k if bias else 0)) * 4)


def by_name(rows):
    return {r.name: r for r in rows}


# -- roofline by hand ------------------------------------------------------------------------------
def test_conv_roofline_compute_bound_by_hand(hw):
    node = conv_node()
    # macs  = 8·64·64·9·56·56 = 924,844,032;  flops = 2·macs = 1,849,688,064
    # compute: 1,849,688,064 / (0.5 · 1e12)            = 3.699376128e-3 s
    # bytes:  x = y = 8·64·56·56·4 = 6,422,528; w = 64·64·9·4 = 147,456 -> 12,992,512
    # memory: 12,992,512 / (0.5 · 1e11)                = 2.5985024e-4 s  (< compute)
    # t = 3.699376128e-3 + 1e-6 (launch)               = 3.700376128e-3 s
    assert node["macs"] == 924_844_032
    assert math.isclose(layer_time_s(node, hw, "F", 4), 3.700376128e-3, rel_tol=1e-12)
    assert layer_time_s(node, hw, "R", 4) == layer_time_s(node, hw, "F", 4)
    # backward = default bwd-data + default bwd-filter, each the same flops and bytes
    assert math.isclose(layer_time_s(node, hw, "B", 4), 2 * 3.700376128e-3, rel_tol=1e-12)


def test_conv_roofline_memory_bound_by_hand(hw):
    node = conv_node(n=2, c=3, h=8, w=8, k=4)
    # macs = 2·4·3·9·64 = 13,824 -> 27,648 flops -> 5.5296e-8 s at 0.5 TFLOPS
    # bytes: x = 2·3·64·4 = 1,536; y = 2·4·64·4 = 2,048; w = 4·3·9·4 = 432 -> 4,016
    # memory: 4,016 / 5e10 = 8.032e-8 s (> compute) -> t = 8.032e-8 + 1e-6
    assert node["macs"] == 13_824
    assert math.isclose(layer_time_s(node, hw, "F", 4), 8.032e-8 + 1e-6, rel_tol=1e-12)


def test_fc_roofline_by_hand(hw):
    node = dict(type="FC", in_shapes=[(4, 100)], out_shape=(4, 10), macs=4000,
                param_bytes=1010 * 4)
    # F: flops 8,000 -> 1.6e-8 s; bytes 1,600 + 160 + 4,040 = 5,800 -> 1.16e-7 s
    assert math.isclose(layer_time_s(node, hw, "F", 4), 1.16e-7 + 1e-6, rel_tol=1e-12)
    # B: flops 16,000 -> 3.2e-8 s; bytes 2·1,600 + 160 + 2·4,040 = 11,440 -> 2.288e-7 s
    assert math.isclose(layer_time_s(node, hw, "B", 4), 2.288e-7 + 1e-6, rel_tol=1e-12)


def test_elementwise_layers_by_hand(hw):
    shape = (2, 8, 10, 10)  # 1,600 elements, 6,400 B
    act = dict(type="ACT", in_shapes=[shape], out_shape=shape)
    # F: 12,800 B / 5e10 = 2.56e-7; B: 6,400 + 2·6,400 = 19,200 B -> 3.84e-7
    assert math.isclose(layer_time_s(act, hw, "F", 4), 2.56e-7 + 1e-6, rel_tol=1e-12)
    assert math.isclose(layer_time_s(act, hw, "B", 4), 3.84e-7 + 1e-6, rel_tol=1e-12)
    fork = dict(type="FORK", in_shapes=[shape], out_shape=shape)
    # 3 branches: 6,400 + 3·6,400 = 25,600 B -> 5.12e-7 in both phases
    assert math.isclose(layer_time_s(fork, hw, "F", 4, n_outputs=3), 5.12e-7 + 1e-6)
    assert math.isclose(layer_time_s(fork, hw, "B", 4, n_outputs=3), 5.12e-7 + 1e-6)
    join = dict(type="JOIN", in_shapes=[shape, shape], out_shape=shape)
    # F: 2·6,400 + 6,400 = 19,200 B; B: dy + dx_1 = 12,800 B
    assert math.isclose(layer_time_s(join, hw, "F", 4), 3.84e-7 + 1e-6)
    assert math.isclose(layer_time_s(join, hw, "B", 4), 2.56e-7 + 1e-6)
    assert layer_time_s(dict(type="DATA", out_shape=shape), hw, "F", 4) == 0.0
    assert layer_time_s(dict(type="DATA", out_shape=shape), hw, "B", 4) == 0.0
    for t in ("BN", "POOL", "LRN", "DROPOUT", "SOFTMAX", "PADDING", "CONCAT"):
        node = dict(type=t, in_shapes=[shape], out_shape=shape, kernel=(3, 3), size=5)
        assert layer_time_s(node, hw, "F", 4) > hw.launch_overhead_s
        assert layer_time_s(node, hw, "B", 4) > hw.launch_overhead_s


def test_update_time_by_hand(hw):
    # 3·1e6 + 2·2e6 = 7e6 B / (0.5 · 1e11) = 1.4e-4 s, plus 1e-6 launch
    assert math.isclose(update_time_s(1_000_000, 2_000_000, hw), 1.4e-4 + 1e-6)
    assert update_time_s(0, 0, hw) == 0.0
    with pytest.raises(ConfigError, match=r"param_bytes \(=-1\)"):
        update_time_s(-1, 0, hw)


def test_layer_time_errors(hw):
    with pytest.raises(ConfigError, match=r"phase \(='U'\) must be one of 'F', 'B', 'R'"):
        layer_time_s(conv_node(), hw, "U")
    with pytest.raises(UnknownNameError, match=r"layer type 'GELU' is unknown"):
        layer_time_s(dict(type="GELU", out_shape=(1, 2)), hw, "F")
    node = conv_node()
    del node["kernel"]
    with pytest.raises(GraphError, match=r"layer 7 \(conv\): CONV needs attribute 'kernel'"):
        layer_time_s(node, hw, "F")


# -- algorithm table -----------------------------------------------------------------------------
CASES = [conv_node(), conv_node(kernel=1, pad=0), conv_node(stride=2),
         conv_node(n=16, c=3, h=227, w=227, k=96, kernel=11, stride=4, pad=0),
         conv_node(n=32, c=96, h=27, w=27, k=256, kernel=5, pad=2),
         conv_node(c=32, k=32, groups=4), conv_node(n=1, c=2048, h=7, w=7, k=512, kernel=1, pad=0)]


@pytest.mark.parametrize("node", CASES)
def test_table_properties(node):
    hw = load_hardware("k40c")
    table = conv_algorithms(node, hw)
    assert tuple(table) == PASSES
    for p in PASSES:
        rows = table[p]
        assert [r.name for r in rows] == [n for n, _ in ALGO_EFFICIENCY[p]]
        zero = rows[0]
        assert zero.name == ZERO_WS_ALGO[p] and zero.ws_bytes == 0 and zero.supported
        assert all(r.pass_name == p and r.source == "analytic" for r in rows)
        assert all(r.time_s > 0 and r.ws_bytes >= 0 for r in rows)
        assert all(r.time_s <= zero.time_s for r in rows)  # zero-ws is the slowest or equal
        assert choose_algo(rows, free_bytes=0) is zero
        assert choose_algo(rows).time_s == min(r.time_s for r in rows if r.supported)
    # layer_time_s uses the default algorithms; the fastest can only be faster
    d = {p: by_name(table[p])[DEFAULT_ALGO[p]] for p in PASSES}
    assert layer_time_s(node, hw, "F") == d["fwd"].time_s
    assert math.isclose(layer_time_s(node, hw, "B"),
                        d["bwd_data"].time_s + d["bwd_filter"].time_s, rel_tol=1e-15)
    fastest_b = choose_algo(table["bwd_data"]).time_s + choose_algo(table["bwd_filter"]).time_s
    zero_b = table["bwd_data"][0].time_s + table["bwd_filter"][0].time_s
    assert fastest_b <= layer_time_s(node, hw, "B") <= zero_b
    # deterministic
    assert conv_algorithms(node, hw) == table


def test_support_rules():
    hw = load_hardware("k40c")
    s1 = {p: by_name(r) for p, r in conv_algorithms(conv_node(), hw).items()}
    s2 = {p: by_name(r) for p, r in conv_algorithms(conv_node(stride=2), hw).items()}
    k5 = {p: by_name(r) for p, r in conv_algorithms(conv_node(kernel=5, pad=2), hw).items()}
    grouped = {p: by_name(r) for p, r in conv_algorithms(conv_node(groups=2), hw).items()}
    for p in PASSES:
        assert s1[p]["FFT"].supported and s1[p]["FFT_TILING"].supported
        assert not s2[p]["FFT"].supported and not s2[p]["FFT_TILING"].supported
        assert s1[p]["WINOGRAD_NONFUSED"].supported
        assert not s2[p]["WINOGRAD_NONFUSED"].supported
        assert not k5[p]["WINOGRAD_NONFUSED"].supported and k5[p]["FFT"].supported
        assert not grouped[p]["FFT"].supported and not grouped[p]["WINOGRAD_NONFUSED"].supported
    for table in (s1, s2, k5):
        assert not table["fwd"]["DIRECT"].supported
    assert s1["fwd"]["WINOGRAD"].supported and s1["bwd_data"]["WINOGRAD"].supported
    assert not s2["fwd"]["WINOGRAD"].supported and not k5["fwd"]["WINOGRAD"].supported
    # FFT needs the padded input <= 256
    big = conv_node(n=1, c=3, h=300, w=300, k=8)
    assert not by_name(conv_algorithms(big, hw)["fwd"])["FFT"].supported


def test_workspace_formulas_by_hand():
    hw = load_hardware("k40c")
    node = conv_node(n=2, c=3, h=8, w=8, k=4)  # 3x3, stride 1, pad 1 -> 8x8 out
    t = {p: by_name(r) for p, r in conv_algorithms(node, hw).items()}
    # PRECOMP index buffer: 4 B · kh·kw·Ho·Wo = 4·9·64 = 2,304
    assert t["fwd"]["IMPLICIT_PRECOMP_GEMM"].ws_bytes == 2_304
    # GEMM im2col, the whole batch: N·C·kh·kw·Ho·Wo·4 = 2·3·9·64·4 = 13,824
    assert t["fwd"]["GEMM"].ws_bytes == 13_824
    assert t["bwd_filter"]["ALGO_1"].ws_bytes == 13_824
    # FFT: 8·(N·C + K·C + N·K)·Hp·(Wp/2+1) = 8·(6 + 12 + 8)·10·6 = 12,480
    assert t["fwd"]["FFT"].ws_bytes == 12_480
    # FFT_TILING: one 32x32 tile; 8·(6 + 12 + 8)·32·17 = 113,152
    assert t["fwd"]["FFT_TILING"].ws_bytes == 113_152
    # WINOGRAD fused: transformed filters K·C·16·4 = 768
    assert t["fwd"]["WINOGRAD"].ws_bytes == 768
    # WINOGRAD_NONFUSED, m = 4: 36/16 · (1,536 + 2,048 + 432) = 9,036
    assert t["fwd"]["WINOGRAD_NONFUSED"].ws_bytes == 9_036
    assert t["fwd"]["IMPLICIT_GEMM"].ws_bytes == t["bwd_data"]["ALGO_0"].ws_bytes == 0


def test_winograd_and_fft_beat_gemm_where_they_should():
    hw = load_hardware("k40c")
    vgg = conv_node(n=32, c=256, h=56, w=56, k=256)
    fastest = choose_algo(conv_algorithms(vgg, hw)["fwd"])
    assert fastest.name.startswith("WINOGRAD")
    alex2 = conv_node(n=128, c=96, h=27, w=27, k=256, kernel=5, pad=2)
    assert choose_algo(conv_algorithms(alex2, hw)["fwd"]).name.startswith("FFT")
    # with too little memory the choice falls back towards smaller workspaces
    rows = conv_algorithms(vgg, hw)["fwd"]
    small = choose_algo(rows, free_bytes=by_name(rows)["WINOGRAD"].ws_bytes + 1)
    assert small.ws_bytes <= by_name(rows)["WINOGRAD"].ws_bytes


def test_choose_algo_ties_and_strict_fit():
    rows = (ConvAlgo(name="Z", pass_name="fwd", ws_bytes=0, time_s=2.0, supported=True),
            ConvAlgo(name="A", pass_name="fwd", ws_bytes=50, time_s=1.0, supported=True),
            ConvAlgo(name="B", pass_name="fwd", ws_bytes=10, time_s=1.0, supported=True),
            ConvAlgo(name="U", pass_name="fwd", ws_bytes=1, time_s=0.1, supported=False))
    assert choose_algo(rows).name == "B"            # tie on time -> smaller workspace
    assert choose_algo(rows, free_bytes=10).name == "Z"  # ws must be < free
    assert choose_algo(rows, free_bytes=11).name == "B"


def test_conv_algorithms_rejects_other_types():
    with pytest.raises(ConfigError, match="conv_algorithms needs a CONV layer, not FC"):
        conv_algorithms(dict(type="FC"), load_hardware("k40c"))


# -- whole graphs --------------------------------------------------------------------------------
def test_modeled_costs_on_a_zoo_network():
    hw = load_hardware("k40c")
    G = build_network("resnet50", batch=4)
    before = nx.node_link_data(G, edges="edges")
    costs = modeled_costs(G, hw)
    assert nx.node_link_data(G, edges="edges") == before  # never mutates
    assert list(costs) == list(G.nodes)
    for n, c in costs.items():
        assert isinstance(c, LayerCost)
        a = G.nodes[n]
        if a["type"] == "CONV":
            assert set(c.conv_algos) == set(PASSES)
            assert c.fwd_time_s == layer_time_s(a, hw, "F", 4)
        else:
            assert c.conv_algos is None
        if a["type"] == "DATA":
            assert c.fwd_time_s == c.bwd_time_s == 0.0
        else:
            assert c.fwd_time_s > 0 and c.bwd_time_s > 0
        if a["type"] == "FORK":
            assert c.fwd_time_s == layer_time_s(a, hw, "F", 4, n_outputs=G.out_degree(n))
    # memoised layers do not share a mutable table dict
    convs = [n for n in G if G.nodes[n]["type"] == "CONV"]
    assert costs[convs[-1]].conv_algos is not costs[convs[-4]].conv_algos
    assert modeled_costs(G, hw) == costs


def test_with_modeled_times_returns_a_copy():
    hw = load_hardware("h200")
    G = build_network("alexnet", batch=8, variant="release")
    H = with_modeled_times(G, hw)
    assert H is not G
    assert all("fwd_time_s" not in d for _, d in G.nodes(data=True))
    costs = modeled_costs(G, hw)
    for n, d in H.nodes(data=True):
        assert d["time_source"] == "modeled:h200"
        assert d["fwd_time_s"] == costs[n].fwd_time_s
        assert d["bwd_time_s"] == costs[n].bwd_time_s
    assert H.graph == G.graph and list(H.edges) == list(G.edges)


def test_missing_attribute_names_the_layer():
    G = nx.DiGraph(dtype_bytes=4)
    G.add_node(3, type="CONV", name="c", in_shapes=[(1, 1, 4, 4)], out_shape=(1, 1, 4, 4))
    with pytest.raises(GraphError, match=r"layer 3 \(c\): CONV needs attribute 'kernel'"):
        modeled_costs(G, load_hardware("k40c"))


def test_resnet2500_gets_modeled_times():
    # speed is a benchmark (benchmarks/run_all.py), not a timed assert
    G = build_network("resnet2500", batch=1, variant="release")
    assert G.number_of_nodes() == 9168
    H = with_modeled_times(G, load_hardware("k40c"))
    assert H.number_of_nodes() == 9168
    assert all(d["fwd_time_s"] >= 0 for _, d in H.nodes(data=True))
    assert sum(d["fwd_time_s"] > 0 for _, d in H.nodes(data=True)) > 9000


def test_doctests():
    assert doctest.testmod(costs_module).failed == 0
