"""Issue 9: every input is checked once, where it enters, and fails as one line.

Each test is a repro from the issue (D3-D7, D9, D12) turned into a regression test.
"""
import copy
import dataclasses
import gzip
import json
import math
import re

import networkx as nx
import pytest

from snsim.api import make_program, simulate
from snsim.cli import main
from snsim.errors import ConfigError, GraphError, SnsimError, TraceError
from snsim.hardware import load_hardware
from snsim.policies import get_policy
from snsim.sweep import load_sweep
from snsim.trace import export_zoo, load_trace_doc, program_to_dict, read_trace
from snsim.units import parse_bytes
from snsim.zoo import build_network


def cli_error(capsys, *argv):
    """Run the CLI in process; return its one-line error (and fail on a traceback)."""
    rc = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert rc == 2, (rc, err)
    assert err.startswith("snsim: error: ") and "\n" not in err, err
    return err


# -- D3: byte sizes -----------------------------------------------------------------------------
@pytest.mark.parametrize("budget, rule", [
    ("1e400", "must be a finite byte size"), ("nan", "must be a byte size"),
    ("inf", "must be a byte size"), ("-1", "must be a byte size"),
])
def test_cli_budget_that_is_not_a_finite_size(capsys, budget, rule):
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--budget", budget)
    assert f"--budget (='{budget}') {rule}" in err


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), -float("inf"), 1e400, -1, True,
                                    [1], 10**400])
def test_api_budget_that_is_not_a_finite_size(budget):
    with pytest.raises(ConfigError, match=r"budget \(=.*\) must be"):
        simulate("lenet", batch=1, budget_bytes=budget)


def test_integer_budgets_stay_integers():          # D12
    assert parse_bytes(10**30) == 10**30
    assert parse_bytes(str(10**30 + 1)) == 10**30 + 1
    assert parse_bytes("3GiB") == 3 * 2**30 and parse_bytes(2.6) == 3
    r = simulate("lenet", batch=1, budget_bytes=10**30)
    assert r.budget_bytes == 10**30 and type(r.budget_bytes) is int and r.feasible


# -- D3, D7: policy options ---------------------------------------------------------------------
@pytest.mark.parametrize("policy, option, rule", [
    ("chen_sqrt", "every=abc", "option every (='abc') must be an integer >= 1 or none"),
    ("chen_sqrt", "every=0", "option every (='0') must be an integer >= 1 or none"),
    ("offload", "prefetch_depth=abc", "option prefetch_depth (='abc') must be an integer >= 0"),
    ("offload", "prefetch_depth=-1", "option prefetch_depth (='-1') must be an integer >= 0"),
    ("offload", "offload_types=5", "option offload_types (='5') must be one or more layer types"),
    ("offload", "offload_types=CONVX", "option offload_types (='CONVX') must be one or more"),
    ("offload", "offload_types=[]", "option offload_types (='[]') must be one or more"),
    ("offload", "lru=maybe", "option lru (='maybe') must be true or false"),
    ("recompute", "mode=[unclosed", "option mode (='[unclosed') must be one of speed, memory, "
                                    "cost-aware"),
    ("vdnn", "layers=some", "option layers (='some') must be one of conv, all"),
    ("workspace", "ws_policy=best", "option ws_policy (='best') must be one of none, dynamic"),
])
def test_cli_bad_policy_option(capsys, policy, option, rule):
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--policy", policy,
                    "--option", option)
    assert f"policy '{policy}': {rule}" in err


@pytest.mark.parametrize("item", ["=3", "mode", " =x"])
def test_cli_option_without_a_key(capsys, item):
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--option", item)
    assert err == f"snsim: error: --option {item!r} must look like KEY=VALUE"


@pytest.mark.parametrize("text", ["CONV", "conv", "CONV,FC", "[CONV, FC]", " [ CONV ] "])
def test_offload_types_accepts_one_type_a_list_or_brackets(text):       # D7
    types = get_policy("offload", offload_types=text).options["offload_types"]
    assert types[0] == "CONV" and set(types) <= {"CONV", "FC"}
    assert get_policy("offload", offload_types=["CONV", "FC"]).options["offload_types"] == \
        ("CONV", "FC")


