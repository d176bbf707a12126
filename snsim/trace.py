"""Versioned JSON traces: a network's graph, costs and provenance — modeled or measured.

Format (``snsim_trace_version`` 1)::

    {
      "snsim_trace_version": 1,
      "provenance": {"kind": "modeled" | "measured", "hardware": "k40c", ...},
      "graph": networkx node_link_data(G, edges="edges"),      # optional for captured traces
      "workspace_tables": {"<layer_id>": {"fwd": [[name, ws_bytes, time_s, supported, source], ...]}},
      "program": {...},      # optional: a captured step/tensor table that replaces SPEC §2.3
      "measured": {...}      # optional: ground truth of a real run (peaks, step time, counts)
    }

``program``: ``{"name", "batch", "optimizer", "static_bytes": {kind: bytes}, "steps": [[layer_id,
name, type, phase, time_s, [tensor ids]], ...], "tensors": [[tensor_id, name, kind, nbytes,
producer_layer, producer_type], ...]}``, plus optional ``"static_tensors": [[name, kind, nbytes],
...]`` (the individual static allocations, for allocator replay) and ``"events"`` (an exact
``[[step, "alloc"|"free"|"read"|"release", tensor_or_static_index], ...]`` order, for
allocator-exact replays; a ``read`` is an op reading the tensor, a ``release`` forward dropping
its last reference to a tensor autograd saved, each where it happened among the allocations).
Reading checks the schema and reports the first problem as one line naming file and field.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import zlib
from pathlib import Path

import networkx as nx

from . import checks
from .captured import last_parts, layer_graph, op_granular, step_stream_times
from .errors import TraceError
from .graph import check_graph
from .program import (CUBLAS_MAP_KEYS, MANAGED_KINDS, OPTIMIZER_STATE_FACTOR, STATIC_KINDS,
                      Program, StaticTensor, Step, Tensor)

TRACE_VERSION = 1
_TUPLE_ATTRS = ("out_shape", "kernel", "stride", "pad", "input_shape")


def text_path(path):
    """``path``, or ``<path>.gz`` where only that exists (a table kept gzip-compressed)."""
    path = Path(path)
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.exists() else path


def open_text(path, mode="r", **kwargs):
    """Open a text file, through gzip where its name ends in ``.gz``; reading ``x.csv`` opens
    ``x.csv.gz`` where only that exists (:func:`text_path`). ``kwargs`` go to :func:`open`
    (``newline``, ``encoding``)."""
    path = text_path(path) if mode.startswith("r") else Path(path)
    if path.name.endswith(".gz"):
        return gzip.open(path, mode.replace("t", "") + "t", **kwargs)
    return open(path, mode, **kwargs)


def graph_to_dict(G):
    data = nx.node_link_data(G, edges="edges")
    return json.loads(json.dumps(data, default=list))


def graph_from_dict(d, *, source="trace"):
    """The layer DAG of a trace's ``graph`` field, checked by :func:`check_graph`."""
    if not isinstance(d, dict):
        raise TraceError(f"{source}: field graph must be an object (networkx node-link data)")
    for key, want in (("directed", True), ("multigraph", False)):
        if d.get(key, want) is not want:
            raise TraceError(f"{source}: field graph.{key} (={d[key]!r}) must be "
                             f"{str(want).lower()}")
    try:
        G = nx.node_link_graph(d, directed=True, multigraph=False, edges="edges")
    except (KeyError, TypeError, ValueError, AttributeError, nx.NetworkXError) as e:
        raise TraceError(f"{source}: field graph is not networkx node-link data "
                         f"({type(e).__name__}: {e})") from None
    for n, a in G.nodes(data=True):
        for key in _TUPLE_ATTRS:
            if key in a and isinstance(a[key], list):
                a[key] = tuple(a[key])
        if isinstance(a.get("in_shapes"), list):
            a["in_shapes"] = [tuple(s) if isinstance(s, list) else s for s in a["in_shapes"]]
        a.setdefault("layer_id", n)
    if "input_shape" in G.graph and isinstance(G.graph["input_shape"], list):
        G.graph["input_shape"] = tuple(G.graph["input_shape"])
    check_graph(G, source=source)
    return G


