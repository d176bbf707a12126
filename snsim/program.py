"""A training step as a program: the route's steps and the managed tensors each one touches.

:func:`build_program` turns a zoo layer DAG into a :class:`Program` with SuperNeurons'
dependency semantics (SPEC §2.3): tensors are tracked by storage identity, so aliases (ReLU's
``dx ≡ dy``, a JOIN's ``dx_0 ≡ dy``, softmax's ``dx ≡ y``, a FORK's ``dx ≡ dy_0``) share one
record. Captured PyTorch traces produce the same :class:`Program` from their tensor table.
Policies and the engine work on programs only.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from .errors import ConfigError, GraphError
from .graph import adjacency, backward_order, forward_order

# parameter, parameter_grad: streamed per layer by zero_offload (static otherwise)
MANAGED_KINDS = ("activation", "activation_grad", "workspace", "parameter", "parameter_grad")
STATIC_KINDS = ("input", "parameter", "parameter_grad", "optimizer_state", "buffer")
OPTIMIZER_STATE_FACTOR = {"sgd": 0, "sgd-momentum": 1, "nesterov": 1, "adam": 2, "adamw": 2}
FRAMEWORKS = ("superneurons", "pytorch")
#: How a recorded PyTorch program names the root module (its own ops' step; the whole model).
ROOT_MODULE = "<model>"
#: the cuDNN passes a convolution step runs, by phase (R: a forward replayed; U runs none)
CONV_PASSES = {"F": ("fwd",), "R": ("fwd",), "B": ("bwd_data", "bwd_filter")}
#: a recorded program's ``extra`` keys for where cuBLAS maps its memory into the lazy-loading
#: window (warm-up event indices): the forward's first GEMM, then the backward thread's (the
#: autograd engine's; cuBLAS's handles are per thread)
CUBLAS_MAP_KEYS = ("warmup_first_gemm", "warmup_first_backward_gemm")


# Tensor, StaticTensor and Step are records made by the ten thousand per program: not frozen
# (a frozen dataclass's __init__ costs 8x a plain one's: 1.7 us against 0.2 us for a Step,
# measured with timeit), but hashed by value as a frozen one is. Treat them as immutable:
# derive changed copies with dataclasses.replace().
_RECORD = dict(slots=True, unsafe_hash=True)


@dataclass(**_RECORD)
class Tensor:
    """One managed storage: an activation or activation-gradient buffer."""

    tensor_id: int
    name: str
    kind: str
    nbytes: int
    producer: int          # layer id whose step first writes it
    producer_type: str     # layer type of the producer (offload picks CONV outputs)
    stream: int = 0        # CUDA stream it is allocated on (captures; 0 = default stream)


@dataclass(**_RECORD)
class StaticTensor:
    """One unmanaged allocation: a parameter, its gradient, optimizer state, a buffer, the input."""

    name: str
    kind: str
    nbytes: int
    layer: int


@dataclass(**_RECORD)
class Step:
    """One step of the route: a layer's forward (F), backward (B) or parameter update (U)."""

    index: int
    layer: int
    name: str
    type: str
    phase: str
    time_s: float
    deps: tuple        # managed tensor ids touched (read or written), aliases resolved
    outputs: tuple = ()  # F: the layer's output tensors (FORK: one copy per branch)
    inputs: tuple = ()   # F: the layer's managed input tensors in port order
    # a capture that recorded its kernels (program.gpu_times_s): the step's device time and
    # the launching thread's time to issue its ops, which the engine streams in place of
    # time_s (engine.core: the host as a stream); None elsewhere
    gpu_s: float = None
    host_s: float = None


