"""A captured (or FakeTensor-predicted) PyTorch step as an op-granular program and a layer DAG.

A capture records, per step (a module call, an autograd node, the optimizer), the exact order
of every allocation and free (and, in a prediction, of every op's reads). :func:`op_granular`
splits each step where a free or a read is followed by an allocation, so that each resulting
step allocates first and frees last — the shape the engine executes (allocate a step's new
tensors at its start, free at its end) — and reads what its ops read. A ``liveness``
plan then frees every tensor exactly where PyTorch freed it, and the engine's peaks equal a
replay of the recorded event order. Reads of a tensor are placed inside its lifetime.

:func:`layer_graph` turns the forward steps into a networkx DAG (one node per module call,
an edge where a module reads what an earlier one produced), so the policies that need a graph
(recomputation, Chen's checkpoints) run on captured programs as they do on the zoo.
"""
from __future__ import annotations

import networkx as nx

from .program import Step

_LAYER_KEYS = ("CONV", "FC", "BN", "ACT", "POOL", "LRN", "DROPOUT", "SOFTMAX", "JOIN", "CONCAT")


def _groups(events):
    """Split one step's ``(kind, tid)`` events into runs of allocations followed by the rest:
    ``[(allocs, frees, reads, releases)]``. An allocation after a free, a read or a release
    starts a run (an op that reads what an earlier op of the step made, then the next op's
    output: the tensor it last read may die in between under a plan, though not in the
    recorded run)."""
    groups = [([], [], [], [])]
    for kind, tid in events:
        allocs, frees, reads, releases = groups[-1]
        if kind == "alloc":
            if frees or reads or releases:
                groups.append(([tid], [], [], []))
            else:
                allocs.append(tid)
        elif kind == "free":
            frees.append(tid)
        elif kind == "read":
            reads.append(tid)
        else:
            releases.append(tid)
    return groups


def op_granular(rows, events, n_tensors):
    """Steps of a captured program, split at every free-then-alloc boundary of ``events``.

    Parameters
    ----------
    rows : list of (layer, name, type, phase, time_s, deps)
        The captured steps; ``deps`` holds every tensor the step allocates, frees or reads.
    events : list of (step, "alloc" | "free", tensor_id[, stream])
        The exact allocation order of the steady iteration (checked by
        :func:`snsim.trace.program_from_dict`).
    n_tensors : int
        Number of managed tensors.

    Returns
    -------
    (steps, streams, released, shares)
        :class:`~snsim.program.Step` records (a step's time is shared equally by its parts),
        the CUDA stream of each tensor's allocation (0 = default), ``{tensor: step}``: the
        forward step after which forward dropped a tensor autograd saved (its ``release``
        events), and per step ``(captured step, its share of that step's time)``, so that
        another per-step measure of the capture (``gpu_times_s``) is shared as the time is.

    Examples
    --------
    >>> rows = [[1, "a", "CONV", "F", 2.0, [0, 1]], [2, "b", "BN", "F", 1.0, [0, 2]]]
    >>> ev = [[0, "alloc", 0], [0, "alloc", 1], [0, "free", 1], [1, "alloc", 2], [1, "free", 0],
    ...       [1, "free", 2]]
    >>> steps, _, _, shares = op_granular(rows, ev, 3)
    >>> [(s.name, s.deps) for s in steps]
    [('a', (0, 1)), ('b', (2, 0))]
    >>> shares
    [(0, 1.0), (1, 1.0)]
    """
    per_step = [[] for _ in rows]
    streams = [0] * n_tensors
    for ev in events:
        s, kind, tid = ev[0], ev[1], ev[2]
        per_step[s].append((kind, tid))
        if kind == "alloc" and len(ev) > 3:
            streams[tid] = ev[3]
    # where each tensor is born and dies, as (captured step, part)
    born, dies = {}, {}
    parts = []
    for s, evs in enumerate(per_step):
        groups = _groups(evs)
        parts.append(groups)
        for g, (allocs, frees, _, _) in enumerate(groups):
            for t in allocs:
                born[t] = (s, g)
            for t in frees:
                dies[t] = (s, g)
    steps = []
    shares = []
    released = {}
    for s, (layer, name, typ, phase, time_s, deps) in enumerate(rows):
        groups = parts[s]
        # where the recording saw them read (what a part makes and reads is its own)
        reads = [[t for t in r if t not in a] for a, _, r, _ in groups]
        own = {t for a, f, r, _ in groups for t in a + f + r}
        last = len(groups) - 1
        for t in deps:
            if t in own:
                continue
            g = last
            if t in dies and dies[t][0] == s:
                g = min(g, dies[t][1])
            if t in born and born[t][0] == s:
                g = max(g, born[t][1])
            reads[g].append(t)
        # a step's time is shared by its parts, in forward by those that make something: a
        # part that only reads or frees (the reads before a call's first allocation) runs no
        # op of its own, and a replay, which re-makes what was dropped, never runs it
        making = sum(1 for a, *_ in groups if a) if phase == "F" else 0
        fraction = 1.0 / len(groups)
        for g, (allocs, frees, _, releases) in enumerate(groups):
            if making:
                fraction = 1.0 / making if allocs else 0.0
            share = float(time_s) * fraction
            shares.append((s, fraction))
            if phase == "F":
                for t in releases:   # once this part ends
                    released[t] = len(steps)
            dep = list(dict.fromkeys(allocs + frees + reads[g]))
            ins = ()
            if phase == "F":   # what it reads: what it frees (made earlier) and what it reads
                ins = tuple(dict.fromkeys([t for t in frees if born.get(t, (-1, 0)) < (s, g)]
                                          + reads[g]))
            steps.append(Step(len(steps), layer, str(name), str(typ), phase, share,
                              tuple(dep), tuple(allocs) if phase == "F" else (), ins))
    return steps, streams, released, shares