#: a captured program's extras that :func:`program_from_dict` reads back
PROGRAM_EXTRAS = ("warmup_events", "warmup_iteration_starts", *CUBLAS_MAP_KEYS,
                  "segment_addresses", "modules", "containers", "param_aliases",
                  "saved_released", "saved_views")


def program_to_dict(p):
    """A program's ``program`` section; a captured program's individual static allocations,
    history and module tree (:data:`PROGRAM_EXTRAS`) with it, so that a program a policy
    rewrote (``Plan.program``) replays as it was planned."""
    d = {"name": p.name, "batch": p.batch, "optimizer": p.optimizer, "source": p.source,
         "hardware": p.hardware, "static_bytes": dict(p.static_bytes),
         "steps": [[s.layer, s.name, s.type, s.phase, s.time_s, list(s.deps),
                    list(s.outputs), list(s.inputs)] for s in p.steps],
         "tensors": [[t.tensor_id, t.name, t.kind, t.nbytes, t.producer, t.producer_type]
                     for t in p.tensors]}
    if p.static_tensors:
        d["static_tensors"] = [[st.name, st.kind, st.nbytes] for st in p.static_tensors]
    d.update({k: p.extra[k] for k in PROGRAM_EXTRAS if k in p.extra})
    return d


def _field(d, key, kind, source, where="trace"):
    if key not in d:
        raise TraceError(f"{source}: missing field {where}.{key}")
    v = d[key]
    if kind is not None and not isinstance(v, kind):
        raise TraceError(f"{source}: field {where}.{key} must be {kind.__name__ if isinstance(kind, type) else kind}")
    return v


def _need(ok, source, field, value, rule):
    if not ok:
        raise TraceError(f"{source}: field {field} (={checks.show(value)}) must be {rule}")


def _ids(v, n):
    return isinstance(v, list) and all(checks.is_int(t) and 0 <= t < n for t in v)


_PROGRAM_RULES = {"name": checks.TEXT, "batch": checks.POSITIVE, "source": checks.TEXT,
                  "hardware": checks.TEXT,
                  "optimizer": (f"one of {', '.join(OPTIMIZER_STATE_FACTOR)}",
                                lambda v: isinstance(v, str) and v in OPTIMIZER_STATE_FACTOR)}