def test_offload_types_conv_without_brackets_offloads_conv_outputs():   # D7
    plain = simulate("lenet", batch=8, policy="offload")
    one = simulate("lenet", batch=8, policy="offload", policy_options={"offload_types": "CONV"})
    both = simulate("lenet", batch=8, policy="offload",
                    policy_options={"offload_types": "CONV,FC"})
    assert plain.d2h_bytes > 0 and one.d2h_bytes == plain.d2h_bytes
    assert both.d2h_bytes > one.d2h_bytes


def test_options_parse_typed_and_text_values_alike():
    a = get_policy("superneurons", release="true", prefetch_depth="2", free_after_offload="no")
    b = get_policy("superneurons", release=True, prefetch_depth=2, free_after_offload=False)
    assert a.options == b.options
    assert get_policy("chen_sqrt", every="none").options["every"] is None
    with pytest.raises(ConfigError, match=r"option prefetch_depth \(=True\) must be an integer"):
        get_policy("offload", prefetch_depth=True)
    with pytest.raises(ConfigError, match=r"option every \(=2.5\)"):
        get_policy("chen_sqrt", every=2.5)


# -- D3: YAML files and output paths ------------------------------------------------------------
@pytest.mark.parametrize("content, rule", [
    (b"name: \xff\n", "is not UTF-8 text: byte 0xff at offset 6"),
    (b"name: a\x01b\n", "is not valid YAML: character U+0001 at offset 7 is not allowed"),
])
def test_yaml_that_is_not_text(capsys, tmp_path, content, rule):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--gpu", str(path))
    assert f"hardware file {path} {rule}" in err
    err = cli_error(capsys, "sweep", str(path))
    assert f"sweep file {path} {rule}" in err


def test_output_path_under_a_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--trace-out",
                    "f/t.json")
    assert err == "snsim: error: --trace-out f/t.json: f is a file, not a folder"
    err = cli_error(capsys, "export", "lenet", "--batch", "2", "--out", "f/x")
    assert err == "snsim: error: --out f/x: f is a file, not a folder"
    (tmp_path / "d").mkdir()
    err = cli_error(capsys, "run", "--network", "lenet", "--batch", "2", "--trace-out", "d")
    assert err == "snsim: error: --trace-out d is a folder; give a file name"


# -- D9: degenerate but finite hardware numbers ----------------------------------------------
@pytest.mark.parametrize("field, value, rule", [
    ("peak_flops_fp32", 5e-324, "must be in [1000, 1e+18]"),
    ("mem_bytes_per_s", 1e300, "must be in [1000, 1e+18]"),
    ("h2d_pinned_bytes_per_s", 1e-300, "must be in [1000, 1e+18]"),
    ("launch_overhead_s", 1e308, "must be in [0, 1] s"),
    ("copy_latency_s", 2.0, "must be in [0, 1] s"),
    ("dram_bytes", 2**70, "must be <= 2**62"),
])
def test_degenerate_hardware_numbers(field, value, rule):
    hw = load_hardware("k40c")
    message = f"hardware.{field} (={value!r}) {rule}"
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        dataclasses.replace(hw, **{field: value})


def test_tiny_efficiencies_are_refused():
    hw = load_hardware("k40c")
    tiny = tuple((k, 1e-300 if k == "conv" else v) for k, v in hw.efficiency)
    with pytest.raises(ConfigError, match=r"efficiency\.conv \(=1e-300\) must be in \[0\.01, 1\]"):
        dataclasses.replace(hw, efficiency=tiny)
    with pytest.raises(ConfigError, match=r"copy_efficiency_by_bytes\[0\]"):
        dataclasses.replace(hw, copy_efficiency_by_bytes=((1024, 1e-9),))


def test_extreme_valid_hardware_gives_finite_times():
    hw = load_hardware("k40c")
    lo_rate = {f: 1e6 for f in ("peak_flops_fp32", "mem_bytes_per_s", "h2d_pinned_bytes_per_s",
                                "d2h_pinned_bytes_per_s")}
    slow = dataclasses.replace(hw, **lo_rate, copy_latency_s=1.0, launch_overhead_s=1.0,
                               efficiency=tuple((k, 0.01) for k, _ in hw.efficiency))
    r = simulate("resnet18", batch=8, hardware=slow, policy="offload")
    assert r.feasible and math.isfinite(r.step_time_s) and r.step_time_s > 1e3