@dataclass(slots=True)
class Program:
    """Steps + tensors + static footprint of one training iteration."""

    name: str
    batch: int
    steps: list
    tensors: list
    static_bytes: dict
    conv_algos: dict = field(default_factory=dict)   # layer -> {pass: (ConvAlgo, ...)}
    graph: object = None
    source: str = "zoo"
    hardware: str = ""
    optimizer: str = "sgd-momentum"
    static_tensors: list = field(default_factory=list)   # StaticTensor records
    extra: dict = field(default_factory=dict)   # captured extras: measured truth, provenance
    adjacency: tuple = None    # (next, prev) layer lists of the graph, in port order
    framework: str = ""        # whose semantics: "superneurons" or "pytorch" (zoo programs)
    precision: str = ""        # a zoo program's in PyTorch semantics: "fp32", "bf16 autocast"...
    _uses: tuple = None
    # memos of derived figures; init=False, so that dataclasses.replace() (a policy deriving a
    # program, as zero_offload does) starts the copy without them
    _lower_bound: int = field(default=None, init=False, repr=False, compare=False)
    _liveness_peak: int = field(default=None, init=False, repr=False, compare=False)
    _conv_rows: dict = field(default=None, init=False, repr=False, compare=False)
    _plan_memo: dict = field(default=None, init=False, repr=False, compare=False)  # planners'

    @property
    def static_total_bytes(self):
        return sum(self.static_bytes.values())

    def plan_memo(self):
        """The dict where planners and the engine keep what they derive from this program
        alone (made on first use; a program derived by ``dataclasses.replace`` starts
        without it)."""
        if self._plan_memo is None:
            self._plan_memo = {}
        return self._plan_memo

    def derive(self, **changes):
        """A copy of the program with ``changes`` (fields, as ``dataclasses.replace``): what a
        policy runs instead (its steps split or rewired, its tensors moved). The memos start
        empty; a copy with as many steps and tensors notes ``indices_of`` (this program), so
        that the plans of both share their instruction instances (values of a kind and an
        index: :func:`snsim.policies._schedule._instruction_table`)."""
        new = dataclasses.replace(self, **changes)
        if len(new.steps) == len(self.steps) and len(new.tensors) == len(self.tensors):
            new.plan_memo()["indices_of"] = self
        return new

    def layer_types(self):
        """``{layer: type}`` of the layer graph's nodes, in the graph's order; None for a
        program without a graph. Made once per program (the engine and the recomputing
        planners ask); callers read it and must not change it."""
        memo = self.plan_memo()
        if "layer_types" not in memo:
            G = self.graph
            memo["layer_types"] = None if G is None else dict(G.nodes(data="type"))
        return memo["layer_types"]

    def graph_attrs(self):
        """The layer graph's attributes (``G.graph``: name, batch, modules, containers, ...);
        empty for a program without a graph. Read, never changed, by the callers."""
        return {} if self.graph is None else self.graph.graph

    def uses(self):
        """``(first, last)`` lists: the first and last step index touching each tensor."""
        if self._uses is None:
            n = len(self.tensors)
            first, last = [-1] * n, [-1] * n
            for s in self.steps:
                for t in s.deps:
                    if first[t] < 0:
                        first[t] = s.index
                    last[t] = s.index
            self._uses = (first, last)
        return self._uses

    def working_set_bytes(self, step):
        """Managed bytes a step needs at once, without workspace (SPEC §7's ``l_s``)."""
        return sum(self.tensors[t].nbytes for t in step.deps)

    def min_workspace_bytes(self, step):
        """Smallest workspace the step can run with (0: a zero-workspace algorithm exists)."""
        return 0

    def conv_rows(self):
        """``{layer: {pass: [(time_s, ws_bytes, name), ...]}}``: each convolution's supported
        algorithms per pass, fastest first (ties: less workspace first), as the engine picks
        from them (SPEC §6). A convolution fed only by the data layer computes no ``bwd_data``
        unless the program has its input gradient. Computed once per program (every engine
        run asks); callers read it and must not change it."""
        if self._conv_rows is not None:
            return self._conv_rows
        table = {}
        types = self.layer_types()
        prv = self.adjacency[1] if self.adjacency is not None else None
        ranked = {}   # id(algorithm tuple) -> its sorted rows: layers of one shape share a tuple
        for layer, passes in self.conv_algos.items():
            rows = {}
            for pass_name, algos in passes.items():
                ok = ranked.get(id(algos))
                if ok is None:
                    ok = ranked[id(algos)] = (
                        sorted([(a.time_s, a.ws_bytes, a.name) for a in algos if a.supported]),
                        algos)   # kept alive, so that its id is not reused meanwhile
                if ok[0]:
                    rows[pass_name] = ok[0]
            table[layer] = rows
            if types is not None:
                fed_by_data = all(types[u] == "DATA" for u in (
                    prv[layer] if prv is not None else self.graph.predecessors(layer)))
                if fed_by_data and not any(t.producer == layer and t.name.endswith("dx_data")
                                           for t in self.tensors):
                    rows.pop("bwd_data", None)
        self._conv_rows = table
        return table

    def lower_bound_bytes(self):
        """``static + max_s l_s`` — no policy that keeps a step's deps resident can go lower."""
        if self._lower_bound is None:   # every Result asks: once per program
            nbytes = [t.nbytes for t in self.tensors].__getitem__
            self._lower_bound = self.static_total_bytes + max(
                (sum(map(nbytes, s.deps)) for s in self.steps), default=0)
        return self._lower_bound

    def keep_all_bytes(self):
        """Every managed tensor at once: the keep-everything (no reuse) peak."""
        return self.static_total_bytes + sum(t.nbytes for t in self.tensors)

    def tensor_table(self):
        """Every tensor as a row: managed ones with the layers that need them in F and in B,
        static ones (parameters, gradients, optimizer state, buffers, input) with their layer."""
        import pandas as pd
        users = {t.tensor_id: ([], []) for t in self.tensors}
        for s in self.steps:
            if s.phase in "FB":
                for t in s.deps:
                    users[t][s.phase == "B"].append(s.name)
        rows = [{"tensor_id": t.tensor_id, "name": t.name, "kind": t.kind, "nbytes": t.nbytes,
                 "producer": t.producer, "fwd_users": users[t.tensor_id][0],
                 "bwd_users": users[t.tensor_id][1]} for t in self.tensors]
        rows += [{"tensor_id": -1 - i, "name": st.name, "kind": st.kind, "nbytes": st.nbytes,
                  "producer": st.layer, "fwd_users": [], "bwd_users": []}
                 for i, st in enumerate(self.static_tensors)]
        return pd.DataFrame(rows)

    def activation_bytes(self):
        return sum(t.nbytes for t in self.tensors if t.kind == "activation")