def program_from_dict(d, *, graph=None, source="trace"):
    """Rebuild a :class:`Program` from its dict, checking every row and field."""
    where = "program"
    for key, (rule, ok) in _PROGRAM_RULES.items():
        if key in d:
            _need(ok(d[key]), source, f"program.{key}", d[key], rule)
    rows_t = _field(d, "tensors", list, source, where)
    tensors = []
    for i, row in enumerate(rows_t):
        at = f"program.tensors[{i}]"
        _need(isinstance(row, list) and len(row) == 6, source, at, row,
              "[tensor_id, name, kind, nbytes, producer, producer_type]")
        tid, name, kind, nbytes, producer, ptype = row
        _need(tid == i and checks.is_int(tid), source, f"{at}.tensor_id", tid, f"its index {i}")
        _need(isinstance(name, str), source, f"{at}.name", name, "a string")
        _need(kind in MANAGED_KINDS, source, f"{at}.kind", kind, f"one of {MANAGED_KINDS}")
        _need(checks.COUNT[1](nbytes), source, f"{at}.nbytes", nbytes, checks.COUNT[0])
        _need(checks.is_int(producer), source, f"{at}.producer", producer, "a layer id (integer)")
        _need(isinstance(ptype, str), source, f"{at}.producer_type", ptype, "a string")
        tensors.append(Tensor(tid, name, kind, nbytes, producer, ptype))
    n = len(tensors)
    steps = []
    raw_steps = []
    for i, row in enumerate(_field(d, "steps", list, source, where)):
        at = f"program.steps[{i}]"
        _need(isinstance(row, list) and 6 <= len(row) <= 8, source, at, row,
              "[layer, name, type, phase, time_s, deps, (outputs, inputs)]")
        layer, name, typ, phase, time_s, deps, *rest = row
        _need(checks.is_int(layer), source, f"{at}.layer", layer, "a layer id (integer)")
        _need(isinstance(name, str), source, f"{at}.name", name, "a string")
        _need(isinstance(typ, str), source, f"{at}.type", typ, "a string")
        _need(phase in ("F", "B", "U"), source, f"{at}.phase", phase, "F, B or U")
        _need(checks.TIME_S[1](time_s), source, f"{at}.time_s", time_s, checks.TIME_S[0])
        for field, ids in zip(("deps", "outputs", "inputs"), [deps, *rest]):
            _need(_ids(ids, n), source, f"{at}.{field}", ids, f"a list of tensor ids in [0, {n})")
        outs = tuple(rest[0]) if len(rest) > 0 else ()
        ins = tuple(rest[1]) if len(rest) > 1 else ()
        steps.append(Step(i, layer, name, typ, phase, float(time_s), tuple(deps), outs, ins))
        raw_steps.append(row)
    static = _field(d, "static_bytes", dict, source, where)
    for k, v in static.items():
        if k not in STATIC_KINDS or not checks.COUNT[1](v):
            raise TraceError(f"{source}: program.static_bytes.{k} (={checks.show(v)}) must be a "
                             f"kind in {STATIC_KINDS} with an integer >= 0")
    static_tensors = []
    for i, row in enumerate(d.get("static_tensors") or ()):
        _need(isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
              and row[1] in STATIC_KINDS and checks.COUNT[1](row[2]), source,
              f"program.static_tensors[{i}]", row, "[name, static kind, nbytes >= 0]")
        static_tensors.append(StaticTensor(row[0], row[1], row[2], 0))
    gpu = d.get("gpu_times_s")
    _need(gpu is None or (isinstance(gpu, list) and len(gpu) == len(raw_steps)
                          and all(checks.TIME_S[1](t) for t in gpu)), source,
          "program.gpu_times_s", gpu, f"a list of {len(raw_steps)} step times in seconds >= 0")
    for i, row in enumerate(d.get("ops") or ()):
        _need(isinstance(row, list) and 4 <= len(row) <= 6 and checks.is_int(row[0])
              and 0 <= row[0] < len(raw_steps) and isinstance(row[1], str)
              and checks.COUNT[1](row[2]) and checks.COUNT[1](row[3])
              and all(isinstance(v, str) for v in row[4:]), source, f"program.ops[{i}]", row,
              "[step, op name, flops >= 0, bytes >= 0(, signature, layout)] naming a step")
    views = d.get("saved_views") or []
    _need(isinstance(views, list) and all(checks.is_int(t) and 0 <= t < len(tensors)
                                          for t in views), source, "program.saved_views",
          views, "a list of tensor indexes")
    for i, row in enumerate(d.get("events") or ()):
        _need(isinstance(row, list) and len(row) in (3, 4) and checks.is_int(row[0])
              and 0 <= row[0] < len(raw_steps) and row[1] in ("alloc", "free", "read", "release")
              and checks.is_int(row[2]) and 0 <= row[2] < len(tensors)
              and (len(row) == 3 or checks.is_int(row[3])), source,
              f"program.events[{i}]", row,
              "[step, 'alloc', 'free', 'read' or 'release', tensor index[, stream]] naming a "
              "step and a tensor")
    released = None
    if "events" in d:   # a capture: op-granular steps, streams, static allocations, its DAG
        steps, streams, dropped, shares = op_granular(raw_steps, d["events"], len(tensors))
        released = [[t, k] for t, k in dropped.items()] or None
        if d.get("saved_released"):   # after a captured step: after its last part
            last = last_parts(len(raw_steps), d["events"])
            released = (released or []) + [[int(t), last[int(k)] if int(k) >= 0 else -1]
                                           for t, k in d["saved_released"]]
        tensors = [dataclasses.replace(t, stream=k) if k else t
                   for t, k in zip(tensors, streams)]
    p = Program(name=d.get("name", "captured"), batch=d.get("batch", 1), steps=steps,
                tensors=tensors, static_bytes=dict(static), graph=graph,
                source=d.get("source", "capture"), hardware=d.get("hardware", ""),
                optimizer=d.get("optimizer", "sgd-momentum"),
                static_tensors=static_tensors if "events" in d or static_tensors else [])
    p.extra = {k: d[k] for k in PROGRAM_EXTRAS if k in d}
    if "events" in d and d.get("gpu_times_s") is not None and d.get("ops"):
        # a capture's kernel times and ops, indexed by its captured steps, become each
        # op-granular step's gpu_s and host_s (a program a plan rewrote keeps them per step)
        times = step_stream_times(raw_steps, d["ops"], d["gpu_times_s"], shares, p.hardware)
        if times is not None:
            p.steps = [dataclasses.replace(s, gpu_s=g, host_s=h)
                       for s, g, h in zip(p.steps, *times)]
    if released is not None:
        p.extra["saved_released"] = released
    if ("events" in d or static_tensors) and graph is None:   # a capture's, or one rewritten
        p.graph = layer_graph(p)
        p.adjacency = None
    return p


