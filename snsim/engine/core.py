"""The discrete-event engine: replay a :class:`~snsim.plan.Plan` on a simulated GPU.

One compute stream and one copy stream per direction (FIFO servers; one copy stream for both
directions when ``hardware.copy_engines == 1`` or ``hardware.link_shared``); memory changes
happen at device time — an allocation at the start of the step (or copy) that needs it, a free
when the last reader of the tensor ends. Pending frees sit in a heap keyed
``(time_s, priority, seq)`` and are applied before any later allocation, so the result is
deterministic and bit-identical for the same input.

With ``check_invariants=True`` the engine asserts its own rules as it runs and raises
:class:`~snsim.errors.InvariantError` naming the event that broke one.
"""
from __future__ import annotations

import difflib
import functools
import heapq
import time
from collections import OrderedDict

from ..errors import InfeasibleError, InvariantError, PlanError
from ..gcpause import without_gc
from ..plan import Compute, Drop, Evict, Free, Offload, Prefetch, Recompute
from ..program import CONV_PASSES, CUBLAS_MAP_KEYS
from ..result import Failure, Result
from .allocators import make_allocator, module_loading
from .contention import copy_slowdown, slowed_duration_s

# tensor states (SPEC §4)
VOID, GPU, CLEAN, D2H, H2D, HOST, DROPPED, FREED = range(8)
STATE_NAMES = ("VOID", "GPU", "GPU_CLEAN", "D2H", "H2D", "HOST", "DROPPED", "FREED")
_EV_RELEASE, _EV_OFFLOADED = 0, 1
_INF = float("inf")


def _tensor_columns(program):
    """``(size, kind, stream, optional)`` of the program's tensors, by id: made once per
    program (every replay reads them, none changes them). ``optional``: a convolution's
    workspace, which cuDNN runs without when it does not fit."""
    memo = program.plan_memo()
    hit = memo.get("engine_columns")
    if hit is None:
        tensors = program.tensors
        hit = memo["engine_columns"] = (
            [t.nbytes for t in tensors], [t.kind for t in tensors], [t.stream for t in tensors],
            [t.kind == "workspace" and t.producer_type == "CONV" for t in tensors])
    return hit


class _Stop(Exception):
    """Internal: memory ran out; carries the failure record."""

    def __init__(self, failure):
        self.failure = failure


#: unmeasured iterations a plan may run after its warm-up until the allocator is steady
SETTLE_ITERATIONS = 6