def _numel(shape):
    return math.prod(shape)


def build_program(G, *, hardware=None, optimizer="sgd-momentum", fork_copies=True,
                  first_conv_dx=False, framework="superneurons", amp=None, param_dtype="fp32"):
    """Build the :class:`Program` of one iteration of zoo graph ``G`` (SPEC §2.3).

    With ``framework="pytorch"`` the program follows PyTorch's autograd instead (SPEC §2.4,
    :func:`snsim.program_torch.build_torch_program`; ``fork_copies`` and ``first_conv_dx``
    do not apply there).

    Parameters
    ----------
    G : networkx.DiGraph
        A layer DAG (see :mod:`snsim.graph`).
    hardware : HardwareSpec, optional
        Used to model layer times where nodes carry no ``fwd_time_s``/``bwd_time_s``.
    optimizer : {"sgd", "sgd-momentum", "nesterov", "adam", "adamw"}
        Sets the optimizer-state bytes (0, 1 or 2 × parameters).
    fork_copies : bool
        A FORK makes a full copy of its input per branch (the release does; default True).
    first_conv_dx : bool
        Compute dx for a conv fed by the data layer (release quirk Q3; default False).
    framework : {"superneurons", "pytorch"}
        Whose semantics (default SuperNeurons').
    amp, param_dtype
        Mixed precision (autocast) or pure 16-bit training; PyTorch semantics only
        (:func:`snsim.program_torch.build_torch_program`). SuperNeurons' framework trains in
        fp32.

    Examples
    --------
    >>> from snsim.zoo import build_network
    >>> from snsim.hardware import load_hardware
    >>> p = build_program(build_network("lenet", batch=1), hardware=load_hardware("k40c"))
    >>> [s.phase for s in p.steps][:3], p.static_bytes["parameter"]
    (['F', 'F', 'F'], 1724320)
    """
    if framework == "pytorch":
        from .program_torch import build_torch_program
        return build_torch_program(G, hardware=hardware, optimizer=optimizer, amp=amp,
                                   param_dtype=param_dtype)
    if amp or param_dtype != "fp32":
        flag = f"--amp {amp}" if amp else f"--param-dtype {param_dtype}"
        raise ConfigError(f"{flag} needs --framework pytorch: SuperNeurons' framework trains "
                          f"in fp32")
    if framework != "superneurons":
        raise ConfigError(f"framework {framework!r} is unknown; known: {', '.join(FRAMEWORKS)}")
    if optimizer not in OPTIMIZER_STATE_FACTOR:
        raise ConfigError(f"optimizer {optimizer!r} is unknown; known: "
                          f"{', '.join(OPTIMIZER_STATE_FACTOR)}")
    from .costs import modeled_costs, update_time_s  # costs import hardware; keep graph pure

    nodes = dict(G.nodes(data=True))
    dtype = G.graph.get("dtype_bytes", 4)
    nxt, prv = adjacency(G)
    fwd_order = forward_order(G, (nxt, prv))
    bwd_order = backward_order(G, (nxt, prv))
    costs = modeled_costs(G, hardware) if hardware is not None else {}

    def times(n):
        a = nodes[n]
        if "fwd_time_s" in a and "bwd_time_s" in a:
            return a["fwd_time_s"], a["bwd_time_s"]
        if n not in costs:
            raise GraphError(f"layer {n} ({a.get('name')}) has no fwd_time_s/bwd_time_s and no "
                             f"hardware was given to model them")
        return costs[n].fwd_time_s, costs[n].bwd_time_s

    tensors = []

    def new_tensor(name, kind, nbytes, producer):
        tid = len(tensors)
        tensors.append(Tensor(tid, name, kind, nbytes, producer, nodes[producer]["type"]))
        return tid

    # forward tensors: out_of[(u, v)] = the tensor layer v reads from producer u
    out_of = {}
    outputs = {}
    for n in fwd_order:
        a = nodes[n]
        if a["type"] == "DATA":
            outputs[n] = ()
            continue
        succ = nxt[n]
        if a["type"] == "FORK" and fork_copies and succ:
            outs = tuple(new_tensor(f"{a['name']}.copy{i}", "activation",
                                    _numel(a["out_shape"]) * dtype, n)
                         for i in range(len(succ)))
            for v, t in zip(succ, outs):
                out_of[(n, v)] = t
        elif a["type"] == "FORK":
            # no copies: branches read the fork's input directly
            (p,) = prv[n]
            t = out_of.get((p, n))
            outs = ()
            for v in succ:
                out_of[(n, v)] = t
        else:
            t = new_tensor(f"{a['name']}.y", "activation", _numel(a["out_shape"]) * dtype, n)
            outs = (t,)
            for v in succ:
                out_of[(n, v)] = t
            # what attention keeps for backward besides its output (written in F, read in B)
            outs += tuple(new_tensor(f"{a['name']}.{piece}", "activation", nbytes, n)
                          for piece, nbytes in attention_saved_bytes(a, dtype))
        outputs[n] = outs

    steps = []

    def add_step(n, phase, time_s, deps, outs=(), ins=()):
        seen = dict.fromkeys(deps)   # first occurrences, in order
        seen.pop(None, None)
        a = nodes[n]
        steps.append(Step(len(steps), n, a["name"], a["type"], phase, float(time_s),
                          tuple(seen), tuple(outs), tuple(ins)))

    for n in fwd_order:
        ins = tuple([t for p in prv[n] if (t := out_of.get((p, n))) is not None])
        add_step(n, "F", times(n)[0], ins + outputs[n], outputs[n], ins)

    grad = {}   # forward tensor id -> gradient storage id

    def grad_new(x, n, tag):
        if x in grad:               # fan-out: accumulate into the existing gradient
            return grad[x]
        grad[x] = new_tensor(f"{nodes[n]['name']}.{tag}", "activation_grad",
                             tensors[x].nbytes, n)
        return grad[x]

    def grad_alias(x, g):
        # dx shares dy's storage; a later reader of x (fan-out) accumulates into that buffer
        if x not in grad and g is not None:
            grad[x] = g
        return grad.get(x)

    for n in bwd_order:
        a = nodes[n]
        typ = a["type"]
        if typ == "DATA":
            add_step(n, "B", 0.0, ())
            continue
        prevs = prv[n]
        xs = [out_of.get((p, n)) for p in prevs]
        ys = list(outputs[n])
        dys = [grad.get(y) for y in ys]
        dy = dys[0] if dys else None
        deps = []
        if typ == "SOFTMAX":
            y = ys[0]
            deps = [xs[0], y]
            if xs[0] is not None and xs[0] not in grad:
                grad[xs[0]] = y
            deps.append(grad.get(xs[0]))
        elif typ in ("ACT", "LRN"):
            x = xs[0]
            deps = [x, ys[0], dy]
            if x is not None:
                deps.append(grad_alias(x, dy))
        elif typ == "JOIN":
            deps = [dy]
            for i, x in enumerate(xs):
                if x is None:
                    continue
                deps.append(grad_alias(x, dy) if i == 0 else grad_new(x, n, f"dx{i}"))
        elif typ == "FORK":
            deps = list(dys)
            if fork_copies and xs[0] is not None:
                deps.append(grad_alias(xs[0], dys[0] if dys else None))
        else:
            if typ in ("CONV", "FC", "BN", "POOL", "NORM", "ATTN", "MUL"):
                deps.extend(x for x in xs)
            if typ in ("POOL", "ATTN"):
                deps.extend(ys)
            deps.append(dy)
            for i, x in enumerate(xs):
                if x is not None:
                    deps.append(grad_new(x, n, f"dx{i}" if len(xs) > 1 else "dx"))
                elif typ == "CONV" and first_conv_dx:
                    shape = a["in_shapes"][i]
                    deps.append(new_tensor(f"{a['name']}.dx_data", "activation_grad",
                                           _numel(shape) * dtype, n))
        add_step(n, "B", times(n)[1], deps)

    # static footprint
    param_bytes = sum(a.get("param_bytes", 0) for _, a in G.nodes(data=True))
    buffers = sum(a.get("buffer_elems", 0) for _, a in G.nodes(data=True)) * dtype
    buffers += sum(_numel(a["out_shape"]) for _, a in G.nodes(data=True) if a["type"] == "DROPOUT")
    data_nodes = [a for a in (nodes[n] for n in fwd_order) if a["type"] == "DATA"]
    batch = G.graph.get("batch", data_nodes[0]["out_shape"][0] if data_nodes else 1)
    input_bytes = sum(_numel(a["out_shape"]) * a.get("elem_bytes", dtype)
                      for a in data_nodes) + batch * 4  # + int32 labels
    factor = OPTIMIZER_STATE_FACTOR[optimizer]
    static = {"parameter": param_bytes, "parameter_grad": param_bytes,
              "optimizer_state": factor * param_bytes, "buffer": buffers, "input": input_bytes}
    static_tensors = _static_tensors(G, fwd_order, dtype, factor, batch)
    totals = dict.fromkeys(static, 0)   # one pass over tens of thousands, not one per kind
    for st in static_tensors:
        totals[st.kind] = totals.get(st.kind, 0) + st.nbytes
    assert totals == static

    for n in sorted(n for n in G if nodes[n].get("param_bytes", 0) > 0):
        pb = nodes[n]["param_bytes"]
        t = nodes[n].get("update_time_s")
        if t is None:
            if hardware is None:
                raise GraphError(f"layer {n} has no update_time_s and no hardware to model it")
            t = update_time_s(pb, factor * pb, hardware)
        add_step(n, "U", t, ())

    # modeled algorithm tables apply only where the layer's times are modeled too: given
    # (e.g. measured) times are not second-guessed by a model of the same kernel
    conv_algos = {n: c.conv_algos for n, c in costs.items() if getattr(c, "conv_algos", None)
                  and ("fwd_time_s" not in nodes[n]
                       or str(nodes[n].get("time_source", "")).startswith("modeled"))}
    return Program(name=G.graph.get("name", "network"), batch=batch, steps=steps,
                   tensors=tensors, static_bytes=static, conv_algos=conv_algos, graph=G,
                   source=G.graph.get("source", "zoo"),
                   hardware=getattr(hardware, "name", ""), optimizer=optimizer,
                   static_tensors=static_tensors, adjacency=(nxt, prv),
                   framework="superneurons")