# -- D4, D5: traces -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lenet_doc(tmp_path_factory):
    """A modelled LeNet trace document (graph with times) and a captured-style one (program)."""
    path = export_zoo("lenet", batch=2, hardware=load_hardware("k40c"),
                      out_dir=tmp_path_factory.mktemp("t"))
    doc = load_trace_doc(path)
    prog = program_to_dict(make_program("lenet", batch=2))
    return doc, {"snsim_trace_version": 1, "provenance": {"kind": "measured"}, "program": prog}


def write_doc(tmp_path, doc, text=None):
    path = tmp_path / "t.json"
    path.write_text(text if text is not None else json.dumps(doc))
    return path


def test_damaged_deflate_stream_is_one_line(tmp_path, capsys, lenet_doc):       # D4
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(lenet_doc[0]).encode()))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(TraceError, match=r"t\.json\.gz: unreadable trace \(.*\)"):
        read_trace(path)
    err = cli_error(capsys, "run", "--trace", str(path))
    assert "unreadable trace" in err


def _node(doc, layer_id):
    return next(n for n in doc["graph"]["nodes"] if n["id"] == layer_id)


@pytest.mark.parametrize("edit, message", [
    (lambda d: _node(d, 3).update(bwd_time_s=float("nan")), "layer 3 (pool1): bwd_time_s (=nan)"),
    (lambda d: _node(d, 2).update(fwd_time_s=-5), "layer 2 (conv1): fwd_time_s (=-5) must be a "
                                                   "number of seconds in [0, 1e+06]"),
    (lambda d: _node(d, 2).update(fwd_time_s=float("inf")), "fwd_time_s (=inf)"),
    (lambda d: _node(d, 2).update(out_shape=None), "layer 2 (conv1): out_shape (=None) must be"),
    (lambda d: _node(d, 2).update(kernel=None), "layer 2 (conv1): kernel (=None) must be an "
                                                "integer >= 1 or a pair of them"),
    (lambda d: _node(d, 2).update(in_shapes=None), "in_shapes (=None) must be a list of shapes"),
    (lambda d: _node(d, 2).update(in_shapes=[[2, 1, 28, 28], [1]]), "in_shapes lists 2 shape(s)"),
    (lambda d: _node(d, 2).update(type=None), "layer 2 (conv1): unknown type None"),
    (lambda d: _node(d, 2).update(groups=0), "groups (=0) must be an integer >= 1"),
    (lambda d: _node(d, 2).update(name=5), "name (=5) must be a string"),
    (lambda d: d["graph"].update(directed=False), "field graph.directed (=False) must be true"),
    (lambda d: d["graph"].update(multigraph=True), "field graph.multigraph (=True) must be false"),
    (lambda d: d["graph"]["graph"].update(batch=""), "graph.batch (='') must be an integer >= 1"),
    (lambda d: d["graph"]["graph"].update(dtype_bytes=0), "graph.dtype_bytes (=0) must be"),
    (lambda d: d["graph"]["edges"][0].update(src_port="0"), "src_port (='0') must be an integer"),
    (lambda d: d["graph"]["nodes"][1].update(id="two"), "layer id 'two' must be an integer"),
    (lambda d: d["graph"].update(nodes=5), "field graph is not networkx node-link data"),
    (lambda d: _node(d, 2).pop("params"), "param_bytes (=2080) must be params x dtype_bytes"),
    (lambda d: _node(d, 2).pop("out_channels"), "needs out_channels (=None) <= params"),
    (lambda d: d["graph"]["edges"].pop(0), "graph is disconnected"),
])
def test_graph_trace_field_values_are_checked_at_load(tmp_path, lenet_doc, edit, message):  # D5
    doc = copy.deepcopy(lenet_doc[0])
    edit(doc)
    with pytest.raises(SnsimError) as e:
        read_trace(write_doc(tmp_path, doc))
    assert message in str(e.value) and str(tmp_path / "t.json") in str(e.value)