class Engine:
    """Replays one plan. Use :func:`run_plan`; the class keeps the hot loop's state."""

    #: what ``check_invariants=None`` means; the test suite turns it on (tests/conftest.py)
    check_invariants_default = False

    def __init__(self, program, plan, hardware, *, budget_bytes=None, allocator="ideal",
                 allocator_options=None, record=True, warmup_iterations=None,
                 check_invariants=None):
        if plan.program is not None:   # the policy rewrote the program (zero_offload, hooks)
            program = plan.program
        self.p = program
        self.plan = plan
        self.hw = hardware
        self.budget = int(budget_bytes if budget_bytes is not None else hardware.budget_bytes)
        self.alloc_name = allocator
        options = dict(allocator_options or {})
        self.warmup = program.extra.get("warmup_events")
        starts = program.extra.get("warmup_iteration_starts") or ()
        warm_runs = 1
        if self.warmup is not None and not plan.as_captured:
            # another plan than the captured one: its history is not the capture's. Keep the
            # static allocations in their order (parameters, then the optimizer state the
            # first step made) and let the plan's own iterations fill the allocator's cache,
            # as many as the capture ran before the measured one. (Keeping the captured first
            # iteration instead leaves its segments cached: reserved up to +390% above the
            # executed plans of the H200 suite; docs/VALIDATION.md section 3.)
            warm_runs = max(1, len(starts) - 1)
            self.warmup = [ev for ev in self.warmup if ev[0] == "alloc" and int(ev[1]) >= 0]
        if allocator == "pytorch":
            # place segments as the CUDA driver does (SPEC §10; where a capture recorded them:
            # its own history only, as another plan's n-th segment is not the capture's)
            options.setdefault("segment_placement", "driver")
            if self.warmup is not None and plan.as_captured:
                options.setdefault("segment_addresses", program.extra.get("segment_addresses"))
            # CUDA's lazy module loading: an address window for the first step's segments
            lazy = module_loading(options.pop("module_loading", None)) == "lazy"
            options.setdefault("lazy_window_bytes",
                               hardware.lazy_loading_window_bytes if lazy else 0)
        self.mem = make_allocator(allocator, self.budget, **options)
        # the window opens once the first training step has made its first allocation (a
        # replayed capture's, or else the engine's first iteration's); cuBLAS maps its memory
        # there at the first GEMM of each thread that issues them: forward's, then the
        # autograd engine's in backward (an FC step of each phase)
        self._open_window = getattr(self.mem, "open_lazy_window", None)
        replayed = self.warmup is not None and plan.as_captured and bool(starts)
        self._window_at = int(starts[0]) if replayed else None
        self._gemm_at = frozenset(int(program.extra[k]) for k in CUBLAS_MAP_KEYS
                                  if replayed and program.extra.get(k) is not None)
        self._cublas_bytes = (hardware.lazy_loading_cublas_bytes
                              if getattr(self.mem, "lazy_window_bytes", 0) else 0)
        self._cublas_phases = {"F", "B"}    # the engine's own first iteration: FC steps
        # a real run is measured in a steady iteration: the one before it left the caching
        # allocator's segments as it finds them, so the plan runs once unmeasured first
        steady = self.warmup is not None or allocator == "pytorch"
        self.warmup_iterations = ((warm_runs if steady else 0)
                                  if warmup_iterations is None else int(warmup_iterations))
        # another static plan than the captured one runs on until the allocator is steady
        # (a run-time policy, DTR or an LRU cache, decides anew each iteration)
        self.settle = (warmup_iterations is None and allocator == "pytorch"
                       and not plan.as_captured and not plan.dtr and not plan.lru)
        # the static tensors a real run makes during its first iteration (the optimizer state
        # at the first optimizer step, set_to_none grads and lazily made momentum; cuBLAS's
        # workspaces at the first GEMM of each pass), into the cache that iteration's
        # activations leave: under another plan than the captured one, made there too, not
        # at setup — each once the engine's first iteration has made as many tensors of its
        # own as the recorded one had (state_positions)
        self.deferred, self.own_made = [], 0
        if self.warmup is not None and not plan.as_captured and starts \
                and self.warmup_iterations > 0:
            self.deferred = state_positions(program, skip=plan.host_resident)
            later = {int(ev[1]) for _, ev in self.deferred}
            self.warmup = [ev for ev in self.warmup if int(ev[1]) not in later]
        elif self.warmup is None and self.warmup_iterations > 0:
            # a modelled program's (program_torch.first_iteration_statics): made in the
            # engine's first iteration after as many of its own tensors, not at setup
            index = {st.name: i for i, st in enumerate(program.static_tensors)}
            self.deferred = [(n, ("alloc", index[name], program.static_tensors[index[name]]
                                  .nbytes))
                             for n, name in program.extra.get("first_iteration_statics", ())
                             if name in index]   # a plan may have moved it to the host
        self.record = record
        n = len(program.tensors)
        self.size, self.kind, self.stream, self.optional = _tensor_columns(program)
        self.fallback = [False] * n   # allocated with 0 B instead
        self.handle = [None] * n
        self.seq = 0
        self.peak_tensor = 0     # peak without conv workspaces
        self._iteration_state()
        self.mem_events = []
        self.alloc_trace = []     # (t_s, allocated_bytes, reserved_bytes) after each change
        self.pinned = ()
        self.cur = None
        self.ins_index = -1       # the plan instruction running (the key of plan.algos)
        self.serving = None       # the B step a Recompute is replayed for
        self.replaying = None     # the F step being replayed
        # one copy engine, or one link for both directions: H2D and D2H share a FIFO
        self.shared_link = hardware.copy_engines < 2 or hardware.link_shared
        # cudaMalloc/cudaFree-like calls, counted by the allocator model (see _alloc)
        self.malloc_latency_s = hardware.malloc_latency_s
        self.free_latency_s = hardware.free_latency_s
        self.check = (self.check_invariants_default if check_invariants is None
                      else bool(check_invariants))
        self.lean_alloc = not (self.mem.calls_driver or self.check or record)
        self.n_static_allocs = 0
        self.static_alloc_bytes = 0
        self._host_resident = frozenset(plan.host_resident)
        # kernels slow down while copies are in flight (measured: engine/contention.py)
        self.copy_k = {d: k for (d, pinned), k in copy_slowdown(hardware.name).items()
                       if pinned == bool(plan.pinned_host)}
        self.pack_at = {}         # forward step -> bytes copied out after it: plan.unpacked
        self.packs_at = {}        # forward step -> how many copies those bytes are
        # backward step -> [(last step, bytes, label, copied in, tensor remade or None)]
        self.unpack_at = {}
        for pack, first, last, nbytes, label in plan.unpacked:
            self.pack_at[pack] = self.pack_at.get(pack, 0) + nbytes
            self.packs_at[pack] = self.packs_at.get(pack, 0) + 1
            self.unpack_at.setdefault(first, []).append((last, nbytes, label, True, None))
        for step, nbytes in plan.extra_packs:
            self.pack_at[step] = self.pack_at.get(step, 0) + nbytes
            self.packs_at[step] = self.packs_at.get(step, 0) + 1
        self.staged_at = {}       # forward step -> bytes a pack stages on the device first
        for step, nbytes in plan.staged_packs:
            self.staged_at.setdefault(step, []).append(nbytes)
        self.remade_last = {}     # tensor -> the last backward step reading its replay's copy
        for first, last, t, label in plan.remade:   # made again, with no copy in
            self.unpack_at.setdefault(first, []).append(
                (last, program.tensors[t].nbytes, label, False, t))
            self.remade_last[t] = last
        self.remade_early = set()   # remade tensors the replay of their step made already
        self.unpacked_held = {}   # last step -> handles of its unpacked copies
        self.hooked = bool(self.pack_at or self.unpack_at)
        self._transfer_memo = {}  # (nbytes, direction, pinned) -> seconds
        self._host_stream(program, plan, hardware)
        self._conv_tables()

    # -- the launching thread --------------------------------------------------------------
    def _host_stream(self, program, plan, hardware):
        """The host as a stream, where the program's steps carry host times (a capture that
        recorded its kernels, :attr:`snsim.program.Step.host_s`): each step runs its kernel
        time (``gpu_s``), and not before the launching thread has issued it, which takes the
        step's ``host_s`` plus what the plan adds before it (:attr:`Plan.host_events`, priced
        by :func:`snsim.torchsim.opcost.plan_host_s`); an ``Evict`` makes the thread wait
        for the copy it synchronizes with. Elsewhere steps take their ``time_s``."""
        steps = program.steps
        self.host_on = bool(steps) and all(st.host_s is not None and st.gpu_s is not None
                                           for st in steps)
        self.host_ev = {}
        self._wake = None
        if self.host_on and plan.blocking_packs:
            from ..kernel_table import load_kernel_table
            table = load_kernel_table(hardware.name)
            self._wake = functools.lru_cache(maxsize=None)(
                table.sync_wake_s if table is not None else (lambda nbytes: 0.0))
        if not self.host_on or not plan.host_events:
            return
        from ..kernel_table import load_host_costs
        from ..torchsim.opcost import plan_host_s
        costs = load_host_costs(hardware.name)
        for i, mechanism, phase, count in plan.host_events:
            self.host_ev[i] = self.host_ev.get(i, 0.0) + plan_host_s(mechanism, phase, count,
                                                                     costs)

    # -- conv algorithm tables -------------------------------------------------------------
    def _conv_tables(self):
        self.ws_table = self.p.conv_rows()   # the program keeps it, so its rows' ids hold
        self._zero_rows = {}

    def _choose(self, rows, mode, pass_name):
        """Pick (time_s, ws_bytes, name) from a sorted table under the workspace mode."""
        if mode == "fastest":
            return rows[0]
        if mode == "none":
            return self._zero_ws(rows)
        if mode == "planned":   # the plan's pick for this instruction (none named: zero)
            name = self.plan.algos.get(self.ins_index, {}).get(pass_name)
            if name is None:
                return self._zero_ws(rows)
            r = next((r for r in rows if r[2] == name), None)
            if r is None:
                raise PlanError(f"plan.algos[{self.ins_index}] names {pass_name} algorithm "
                                f"{name!r}, which layer {self.p.steps[self.cur].name} does not "
                                f"support; it has {', '.join(r[2] for r in rows)}")
            if r[1] == 0 or self.mem.can_alloc(r[1]):
                return r
            # cuDNN falls back to the next algorithm whose workspace it can allocate
            self.counters["workspace_fallbacks"] += 1
        can_alloc = self.mem.can_alloc
        for r in rows:   # sorted by time: the first that fits is the fastest that fits
            if r[1] == 0 or can_alloc(r[1]):
                return r
        return self._zero_ws(rows)

    def _zero_ws(self, rows):
        """The fastest algorithm that needs no workspace (else the last, slowest row); once
        per table (layers of one shape share theirs, and every step of a layer asks)."""
        r = self._zero_rows.get(id(rows))
        if r is None:
            r = self._zero_rows[id(rows)] = min((r for r in rows if r[1] == 0),
                                                default=rows[-1])
        return r

    # -- memory --------------------------------------------------------------------------
    def _event(self, when, kind, tensor):
        self.seq += 1
        heapq.heappush(self.heap, (when, kind, self.seq, tensor))

    def _advance(self, now):
        heap = self.heap
        while heap and heap[0][0] <= now:
            when, kind, seq, t = heapq.heappop(heap)
            if kind == _EV_RELEASE:
                if self.release_seq[t] == seq:   # else superseded: released or rescheduled
                    self.release_seq[t] = 0
                    self._release_when_idle(t, when)
            else:  # an offload copy finished
                self.busy_until[t] = 0.0
                if self.release_pending[t]:
                    self.release_pending[t] = False
                    self._release_gpu(t, when)
                elif self.state[t] == D2H:
                    self.state[t] = CLEAN
                    if self.plan.free_after_offload:
                        self._release_when_idle(t, when)

    def _release_when_idle(self, t, when):
        """Free the GPU copy of offloaded tensor t at ``when``, or when the steps reading it end.

        A step marks its deps in use (``in_use_until = inf``) from the moment it starts placing
        them, so a copy that ends while the step waits (for a prefetch, or for memory) cannot
        release an input of that step; the step's end schedules the release instead.
        """
        until = self.in_use_until[t]
        if until > when:
            self.idle_release[t] = True
            if until != _INF:
                self._event(until, _EV_RELEASE, t)
                self.release_seq[t] = self.seq
        else:
            self._release_gpu(t, when)
            self.state[t] = HOST

    def _alloc(self, t, now, nbytes=None, category=None, label=None):
        """Allocate tensor t (or a workspace or static tensor when t < 0) at ``now``.

        Returns ``(time the memory is there, handle)``: later than ``now`` when room had to be
        made, or when the allocator model called the driver (``device_mallocs`` and
        ``device_frees`` grew: ``malloc_latency_s`` and ``free_latency_s`` each).
        """
        nbytes = self.size[t] if nbytes is None else nbytes
        stream = self.stream[t] if t >= 0 else 0
        mem = self.mem
        if mem.calls_driver:
            if not mem.can_alloc(nbytes, stream):
                now, nbytes = self._room_for(t, nbytes, now, label, stream)
            mallocs, frees = mem.device_mallocs, mem.device_frees
            h = mem.alloc(nbytes, stream)
            if mem.device_mallocs != mallocs or mem.device_frees != frees:
                now += ((mem.device_mallocs - mallocs) * self.malloc_latency_s
                        + (mem.device_frees - frees) * self.free_latency_s)
        else:
            h = mem.try_alloc(nbytes, stream)
            if h is None:
                now, nbytes = self._room_for(t, nbytes, now, label, stream)
                h = mem.alloc(nbytes, stream)
        if self.check:
            self._check_counters(f"allocating {self._label(t, label)}", now)
        if category is not None or t >= 0:   # not a workspace
            if mem.requested_bytes > self.peak_tensor:
                self.peak_tensor = mem.requested_bytes
        if t >= 0:
            self.handle[t] = h
            self.state[t] = GPU
            if self.lru is not None:
                self.lru[t] = None
        if self.record:
            self.mem_events.append((now, category or (self.kind[t] if t >= 0 else "workspace"),
                                    nbytes))
            self.alloc_trace.append((now, mem.allocated_bytes, mem.reserved_bytes))
        return now, h

    def _room_for(self, t, nbytes, now, label, stream):
        """Make room for an allocation that does not fit: ``(time, bytes to allocate)``; a
        convolution's workspace that cannot get it is allocated with 0 B instead."""
        try:
            return self._make_room(nbytes, now, t, label=label, stream=stream), nbytes
        except _Stop:
            if t < 0 or not self.optional[t]:
                raise
            # cuDNN catches the out-of-memory of a workspace and falls back to an
            # algorithm that needs less (PyTorch's Conv_v7.cpp): the step runs without it
            self.fallback[t] = True
            self.counters["workspace_fallbacks"] += 1
            return now, 0

    def _release_gpu(self, t, when):
        h = self.handle[t]
        if h is None:
            return
        if self.check and (t in self.pinned or self.in_use_until[t] > when):
            s = self.p.steps[self.cur]
            self._violation(f"tensor {t} ({self.p.tensors[t].name}) released at t={when!r} s, "
                            f"while a step reads it (until t={self.in_use_until[t]!r} s; "
                            f"current step {s.index}: {s.name} {s.phase})")
        self.mem.free(h)
        self._forget_handle(t)
        if self.record:
            self.mem_events.append((when, self.kind[t], 0 if self.fallback[t] else -self.size[t]))
            self.alloc_trace.append((when, self.mem.allocated_bytes, self.mem.reserved_bytes))
        self.fallback[t] = False

    @property
    def mem_ops(self):
        """Allocator calls so far (allocations + frees), for the events/s figure: every
        allocation took a handle, and every one no longer live was freed."""
        allocations = self.mem.allocations
        return 2 * allocations - self.mem.num_live

    def _label(self, t, label=None):
        return label or (self.p.tensors[t].name if t >= 0 else "workspace")

    def _make_room(self, nbytes, now, t, evictable=(GPU, CLEAN, D2H, H2D), wait=True, label=None,
                   stream=0):
        """Evict (LRU) or wait for in-flight frees until ``nbytes`` fits; else stop the run."""
        mem = self.mem
        while not mem.can_alloc(nbytes, stream):
            victim = None
            if self.lru is not None:
                for cand in self.lru:
                    if cand not in self.pinned and self.state[cand] in evictable:
                        victim = cand
                        break
            if victim is None and self.dtr is not None:
                victim = self.dtr.victim(now)
                if victim is not None:
                    self.dtr.evict(victim, now)
                    continue
            if victim is not None:
                st = self.state[victim]
                self.counters["evictions"] += 1
                self.counters["evicted_bytes"] += self.size[victim]
                if st == CLEAN:
                    self._release_gpu(victim, now)
                elif st == H2D:   # a prefetch still in flight: let it land, then drop it
                    now = max(now, self.ready_at[victim])
                    self._advance(now)
                    self._release_gpu(victim, now)
                elif st == D2H:   # wait for its offload copy, then it is clean
                    now = max(now, self.busy_until[victim])
                    self._advance(now)
                    if self.handle[victim] is not None:
                        self._release_gpu(victim, now)
                else:             # dirty: copy it out while the step waits
                    end = self._copy(victim, "d2h", now)
                    self.on_host[victim] = True
                    now = end
                    self.busy_until[victim] = 0.0
                    self._release_gpu(victim, now)
                    self._advance(now)
                self.state[victim] = HOST
                continue
            if wait and self.heap:
                now = max(now, self.heap[0][0])
                self._advance(now)
                continue
            # a replay fails on behalf of the backward step it serves
            s = self.serving if self.replaying is not None else self.cur
            st = self.p.steps[s] if s is not None else None
            short = nbytes - max(0, self.budget - mem.reserved_bytes)
            replaying = self.p.steps[self.replaying].name if self.replaying is not None else ""
            raise _Stop(Failure(step=s if s is not None else -1,
                                layer=st.name if st else "setup",
                                phase=st.phase if st else "-", tensor=self._label(t, label),
                                time_s=now, requested_bytes=nbytes, short_bytes=max(short, 1),
                                replaying=replaying))
        return now

    def _check_host_memory(self, now, t=None):
        """Host DRAM: the plan's static host bytes plus the offloaded tensors."""
        held = self.plan.host_static_bytes + self.host_bytes
        if held <= self.hw.host_dram_bytes:
            return
        s = self.cur
        st = self.p.steps[s] if s is not None else None
        raise _Stop(Failure(
            step=s if s is not None else -1, layer=st.name if st else "setup",
            phase=st.phase if st else "-",
            tensor=self._label(t, None) if t is not None else "host-resident state",
            time_s=now, requested_bytes=held, short_bytes=held - self.hw.host_dram_bytes,
            reason=f"out of host memory: {held:,} B held on the host ("
                   f"{self.plan.host_static_bytes:,} B the plan keeps there + {self.host_bytes:,} "
                   f"B offloaded) exceed host_dram_bytes {self.hw.host_dram_bytes:,} B of "
                   f"{self.hw.name}"))

    def _copy(self, t, direction, now):
        """Queue a copy of tensor t on its stream no earlier than ``now``; return its end."""
        nbytes = self.size[t]
        pinned = self.plan.pinned_host
        if not pinned:
            self.counters["pageable_copies"] += 1
        if direction == "d2h":
            if not self.on_host[t] and t not in self.host_buffered:
                if pinned and self.host_bytes + nbytes > self.hw.host_pinned_bytes:
                    pinned = False
                    self.counters["pageable_copies"] += 1
                self.host_bytes += nbytes
                self.peak_host_bytes = max(self.peak_host_bytes, self.host_bytes)
                self._check_host_memory(now, t)
            free_at = max(self.t_d2h, self.t_h2d) if self.shared_link else self.t_d2h
            start = max(now, free_at)
            end = start + self._transfer_s(nbytes, "d2h", pinned)
            self.t_d2h = end
            self.d2h_bytes += nbytes
        else:
            free_at = max(self.t_d2h, self.t_h2d) if self.shared_link else self.t_h2d
            start = max(now, free_at)
            end = start + self._transfer_s(nbytes, "h2d", pinned)
            self.t_h2d = end
            self.h2d_bytes += nbytes
        if self.check:
            self._check_copy(t, direction, start, end)
        if self.record:
            self.transfers.append((t, direction, nbytes, now, start, end, pinned))
        return end

    def _transfer_s(self, nbytes, direction, pinned):
        """``hardware.transfer_time_s``, once per distinct copy (tens of thousands of copies
        of a dozen sizes in a deep network's replay)."""
        key = (nbytes, direction, pinned)
        t = self._transfer_memo.get(key)
        if t is None:
            t = self._transfer_memo[key] = self.hw.transfer_time_s(nbytes, direction, pinned)
        return t

    # -- instructions ----------------------------------------------------------------------
    def _run_step(self, step, phase, duration_default):
        self.cur = step.index
        t0 = now = self.t_compute
        heap = self.heap
        if heap and heap[0][0] <= t0:
            self._advance(t0)     # what happened before the step starts
        deps = self.pinned = step.deps
        in_use, state, lru, c = self.in_use_until, self.state, self.lru, self.counters
        for t in deps:   # from now until the step ends, nothing may release its deps
            in_use[t] = _INF
        # make every dep resident: hits, prefetches that landed (or are late), misses copied
        # back in now; tensors never allocated (VOID) are allocated after the unpacks
        fresh = None
        hits = 0
        for t in deps:
            st = state[t]
            if st == GPU or st == CLEAN or st == D2H:
                hits += 1
                if lru is not None:
                    lru.move_to_end(t)
            elif st == VOID:
                if fresh is None:
                    fresh = [t]
                else:
                    fresh.append(t)
            elif st == H2D:
                if self.ready_at[t] > now:
                    c["prefetch_late"] += 1
                    now = self.ready_at[t]
                else:
                    c["prefetch_hits"] += 1
                state[t] = CLEAN
                if lru is not None:
                    lru.move_to_end(t)
            elif st == HOST:
                c["cache_hits"] += hits   # counted as of a failure below, as one by one
                hits = 0
                c["cache_misses"] += 1
                now, h = self._alloc(t, now)
                now = self._copy(t, "h2d", now)
                state[t] = CLEAN
            else:
                raise PlanError(f"step {step.index} ({step.name} {step.phase}) needs tensor {t} "
                                f"({self.p.tensors[t].name}), which is {STATE_NAMES[st]}: the "
                                f"plan freed or dropped it before its last use")
        if hits:
            c["cache_hits"] += hits
        if heap and heap[0][0] <= now:
            self._advance(now)
        if self.hooked and phase == "B" and step.index in self.unpack_at:
            now = self._unpack(step.index, now)
        if self.hooked and phase == "F" and step.index in self.staged_at:
            now = self._staged(step.index, now)
        if fresh is not None:
            if self.deferred and phase != "R":
                # the first iteration's static tensors come between the program's own ones,
                # each after as many of them as the record made before it (state_positions)
                alloc, deferred = self._alloc, self.deferred
                for t in fresh:
                    if deferred and deferred[0][0] <= self.own_made:
                        now = self._make_deferred(now)
                    c["first_touch"] += 1
                    now = alloc(t, now)[0]
                    self.own_made += 1
            elif self.lean_alloc:
                # _alloc inline while the allocator places the tensor at once (it fits):
                # outputs are most of a replay's allocations
                mem = self.mem
                try_alloc, size, stream, handle = mem.try_alloc, self.size, self.stream, self.handle
                for t in fresh:
                    c["first_touch"] += 1
                    h = try_alloc(size[t], stream[t])
                    if h is None:
                        now = self._alloc(t, now)[0]
                        continue
                    if mem.requested_bytes > self.peak_tensor:
                        self.peak_tensor = mem.requested_bytes
                    handle[t] = h
                    state[t] = GPU
                    if lru is not None:
                        lru[t] = None
            else:
                alloc = self._alloc
                for t in fresh:
                    c["first_touch"] += 1
                    now = alloc(t, now)[0]
        if self.deferred and self.deferred[0][0] <= self.own_made:
            now = self._make_deferred(now)
        if self.check:
            if now < t0 or t0 < self._last_step_end:
                self._violation(f"step {step.index} ({step.name} {phase}) starts at t={now!r} s, "
                                f"before the compute stream is free at t={t0!r} s")
            self._check_resident(step, phase, now)
        ws_bytes, algo, duration = 0, "", duration_default
        # (a parameter update, phase U, runs no convolution)
        rows = self.ws_table.get(step.layer) if step.type == "CONV" and phase != "U" else None
        if rows:
            handles = []
            duration = 0.0
            names = []
            for pass_name in CONV_PASSES[phase]:
                r = rows.get(pass_name)
                if r is None:
                    continue
                time_s, ws, name = self._choose(r, self.plan.workspace, pass_name)
                duration += time_s
                names.append(name)
                if ws:
                    now, h = self._alloc(-1, now, ws)
                    handles.append((h, ws))
                    ws_bytes += ws
            algo = "+".join(names)
            self.algos_chosen[(step.layer, phase)] = algo
        highwater = self.mem.requested_bytes if self.record else 0
        if rows:
            if handles:
                mem = self.mem
                for h, ws in handles:
                    mem.free(h)
                    if self.record:
                        self.mem_events.append((now + duration, "workspace", -ws))
                        self.alloc_trace.append((now + duration, mem.allocated_bytes,
                                                 mem.reserved_bytes))
        if self.copy_k:
            duration = slowed_duration_s(duration, now, {"h2d": self.t_h2d, "d2h": self.t_d2h},
                                         self.copy_k)
        end = now + duration
        if self.hooked:   # a saved-tensor hook's copies (plan.unpacked, plan.extra_packs)
            if phase == "F" and step.index in self.pack_at:
                # the hook's copy out, waited for
                end = self._host_copy(self.pack_at[step.index], "d2h", end)
            if self.unpacked_held:
                for h, nbytes in self.unpacked_held.pop(step.index, ()):
                    self.mem.free(h)
                    if self.record:
                        self.mem_events.append((end, "activation", -nbytes))
                        self.alloc_trace.append((end, self.mem.allocated_bytes,
                                                 self.mem.reserved_bytes))
        idle_release, release_seq = self.idle_release, self.release_seq
        for t in deps:
            in_use[t] = end
            if idle_release[t] and release_seq[t] == 0:
                self._event(end, _EV_RELEASE, t)
                release_seq[t] = self.seq
        if self.check:
            self._check_resident(step, phase, end)
            self._last_step_end = end
        self.pinned = ()
        self.stall_time += now - t0
        if phase == "R":
            self.recompute_time += duration
        else:
            self.compute_time += duration
        self.t_compute = end
        if self.record:
            self.steps_rec.append((step.index, step.name, phase, now, end, highwater, ws_bytes,
                                   algo, now - t0))
        return end

    def _unpack(self, k, now):
        """The plan's unpacked copies that start at backward step k: allocated, then copied in
        on the compute stream (the step waits; a replay's remade storage is not copied);
        returns when the step can run."""
        for last, nbytes, label, copied, t in self.unpack_at[k]:
            if t is not None and t in self.remade_early:
                self.remade_early.discard(t)
                continue
            now, h = self._alloc(-1, now, nbytes, category="activation", label=label)
            self.unpacked_held.setdefault(last, []).append((h, nbytes))
            if copied:
                now = self._host_copy(nbytes, "h2d", now)
        return now

    def _staged(self, k, now):
        """The device copies the packs of forward step k stage before copying out: each
        allocated and released again; returns when the step can run."""
        for nbytes in self.staged_at[k]:
            now, h = self._alloc(-1, now, nbytes, category="activation",
                                 label="a pack's contiguous copy")
            self.mem.free(h)
            if self.record:
                self.mem_events.append((now, "activation", -nbytes))
                self.alloc_trace.append((now, self.mem.allocated_bytes, self.mem.reserved_bytes))
        return now

    def _host_copy(self, nbytes, direction, now):
        """A copy of ``nbytes`` no managed tensor owns, queued on its direction's stream no
        earlier than ``now``; returns its end."""
        if direction == "d2h":
            start = max(now, self.t_d2h, self.t_h2d if self.shared_link else 0.0)
            end = self.t_d2h = start + self.hw.transfer_time_s(nbytes, "d2h",
                                                               self.plan.pinned_host)
            self.d2h_bytes += nbytes
        else:
            start = max(now, self.t_h2d, self.t_d2h if self.shared_link else 0.0)
            end = self.t_h2d = start + self.hw.transfer_time_s(nbytes, "h2d",
                                                               self.plan.pinned_host)
            self.h2d_bytes += nbytes
        return end

    def _recompute(self, step):
        # a replay re-allocates the outputs that were dropped; an output already freed (a
        # by-product, e.g. another copy of a FORK) is produced again and released at once
        byproducts = []
        for t in step.outputs:
            st = self.state[t]
            if st == DROPPED or st == FREED:
                self.state[t] = VOID
                if st == FREED:
                    byproducts.append(t)
        self.replaying = step.index
        self._run_step(step, "R", step.gpu_s if self.host_on else step.time_s)
        self.replaying = None
        self.recomputed.append(step.name)   # only replays that ran
        for t in byproducts:
            if t in self.remade_last:   # the copy backward reads: held to its last reader
                self._hold_remade(t)
            else:
                self._release_gpu(t, self.t_compute)
            self.state[t] = FREED

    def _hold_remade(self, t):
        """A replay made tensor ``t`` again, which ``plan.remade`` gives to backward steps in
        place of the copy forward made: its storage stays until the last of them ends."""
        self.unpacked_held.setdefault(self.remade_last[t], []).append(
            (self.handle[t], self.size[t]))
        self.remade_early.add(t)
        self._forget_handle(t)

    def _forget_handle(self, t):
        """Tensor ``t`` no longer owns its storage (released, or handed on): no handle, no
        pending release, out of the LRU cache."""
        self.handle[t] = None
        self.idle_release[t] = False
        self.release_seq[t] = 0
        if self.lru is not None:
            self.lru.pop(t, None)

    def _free(self, t):
        state = self.state
        st = state[t]
        if st == FREED or st == VOID:
            raise PlanError(f"Free({t}) of tensor {self.p.tensors[t].name}, which is "
                            f"{STATE_NAMES[st]}")
        if self.dtr is not None and self.dtr.free(t):
            return
        if self.on_host[t]:
            if t not in self.host_buffered:
                self.host_bytes -= self.size[t]
            self.on_host[t] = False
        if self.handle[t] is not None:
            if self.busy_until[t] > self.t_compute:
                self.release_pending[t] = True
            else:
                self._release_gpu(t, self.t_compute)
        state[t] = FREED

    def _drop(self, t):
        if self.state[t] not in (GPU, CLEAN):
            raise PlanError(f"Drop({t}) of tensor {self.p.tensors[t].name}, which is "
                            f"{STATE_NAMES[self.state[t]]}")
        self._release_gpu(t, self.t_compute)
        self.state[t] = DROPPED

    def _evict(self, t):
        st = self.state[t]
        if st == HOST:
            return   # the LRU cache released it already
        if st == D2H:
            # its copy to the host is still running: the host waits for it (the module
            # boundary Offloader's event.synchronize()), and the copy's end makes it clean
            end = self.busy_until[t]
            if end > self.t_compute:
                self.stall_time += end - self.t_compute
                self.t_compute = end
            self._advance(self.t_compute)
            st = self.state[t]
            if st == HOST:
                return
        if st != CLEAN:
            raise PlanError(f"Evict({t}) of tensor {self.p.tensors[t].name}, which is "
                            f"{STATE_NAMES[st]}: only a GPU copy of a current host tensor can go")
        self._release_gpu(t, self.t_compute)
        self.state[t] = HOST

    def _offload(self, t):
        if self.state[t] == CLEAN and self.plan.free_after_offload:
            # the host copy is current: only the device copy goes (save_on_cpu's unpacked copy
            # dies with its autograd node; the next node unpacks a new one)
            self._release_gpu(t, self.t_compute)
            self.state[t] = HOST
            return
        if self.state[t] != GPU:
            return  # already clean, on the host or gone: nothing to copy
        end = self._copy(t, "d2h", self.t_compute)
        self.on_host[t] = True
        self.busy_until[t] = end
        self.state[t] = D2H
        self._event(end, _EV_OFFLOADED, t)
        if self.plan.sync_copies:   # the compute stream waits for the copy
            self.stall_time += end - self.t_compute
            self.t_compute = end

    def _prefetch(self, t):
        now = self.t_compute
        heap = self.heap
        if heap and heap[0][0] <= now:
            self._advance(now)    # an offload that ended before the issue has left the GPU
        if self.state[t] != HOST:
            return  # resident (a cache hit) or in flight
        if not self.mem.can_alloc(self.size[t]):
            # a prefetch only takes free memory or clean cache entries; it never forces dirty
            # evictions or waits, which would stall the step it is meant to help
            try:
                self._make_room(self.size[t], now, t, evictable=(CLEAN,), wait=False)
            except _Stop:
                self.counters["prefetch_skipped"] += 1
                return
        now, _ = self._alloc(t, now)
        end = self._copy(t, "h2d", now)
        self.state[t] = H2D
        self.ready_at[t] = end

    # -- self-check (check_invariants=True) --------------------------------------------------
    def _violation(self, what):
        raise InvariantError(f"engine invariant broken ({self.plan.policy!r} on "
                             f"{self.p.name!r}): {what}")

    def _check_resident(self, step, phase, now):
        for t in step.deps:
            if self.handle[t] is None or self.state[t] not in (GPU, CLEAN, D2H):
                self._violation(f"step {step.index} ({step.name} {phase}) at t={now!r} s reads "
                                f"tensor {t} ({self.p.tensors[t].name}), which is "
                                f"{STATE_NAMES[self.state[t]]} with no GPU copy")
            if self.ready_at[t] > now:
                self._violation(f"step {step.index} ({step.name} {phase}) starts at t={now!r} s "
                                f"before tensor {t} ({self.p.tensors[t].name}) lands at "
                                f"t={self.ready_at[t]!r} s")

    def _check_counters(self, event, now):
        mem = self.mem
        if not mem.requested_bytes <= mem.allocated_bytes <= mem.reserved_bytes:
            self._violation(f"after {event} at t={now!r} s: ideal {mem.requested_bytes} B <= "
                            f"allocated {mem.allocated_bytes} B <= reserved "
                            f"{mem.reserved_bytes} B does not hold")
        if mem.reserved_bytes > self.budget:
            self._violation(f"after {event} at t={now!r} s: reserved {mem.reserved_bytes} B is "
                            f"above the budget of {self.budget} B")

    def _check_copy(self, t, direction, start, end):
        last = self._last_copy_end
        key = "link" if self.shared_link else direction
        if start < last.get(key, 0.0) or end < start:
            self._violation(f"{direction} copy of tensor {t} ({self.p.tensors[t].name}) runs "
                            f"{start!r}..{end!r} s, overlapping the previous copy on its "
                            f"{'shared link' if self.shared_link else 'stream'} (ends "
                            f"{last.get(key, 0.0)!r} s)")
        last[key] = end

    def _check_balance(self):
        mem = self.mem
        static = self.static_alloc_bytes
        if mem.num_live != self.n_static_allocs or mem.requested_bytes != static:
            self._violation(f"after the last step {mem.num_live} allocations of "
                            f"{mem.requested_bytes} B are live; the frees should leave only the "
                            f"{self.n_static_allocs} static ones ({static} B)")

    # -- the run ---------------------------------------------------------------------------
    def _setup(self):
        p = self.p
        if p.static_tensors:   # one allocation per parameter, gradient, state, buffer
            mem = self.mem
            # tens of thousands of them: placed at once while they fit and nothing is recorded
            # or checked (only the peak of requested bytes is kept, and setup never frees);
            # the first that does not fit, and every one of a recorded or checked run, one by
            # one (the first that does not fit stops the run: at setup nothing can be evicted)
            later = {int(ev[1]) for _, ev in self.deferred}
            statics = [st for i, st in enumerate(p.static_tensors)
                       if st.nbytes > 0 and i not in later]
            placed = 0
            if not (self.record or self.check):
                sizes = [st.nbytes for st in statics]
                placed = mem.alloc_prefix(sizes)
                self.n_static_allocs += placed
                self.static_alloc_bytes += sum(sizes[:placed])
            for st in statics[placed:]:
                self.peak_tensor = max(self.peak_tensor, mem.requested_bytes)
                self._alloc(-1, 0.0, st.nbytes, category=st.kind,
                            label=f"static tensor {st.name} ({st.kind})")
                self.n_static_allocs += 1
                self.static_alloc_bytes += st.nbytes
            self.peak_tensor = max(self.peak_tensor, mem.requested_bytes)
        else:
            for category, nbytes in p.static_bytes.items():
                if nbytes > 0:
                    self._alloc(-1, 0.0, nbytes, category=category,
                                label=f"static {category} ({nbytes} B)")
                    self.n_static_allocs += 1
                    self.static_alloc_bytes += nbytes
        if self.plan.preallocate:
            for t in range(len(p.tensors)):
                self._alloc(t, 0.0)

    def _replay_warmup(self):
        """A capture's setup and earlier iterations, in their exact allocation order."""
        static = self.p.static_tensors
        handles = [None] * len(static)
        temps = {}
        window_at = self._window_at
        for i, ev in enumerate(self.warmup):
            if window_at is not None and i > window_at and self._open_window is not None:
                self._open_window()   # the recorded step's first operation has allocated
                self._open_window = None
            if i in self._gemm_at and self._cublas_bytes:
                self.mem.map_into_window(self._cublas_bytes)   # a thread's first cuBLAS GEMM
            if ev[0] == "alloc":
                key, nbytes = int(ev[1]), int(ev[2])
                stream = int(ev[3]) if len(ev) > 3 else 0
                if not self.mem.can_alloc(nbytes, stream):
                    if key < 0:
                        # a temporary of the recorded history that this budget cannot hold
                        # (a cuDNN workspace that would fall back, say): the history under
                        # this budget goes without it
                        temps[key] = None
                        continue
                    self._make_room(nbytes, 0.0, -1, wait=False, stream=stream,
                                    label=f"static tensor {static[key].name} ({static[key].kind})"
                                    if 0 <= key < len(static) else None)
                h = self.mem.alloc(nbytes, stream)
                if key >= 0:
                    if key >= len(static) or handles[key] is not None:
                        raise PlanError(f"warmup_events[{i}] allocates static tensor {key} "
                                        f"twice or out of range")
                    handles[key] = h
                    self.n_static_allocs += 1
                    self.static_alloc_bytes += nbytes
                    if self.record:
                        self.mem_events.append((0.0, static[key].kind, nbytes))
                else:
                    temps[key] = h
            else:
                key = int(ev[1])
                if key not in temps:
                    raise PlanError(f"warmup_events[{i}] frees {ev[1]}, which is not allocated")
                h = temps.pop(key)
                if h is not None:
                    self.mem.free(h)
        if window_at is not None:
            self._cublas_phases = set()   # the recorded steps ran their GEMMs
        later = {int(ev[1]) for _, ev in self.deferred}
        missing = [i for i, h in enumerate(handles) if h is None and i not in later]
        if temps or missing:
            raise PlanError(f"warmup_events leave {len(temps)} temporaries allocated and never "
                            f"allocate {len(missing)} static tensors")
        if self.record:
            self.alloc_trace.append((0.0, self.mem.allocated_bytes, self.mem.reserved_bytes))
        self.peak_tensor = self.mem.requested_bytes

    def _make_deferred(self, now, every=False):
        """Allocate the static tensors the first iteration makes (``self.deferred``) whose
        turn has come: those due after at most ``own_made`` tensors of the iteration's own
        (``every``: all that are left). Returns when they are there."""
        static = self.p.static_tensors
        made = float("inf") if every else self.own_made
        while self.deferred and self.deferred[0][0] <= made:
            _, ev = self.deferred.pop(0)
            st = static[int(ev[1])]
            now = self._alloc(-1, now, int(ev[2]), category=st.kind,
                              label=f"static tensor {st.name} ({st.kind})")[0]
            self.n_static_allocs += 1
            self.static_alloc_bytes += int(ev[2])
        return now

    def _iteration_state(self):
        """Per-iteration state: tensor states, stream clocks, counters and records."""
        n = len(self.p.tensors)
        self.state = [VOID] * n
        self.ready_at = [0.0] * n      # H2D arrival time
        self.busy_until = [0.0] * n    # end of a D2H copy reading the tensor
        # end of the last compute step that read it; inf while a step is placing or reading it
        self.in_use_until = [0.0] * n
        self.idle_release = [False] * n   # offloaded: free the GPU copy once no step reads it
        self.release_seq = [0] * n        # seq of the live _EV_RELEASE event (0: none)
        self.release_pending = [False] * n
        self.on_host = [False] * n
        self.host_buffered = frozenset(self.plan.host_buffered)
        for t in self.plan.host_resident:   # streamed parameters: on the host between steps
            self.state[t] = HOST
            self.on_host[t] = True
        self.lru = OrderedDict() if self.plan.lru else None
        self.dtr = None
        if self.plan.dtr is not None:   # run-time rematerialisation (snsim/engine/dtr.py)
            from .dtr import make_rematerializer
            self.dtr = make_rematerializer(self)
        self.heap = []
        self._last_copy_end = {}
        self._last_step_end = 0.0
        self.t_compute = self.t_h2d = self.t_d2h = 0.0
        self.host_bytes = self.peak_host_bytes = 0
        self.counters = dict(cache_hits=0, cache_misses=0, first_touch=0, prefetch_hits=0,
                             prefetch_late=0, prefetch_skipped=0, evictions=0, evicted_bytes=0,
                             pageable_copies=0, workspace_fallbacks=0)
        self.compute_time = self.recompute_time = self.stall_time = 0.0
        self.h2d_bytes = self.d2h_bytes = 0
        self.recomputed = []
        self.algos_chosen = {}
        self.steps_rec, self.transfers = [], []

    def _settle(self, steps):
        """Run unmeasured iterations until one leaves the allocator's reserved bytes as it
        found them (at most :data:`SETTLE_ITERATIONS`): a plan's blocks can split the cached
        segments a little differently each iteration, and a real run, measured after many,
        reserves what the steady state does."""
        for _ in range(SETTLE_ITERATIONS):
            before = self.mem.reserved_bytes
            self._iteration(steps)
            grew = self.mem.reserved_bytes != before
            self._next_iteration()
            if not grew:
                return

    def _next_iteration(self):
        """Forget an unmeasured iteration: clocks, counters and records start again; the
        allocator keeps its cached segments, as a real allocator does between iterations."""
        if self.deferred:   # a plan that made fewer tensors of its own than the recorded one
            self._make_deferred(self.t_compute, every=True)
        self._iteration_state()
        del self.mem_events[self._setup_events:]
        del self.alloc_trace[self._setup_trace:]
        self.mem.reset_peaks()
        self.mem.device_mallocs = self.mem.device_frees = 0
        self.peak_tensor = self.mem.requested_bytes

    @without_gc   # the collector's full passes over the program cost more than the run
    def run(self):
        wall = time.perf_counter()
        failure = None
        steps = self.p.steps
        try:
            self._check_host_memory(0.0)
            if self.warmup is not None:
                self._replay_warmup()
            else:
                self._setup()
            self._setup_events, self._setup_trace = len(self.mem_events), len(self.alloc_trace)
            for _ in range(self.warmup_iterations):
                self._iteration(steps)
                self._next_iteration()
            if self.settle:
                self._settle(steps)
            self._iteration(steps)
        except _Stop as stop:
            failure = stop.failure
        if self.check and failure is None and self.mem.peak_requested_bytes > self.budget:
            self._violation(f"feasible run peaks at {self.mem.peak_requested_bytes} B, above "
                            f"the budget of {self.budget} B")
        return self._result(failure, time.perf_counter() - wall)

    def _iteration(self, steps):
        run_step, dtr, prefetch, free = self._run_step, self.dtr, self._prefetch, self._free
        state, heap = self.state, self.heap
        planned = self.plan.workspace == "planned"   # _choose reads the running instruction
        # the other instructions that name a tensor, by kind (a dict lookup, not a chain of tests)
        on_tensor = {Offload: self._offload, Drop: self._drop, Evict: self._evict}
        instructions = self.plan.instructions
        serves_until, serves = -1, None   # Recomputes before serves_until serve step serves
        if self._open_window is not None:
            # the first training step: the window opens once its first allocation is made
            # (as a replayed capture's opens after the recorded step's first allocation)
            self.mem.open_lazy_window_after(self.mem.allocations)
            self._open_window = None
        host_on, host_ev = self.host_on, self.host_ev
        host_t = self.t_compute   # the thread starts the iteration with the GPU (it synced)
        for i, ins in enumerate(instructions):
            kind = type(ins)
            if host_on:
                host_t += host_ev.get(i, 0.0)
                if kind is Compute or kind is Recompute:
                    host_t += steps[ins[0]].host_s
                    if host_t > self.t_compute:   # the GPU waits for the launch: a stall
                        self.stall_time += host_t - self.t_compute
                        self.t_compute = host_t
            if kind is Compute:
                if planned:
                    self.ins_index = i    # read by _choose: the key of plan.algos
                s = steps[ins[0]]
                if self.deferred and self.deferred[0][0] <= self.own_made:
                    self._make_deferred(self.t_compute)
                thread = "F" if s.phase == "F" else "B"   # a recomputation runs in backward
                if self._cublas_bytes and s.type == "FC" and thread in self._cublas_phases:
                    self.mem.map_into_window(self._cublas_bytes)
                    self._cublas_phases.discard(thread)
                duration = s.gpu_s if host_on else s.time_s
                if dtr is None:
                    run_step(s, s.phase, duration)
                else:
                    dtr.before_step(s)
                    run_step(s, s.phase, duration)
                    dtr.after_step(s)
                if self._wake is not None and s.phase == "F" and ins[0] in self.packs_at:
                    # the hook's packs after the step (plan.unpacked, extra_packs), waited for
                    n = self.packs_at[ins[0]]
                    host_t = max(host_t, self.t_compute) + n * self._wake(
                        self.pack_at[ins[0]] // n)
                continue
            if kind is Prefetch:
                # most find the tensor resident: a prefetch does something only for a tensor
                # on the host, or after the copies and releases due by now (_prefetch)
                t = ins[0]
                if state[t] == HOST or (heap and heap[0][0] <= self.t_compute):
                    prefetch(t)
                continue
            if kind is Free:      # a third of the instructions: before the dict lookup
                free(ins[0])
                continue
            handler = on_tensor.get(kind)
            if handler is not None:
                if host_on and kind is Offload and self.plan.sync_copies \
                        and host_t > self.t_compute:
                    # a hook's copy on the compute stream: issued once the thread gets there
                    self.stall_time += host_t - self.t_compute
                    self.t_compute = host_t
                copied = self.d2h_bytes
                handler(ins[0])
                if host_on and kind is Evict:     # the thread synchronized with the copy
                    host_t = max(host_t, self.t_compute)
                elif self._wake is not None and self.d2h_bytes != copied:
                    # a pack's copy the thread waits for
                    host_t = max(host_t, self.t_compute) + self._wake(self.size[ins[0]])
            elif kind is Recompute:
                if i >= serves_until:   # the B step it serves: the next Compute in plan order
                    serves_until = i + 1
                    while serves_until < len(instructions) \
                            and type(instructions[serves_until]) is not Compute:
                        serves_until += 1
                    serves = (instructions[serves_until].step
                              if serves_until < len(instructions) else None)
                self.serving = serves
                self.ins_index = i
                self._recompute(steps[ins.step])
            else:
                raise PlanError(f"unknown plan instruction {ins!r}")
        self._advance(float("inf"))
        if self.dtr is not None:
            self.dtr.finish()
        leaked = [t for t, st in enumerate(self.state) if st not in (FREED, VOID)
                  and not (st == HOST and t in self._host_resident)]
        if leaked:
            names = ", ".join(p.name for p in (self.p.tensors[t] for t in leaked[:3]))
            raise PlanError(f"plan {self.plan.policy!r} leaves {len(leaked)} tensors "
                            f"allocated at the end of the iteration (e.g. {names})")
        if self.check:
            self._check_balance()

    def _result(self, failure, wall_s):
        p, hw, mem = self.p, self.hw, self.mem
        step_time = max(self.t_compute, self.t_h2d, self.t_d2h)
        self.counters["hit_ratio_release"] = (
            (self.counters["cache_hits"] + self.counters["first_touch"])
            / max(1, self.counters["cache_hits"] + self.counters["first_touch"]
                  + self.counters["cache_misses"]))
        self.counters["peak_host_bytes"] = self.peak_host_bytes
        self.counters["device_mallocs"] = mem.device_mallocs
        self.counters["device_frees"] = mem.device_frees
        return Result(
            network=p.name, batch=p.batch, policy=self.plan.policy, hardware=hw.name,
            allocator=self.alloc_name, budget_bytes=self.budget, feasible=failure is None,
            failure=failure, peak_ideal_bytes=mem.peak_requested_bytes,
            peak_allocated_bytes=mem.peak_allocated_bytes,
            peak_reserved_bytes=mem.peak_reserved_bytes, peak_tensor_bytes=self.peak_tensor,
            context_bytes=hw.context_bytes,
            static_bytes=p.static_total_bytes, static_breakdown=dict(p.static_bytes),
            lower_bound_bytes=p.lower_bound_bytes(), step_time_s=step_time,
            compute_time_s=self.compute_time, recompute_time_s=self.recompute_time,
            stall_time_s=self.stall_time, h2d_bytes=self.h2d_bytes, d2h_bytes=self.d2h_bytes,
            counters=dict(self.counters), recomputed_layers=tuple(self.recomputed),
            conv_algos={f"{k[0]}:{k[1]}": v for k, v in self.algos_chosen.items()},
            options=dict(self.plan.notes), sim_wall_s=wall_s, steps=self.steps_rec,
            transfers=self.transfers, memory_events=self.mem_events,
            allocator_trace=self.alloc_trace, framework=p.framework or p.source)


def state_positions(program, skip=()):
    """``[(n, event)]``: the static allocations of a captured program's history that its first
    iteration made (``warmup_events`` from ``warmup_iteration_starts[0]`` on), each with the
    number of the program's own tensors made before it. ``skip``: tensors the plan brings from
    the host (``Plan.host_resident``: ``zero_offload``'s streamed parameters), which a step
    fetches rather than makes: not counted.

    The recorded first iteration is the steady one plus these allocations, so each comes
    after as many of the iteration's own allocations as it follows in the record; those are
    matched to the program's tensors in the order they are made (by size: a GPU capture's
    allocator record and its op record differ in a few allocations), and under any plan that
    makes the program's tensors in that order a static allocation comes at the same point.
    The optimizer state is not made before the program's first update step.
    """
    events = program.extra.get("warmup_events") or ()
    starts = program.extra.get("warmup_iteration_starts") or ()
    if not starts:
        return []
    n_static = len(program.static_tensors)
    out, own = [], []
    for ev in events[starts[0]:starts[1] if len(starts) > 1 else len(events)]:
        if ev[0] != "alloc":
            continue
        if 0 <= int(ev[1]) < n_static:
            out.append((len(own), ev))
        else:
            own.append(int(ev[2]))
    if not out:
        return []
    born, _ = program.uses()
    skip = set(skip)
    made = [program.tensors[t].nbytes for s in program.steps for t in s.deps
            if born[t] == s.index and t not in skip]
    blocks = difflib.SequenceMatcher(a=own, b=made, autojunk=False).get_matching_blocks()
    # the optimizer state comes from optimizer.step(): not before the program's update steps
    first_u = next((s.index for s in program.steps if s.phase == "U"), len(program.steps))
    before_u = sum(1 for b in born if 0 <= b < first_u)

    def mapped(n):   # own allocations before -> program tensors before
        m = 0
        for i, j, size in blocks:
            if i > n:
                break
            m = j + min(n - i, size)
        return m
    static = program.static_tensors
    return [(max(mapped(n), before_u) if static[int(ev[1])].kind == "optimizer_state"
             else mapped(n), ev) for n, ev in out]


def run_plan(program, plan, hardware, *, budget_bytes=None, allocator="ideal",
             allocator_options=None, record=True, warmup_iterations=None,
             check_invariants=None):
    """Replay ``plan`` for ``program`` on ``hardware``; return a :class:`~snsim.result.Result`.

    An allocation that does not fit gives an infeasible Result (``feasible=False`` and a
    ``failure`` record), never an exception. A plan that breaks the IR's rules raises
    :class:`~snsim.errors.PlanError`. ``warmup_iterations`` unmeasured iterations run first
    (default: 1 for a captured program or the ``pytorch`` allocator, whose peaks are a steady
    iteration's, as a real run measures them; else 0). With ``check_invariants=True`` the
    engine also checks, as it runs, that every dep of a running step is resident and stays so
    until the step ends, that no stream overlaps itself (nor the other direction on a shared
    link), that ideal <= allocated <= reserved <= budget after every allocation, and that the
    frees balance the allocations; a broken rule raises
    :class:`~snsim.errors.InvariantError`. ``None`` means ``Engine.check_invariants_default``
    (off, on in the test suite).
    """
    plan.check(program if plan.program is None else plan.program)
    return Engine(program, plan, hardware, budget_bytes=budget_bytes, allocator=allocator,
                  allocator_options=allocator_options, record=record,
                  warmup_iterations=warmup_iterations, check_invariants=check_invariants).run()


__all__ = ["Engine", "run_plan", "InfeasibleError"]
