"""Dynamic Tensor Rematerialization, carried out by the engine at run time.

Kirisame et al., *Dynamic Tensor Rematerialization*, ICLR 2021 (the ``simrd`` simulator of
uwsampl/dtr-prototype was read, not copied). The ``dtr`` policy switches it on in the
:class:`~snsim.plan.Plan` (``plan.dtr``); the engine builds one :class:`Rematerializer` per
iteration and calls it at three points:

* **eviction** — when an allocation does not fit, :meth:`Rematerializer.victim` names the
  resident, unlocked, evictable tensor with the lowest heuristic score, and :meth:`evict`
  releases it (no copy: it will be recomputed);
* **access** — before a planned step runs, :meth:`before_step` locks its deps and
  rematerialises every evicted one by replaying the forward steps that wrote it (phase ``R``),
  first rematerialising, recursively, the evicted inputs of those steps (locked while in use);
* **free** — a planned ``Free`` of a recomputable tensor keeps it in the rematerialisation
  graph at no memory cost (the paper's deleted-but-not-banished tensors), so that a live
  tensor computed from it can still be rebuilt.

Which tensors: forward activations written by a forward step whose other operands are
recomputable too (static tensors are always resident). Outputs of the ``DATA`` layer are
recomputable but never evicted (DTR's constants). Gradients are never evicted. A storage that a
later forward step updates in place (a PyTorch program's ``relu_`` or ``+=``: a forward step
with no outputs, taken to write its most recently made operand) is rebuilt by replaying its
producer and the in-place steps that had run on it when it was evicted.

Heuristics (lowest score evicted; ties to the lower tensor id), with ``c`` the forward time of
the steps that write the tensor, ``m`` its bytes and ``s`` its staleness (time since its last
access):

============  ==========================================================================
``h_dtr``     ``(c + c(e*)) / (m * s)``; ``e*`` the evicted neighbourhood: every evicted
              tensor connected to it through evicted tensors, parents and children
``h_dtr_eq``  as ``h_dtr``, ``e*`` approximated by union-find classes of evicted tensors,
              merged on eviction and never split (a rematerialised tensor's cost leaves its
              class)
``h_dtr_local`` ``c / (m * s)``
``lru``       ``-s``: the least recently used first
``largest``   ``-m``: the largest first
``msps``      ``(c + c(evicted ancestors)) / m``: Capuchin's memory saved per second of
              recomputation, highest first
============  ==========================================================================

``remat_limit``: the run fails (infeasible) when the iteration's rematerialisation time would
pass ``remat_limit`` times its planned compute time (SPEC §11: 3 by default); ``None``: no limit.

Cost: each eviction scores every resident candidate, O(resident) scores; ``h_dtr`` and ``msps``
walk the evicted neighbourhood per score (O(evicted) in the worst case), ``h_dtr_eq`` looks up
the classes of the direct neighbours.
"""
from __future__ import annotations

# numpy is imported in the functions that use it: loading it costs a CLI command that never
# calls them (maxdepth, run) 0.16 s

from ..errors import PlanError
from ..result import Failure
from .core import CLEAN, DROPPED, FREED, GPU, _Stop

HEURISTICS = ("h_dtr", "h_dtr_eq", "h_dtr_local", "lru", "largest", "msps")
_MIN_STALENESS_S = 1e-9   # a tensor read by the step that is allocating is the freshest