def test_time_of_1e400_in_trace_text(tmp_path, lenet_doc):                                # D5
    text = json.dumps(lenet_doc[0]).replace('"fwd_time_s": 0.0', '"fwd_time_s": 1e400', 1)
    assert "1e400" in text
    with pytest.raises(GraphError, match=r"fwd_time_s \(=inf\)"):
        read_trace(write_doc(tmp_path, None, text))


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.update(batch=""), "program.batch (='') must be an integer >= 1"),
    (lambda p: p.update(name=None), "program.name (=None) must be a string"),
    (lambda p: p.update(optimizer="sgdx"), "program.optimizer (='sgdx') must be one of"),
    (lambda p: p["steps"][3].__setitem__(4, float("nan")), "program.steps[3].time_s (=nan)"),
    (lambda p: p["steps"][3].__setitem__(4, 1e300), "program.steps[3].time_s (=1e+300)"),
    (lambda p: p["steps"][3].__setitem__(5, None), "program.steps[3].deps (=None)"),
    (lambda p: p["steps"][3].__setitem__(6, [10**6]), "program.steps[3].outputs (=[1000000])"),
    (lambda p: p["steps"][3].__setitem__(0, [1]), "program.steps[3].layer (=[1])"),
    (lambda p: p["steps"].__setitem__(3, "x"), "program.steps[3] (='x') must be [layer"),
    (lambda p: p["tensors"][2].__setitem__(3, -1), "program.tensors[2].nbytes (=-1)"),
    (lambda p: p["tensors"][2].__setitem__(3, 2.5), "program.tensors[2].nbytes (=2.5)"),
    (lambda p: p["tensors"][2].__setitem__(4, None), "program.tensors[2].producer (=None)"),
    (lambda p: p["static_bytes"].update(parameter=float("nan")), "static_bytes.parameter (=nan)"),
    (lambda p: p.update(events=[[0, "alloc"]]), "program.events[0] (=[0, 'alloc']) must be"),
])
def test_program_trace_field_values_are_checked_at_load(tmp_path, lenet_doc, edit, message):
    doc = copy.deepcopy(lenet_doc[1])
    edit(doc["program"])
    with pytest.raises(TraceError) as e:
        read_trace(write_doc(tmp_path, doc))
    assert message in str(e.value)


BAD_VALUES = [None, float("nan"), float("inf"), -5, 0, 1e300, "", "x", [], [0], {}, True, 2.5]


def test_every_graph_field_with_bad_values_fails_cleanly_or_runs(tmp_path, lenet_doc):
    """Each node and graph attribute of a trace, set to each bad value: one clear error at
    load, or a run whose figures are all finite. Nothing else (no TypeError, no NaN)."""
    base = lenet_doc[0]
    targets = [(i, k) for i, n in enumerate(base["graph"]["nodes"]) for k in n if k != "id"]
    targets += [("graph", k) for k in base["graph"]["graph"]]
    for where, key in targets:
        for bad in BAD_VALUES:
            doc = copy.deepcopy(base)
            node = doc["graph"]["graph"] if where == "graph" else doc["graph"]["nodes"][where]
            node[key] = bad
            _load_and_run(write_doc(tmp_path, doc), (where, key, bad), "superneurons")


def test_every_program_field_with_bad_values_fails_cleanly_or_runs(tmp_path, lenet_doc):
    base = lenet_doc[1]["program"]
    rows = [("steps", i, j) for i in (0, 5, len(base["steps"]) - 1)
            for j in range(len(base["steps"][i]))]
    rows += [("tensors", i, j) for i in (0, 3) for j in range(6)]
    for table, i, j in rows:
        for bad in BAD_VALUES:
            doc = copy.deepcopy(lenet_doc[1])
            doc["program"][table][i][j] = bad
            _load_and_run(write_doc(tmp_path, doc), (table, i, j, bad), "offload")
    for key in ("name", "batch", "optimizer", "source", "hardware", "static_bytes"):
        for bad in BAD_VALUES:
            doc = copy.deepcopy(lenet_doc[1])
            doc["program"][key] = bad
            _load_and_run(write_doc(tmp_path, doc), (key, bad), "offload")


def _load_and_run(path, case, policy):
    try:
        net = read_trace(path)
    except SnsimError as e:
        assert "\n" not in str(e) and str(path) in str(e), (case, str(e))
        return
    r = simulate(net, hardware="k40c", policy=policy)
    assert math.isfinite(r.step_time_s) and r.peak_ideal_bytes >= 0, case


# -- D6: user graphs passed to simulate() / make_program() --------------------------------------
def _lenet():
    return build_network("lenet", batch=2)


def _edit(G, fn):
    fn(G)
    return G


