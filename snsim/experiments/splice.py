"""Programs of a deep family member spliced from a repeated block, certified against a build.

A depth family grows one stage by ``k`` identical blocks, so its program at size ``k`` is the
program at a small base size with ``k - base`` more copies of each repeated run: layers and
their in-edges, forward and backward steps, tensors, static tensors, modules. Building a deep
member from the zoo DAG costs ~0.4 ms per block (the graph, its check, the modelled costs, the
program); repeating the runs costs a third of that.

How a splice is learned (:meth:`Splicer.learn`), from programs built at sizes ``b .. b+3``:

- every program is read as sections of records: tuples of strings, integers and constants
  (:func:`program_sections`). A record's *signature* masks its integers and the digit runs of
  its strings (``layer3.7.conv1`` -> ``layer#.#.conv#``);
- the records at ``b`` come back at ``b+1``, found by name and in the same order; the new
  ones there form the inserted runs (the new block's layers, steps, tensors, ...), and the
  signatures at ``b+2`` and ``b+3`` must be the ones at ``b`` with each run repeated two and
  three times at the same place;
- every integer and digit run is an affine function of the size ``s`` (and, in an inserted
  run, of the copy ``c``): ``alpha + beta * s + gamma * c``, fitted on the first observations
  and required to hold exactly on all of them (4 per base record, 6 per run record);
  everything else (floats, flags, algorithm tables) must be equal in every observation.

The spliced sections are then compiled into one Python function per section. A record whose
numbers do not grow with the size (``beta = 0`` for each: the records before the runs, a
block's forward steps and activations) is the same at every size: the function makes it once
and every spliced size shares it (records are immutable values; one holding a list or dict is
made afresh), so a splice makes only the records that move with the size. Before any
splice is used, the program it makes at a larger size (``VERIFY_SIZE``, past the digit
change of two-digit block indices) must equal the one built from the zoo there, record for
record (steps, tensors, sizes, times, edges, graph attributes, adjacency). Anything that does
not fit this pattern (DenseNet: each layer of the grown block reads one more input) leaves the
family unspliced: every size is built from its DAG.
"""
from __future__ import annotations

import re

import networkx as nx

from ..graph import port_adjacency
from ..program import Program, StaticTensor, Step, Tensor

#: a size past which block indices and depths have two digits more than at the base (the
#: digit count of a name changes there): the splice must reproduce the build at it
VERIFY_SIZE = 12
_DIGITS = re.compile(r"\d+")


class NotPeriodic(Exception):
    """The programs are not a base plus repeated runs (internal: the family is built instead)."""


# -- records -------------------------------------------------------------------------------------
def program_sections(p, *, keys=False):
    """``{section: [record, ...]}``: everything a zoo-built :class:`Program` holds, as tuples.

    With ``keys``, also ``{section: record -> key}``: what identifies a record across sizes.
    Two programs with equal sections are equal: same steps, tensors, static tensors, algorithm
    tables, layer graph (nodes with attributes, in-edges and successor order, graph attributes)
    and scalars (memos such as ``uses()`` are derived from these). Raises
    :class:`NotPeriodic` for a program carrying anything else (captured extras).
    """
    if p.extra or p.graph is None:
        raise NotPeriodic("the program carries extras or no graph")
    G = p.graph
    gattrs = dict(G.graph)
    modules = gattrs.pop("modules", None)
    names = {n: a.get("name") for n, a in G.nodes(data=True)}
    sections = {
        "nodes": [(n, tuple(a.items())) for n, a in G.nodes(data=True)],
        "preds": [(v, tuple([(u, tuple(d.items())) for u, d in G.pred[v].items()])) for v in G],
        "succ": [(u, tuple(G.succ[u])) for u in G],
        "next": [(u, tuple(vs)) for u, vs in p.adjacency[0].items()],
        "prev": [(v, tuple(us)) for v, us in p.adjacency[1].items()],
        "graph": [tuple(gattrs.items())],
        "modules": [] if modules is None else list(modules.items()),
        "steps": [(s.index, s.layer, s.name, s.type, s.phase, s.time_s, s.deps, s.outputs,
                   s.inputs) for s in p.steps],
        "tensors": [(t.tensor_id, t.name, t.kind, t.nbytes, t.producer, t.producer_type,
                     t.stream) for t in p.tensors],
        "static": [(t.name, t.kind, t.nbytes, t.layer) for t in p.static_tensors],
        "conv": [(n, _Shared(tuple(passes.items()))) for n, passes in p.conv_algos.items()],
        "program": [(p.name, p.batch, tuple(p.static_bytes.items()), p.source, p.hardware,
                     p.optimizer, p.framework, modules is None)],
    }
    if not keys:
        return sections
    return sections, {
        # what names a record across sizes: layers, steps and tensors keep their names when a
        # block is added (the new block's names are new)
        "nodes": lambda r: names[r[0]], "preds": lambda r: names[r[0]],
        "modules": lambda r: r[0], "steps": lambda r: (r[2], r[4]),
        "tensors": lambda r: r[1], "static": lambda r: r[0], "conv": lambda r: names[r[0]],
        "graph": lambda r: 0, "program": lambda r: 0,
    }