def step_stream_times(rows, op_rows, gpu_times_s, shares, hardware):
    """``(gpu_s, host_s)`` per op-granular step of a capture that recorded its kernels, or
    None where the preset has no in-network host model.

    ``gpu_s``: each captured step's kernel time (``program.gpu_times_s``, one profiled
    iteration: :func:`snsim.torchsim.capture.step_kernel_times`), shared among its parts as
    its time is (``shares``, :func:`op_granular`). ``host_s``: what the launching thread
    spends issuing each captured step's ops (``program.ops``, with their signatures), from the
    preset's in-network host model as a prediction charges it
    (:func:`snsim.torchsim.opcost.innet_host_s`: each call at its shape, a module call per
    forward step, an autograd node per backward step), shared the same way."""
    from .kernel_table import load_host_costs, load_kernel_table
    from .torchsim.opcost import innet_host_s
    table = load_kernel_table(hardware) if hardware else None
    inn = load_host_costs(hardware).get("innet") if table is not None else None
    if inn is None:
        return None
    marks = []
    for _, name, typ, phase, *_ in rows:
        # a forward step is a module call; a backward step an autograd node (AccumulateGrad
        # for a parameter's gradient); the update, the optimizer's own
        kind = (typ if phase == "F" else
                ("AccumulateGrad@" if typ == "GRAD" else "node@") if phase == "B" else "")
        marks.append((name, phase, kind, 0))
    ops = [(r[0], r[1], (), (), int(r[2]), int(r[3]), r[4] if len(r) > 4 else "",
            r[5] if len(r) > 5 else "", ()) for r in op_rows]
    per_op = innet_host_s(ops, marks, table, inn, set())
    host = [0.0] * len(rows)
    for op, h in zip(ops, per_op):
        host[op[0]] += h
    return ([gpu_times_s[r] * f for r, f in shares], [host[r] * f for r, f in shares])


def last_parts(n_rows, events):
    """The index of each captured step's last op-granular part (:func:`op_granular`'s steps).

    >>> last_parts(2, [[0, "alloc", 0], [0, "free", 0], [0, "alloc", 1], [1, "free", 1]])
    [1, 2]
    """
    per_step = [[] for _ in range(n_rows)]
    for ev in events:
        per_step[ev[0]].append((ev[1], ev[2]))
    out, n = [], 0
    for evs in per_step:
        n += len(_groups(evs))
        out.append(n - 1)
    return out


def layer_graph(program):
    """The forward layer DAG of a captured program (one node per module call).

    Node attributes follow the zoo's schema where they matter to policies: ``type``
    (CONV, BN, …; ``OP`` for functional code between modules) and ``name``; an edge
    ``u → v`` means layer ``v`` reads a tensor layer ``u`` produced, ports in read order.
    The tensors of a step that another part of the same layer produced are not edges.
    """
    G = nx.DiGraph(name=program.name, batch=program.batch, source="capture")
    producer = {t.tensor_id: t.producer for t in program.tensors}
    for s in program.steps:
        if s.phase != "F":
            continue
        if s.layer not in G:
            typ = s.type if s.type in _LAYER_KEYS else ("DATA" if not G else "OP")
            G.add_node(s.layer, type=typ, name=s.name)
        for t in s.inputs:
            u = producer[t]
            if u != s.layer and u in G and not G.has_edge(u, s.layer):
                G.add_edge(u, s.layer, src_port=G.out_degree(u), dst_port=G.in_degree(s.layer))
    return G


def replay_capture(program, hardware, *, policy="liveness", policy_options=None,
                   allocator="pytorch", budget_bytes=None, record=False,
                   allocator_options=None):
    """Run a captured (or predicted) program through the engine under ``policy``.

    Under ``liveness`` — PyTorch's own behaviour — every tensor is allocated and freed where
    the capture saw it, after the capture's setup and earlier iterations, so the peaks equal
    the real allocator's; any other registered policy runs on the same program.

    Parameters
    ----------
    program : Program or dict
        A program read from a trace (:func:`snsim.trace.read_trace`) or a trace's ``program``
        section.
    hardware : HardwareSpec or str
        The GPU preset (its memory is the allocator's capacity unless ``budget_bytes``).

    Returns
    -------
    Result
    """
    from .api import simulate
    from .trace import program_from_dict
    if isinstance(program, dict):
        program = program_from_dict(program, source="program")
    return simulate(program, hardware=hardware, policy=policy, budget_bytes=budget_bytes,
                    allocator=allocator, policy_options=policy_options, record=record,
                    allocator_options=allocator_options)