class RematGraph:
    """Static facts of a program: who writes each tensor, who can be rebuilt and evicted."""

    def __init__(self, program):
        import numpy as np
        steps, tensors = program.steps, program.tensors
        n = len(tensors)
        self.writers = [[] for _ in range(n)]   # forward steps writing each storage, in order
        self.writes = [()] * len(steps)         # the storages each forward step writes
        self.operands = [()] * len(steps)       # the deps a forward step reads and does not make
        for s in steps:
            if s.phase != "F":
                continue
            if s.outputs:
                written = s.outputs
            else:
                # no outputs: the step updates a storage in place (``relu_``, ``out +=
                # identity``). Which operand it writes is not recorded; PyTorch's in-place ops
                # write the value just computed, so take the most recently made one. Its other
                # operands are older, so rebuilding never goes round in a cycle.
                made = [t for t in s.deps if self.writers[t]]
                written = (max(made, key=lambda t: (self.writers[t][0], t)),) if made else ()
            self.writes[s.index] = written
            for t in written:
                self.writers[t].append(s.index)
            out = set(s.outputs)
            self.operands[s.index] = tuple(t for t in s.deps if t not in out)
        self.parents = [sorted({x for k in self.writers[t] for x in self.operands[k] if x != t})
                        for t in range(n)]
        # recoverable: a forward activation whose writers' operands are all recoverable (the
        # greatest such set: in-place updates may read each other's storages)
        ok = [tensors[t].kind == "activation" and bool(self.writers[t]) for t in range(n)]
        changed = True
        while changed:
            changed = False
            for t in range(n):
                if ok[t] and not all(ok[x] for x in self.parents[t]):
                    ok[t] = False
                    changed = True
        self.recoverable = ok
        self.children = [[] for _ in range(n)]
        for t in range(n):
            if ok[t]:
                for x in self.parents[t]:
                    self.children[x].append(t)
        self.neighbours = [self.parents[t] + self.children[t] for t in range(n)]
        from scipy.sparse import csr_matrix   # here: a slow import most commands never need
        rows = [t for t in range(n) for _ in self.neighbours[t]]
        cols = [y for t in range(n) for y in self.neighbours[t]]
        self.adjacency = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
        self.cost_s = [sum(steps[k].time_s for k in self.writers[t]) if ok[t] else 0.0
                       for t in range(n)]
        self.cost_arr = np.array(self.cost_s)
        self.evictable = [t for t in range(n) if ok[t] and tensors[t].producer_type != "DATA"]
        # the candidates as arrays, for scoring them all at once
        self.ev = np.array(self.evictable, dtype=np.int64)
        self.ev_pos = {t: i for i, t in enumerate(self.evictable)}
        self.ev_cost_s = np.array([self.cost_s[t] for t in self.evictable], dtype=float)
        self.ev_bytes = np.array([max(1, tensors[t].nbytes) for t in self.evictable], dtype=float)
        self.planned_compute_s = sum(s.time_s for s in steps)


def make_rematerializer(engine):
    """The engine's DTR runtime for one iteration (the program's graph built once per engine)."""
    graph = getattr(engine, "_remat_graph", None)
    if graph is None:
        graph = engine._remat_graph = RematGraph(engine.p)
    cfg = engine.plan.dtr
    if not isinstance(cfg, dict) or set(cfg) != {"heuristic", "remat_limit"}:
        raise PlanError(f"plan.dtr (={cfg!r}) must be a mapping with keys heuristic and "
                        f"remat_limit")
    return Rematerializer(engine, graph, heuristic=cfg["heuristic"],
                          remat_limit=cfg["remat_limit"])