@pytest.mark.parametrize("make, message", [
    (lambda: nx.DiGraph(), "network: graph has no layers"),
    (lambda: _edit(_lenet(), lambda G: G.remove_edge(3, 4)), "graph is disconnected"),
    (lambda: _edit(_lenet(), lambda G: G.add_node(99, type="ACT", name="x", out_shape=(2, 3))),
     "graph is disconnected"),
    (lambda: _edit(_lenet(), lambda G: G.nodes[2].update(out_shape=(2, 0, 24, 24))),
     "layer 2 (conv1): out_shape (=(2, 0, 24, 24)) must be a list of 1 to 8 integers >= 1"),
    (lambda: _edit(_lenet(), lambda G: G.nodes[3].update(type="DATA")),
     "layer 3 (pool1): layer type DATA takes 0 input(s), not 1"),
    (lambda: _edit(_lenet(), lambda G: G.nodes[2].update(params=-5)),
     "layer 2 (conv1): params (=-5) must be an integer >= 0"),
    (lambda: nx.MultiDiGraph(_lenet()), "must be a networkx.DiGraph, not MultiDiGraph"),
    (lambda: nx.Graph(_lenet()), "a networkx.DiGraph or a Program, not Graph"),
    (lambda: _edit(_lenet(), lambda G: G.nodes[2].update(fwd_time_s=float("nan"), bwd_time_s=1)),
     "layer 2 (conv1): fwd_time_s (=nan) must be a number of seconds"),
    (lambda: nx.relabel_nodes(_lenet(), {1: "data"}), "layer id 'data' must be an integer"),
])
def test_user_graphs_are_checked(make, message):
    for fn in (make_program, simulate):
        with pytest.raises(SnsimError) as e:
            fn(make(), hardware="k40c")
        assert message in str(e.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"batch": 2.5}, "batch (=2.5) must be an integer in [1, 2**31]"),
    ({"batch": True}, "batch (=True) must be an integer"),
    ({"batch": "3"}, "batch (='3') must be an integer"),
    ({"batch": 2, "input_size": -3}, "input_size (=-3) must be an integer"),
])
def test_zoo_sizes_are_checked(kwargs, message):
    with pytest.raises(ConfigError) as e:
        simulate("lenet", **kwargs)
    assert message in str(e.value)


# -- D3: sweep files ------------------------------------------------------------------------
@pytest.mark.parametrize("budget, rule", [
    (".nan", "(=nan) must be a finite byte size"), (".inf", "(=inf) must be a finite byte size"),
    ("1e400", "(='1e400') must be a finite byte size"), ("-1", "(=-1) must be >= 0"),
])
def test_sweep_budget_that_is_not_a_finite_size(tmp_path, budget, rule):
    path = tmp_path / "s.yaml"
    path.write_text(f"networks: [lenet]\nbatches: [2]\npolicies: [liveness]\n"
                    f"budgets: [{budget}]\n")
    with pytest.raises(ConfigError) as e:
        load_sweep(path)
    assert str(e.value) == f"sweep.budgets[0] {rule} ({path}:4)"


def test_sweep_policy_options_are_typed_and_canonical(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("networks: [lenet]\nbatches: [2]\npolicies:\n"
                    "  - {name: offload, options: {offload_types: CONV}}\n"
                    "  - {name: offload, options: {offload_types: [CONV]}}\n")
    with pytest.raises(ConfigError, match=r"policies\[1\] .* repeats policies\[0\]"):
        load_sweep(path)
    path.write_text("networks: [lenet]\nbatches: [2]\npolicies:\n"
                    "  - {name: offload, options: {prefetch_depth: abc}}\n")
    with pytest.raises(ConfigError, match=r"option prefetch_depth \(='abc'\) must be an integer"):
        load_sweep(path)


@pytest.mark.parametrize("kwargs, message", [
    ({"hardware": 5}, "hardware (=5) must be a preset name or a YAML path"),
    ({"hardware": None}, "hardware (=None) must be a preset name or a YAML path"),
    ({"policy_options": [1]}, "policy_options (=[1]) must be a mapping"),
    ({"allocator": "pytorch", "allocator_options": [1]}, "allocator_options (=[1]) must be a "
                                                          "mapping"),
])
def test_api_arguments_are_checked(kwargs, message):
    with pytest.raises(ConfigError) as e:
        simulate("lenet", batch=2, **kwargs)
    assert message in str(e.value)


def test_depth_search_sizes_are_checked(capsys):
    err = cli_error(capsys, "maxdepth", "--family", "vgg", "--batch", "2", "--input-size", "-1")
    assert err == "snsim: error: input_size (=-1) must be an integer in [1, 2**31]"