def parameter_pieces(a):
    """``[(piece, elements)]`` of a layer's parameters as a framework allocates them: a conv or
    linear layer's weight and bias, a batch norm's weight and bias, else one weight."""
    typ, params = a["type"], a.get("params", 0)
    if not params:
        return []
    if typ in ("CONV", "FC") and a.get("bias"):
        bias = a.get("out_channels", a.get("out_features"))
        return [("weight", params - bias), ("bias", bias)]
    if typ == "BN" or (typ == "NORM" and a.get("norm") == "layer"):
        return [("weight", params // 2), ("bias", params - params // 2)]
    if typ == "EMBED" and a.get("pieces"):
        return [(piece, int(count)) for piece, count in a["pieces"]]
    return [("weight", params)]


def cast_pieces(a):
    """``[(piece, elements)]`` of the fp32 parameters autocast copies to 16 bits for a conv or
    linear layer: its own (:func:`parameter_pieces`) or, tied (GPT-2's LM head), the weight it
    shares with the token embedding."""
    if a.get("tied"):
        return [("weight", a["in_features"] * a["out_features"])]
    return parameter_pieces(a)


def attention_saved_bytes(a, dtype_bytes=4):
    """``[(piece, bytes)]`` an attention layer keeps for backward besides its output and input.

    Eager attention materialises, per head, the ``S x S`` scores and their softmax (both read
    by backward: the softmax's derivative needs its output, the scores feed the causal mask's
    and scale's backward in the release's layer-by-layer semantics); a fused (flash) kernel
    keeps one fp32 logsumexp per row and head and recomputes the scores in backward.

    >>> a = dict(type="ATTN", out_shape=(2, 8, 64), heads=4, attn_kernel="eager")
    >>> attention_saved_bytes(a)      # 2 x (2 * 4 * 8 * 8) elements of 4 B
    [('scores', 2048), ('probs', 2048)]
    >>> attention_saved_bytes({**a, "attn_kernel": "flash"})   # 2 * 4 * 8 rows of 4 B
    [('logsumexp', 256)]
    """
    if a.get("type") != "ATTN":
        return []
    n, s, _ = a["out_shape"]
    h = a["heads"]
    if a.get("attn_kernel", "flash") == "eager":
        return [("scores", n * h * s * s * dtype_bytes), ("probs", n * h * s * s * dtype_bytes)]
    return [("logsumexp", n * h * s * 4)]


def _static_tensors(G, order, dtype, factor, batch):
    """Per-layer static allocations, split as a framework allocates them (weight, bias, ...)."""
    out = []
    for n in order:
        a = G.nodes[n]
        name, typ = a["name"], a["type"]
        if typ == "DATA":
            out.append(StaticTensor(f"{name}.batch", "input",
                                    _numel(a["out_shape"]) * a.get("elem_bytes", dtype), n))
            continue
        for piece, count in parameter_pieces(a):
            nbytes = count * dtype
            out.append(StaticTensor(f"{name}.{piece}", "parameter", nbytes, n))
            out.append(StaticTensor(f"{name}.{piece}.grad", "parameter_grad", nbytes, n))
            for k in range(factor):
                out.append(StaticTensor(f"{name}.{piece}.state{k}", "optimizer_state", nbytes, n))
        if a.get("buffer_elems"):
            half = a["buffer_elems"] // 2
            out.append(StaticTensor(f"{name}.running_mean", "buffer", half * dtype, n))
            out.append(StaticTensor(f"{name}.running_var", "buffer",
                                    (a["buffer_elems"] - half) * dtype, n))
        if typ == "DROPOUT":
            out.append(StaticTensor(f"{name}.mask", "buffer", _numel(a["out_shape"]), n))
    data = [n for n in order if G.nodes[n]["type"] == "DATA"]
    out.append(StaticTensor("labels", "input", batch * 4, data[0] if data else 0))
    return out