class Rematerializer:
    """The run-time state of DTR for one iteration of one engine."""

    def __init__(self, engine, graph, *, heuristic, remat_limit):
        import numpy as np
        if heuristic not in HEURISTICS:
            raise PlanError(f"plan.dtr.heuristic (={heuristic!r}) must be one of "
                            f"{', '.join(HEURISTICS)}")
        if remat_limit is not None and not (isinstance(remat_limit, (int, float))
                                            and remat_limit >= 0):
            raise PlanError(f"plan.dtr.remat_limit (={remat_limit!r}) must be a number >= 0 "
                            f"or null")
        self.eng = engine
        self.g = graph
        self.heuristic = heuristic
        self.limit_s = (None if remat_limit is None
                        else remat_limit * graph.planned_compute_s)
        n = len(graph.writers)
        self.evicted = [False] * n
        self.dead = [False] * n       # freed by the plan, kept for rebuilding its children
        self.lock = [0] * n
        self.last_s = np.zeros(n)     # time of the last access
        self.evicted_next = np.zeros(n, dtype=np.int64)   # evicted neighbours, per tensor
        self.evicted_arr = np.zeros(n, dtype=bool)
        self.done = [0] * n           # writer steps run so far this iteration
        self.busy = [False] * n       # being rematerialised (cycle guard)
        # h_dtr_eq: union-find over evicted tensors, with each class's summed cost
        self.root = list(range(n))
        self.class_cost_s = [0.0] * n

    # -- engine hooks ------------------------------------------------------------------------
    def before_step(self, step):
        """Lock the step's deps and bring back every evicted one."""
        lock = self.lock
        for t in step.deps:
            lock[t] += 1
        for t in step.deps:
            if self.evicted[t]:
                self._remat(t, step.index)

    def after_step(self, step):
        end = self.eng.t_compute
        for t in step.deps:
            self.last_s[t] = end
            self._unlock(t)
        for t in self.g.writes[step.index]:
            self.done[t] += 1

    def free(self, t):
        """A planned ``Free``: keep a recoverable tensor for rebuilding; False: free it."""
        if not self.g.recoverable[t]:
            return False
        eng = self.eng
        if eng.handle[t] is not None:
            eng._release_gpu(t, eng.t_compute)
            self._set_evicted(t, True)
            self._joined(t)
        eng.state[t] = DROPPED
        self.dead[t] = True
        return True

    def finish(self):
        """End of the iteration: what was kept for rebuilding is freed for good."""
        state = self.eng.state
        for t, d in enumerate(self.dead):
            if d:
                state[t] = FREED

    def victim(self, now):
        """The resident evictable tensor with the lowest score (ties: the lowest id), or None.

        The plain terms are scored for every candidate at once (numpy); the evicted
        neighbourhood is walked only for the candidates that have an evicted neighbour.
        """
        import numpy as np
        eng, g = self.eng, self.g
        state = np.array(eng.state, dtype=np.int8)[g.ev]   # GPU or CLEAN: allocated
        ok = ((state == GPU) | (state == CLEAN)) & (np.array(self.lock)[g.ev] == 0)
        for t in eng.pinned:
            i = g.ev_pos.get(t)
            if i is not None:
                ok[i] = False
        if not ok.any():
            return None
        h = self.heuristic
        stale = np.maximum(now - self.last_s[g.ev], _MIN_STALENESS_S)
        if h == "lru":
            score = -stale
        elif h == "largest":
            score = -g.ev_bytes
        elif h == "h_dtr_local":
            score = g.ev_cost_s / (g.ev_bytes * stale)
        else:
            extra = np.zeros(len(g.evictable))
            near = np.flatnonzero(ok & (self.evicted_next[g.ev] > 0))
            if h == "msps":
                for i in near:
                    extra[i] = self._ancestors_s(g.evictable[i])
            elif len(near):
                extra[near] = self._neighbourhoods_s(g.ev[near], h == "h_dtr_eq")
            score = (g.ev_cost_s + extra) / (g.ev_bytes if h == "msps" else g.ev_bytes * stale)
        score = np.where(ok, score, np.inf)
        return g.evictable[int(np.flatnonzero(ok & (score == score.min()))[0])]

    def evict(self, t, now):
        eng = self.eng
        eng.counters["evictions"] += 1
        eng.counters["evicted_bytes"] += eng.size[t]
        eng._release_gpu(t, now)
        eng.state[t] = DROPPED
        self._set_evicted(t, True)
        self._joined(t)

    # -- rematerialisation -------------------------------------------------------------------
    def _remat(self, t, serving):
        """Rebuild evicted tensor t (locked by the caller), replaying its writers in order.

        A depth-first walk with an explicit stack (a chain of thousands of evicted tensors must
        not hit Python's recursion limit). A frame is ``[tensor, next writer, operands locked
        for that writer or None]``.
        """
        eng, g, steps = self.eng, self.g, self.eng.p.steps
        evicted, busy = self.evicted, self.busy
        busy[t] = True
        stack = [[t, 0, None]]
        while stack:
            frame = stack[-1]
            x, i, ops = frame
            if i >= self.done[x]:
                if i == 0:   # evicted before any step wrote it: not a plan's order
                    raise PlanError(f"DTR: tensor {x} ({eng.p.tensors[x].name}) is needed "
                                    f"before any step wrote it")
                busy[x] = False
                stack.pop()
                continue
            step = steps[g.writers[x][i]]
            if ops is None:
                ops = frame[2] = [y for y in g.operands[step.index] if y != x]
                for y in ops:
                    self.lock[y] += 1
            missing = next((y for y in ops if evicted[y]), None)
            if missing is not None:
                if busy[missing]:
                    raise PlanError(f"DTR: rebuilding tensor {x} ({eng.p.tensors[x].name}) "
                                    f"needs tensor {missing}, which is being rebuilt (a cycle "
                                    f"of in-place updates)")
                busy[missing] = True
                stack.append([missing, 0, None])
                continue
            self._replay(step, serving)
            for y in ops:
                self._unlock(y)
            frame[1], frame[2] = i + 1, None

    def _replay(self, step, serving):
        eng = self.eng
        if self.limit_s is not None and eng.recompute_time + step.time_s > self.limit_s:
            s = eng.p.steps[serving]
            raise _Stop(Failure(step=serving, layer=s.name, phase=s.phase,
                                tensor=step.name, time_s=eng.t_compute,
                                requested_bytes=sum(eng.size[t] for t in step.outputs),
                                short_bytes=max(1, sum(eng.size[t] for t in step.outputs)),
                                replaying=step.name,
                                reason=f"DTR rematerialisation passes remat_limit "
                                       f"({self.limit_s:.6g} s of replays)"))
        was = eng.serving, eng.replaying
        eng.serving = serving
        eng._recompute(step)       # DROPPED outputs come back; freed by-products go at once
        eng.serving, eng.replaying = was
        end = eng.t_compute
        for t in step.deps:
            self.last_s[t] = end
        for t in self.g.writes[step.index]:
            if self.evicted[t] and eng.handle[t] is not None:
                self._set_evicted(t, False)
                self._left(t)
                if self.dead[t] and not self.lock[t]:
                    self._drop_dead(t)

    def _unlock(self, t):
        self.lock[t] -= 1
        if self.dead[t] and not self.lock[t] and self.eng.handle[t] is not None:
            self._drop_dead(t)

    def _drop_dead(self, t):
        """A deleted tensor rebuilt only to rebuild another goes again at once."""
        eng = self.eng
        eng._release_gpu(t, eng.t_compute)
        eng.state[t] = DROPPED
        self._set_evicted(t, True)
        self._joined(t)

    def _set_evicted(self, t, flag):
        self.evicted[t] = flag
        self.evicted_arr[t] = flag
        step = 1 if flag else -1
        nxt = self.evicted_next
        for y in self.g.neighbours[t]:
            nxt[y] += step

    # -- equivalence classes (h_dtr_eq) --------------------------------------------------------
    def _find(self, t):
        root = self.root
        while root[t] != t:
            root[t] = root[root[t]]
            t = root[t]
        return t

    def _joined(self, t):
        """t was evicted: its cost joins its class, merged with its evicted neighbours'."""
        g, evicted = self.g, self.evicted
        self.class_cost_s[self._find(t)] += g.cost_s[t]
        for y in g.neighbours[t]:
            if evicted[y]:
                a, b = self._find(t), self._find(y)
                if a != b:
                    if b < a:
                        a, b = b, a
                    self.root[b] = a
                    self.class_cost_s[a] += self.class_cost_s[b]

    def _left(self, t):
        """t was rebuilt: its cost leaves its class (classes are never split)."""
        self.class_cost_s[self._find(t)] -= self.g.cost_s[t]

    # -- evicted neighbourhoods (the scores themselves are in victim) -------------------------
    def _neighbourhoods_s(self, cands, classes):
        """For each candidate t, the summed cost of e*(t), the evicted tensors reachable from t
        through evicted tensors: the union of the connected components of the evicted subgraph
        next to t (sparse matrices: one labelling per victim search). ``classes``: h_dtr_eq's
        union-find classes of evicted tensors stand for the components."""
        import numpy as np
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components
        g = self.g
        gone = np.flatnonzero(self.evicted_arr)
        if classes:
            roots, label = np.unique([self._find(int(t)) for t in gone], return_inverse=True)
            n_comp = len(roots)
            comp_cost_s = np.array(self.class_cost_s)[roots]
        else:
            sub = g.adjacency[gone][:, gone]
            n_comp, label = connected_components(sub, directed=False)
            comp_cost_s = np.bincount(label, weights=g.cost_arr[gone], minlength=n_comp)
        member = csr_matrix((np.ones(len(gone)), (np.arange(len(gone)), label)),
                            shape=(len(gone), n_comp))
        touches = g.adjacency[cands][:, gone] @ member    # candidate x component: edges
        touches.data[:] = 1.0
        return touches @ comp_cost_s

    def _ancestors_s(self, t):
        """msps: summed cost of the evicted ancestors reachable from t through evicted ones."""
        g, evicted = self.g, self.evicted
        seen = {t}
        todo = [t]
        total = 0.0
        while todo:
            x = todo.pop()
            for y in g.parents[x]:
                if evicted[y] and y not in seen:
                    seen.add(y)
                    total += g.cost_s[y]
                    todo.append(y)
        return total