class _Shared:
    """A constant compared by value and spliced by reference: a convolution's algorithm tables,
    one tuple per pass shared by the layers of one shape (the engine ranks each tuple once)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Shared) and self.value == other.value

    def __hash__(self):
        return hash(self.value)


def _shape(x, out):
    """The signature of ``x``; appends its variables (integers, digit runs) to ``out``."""
    cls = x.__class__
    if cls is int:
        out.append(x)
        return "i"
    if cls is str:
        parts = _DIGITS.split(x)
        if len(parts) == 1:
            return x
        runs = _DIGITS.findall(x)
        for r in runs:
            if len(r) > 1 and r[0] == "0":    # "07" would come back as "7"
                raise NotPeriodic(f"a zero-padded number in {x!r}")
            out.append(int(r))
        return ("s", tuple(parts))
    if cls is tuple or cls is list:
        return (cls.__name__, tuple([_shape(v, out) for v in x]))
    if cls is dict:
        return ("dict", tuple([(_shape(k, out), _shape(v, out)) for k, v in x.items()]))
    try:
        hash(x)
    except TypeError:
        raise NotPeriodic(f"an unhashable {cls.__name__} in a record") from None
    return ("k", cls, x)       # a constant: floats, flags, None, algorithm tables


def _signatures(records):
    shapes, values = [], []
    for r in records:
        v = []
        shapes.append(_shape(r, v))
        values.append(v)
    return shapes, values


def _fit(points):
    """``(alpha, beta, gamma)`` with ``v = alpha + beta * s + gamma * c`` through every
    ``(s, c, v)`` point; raises :class:`NotPeriodic` if no such integers exist."""
    def slope(pairs):
        for (x0, v0), (x1, v1) in pairs:
            if (v1 - v0) % (x1 - x0):
                raise NotPeriodic("a number is not affine in the size")
            return (v1 - v0) // (x1 - x0)
        return 0
    beta = slope(((s0, v0), (s1, v1)) for s0, c0, v0 in points for s1, c1, v1 in points
                 if c0 == c1 and s1 > s0)
    gamma = slope(((c0, v0), (c1, v1)) for s0, c0, v0 in points for s1, c1, v1 in points
                  if s0 == s1 and c1 > c0)
    s0, c0, v0 = points[0]
    alpha = v0 - beta * s0 - gamma * c0
    if any(alpha + beta * s + gamma * c != v for s, c, v in points):
        raise NotPeriodic("a number is not affine in the size")
    return alpha, beta, gamma


def _fits(obs, shape):
    """The fitted variables of one layout record from its ``(s, c, values)`` observations."""
    try:
        return [_fit([(s, c, v[i]) for s, c, v in obs]) for i in range(len(obs[0][2]))]
    except NotPeriodic as e:
        raise NotPeriodic(f"{e}: {obs[0][2]} .. {obs[-1][2]} in a record {shape}") from None


# -- code generation -----------------------------------------------------------------------------
class _Emitter:
    """Python source of one record from its signature and the fitted variables."""

    def __init__(self, consts):
        self.consts = consts

    def const(self, value):
        self.consts.append(value)
        return f"K[{len(self.consts) - 1}]"

    @staticmethod
    def number(fit):
        alpha, beta, gamma = fit
        terms = [str(alpha)] if alpha or not (beta or gamma) else []
        terms += [f"{beta}*s"] if beta else []
        terms += [f"{gamma}*c"] if gamma else []
        return "(" + "+".join(terms) + ")"

    def emit(self, shape, fits):
        if shape == "i":
            return self.number(next(fits))
        if shape.__class__ is str:
            return self.const(shape)
        tag = shape[0]
        if tag == "s":
            parts = shape[1]
            pieces = []
            for i, lit in enumerate(parts):
                if lit:
                    pieces.append(repr(lit))
                if i < len(parts) - 1:
                    pieces.append(f"str{self.number(next(fits))}")
            return "(" + "+".join(pieces) + ")"
        if tag == "tuple":
            items = [self.emit(x, fits) for x in shape[1]]
            return "(" + "".join(i + "," for i in items) + ")"
        if tag == "list":
            return "[" + ",".join(self.emit(x, fits) for x in shape[1]) + "]"
        if tag == "dict":
            return "{" + ",".join(f"{self.emit(k, fits)}:{self.emit(v, fits)}"
                                  for k, v in shape[1]) + "}"
        return self.const(shape[2])


def _immutable(shape):
    """Whether records of signature ``shape`` hold no list or dict (may be shared)."""
    if shape.__class__ is str or shape == "i":
        return True
    tag = shape[0]
    if tag in ("list", "dict"):
        return False
    if tag == "tuple":
        return all(_immutable(x) for x in shape[1])
    return True      # "s" (a string with numbers) and "k" (a hashable constant)


def _numbered(keys):
    """Keys made unique: the n-th record of a key is ``(key, n)`` (PyTorch programs run some
    steps twice: a layer's forward again under a checkpoint, say)."""
    seen = {}
    out = []
    for k in keys:
        seen[k] = seen.get(k, -1) + 1
        out.append((k, seen[k]))
    return out


#: sections that follow from the graph (checked by the certificate, not spliced): a block's
#: last layer has other consumers when it is the last block than when another one follows
_DERIVED = ("succ", "next", "prev")
#: sections whose records are made as objects: the generated code calls the class
_CLASSES = {"steps": Step, "tensors": Tensor, "static": StaticTensor}


def _learn_section(observed, keys, base, cls=None):
    """Source of ``def make(s)`` that returns the section's records at size ``s``, and its
    constants.

    ``observed`` are the section's records at sizes ``base .. base+3``, ``keys`` the key of
    each record (its name): the records at ``base`` must come back, in the same order, at
    ``base + 1``, where the new ones form the runs.
    """
    sigs = [_signatures(recs) for recs in observed]
    shapes0, shapes1 = sigs[0][0], sigs[1][0]
    keys0, keys1 = keys[0], keys[1]
    index0 = {k: i for i, k in enumerate(keys0)}
    if len(index0) != len(keys0) or len(set(keys1)) != len(keys1):
        raise NotPeriodic("two records share a name")
    layout = []       # ("base", i) or ("run", j1, j2): a run of the records at base+1
    last = -1
    for j, k in enumerate(keys1):
        i = index0.get(k)
        if i is None:
            if layout and layout[-1][0] == "run" and layout[-1][2] == j:
                layout[-1] = ("run", layout[-1][1], j + 1)
            else:
                layout.append(("run", j, j + 1))
        elif i != last + 1:
            raise NotPeriodic(f"{k!r} moved or a record vanished at size {base + 1}")
        else:
            layout.append(("base", i))
            last = i
    if last != len(keys0) - 1:
        raise NotPeriodic(f"records of size {base} vanished at size {base + 1}")
    # where each layout item sits at size base+n, and the signatures there must match
    for n, (shapes, _) in enumerate(sigs):
        expect = []
        for item in layout:
            if item[0] == "base":
                expect.append(shapes0[item[1]])
            else:
                expect += shapes1[item[1]:item[2]] * n
        if expect != shapes:
            bad = next((i for i, (a, b) in enumerate(zip(expect, shapes)) if a != b),
                       min(len(expect), len(shapes)))
            raise NotPeriodic(f"the runs inserted at size {base + 1} do not repeat at size "
                              f"{base + n} (record {bad}: {observed[n][bad] if bad < len(shapes) else None})")
    # the variables of every layout record, with their (s, c) observations
    points = {}      # (layout index, offset in run) -> [(s, c, values)]
    for n, (_, values) in enumerate(sigs):
        pos = 0
        for li, item in enumerate(layout):
            if item[0] == "base":
                points.setdefault((li, 0), []).append((base + n, 0, values[pos]))
                pos += 1
                continue
            width = item[2] - item[1]
            for c in range(n):
                for q in range(width):
                    points.setdefault((li, q), []).append((base + n, c, values[pos]))
                    pos += 1
    consts = [cls]
    em = _Emitter(consts)

    def record(shape, fits):
        text = em.emit(shape, fits)
        return text if cls is None else "K[0]" + text     # "(a,b,)" -> "K[0](a,b,)"
    # a record none of whose numbers grows with the size (beta = 0: the records before the
    # runs, and in a run those that depend on the copy alone, such as a block's forward steps)
    # is the same at every size: made once and shared by the programs of every size (records
    # are immutable values; those holding a list or dict are made afresh). A base one is the
    # record observed at the base size itself, a constant of the code; a run's, made on the
    # first call that reaches its copy
    lines = ["def make(s):", "    out = []", "    add = out.extend"]
    pending = []     # base records emitted together

    def shared(shape, fits):
        return all(beta == 0 for _, beta, _ in fits) and _immutable(shape)

    def flush():
        if pending:
            lines.append("    add((" + "".join(p + "," for p in pending) + "))")
            pending.clear()
    for li, item in enumerate(layout):
        if item[0] == "base":
            obs = points[(li, 0)]
            shape = shapes0[item[1]]
            fits = _fits(obs, shape)
            if shared(shape, fits):     # the record observed at the base size, as it is
                rec = observed[0][item[1]]
                pending.append(em.const(rec if cls is None else cls(*rec)))
            else:
                pending.append(record(shape, iter(fits)))
            continue
        flush()
        body, by_copy = [], []     # by_copy: the run's records that depend on the copy alone
        for q in range(item[2] - item[1]):
            obs = points[(li, q)]
            shape = shapes1[item[1] + q]
            fits = _fits(obs, shape)
            text = record(shape, iter(fits))
            if shared(shape, fits):
                body.append(f"r[{len(by_copy)}]")
                by_copy.append(text)
            else:
                body.append(text)
        n = f"s - {base}"
        if by_copy:
            lines.append(f"    R = {em.const([])}")     # R[c]: copy c's shared records
            lines.append(f"    for c in range(len(R), {n}):")
            lines.append("        R.append((" + "".join(b + "," for b in by_copy) + "))")
        if len(by_copy) == len(body):
            lines.append(f"    for r in R[:{n}]:")
            lines.append("        add(r)")
            continue
        lines.append(f"    for c in range({n}):")
        if by_copy:
            lines.append("        r = R[c]")
        lines.append("        add((" + "".join(b + "," for b in body) + "))")
    flush()
    lines.append("    return out")
    return "\n".join(lines), consts


def _compile(source, consts):
    namespace = {"K": consts}
    exec(compile(source, "<snsim splice>", "exec"), namespace)   # noqa: S102 (our own text)
    return namespace["make"]


# -- programs --------------------------------------------------------------------------------------
def _assemble(sec):
    """A :class:`Program` from its sections (the inverse of :func:`program_sections`)."""
    (name, batch, static_bytes, source, hardware, optimizer, framework, no_modules), = \
        sec["program"]
    attrs = dict(sec["graph"][0])
    if not no_modules:
        attrs["modules"] = dict(sec["modules"])
    p = SplicedProgram(name=name, batch=batch, steps=sec["steps"], tensors=sec["tensors"],
                       static_bytes=dict(static_bytes),
                       conv_algos={n: dict(passes.value) for n, passes in sec["conv"]},
                       source=source, hardware=hardware, optimizer=optimizer,
                       static_tensors=sec["static"], framework=framework,
                       adjacency=port_adjacency([n for n, _ in sec["nodes"]],
                                                 _ports(sec["preds"])))
    p._layers = (sec["nodes"], sec["preds"], attrs)
    return p


def _ports(preds):
    """``(u, v, src_port, dst_port)`` of every edge of the in-edge records."""
    for v, ins in preds:
        for u, d in ins:
            if len(d) == 2 and d[0][0] == "src_port" and d[1][0] == "dst_port":
                yield u, v, d[0][1], d[1][1]     # the zoo's edges: no dict made
            else:
                d = dict(d)
                yield u, v, d.get("src_port", 0), d.get("dst_port", 0)


_GRAPH = Program.__dict__["graph"]   # the dataclass's slot behind SplicedProgram.graph


class SplicedProgram(Program):
    """A spliced :class:`Program` whose networkx layer graph is made on first use.

    A search's replays and most planners read only the layer types, the adjacency and the
    graph's attributes, which the records give at once; making the graph of ResNet k=845
    takes ~30 ms CPU (its replay ~0.17 s), and a ``maxdepth --policy all`` search splices two
    dozen programs. ``chen_sqrt`` (articulation points), the certificate and anything else
    that reads ``graph`` get it made from the records, once."""

    __slots__ = ("_layers",)   # (node records, in-edge records, graph attributes) until made

    @property
    def graph(self):
        G = _GRAPH.__get__(self)
        layers = getattr(self, "_layers", None)
        if G is None and layers is not None:
            nodes, preds, attrs = layers
            G = nx.DiGraph()
            G.graph.update(attrs)
            # the nodes, then their attributes: (node, dict) pairs take networkx's exception
            # path, one per node (a third slower)
            G.add_nodes_from([n for n, _ in nodes])
            data = G.nodes
            for n, a in nodes:
                data[n].update(a)
            G.add_edges_from((u, v, dict(d)) for v, ins in preds for u, d in ins)
            _GRAPH.__set__(self, G)
            self._layers = None
        return G

    @graph.setter
    def graph(self, G):
        _GRAPH.__set__(self, G)

    def layer_types(self):
        layers = getattr(self, "_layers", None)
        if layers is None:
            return super().layer_types()
        memo = self.plan_memo()
        if "layer_types" not in memo:
            # the graph builder writes "type" first: no dict per node for it
            memo["layer_types"] = {n: a[0][1] if a and a[0][0] == "type" else dict(a)["type"]
                                   for n, a in layers[0]}
        return memo["layer_types"]

    def graph_attrs(self):
        layers = getattr(self, "_layers", None)
        return super().graph_attrs() if layers is None else layers[2]

    def derive(self, **changes):
        """As :meth:`Program.derive`, with the graph still to be made from the same records."""
        layers = getattr(self, "_layers", None)
        if layers is None or "graph" in changes:
            return super().derive(**changes)
        new = super().derive(graph=None, **changes)
        new._layers = layers
        return new


class Splicer:
    """Programs of one family (one batch, hardware, optimizer, framework) by splicing.

    Parameters
    ----------
    base : int
        The smallest size whose next size adds a block like every later one (the family's
        smallest size plus one: a stage's first block is unlike the others).

    Examples
    --------
    >>> from snsim.hardware import load_hardware
    >>> from snsim.program import build_program
    >>> from snsim.experiments.search import family_network
    >>> from snsim.zoo import with_module_tree
    >>> hw = load_hardware("k40c")
    >>> def build(k):
    ...     return build_program(with_module_tree(family_network("resnet", k, batch=2)),
    ...                          hardware=hw)
    >>> sp = Splicer(base=2)
    >>> program_sections(sp.splice(30, build)) == program_sections(build(30))
    True
    >>> sp.splice(VERIFY_SIZE, build) is None      # small sizes: build them
    True
    """

    def __init__(self, base):
        self.base = base
        self.certified_size = max(VERIFY_SIZE, base + 8)
        self._makers = None
        self.failed = None     # why the family is not spliced (None: not tried, or spliced)

    def __getstate__(self):
        """Pickled (for a search's started, not forked, worker) unlearned: the learned makers
        are generated code; the copy learns them again on first use."""
        return {**self.__dict__, "_makers": None}

    def learn(self, build):
        """Learn the runs from ``build(k) -> Program`` at four small sizes and certify them at
        ``certified_size``; False (and ``failed`` says why) if the family must be built."""
        if self._makers is not None:
            return True
        if self.failed is not None:
            return False
        try:
            observed = [program_sections(build(self.base + n), keys=True) for n in range(4)]
            makers = {}
            for key in observed[0][0]:
                if key in _DERIVED:
                    continue
                recs = [o[0][key] for o in observed]
                try:
                    source = _learn_section(recs, [_numbered(map(o[1][key], o[0][key]))
                                                   for o in observed], self.base,
                                            _CLASSES.get(key))
                except NotPeriodic as e:
                    raise NotPeriodic(f"{key}: {e}") from None
                makers[key] = _compile(*source)
            size = self.certified_size
            spliced = _assemble({key: make(size) for key, make in makers.items()})
            if program_sections(spliced) != program_sections(build(size)):
                raise NotPeriodic(f"the splice at size {size} differs from the build")
        except NotPeriodic as e:
            self.failed = str(e)
            return False
        self._makers = makers
        return True

    def splice(self, k, build):
        """The program at size ``k`` spliced, or None where it must be built: sizes up to
        ``certified_size``, and families that are not a base plus repeated runs."""
        if k <= self.certified_size or not self.learn(build):
            return None
        return _assemble({key: make(k) for key, make in self._makers.items()})
