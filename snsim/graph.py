"""Layer DAGs: a builder with exact shapes, parameter and MAC counts, checks, and the route.

A network is a :class:`networkx.DiGraph` whose nodes are 1-based ``layer_id`` integers (the
construction index) and whose attributes follow SPEC §2.1. Edges carry ``src_port`` (index in
the producer's ``next`` list) and ``dst_port`` (index in the consumer's ``prev`` list).
"""
from __future__ import annotations

import math

import networkx as nx

from . import checks
from .errors import GraphError, UnknownNameError

SCHEMA_VERSION = 1

LAYER_TYPES = ("DATA", "CONV", "FC", "BN", "ACT", "POOL", "LRN", "DROPOUT", "SOFTMAX",
               "FORK", "JOIN", "CONCAT", "PADDING",
               # transformers: embedding lookup, Layer/RMS norm, attention core, elementwise
               # product (SwiGLU), one token of a sequence (BERT's pooler, ViT's class token)
               "EMBED", "NORM", "ATTN", "MUL", "SLICE")
# attention and embeddings are compute or parameter layers, kept like CONV/FC; norms, the
# SwiGLU product and a token slice are cheap to redo, like BN and activations
CHECKPOINT_TYPES = frozenset({"CONV", "FC", "JOIN", "FORK", "CONCAT", "DATA", "SOFTMAX",
                              "EMBED", "ATTN"})
RECOMPUTABLE_TYPES = frozenset({"ACT", "BN", "POOL", "LRN", "DROPOUT", "PADDING", "NORM", "MUL",
                                "SLICE"})