def write_trace(path, *, graph=None, program=None, provenance=None, measured=None,
                workspace_tables=None):
    """Write a trace file (``.json`` or ``.json.gz``)."""
    if graph is None and program is None:
        raise TraceError("write_trace needs a graph or a program")
    doc = {"snsim_trace_version": TRACE_VERSION, "provenance": provenance or {"kind": "modeled"}}
    if graph is not None:
        doc["graph"] = graph_to_dict(graph)
    if workspace_tables:
        doc["workspace_tables"] = {
            str(layer): {ps: [[a.name, a.ws_bytes, a.time_s, a.supported, a.source] for a in algos]
                         for ps, algos in passes.items()}
            for layer, passes in workspace_tables.items()}
    if program is not None:
        doc["program"] = program if isinstance(program, dict) else program_to_dict(program)
    if measured is not None:
        doc["measured"] = measured
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open_text(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


def load_trace_doc(path):
    """The raw, schema-checked trace document."""
    try:
        with open_text(path) as f:
            doc = json.load(f)
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: truncated or malformed JSON ({e.msg} at line {e.lineno}, "
                         f"column {e.colno})") from None
    except (EOFError, OSError, UnicodeDecodeError, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise TraceError(f"{path}: no such file") from None
        raise TraceError(f"{path}: unreadable trace ({e})") from None
    if not isinstance(doc, dict):
        raise TraceError(f"{path}: a trace must be a JSON object")
    v = doc.get("snsim_trace_version")
    if v != TRACE_VERSION:
        raise TraceError(f"{path}: field snsim_trace_version (={v!r}) must be {TRACE_VERSION}")
    if "graph" not in doc and "program" not in doc:
        raise TraceError(f"{path}: a trace needs a 'graph' or a 'program' field")
    prov = doc.get("provenance")
    if not isinstance(prov, dict) or prov.get("kind") not in ("modeled", "measured"):
        raise TraceError(f"{path}: field provenance.kind must be 'modeled' or 'measured'")
    return doc


def read_trace(path):
    """Read a trace: a layer DAG (modeled) or a :class:`Program` (captured).

    Raises
    ------
    TraceError
        One line naming the file and the first field that breaks the schema.
    """
    doc = load_trace_doc(path)
    G = graph_from_dict(doc["graph"], source=str(path)) if "graph" in doc else None
    if "program" in doc:
        if not isinstance(doc["program"], dict):
            raise TraceError(f"{path}: field program must be an object")
        p = program_from_dict(doc["program"], graph=G, source=str(path))
        p.extra["measured"] = doc.get("measured")
        p.extra["provenance"] = doc.get("provenance")
        return p
    return G


def export_zoo(name, *, batch, hardware, out_dir="traces", input_size=None, variant="torchvision"):
    """Write a modeled trace of a zoo network (graph with modeled times + workspace tables)."""
    from .costs import modeled_costs, with_modeled_times
    from .zoo import build_network
    G = build_network(name, batch=batch, input_size=input_size, variant=variant)
    Gt = with_modeled_times(G, hardware)
    costs = modeled_costs(G, hardware)
    tables = {n: c.conv_algos for n, c in costs.items() if c.conv_algos}
    path = Path(out_dir) / hardware.name / f"{G.graph['name']}_b{batch}.json.gz"
    write_trace(path, graph=Gt, workspace_tables=tables,
                provenance={"kind": "modeled", "hardware": hardware.name, "tool": "snsim"})
    return path
