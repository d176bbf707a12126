"""Trace format: round trips and one-line schema errors."""
import gzip
import json

import pytest

from snsim.api import make_program, simulate
from snsim.cli import main
from snsim.errors import TraceError
from snsim.hardware import load_hardware
from snsim.trace import export_zoo, program_to_dict, read_trace, write_trace

K40C = load_hardware("k40c")


def test_zoo_export_round_trip(tmp_path):
    path = export_zoo("resnet18", batch=4, hardware=K40C, out_dir=tmp_path)
    G = read_trace(path)
    assert G.number_of_nodes() == 78
    assert G.nodes[2]["out_shape"] == (4, 64, 112, 112)
    direct = simulate("resnet18", batch=4, policy="superneurons")
    replay = simulate(G, hardware=K40C, policy="superneurons")
    assert replay.peak_ideal_bytes == direct.peak_ideal_bytes
    assert replay.step_time_s == pytest.approx(direct.step_time_s)


def test_program_round_trip(tmp_path):
    p = make_program("densenet121", batch=2, hardware=K40C)
    write_trace(tmp_path / "p.json", program=p, provenance={"kind": "measured", "gpu": "test"})
    q = read_trace(tmp_path / "p.json")
    assert [s.deps for s in q.steps] == [s.deps for s in p.steps]
    assert q.static_bytes == p.static_bytes
    a = simulate(p, hardware=K40C, policy="liveness")
    b = simulate(q, hardware=K40C, policy="liveness")
    assert a.peak_ideal_bytes == b.peak_ideal_bytes


def test_truncated_trace_is_one_clear_line(tmp_path, capsys):
    path = export_zoo("lenet", batch=1, hardware=K40C, out_dir=tmp_path)
    raw = gzip.open(path, "rt").read()
    cut = tmp_path / "cut.json"
    cut.write_text(raw[: len(raw) // 2])
    with pytest.raises(TraceError, match="cut.json: truncated or malformed JSON"):
        read_trace(cut)
    assert main(["describe", "--trace", str(cut)]) == 2
    err = capsys.readouterr().err
    assert "truncated" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.pop("snsim_trace_version"), "snsim_trace_version"),
    (lambda d: d["provenance"].update(kind="guessed"), "provenance.kind"),
    (lambda d: d["program"]["tensors"][0].__setitem__(3, -5), r"tensors\[0\].nbytes"),
    (lambda d: d["program"]["steps"][1][5].append(10**6), r"steps\[1\].deps .* tensor ids"),
    (lambda d: d["program"]["steps"][0].__setitem__(3, "X"), r"steps\[0\].phase"),
])
def test_schema_errors_name_the_field(tmp_path, mutate, message):
    p = make_program("lenet", batch=1, hardware=K40C)
    doc = {"snsim_trace_version": 1, "provenance": {"kind": "measured"},
           "program": program_to_dict(p)}
    mutate(doc)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=message):
        read_trace(path)


def test_cyclic_graph_in_trace(tmp_path):
    path = export_zoo("lenet", batch=1, hardware=K40C, out_dir=tmp_path)
    doc = json.loads(gzip.open(path, "rt").read())
    doc["graph"]["edges"].append({"source": 9, "target": 2, "src_port": 0, "dst_port": 1})
    bad = tmp_path / "cyc.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(Exception, match="cyclic"):
        read_trace(bad)


def test_export_command_and_committed_traces(tmp_path, capsys):
    assert main(["export", "lenet", "--batch", "2", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "k40c" / "lenet_b2.json.gz").exists()
    # the committed modelled traces replay to the same numbers as the zoo
    from pathlib import Path
    committed = Path(__file__).parent.parent / "traces" / "k40c" / "resnet50_b32.json.gz"
    G = read_trace(committed)
    assert simulate(G, hardware=K40C, policy="liveness").peak_ideal_bytes == \
        simulate("resnet50", batch=32, policy="liveness").peak_ideal_bytes


def test_cyclic_user_graph_via_cli(tmp_path, capsys):
    path = export_zoo("lenet", batch=1, hardware=K40C, out_dir=tmp_path)
    doc = json.loads(gzip.open(path, "rt").read())
    doc["graph"]["edges"].append({"source": 9, "target": 2, "src_port": 0, "dst_port": 1})
    bad = tmp_path / "cyc.json"
    bad.write_text(json.dumps(doc))
    assert main(["run", "--trace", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "cyc.json" in err and "cyclic" in err and len(err.strip().splitlines()) == 1