ATTENTION_KERNELS = ("eager", "flash")
ACTIVATIONS = ("relu", "relu6", "gelu", "silu", "tanh")


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_out(size, kernel, stride, pad, *, ceil_mode=False):
    """Output length of a conv/pool window: ``floor((in + 2p - k)/s) + 1`` (SPEC §2.3)."""
    span = size + 2 * pad - kernel
    if span < 0:
        raise GraphError(f"window of {kernel} (pad {pad}) is larger than input size {size}")
    out = (math.ceil(span / stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1  # the last window must start inside the input (PyTorch's rule)
    return out


class GraphBuilder:
    """Build a layer DAG with exact shapes, parameters and MACs.

    Each method adds one layer fed by the given layer ids (in port order) and returns its id.

    Examples
    --------
    >>> b = GraphBuilder("tiny", batch=2, input_shape=(3, 8, 8))
    >>> x = b.data()
    >>> x = b.conv(x, 4, 3, pad=1)
    >>> x = b.relu(x)
    >>> G = b.finish(b.softmax(b.fc(x, 10)))
    >>> G.nodes[2]["out_shape"], G.nodes[2]["params"]
    ((2, 4, 8, 8), 112)
    """

    def __init__(self, name, *, batch, input_shape, dtype_bytes=4, source="zoo"):
        if int(batch) <= 0:
            raise GraphError(f"batch (={batch}) must be a positive integer")
        self.G = nx.DiGraph(schema_version=SCHEMA_VERSION, name=name, batch=int(batch),
                            input_shape=tuple(input_shape), dtype_bytes=int(dtype_bytes),
                            source=source)
        self._next_id = 1
        self._prefix = ""
        # per layer: its out_shape and its consumers so far (G.out_degree): kept here, since
        # networkx's views cost more than the rest of _add
        self._shape = {}
        self._fanout = {}

    # -- naming -------------------------------------------------------------------------
    def scope(self, prefix):
        """Set the name prefix for layers added next (e.g. ``"layer3.4."``)."""
        self._prefix = prefix

    def _add(self, type_, inputs, out_shape, *, name=None, params=0, macs=0, **attrs):
        lid = self._next_id
        self._next_id += 1
        in_shapes = [self._shape[i] for i in inputs]
        out_shape = tuple(out_shape)
        self.G.add_node(lid, type=type_, layer_id=lid,
                        name=self._prefix + (name or f"{type_.lower()}{lid}"),
                        out_shape=out_shape, in_shapes=in_shapes, params=int(params),
                        param_bytes=int(params) * self.G.graph["dtype_bytes"], macs=int(macs),
                        **attrs)
        self._shape[lid] = out_shape
        self._fanout[lid] = 0
        fanout = self._fanout
        for port, src in enumerate(inputs):
            self.G.add_edge(src, lid, src_port=fanout[src], dst_port=port)
            if src not in inputs[:port]:   # an input named twice is one edge (a DiGraph)
                fanout[src] += 1
        return lid

    def order_consumers(self, lid, consumers):
        """Renumber ``lid``'s out-edge ports so ``consumers`` come in this order (``next[0]`` first).

        A ResNet block's identity shortcut is created after its main branch, yet the release puts
        it on ``next[0]`` so that the gradient flows in place ReLU -> JOIN -> FORK (SPEC §2.3).
        """
        if sorted(consumers) != sorted(self.G.successors(lid)):
            raise GraphError(f"layer {lid}: {consumers} are not exactly its consumers")
        for port, v in enumerate(consumers):
            self.G.edges[lid, v]["src_port"] = port

    def shape(self, lid):
        return self._shape[lid]

    # -- layers -------------------------------------------------------------------------
    def data(self, name="data", *, elem_bytes=None):
        """The input batch; ``elem_bytes=8`` for int64 token ids (else the graph's dtype)."""
        extra = {} if elem_bytes is None else {"elem_bytes": int(elem_bytes)}
        return self._add("DATA", [], (self.G.graph["batch"], *self.G.graph["input_shape"]),
                         name=name, **extra)

    def conv(self, x, out_channels, kernel, stride=1, pad=0, *, bias=True, groups=1, name=None):
        n, c, h, w = self.shape(x)
        kh, kw = _pair(kernel)
        sh, sw = _pair(stride)
        ph, pw = _pair(pad)
        if c % groups or out_channels % groups:
            raise GraphError(f"conv {name}: channels {c}->{out_channels} not divisible by groups {groups}")
        ho, wo = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        weights = out_channels * (c // groups) * kh * kw
        params = weights + (out_channels if bias else 0)
        macs = n * weights * ho * wo
        return self._add("CONV", [x], (n, out_channels, ho, wo), name=name, params=params,
                         macs=macs, out_channels=out_channels, kernel=(kh, kw), stride=(sh, sw),
                         pad=(ph, pw), groups=groups, bias=bias)

    def linear(self, x, out_features, *, bias=True, tied=False, linears=1, name=None):
        """A linear layer on the last axis (``nn.Linear`` on a ``(N, ..., C)`` sequence).

        ``tied``: the weight is another layer's (GPT-2's LM head reuses the token embedding):
        no parameters of its own, the matmul's MACs all the same. ``linears``: the number of
        ``nn.Linear`` modules on the same input the layer packs (Hugging Face's q, k and v
        projections: 3), each of which casts the input under autocast.
        """
        shp = self.shape(x)
        rows, in_features = math.prod(shp[:-1]), shp[-1]
        params = 0 if tied else in_features * out_features + (out_features if bias else 0)
        extra = {"linears": linears} if linears != 1 else {}
        return self._add("FC", [x], (*shp[:-1], out_features), name=name, params=params,
                         macs=rows * in_features * out_features, out_features=out_features,
                         in_features=in_features, bias=bias and not tied, tied=tied, **extra)

    def embed(self, x, dim, *, vocab=0, positions=0, token_types=0, cls_token=False, name=None):
        """Embeddings of a sequence, summed: token ids ``(N, S)`` looked up in ``vocab`` rows, or
        patches ``(N, C, H, W)`` read as ``H*W`` tokens after an optional class token; plus
        learned positions (``positions`` rows) and BERT's token types.

        Parameters in the order a framework allocates them: the word table (``weight``), the
        class token, the position table, the token-type table.
        """
        shp = self.shape(x)
        if vocab:
            if len(shp) != 2:
                raise GraphError(f"embed {name}: token ids must be (N, S), got {shp}")
            n, seq = shp
        else:
            if len(shp) != 4 or shp[1] != dim:
                raise GraphError(f"embed {name}: patches must be (N, {dim}, H, W), got {shp}")
            n, seq = shp[0], shp[2] * shp[3] + int(cls_token)
        if positions and seq > positions:
            raise GraphError(f"{self.G.graph['name']}: embed {name}: sequence length {seq} "
                             f"exceeds the {positions} learned positions")
        pieces = [(p, k * dim) for p, k in (("weight", vocab), ("class_token", int(cls_token)),
                                             ("pos_weight", positions),
                                             ("type_weight", token_types)) if k]
        return self._add("EMBED", [x], (n, seq, dim), name=name,
                         params=sum(c for _, c in pieces), vocab=vocab, positions=positions,
                         token_types=token_types, cls_token=bool(cls_token),
                         pieces=[[p, c] for p, c in pieces])

    def norm(self, x, *, kind="layer", name=None):
        """LayerNorm (weight and bias) or RMSNorm (weight) over the last axis."""
        if kind not in ("layer", "rms"):
            raise UnknownNameError(f"norm {name}: kind {kind!r} is unknown; known: layer, rms")
        d = self.shape(x)[-1]
        return self._add("NORM", [x], self.shape(x), name=name,
                         params=(2 if kind == "layer" else 1) * d, norm=kind)

    def attention(self, x, *, heads, kv_heads=None, causal=True, kernel="flash", rotary=False,
                  mha=False, name=None):
        """The attention core on packed ``[q | k | v]`` projections ``(N, S, (H + 2 Hkv) * D)``:
        softmax(q k^T / sqrt(D)) v per head, grouped-query when ``kv_heads < heads``.

        ``kernel``: ``"eager"`` materialises the ``S x S`` scores and probabilities per head (both
        kept for backward); ``"flash"`` (fused SDPA) keeps only the output and a logsumexp row
        per head. ``rotary``: q and k are rotated first (RoPE, no parameters). ``mha``: run as
        PyTorch's ``nn.MultiheadAttention`` (layout copies; :mod:`snsim.program_torch`).
        """
        n, s, width = self.shape(x)
        kv_heads = heads if kv_heads is None else kv_heads
        if kernel not in ATTENTION_KERNELS:
            raise UnknownNameError(f"attention {name}: kernel {kernel!r} is unknown; known: "
                                   f"{', '.join(ATTENTION_KERNELS)}")
        if width % (heads + 2 * kv_heads):
            raise GraphError(f"attention {name}: packed width {width} is not (heads + 2 kv "
                             f"heads) x head dim for {heads} heads, {kv_heads} kv heads")
        d = width // (heads + 2 * kv_heads)
        return self._add("ATTN", [x], (n, s, heads * d), name=name,
                         macs=2 * n * heads * s * s * d, heads=heads, kv_heads=kv_heads,
                         head_dim=d, causal=bool(causal), attn_kernel=kernel,
                         rotary=bool(rotary), **({"mha": True} if mha else {}))

    def mul(self, a, c, *, name=None):
        """Elementwise product of two same-shaped tensors (SwiGLU's ``silu(gate) * up``)."""
        if self.shape(a) != self.shape(c):
            raise GraphError(f"mul {name}: input shapes differ: {self.shape(a)} {self.shape(c)}")
        return self._add("MUL", [a, c], self.shape(a), name=name)

    def token(self, x, index=0, *, name=None):
        """Token ``index`` of a sequence ``(N, S, C) -> (N, C)`` (a view in PyTorch)."""
        n, s, c = self.shape(x)
        return self._add("SLICE", [x], (n, c), name=name, index=index)

    def fc(self, x, out_features, *, bias=True, name=None):
        shp = self.shape(x)
        n, in_features = shp[0], math.prod(shp[1:])
        params = in_features * out_features + (out_features if bias else 0)
        return self._add("FC", [x], (n, out_features), name=name, params=params,
                         macs=n * in_features * out_features, out_features=out_features,
                         in_features=in_features, bias=bias)

    def bn(self, x, *, name=None):
        c = self.shape(x)[1]
        # gamma and beta are parameters; running mean/var are static buffers (2C)
        return self._add("BN", [x], self.shape(x), name=name, params=2 * c, buffer_elems=2 * c)

    def relu(self, x, *, name=None):
        return self._add("ACT", [x], self.shape(x), name=name, activation="relu")

    def act(self, x, activation, *, name=None):
        """An elementwise activation: ``relu``, ``relu6`` (``nn.ReLU6``), ``gelu``, ``silu`` or
        ``tanh``."""
        if activation not in ACTIVATIONS:
            raise UnknownNameError(f"activation {activation!r} is unknown; known: "
                                   f"{', '.join(ACTIVATIONS)}")
        return self._add("ACT", [x], self.shape(x), name=name, activation=activation)

    def pool(self, x, kernel, stride=None, pad=0, *, mode="max", ceil_mode=False, name=None):
        n, c, h, w = self.shape(x)
        kh, kw = _pair(kernel)
        sh, sw = _pair(stride if stride is not None else kernel)
        ph, pw = _pair(pad)
        ho = conv_out(h, kh, sh, ph, ceil_mode=ceil_mode)
        wo = conv_out(w, kw, sw, pw, ceil_mode=ceil_mode)
        return self._add("POOL", [x], (n, c, ho, wo), name=name, kernel=(kh, kw), stride=(sh, sw),
                         pad=(ph, pw), mode=mode)

    def global_pool(self, x, *, mode="avg", name=None):
        n, c, h, w = self.shape(x)
        return self._add("POOL", [x], (n, c, 1, 1), name=name, kernel=(h, w), stride=(1, 1),
                         pad=(0, 0), mode=mode)

    def adaptive_pool(self, x, out_hw, *, mode="avg", name=None):
        """PyTorch's ``AdaptiveAvgPool2d(out_hw)``: any input size to ``out_hw`` (windows of
        about ``in/out``, recorded as kernel and stride for the cost model)."""
        n, c, h, w = self.shape(x)
        oh, ow = _pair(out_hw)
        kernel = (max(1, -(-h // oh)), max(1, -(-w // ow)))
        stride = (max(1, h // oh), max(1, w // ow))
        return self._add("POOL", [x], (n, c, oh, ow), name=name, kernel=kernel, stride=stride,
                         pad=(0, 0), mode=mode, adaptive=True)

    def lrn(self, x, size=5, alpha=1e-4, beta=0.75, k=1.0, *, name=None):
        return self._add("LRN", [x], self.shape(x), name=name, size=size, alpha=alpha,
                         beta=beta, k=k)

    def dropout(self, x, p=0.5, *, name=None):
        return self._add("DROPOUT", [x], self.shape(x), name=name, p=p)

    def softmax(self, x, *, name="softmax", float_logits=False):
        """Softmax cross entropy. ``float_logits``: the loss upcasts 16-bit logits to fp32
        first (Hugging Face's causal-LM loss, ``logits.float()``)."""
        extra = {"float_logits": True} if float_logits else {}
        return self._add("SOFTMAX", [x], self.shape(x), name=name, **extra)

    def padding(self, x, pad_channels, *, name=None):
        n, c, *rest = self.shape(x)
        return self._add("PADDING", [x], (n, c + 2 * pad_channels, *rest), name=name,
                         pad_channels=pad_channels)

    def fork(self, x, *, name=None):
        """A FORK: each consumer added later gets its own copy of ``x`` (SPEC §2.3)."""
        return self._add("FORK", [x], self.shape(x), name=name)

    def join(self, inputs, *, inplace=True, name=None):
        """JOIN(sum). ``inplace=False``: PyTorch writes a new tensor (``x = x + f(x)``, the
        transformers' residual), not into the main branch (torchvision's ``out += identity``)."""
        shapes = {self.shape(i) for i in inputs}
        if len(shapes) != 1:
            raise GraphError(f"join {name}: input shapes differ: {sorted(shapes)}")
        extra = {} if inplace else {"inplace": False}
        return self._add("JOIN", list(inputs), self.shape(inputs[0]), name=name, **extra)

    def concat(self, inputs, *, name=None):
        shapes = [self.shape(i) for i in inputs]
        if len({(s[0], *s[2:]) for s in shapes}) != 1:
            raise GraphError(f"concat {name}: inputs differ outside the channel axis: {shapes}")
        n, _, *rest = shapes[0]
        return self._add("CONCAT", list(inputs), (n, sum(s[1] for s in shapes), *rest), name=name)

    def finish(self, last=None):
        """Return the graph after checking it (``last`` is accepted for call chaining)."""
        check_graph(self.G, source=f"network {self.G.graph['name']!r}")
        return self.G


# -- checks ----------------------------------------------------------------------------------
#: Rules for the layer attributes of SPEC §2.1 (each optional unless in ``REQUIRED_ATTRS``).
#: Attributes not listed are the caller's own and are left alone.
NODE_RULES = {
    "name": checks.TEXT, "layer_id": ("an integer", checks.is_int),
    "out_shape": checks.SHAPE, "in_shapes": checks.SHAPES,
    "params": checks.COUNT, "param_bytes": checks.COUNT, "macs": checks.COUNT,
    "buffer_elems": checks.COUNT, "kernel": checks.PAIR_POSITIVE,
    "stride": checks.PAIR_POSITIVE, "pad": checks.PAIR_COUNT, "groups": checks.POSITIVE,
    "bias": checks.FLAG, "out_channels": checks.POSITIVE, "out_features": checks.POSITIVE,
    "in_features": checks.POSITIVE, "size": checks.POSITIVE, "alpha": checks.FINITE,
    "beta": checks.FINITE, "k": checks.FINITE, "p": checks.PROBABILITY,
    "pad_channels": checks.COUNT, "n_outputs": checks.POSITIVE, "ceil_mode": checks.FLAG,
    "adaptive": checks.FLAG, "activation": checks.TEXT, "mode": checks.TEXT,
    "time_source": checks.TEXT, "fwd_time_s": checks.TIME_S, "bwd_time_s": checks.TIME_S,
    "update_time_s": checks.TIME_S, "heads": checks.POSITIVE, "kv_heads": checks.POSITIVE,
    "head_dim": checks.POSITIVE, "causal": checks.FLAG, "rotary": checks.FLAG,
    "attn_kernel": checks.TEXT, "tied": checks.FLAG, "inplace": checks.FLAG,
    "vocab": checks.COUNT, "positions": checks.COUNT, "token_types": checks.COUNT,
    "cls_token": checks.FLAG, "norm": checks.TEXT, "index": checks.COUNT, "mha": checks.FLAG,
    "elem_bytes": checks.int_in(1, 16),
}
REQUIRED_ATTRS = ("name", "out_shape")
GRAPH_RULES = {"name": checks.TEXT, "source": checks.TEXT, "batch": checks.POSITIVE,
               "input_shape": checks.SHAPE, "dtype_bytes": checks.int_in(1, 16),
               "schema_version": ("an integer", checks.is_int)}
_BIAS_WIDTH = {"CONV": "out_channels", "FC": "out_features"}   # one bias per output
#: (fewest, most) inputs of each layer type; None: any number
ARITY = {t: (1, 1) for t in LAYER_TYPES}
ARITY.update(DATA=(0, 0), JOIN=(1, None), CONCAT=(1, None), MUL=(2, 2))


def check_graph(G, *, source="graph"):
    """Raise :class:`GraphError` with one clear line if ``G`` is not a valid layer DAG.

    This is the edge check of every layer graph, from the zoo, a trace or a caller of
    :func:`snsim.api.simulate`: a ``networkx.DiGraph`` (not a multigraph) with integer layer
    ids; known layer types with the right number of inputs; every attribute in
    ``NODE_RULES`` and ``GRAPH_RULES`` typed, finite and in range; exactly one DATA layer,
    the only source; acyclic, weakly connected, with well-formed ports. Code past this check
    does not check again.

    Examples
    --------
    >>> import networkx as nx
    >>> check_graph(nx.DiGraph(), source="mine")
    Traceback (most recent call last):
    ...
    snsim.errors.GraphError: mine: graph has no layers
    """
    if not isinstance(G, nx.DiGraph) or G.is_multigraph():
        raise GraphError(f"{source}: a layer graph must be a networkx.DiGraph, not "
                         f"{type(G).__name__}")
    if G.number_of_nodes() == 0:
        raise GraphError(f"{source}: graph has no layers")
    for key, (rule, ok) in GRAPH_RULES.items():
        if key in G.graph and not ok(G.graph[key]):
            raise GraphError(f"{source}: graph.{key} (={checks.show(G.graph[key])}) must be "
                             f"{rule}")
    dtype = G.graph.get("dtype_bytes", 4)
    for n, a in G.nodes(data=True):
        if not checks.is_int(n):
            raise GraphError(f"{source}: layer id {checks.show(n)} must be an integer")
        t = a.get("type")
        if not isinstance(t, str) or t not in LAYER_TYPES:
            raise UnknownNameError(f"{source}: layer {n} ({a.get('name', '?')}): unknown type "
                                   f"{checks.show(t)}; known: {', '.join(LAYER_TYPES)}")
        for key in REQUIRED_ATTRS:
            if key not in a:
                raise GraphError(f"{source}: layer {n}: attribute {key} is missing")
        for key, v in a.items():
            rule = NODE_RULES.get(key)
            if rule is not None and not rule[1](v):
                raise GraphError(f"{source}: layer {n} ({a['name']}): {key} "
                                 f"(={checks.show(v)}) must be {rule[0]}")
        # the static footprint counts param_bytes, the static tensors split params: they agree
        if a.get("param_bytes", 0) != a.get("params", 0) * dtype:
            raise GraphError(f"{source}: layer {n} ({a['name']}): param_bytes "
                             f"(={a.get('param_bytes')}) must be params x dtype_bytes "
                             f"(={a.get('params')} x {dtype})")
        width = _BIAS_WIDTH.get(t)
        if width and a.get("bias") and a.get("params", 0):
            if not a.get(width, 0) <= a["params"] or width not in a:
                raise GraphError(f"{source}: layer {n} ({a['name']}): a {t} with bias and "
                                 f"params (={a['params']}) needs {width} (={a.get(width)}) "
                                 f"<= params")
        if math.prod(a["out_shape"]) * dtype > checks.MAX_COUNT:
            raise GraphError(f"{source}: layer {n} ({a['name']}): out_shape {a['out_shape']} "
                             f"holds more than 2**62 bytes")
    if not nx.is_directed_acyclic_graph(G):
        cycle = nx.find_cycle(G)
        raise GraphError(f"{source}: graph is cyclic: edge {cycle[0][0]}->{cycle[0][1]} closes "
                         f"a cycle of {len(cycle)} edges; a layer graph must be a DAG")
    if not nx.is_weakly_connected(G):
        parts = nx.number_weakly_connected_components(G)
        raise GraphError(f"{source}: graph is disconnected ({parts} components); every layer "
                         f"must be reachable from the data layer")
    data = []
    for n, a in G.nodes(data=True):
        t = a["type"]
        fewest, most = ARITY[t]
        k = G.in_degree(n)
        if k < fewest or (most is not None and k > most):
            takes = f"{fewest}" if fewest == most else f"at least {fewest}"
            raise GraphError(f"{source}: layer {n} ({a['name']}): layer type {t} takes "
                             f"{takes} input(s), not {k}")
        if "in_shapes" in a and len(a["in_shapes"]) != k:
            raise GraphError(f"{source}: layer {n} ({a['name']}): in_shapes lists "
                             f"{len(a['in_shapes'])} shape(s) for {k} input(s)")
        if t == "DATA":
            data.append(n)
    if len(data) != 1:
        raise GraphError(f"{source}: graph must have exactly one DATA layer, its only source; "
                         f"found {len(data)}")
    ports = {("src_port", n): [] for n in G}
    ports.update({("dst_port", n): [] for n in G})
    for u, v, d in G.edges(data=True):
        for attr, n in (("src_port", u), ("dst_port", v)):
            port = d.get(attr, -1)
            if not checks.is_int(port):
                raise GraphError(f"{source}: edge {u}->{v}: {attr} (={checks.show(port)}) must "
                                 f"be an integer")
            ports[(attr, n)].append(port)
    for (attr, n), got in ports.items():
        if len(got) > 1:
            got.sort()
        if got and (got[0] != 0 or got[-1] != len(got) - 1 or len(set(got)) != len(got)):
            raise GraphError(f"{source}: layer {n}: edge {attr} values {got} must be "
                             f"0..{len(got) - 1}")


def adjacency(G):
    """``(next, prev)``: every layer's consumers and producers in port order, in one pass."""
    # G.adjacency(), not G.edges: the edge view would keep a reference to G in G, a cycle that
    # only the cyclic collector frees (searches pause it and drop dozens of deep programs); and
    # not G.succ.items(), whose generic Mapping iteration costs 3x the plain dicts it yields
    return port_adjacency(G, ((u, v, d.get("src_port", 0), d.get("dst_port", 0))
                              for u, out in G.adjacency() for v, d in out.items()))


def port_adjacency(nodes, edges):
    """``(next, prev)`` of layers ``nodes`` joined by ``edges`` ``(u, v, src_port, dst_port)``
    (:func:`adjacency` of a graph not made: a spliced program's records)."""
    nxt = {n: [] for n in nodes}
    prv = {n: [] for n in nodes}
    for u, v, src, dst in edges:
        nxt[u].append((src, v))
        prv[v].append((dst, u))
    # most layers have one consumer and one producer: no sort for those
    return ({n: [e[0][1]] if len(e) == 1 else [v for _, v in sorted(e)]
             for n, e in nxt.items()},
            {n: [e[0][1]] if len(e) == 1 else [u for _, u in sorted(e)]
             for n, e in prv.items()})


def articulation_points(nodes, nxt, prv):
    """Layers whose removal disconnects the undirected layer graph (its cut vertices), from
    the adjacency ``(nxt, prv)`` of :func:`adjacency` or :func:`port_adjacency`: the set
    ``networkx.articulation_points`` gives for ``G.to_undirected()``, without the graph (a
    spliced program has none made). Hopcroft and Tarjan's depth-first search with an explicit
    stack (a chain of thousands of layers must not hit Python's recursion limit): ``low[u]``,
    the earliest discovery time reachable from ``u``'s subtree by one back edge; a non-root
    ``p`` is a cut vertex when a child's ``low`` does not reach above ``p``, the root when it
    has two children or more."""
    disc, low, cut = {}, {}, set()
    clock = 0
    for root in nodes:
        if root in disc:
            continue
        disc[root] = low[root] = clock
        clock += 1
        children = 0
        stack = [(root, None, iter(nxt[root] + prv[root]))]
        while stack:
            u, parent, around = stack[-1]
            for v in around:
                if v == parent:
                    continue
                if v in disc:
                    if disc[v] < low[u]:
                        low[u] = disc[v]
                else:
                    disc[v] = low[v] = clock
                    clock += 1
                    stack.append((v, u, iter(nxt[v] + prv[v])))
                    break
            else:
                stack.pop()
                if parent is None:
                    continue
                if low[u] < low[parent]:
                    low[parent] = low[u]
                if parent is root:
                    children += 1
                elif low[u] >= disc[parent]:
                    cut.add(parent)
        if children > 1:
            cut.add(root)
    return cut


def next_layers(G, n):
    """Consumers of ``n`` in port order (``next`` in the release code)."""
    return [v for _, v, _ in sorted(G.out_edges(n, data="src_port"), key=lambda e: e[2])]


def prev_layers(G, n):
    """Producers feeding ``n`` in port order (``prev`` in the release code)."""
    return [u for u, _, _ in sorted(G.in_edges(n, data="dst_port"), key=lambda e: e[2])]


def _dfs_emit(G, start, children, indegree):
    """Release-code DFS: emit a layer once all its inputs were visited; children[0] last."""
    visits = {}
    order = []
    stack = list(start)
    while stack:
        n = stack.pop()
        visits[n] = visits.get(n, 0) + 1
        if visits[n] < indegree(n):
            continue
        order.append(n)
        kids = children(n)
        if kids:
            # pushing next[0] first and next[1] last pops next[1] .. next[k-1], then next[0]
            stack.append(kids[0])
            stack.extend(reversed(kids[1:]))
    return order


def forward_order(G, adj=None):
    """Forward layer order of SuperNeurons' release (SPEC §2.2).

    Examples
    --------
    >>> from snsim.zoo import build_network
    >>> forward_order(build_network("lenet", batch=1))[:3]
    [1, 2, 3]
    """
    nxt, prv = adj or adjacency(G)
    data = [n for n in G if not prv[n]]
    order = _dfs_emit(G, data, nxt.__getitem__, lambda n: len(prv[n]))
    if len(order) != G.number_of_nodes():
        raise GraphError("graph route does not reach every layer (cyclic or disconnected)")
    return order


def backward_order(G, adj=None):
    """Backward layer order (SPEC §2.2): DFS over ``prev`` from the sink(s), data layer last."""
    nxt, prv = adj or adjacency(G)
    sinks = sorted((n for n in G if not nxt[n]), reverse=True)
    data = [n for n in G if not prv[n]]

    def parents(n):
        return [p for p in prv[n] if prv[p]]

    order = _dfs_emit(G, sinks, parents, lambda n: max(1, len(nxt[n])))
    return order + data


def route(G):
    """The steps of one iteration: all F, then all B (update steps are added by the program)."""
    adj = adjacency(G)
    return [(n, "F") for n in forward_order(G, adj)] + [(n, "B") for n in backward_order(G, adj)]
