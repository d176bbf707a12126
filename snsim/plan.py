"""The schedule IR: a typed list of instructions that the engine replays.

A policy turns ``(program, hardware, budget)`` into a :class:`Plan`. Instructions are small
named tuples (cheap to build and to replay 10^5 times); a plan saves to and loads from JSON so
a plan made elsewhere can be replayed too.

Semantics, in plan order (the host issues them; devices run them on their streams):

``Compute(step)``    run ``program.steps[step]`` on the compute stream; its deps must be on the
                     GPU (a prefetch in flight is awaited, a host copy is a synchronous miss);
                     deps never touched before are allocated at the step's start.
``Recompute(step)``  replay the forward of the layer of F step ``step`` (phase R), allocating its
                     dropped outputs.
``Free(tensor)``     release the tensor (GPU and host copy) when its last reader ends.
``Drop(tensor)``     release the GPU copy; the tensor must be recomputed before its next use.
``Offload(tensor)``  copy the tensor device→host after the last compute; afterwards it is a clean
                     cache entry (or freed, with ``free_after_offload``; then a clean tensor's
                     device copy is released at once, its host copy being current).
``Prefetch(tensor)`` copy a host-resident tensor back host→device, allocated at issue.
``Evict(tensor)``    release the GPU copy of a tensor whose host copy is current (a fetched
                     parameter of ``zero_offload``); it is on the host again. If its offload
                     copy is still running, the compute stream waits for it first.
"""
from __future__ import annotations

import json
from itertools import compress
from operator import itemgetter, lt
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import PlanError, TraceError

PLAN_VERSION = 1


class Compute(NamedTuple):
    step: int


class Recompute(NamedTuple):
    step: int


class Free(NamedTuple):
    tensor: int


class Drop(NamedTuple):
    tensor: int


class Offload(NamedTuple):
    tensor: int


class Prefetch(NamedTuple):
    tensor: int


class Evict(NamedTuple):
    tensor: int


INSTRUCTIONS = {cls.__name__: cls for cls in (Compute, Recompute, Free, Drop, Offload, Prefetch,
                                              Evict)}
#: the instructions whose argument is a tensor id (the others name a step)
_TENSOR_INSTRUCTIONS = frozenset((Free, Drop, Offload, Prefetch, Evict))
_KINDS = _TENSOR_INSTRUCTIONS | {Compute, Recompute}
_ON_STEP = {k: k is Compute or k is Recompute for k in _KINDS}   # else on a tensor
_IS_RECOMPUTE = {k: k is Recompute for k in _KINDS}
#: run-time choices of a convolution's algorithm; a plan may also name them ("planned")
WORKSPACE_MODES = ("none", "dynamic", "fastest")
PLAN_WORKSPACE_MODES = WORKSPACE_MODES + ("planned",)


@dataclass(slots=True)
class Plan:
    """A policy's schedule for one iteration, plus the run-time mechanisms it switches on.

    Parameters
    ----------
    instructions : list
        The IR, in issue order.
    workspace : {"none", "dynamic", "fastest", "planned"}
        Conv algorithm choice: zero-workspace only, fastest that fits the free memory at that
        moment (SPEC §6), fastest regardless of memory, or the ones ``algos`` names.
    algos : dict
        ``{instruction index: {pass: algorithm name}}`` for ``workspace="planned"``: the
        algorithm each convolution pass of that ``Compute``/``Recompute`` runs (a pass not
        named runs the zero-workspace one). Where its workspace does not fit when the pass
        starts, the engine falls back as cuDNN does, to the fastest that fits
        (``workspace_fallbacks``).
    lru : bool
        Treat GPU memory as an LRU tensor cache: on an allocation failure, evict the least
        recently used resident tensors (clean ones for free, dirty ones by a D2H copy).
    free_after_offload : bool
        Free a tensor when its offload copy ends instead of keeping it as a clean cache entry.
    preallocate : bool
        Allocate every managed tensor once at start and never free (keep-all without liveness).
    sync_copies : bool
        Copies run on the compute stream's critical path: the step after an offload waits for
        its D2H copy (``torch.autograd.graph.save_on_cpu``: the copy is issued on the current
        stream and the host waits), instead of overlapping on a copy stream.
    pinned_host : bool
        Host buffers are pinned (page-locked); False copies at the pageable bandwidth.
    blocking_packs : bool
        With ``sync_copies``: the launching thread waits for each copy out to end before it
        issues anything more (``save_on_cpu(pin_memory=True)`` on torch before 2.12 copies
        with a blocking ``copy_``), returning :meth:`snsim.kernel_table.KernelTable.sync_wake_s`
        after it; otherwise only the compute stream waits.
    dtr : dict or None
        Dynamic Tensor Rematerialization at run time (``snsim/engine/dtr.py``):
        ``{"heuristic": name, "remat_limit": multiple of compute time or None}``. On an
        allocation failure the engine evicts the resident forward activation with the lowest
        score and rebuilds evicted tensors when a step needs them.
    as_captured : bool
        The plan is what the framework itself does (free at last use), so a captured
        program's recorded history — setup and earlier iterations — is this plan's own and the
        engine replays all of it; any other plan starts from the capture's static allocations.
    host_resident : tuple of int
        Tensors that start every iteration on the host (and may end it there): the streamed
        parameters of ``zero_offload``.
    host_static_bytes : int
        Host memory the plan holds for the whole run besides offloaded tensors (``zero_offload``:
        master parameters, gradient buffers, optimizer state); with the offloaded tensors it
        must fit the preset's ``host_dram_bytes``.
    host_buffered : tuple of int
        Tensors whose copy out lands in host buffers ``host_static_bytes`` already counts
        (``zero_offload``'s gradients, in their pinned buffers): not counted again.
    program : Program, optional
        The program the plan is for, when the policy rewrote the one it was given
        (``zero_offload`` moves parameters to the host); the engine replays this one.
    unpacked : tuple of (pack_step, first_step, last_step, nbytes, label)
        Tensors the program does not manage that a saved-tensor hook moves to the host and
        back (``save_on_cpu`` packs the parameters an op saves, and its unpack makes a fresh
        device copy for the autograd node): each is copied out after forward step
        ``pack_step``, and in backward allocated when step ``first_step`` starts, copied in,
        and released when step ``last_step`` ends; both copies on the compute stream's
        critical path.
    extra_packs : tuple of (step, nbytes)
        Further copies out that a saved-tensor hook makes after forward step ``step`` beyond
        the ``Offload`` instructions (``save_on_cpu`` packs a tensor once per op that saves
        it, and each pack is unpacked by its own node), on the compute stream's critical path.
    staged_packs : tuple of (step, nbytes)
        Device memory a saved-tensor hook's pack holds for a moment when forward step ``step``
        starts (``save_on_cpu`` makes a transposed weight contiguous before its copy out):
        allocated and released before the step's own allocations.
    host_events : tuple of (instruction index, mechanism, phase, count)
        The launching thread's work the plan adds before that instruction, as a recorded
        plan's :attr:`snsim.torchsim.record.Recorder.host_events` (mechanisms of
        :data:`snsim.torchsim.opcost.PLAN_HOST_MECHANISMS`: a checkpoint call or its
        recomputation, a saved-tensor hook's pack or unpack, the Offloader's hooks). Charged
        on a program whose steps carry host times (a capture that recorded its kernels).
    remade : tuple of (first_step, last_step, tensor, label)
        Tensors a replay makes again as new storage that backward steps ``first_step`` ..
        ``last_step`` read in place of the one forward made (``torch.utils.checkpoint``
        recomputes a block's saved output; the program's own copy dies after its last reader
        outside the block): made by the replay of the step that makes ``tensor`` when the
        replay runs it, else when ``first_step`` starts; released when ``last_step`` ends.
    """

    policy: str
    instructions: list
    workspace: str = "none"
    lru: bool = False
    free_after_offload: bool = False
    preallocate: bool = False
    sync_copies: bool = False
    pinned_host: bool = True
    blocking_packs: bool = False
    as_captured: bool = False
    dtr: dict | None = None
    notes: dict = field(default_factory=dict)
    host_resident: tuple = ()
    host_static_bytes: int = 0
    host_buffered: tuple = ()
    program: object = None
    unpacked: tuple = ()
    extra_packs: tuple = ()
    staged_packs: tuple = ()
    remade: tuple = ()
    algos: dict = field(default_factory=dict)
    host_events: tuple = ()

    def __post_init__(self):
        if self.workspace not in PLAN_WORKSPACE_MODES:
            raise PlanError(f"plan.workspace (={self.workspace!r}) must be one of "
                            f"{PLAN_WORKSPACE_MODES}")

    def check(self, program):
        """Raise :class:`PlanError` if an instruction names a step or tensor the program lacks."""
        n_steps, n_tensors = len(program.steps), len(program.tensors)
        steps = program.steps
        if not self._instructions_valid(n_steps, n_tensors, steps):
            self._name_bad_instruction(n_steps, n_tensors, steps)
        for pack, first, last, nbytes, label in self.unpacked:
            if not (0 <= pack < n_steps and program.steps[pack].phase == "F"
                    and 0 <= first <= last < n_steps and program.steps[first].phase == "B"
                    and program.steps[last].phase == "B" and nbytes >= 0):
                raise PlanError(f"plan.unpacked entry ({pack}, {first}, {last}, {nbytes}, "
                                f"{label!r}) must name a forward step, backward steps "
                                f"first <= last and bytes >= 0")
        for i, passes in self.algos.items():
            ins = self.instructions[i] if 0 <= i < len(self.instructions) else None
            if not (isinstance(ins, (Compute, Recompute)) and isinstance(passes, dict)
                    and program.steps[ins.step].type == "CONV"):
                raise PlanError(f"plan.algos[{i}] must belong to a Compute or Recompute of a "
                                f"CONV step, as {{pass: algorithm name}}")
        for what, entries in (("extra_packs", self.extra_packs),
                              ("staged_packs", self.staged_packs)):
            for step, nbytes in entries:
                if not (0 <= step < n_steps and program.steps[step].phase == "F"
                        and nbytes >= 0):
                    raise PlanError(f"plan.{what} entry ({step}, {nbytes}) must name a "
                                    f"forward step and bytes >= 0")
        for first, last, t, label in self.remade:
            if not (0 <= first <= last < n_steps and program.steps[first].phase == "B"
                    and program.steps[last].phase == "B" and 0 <= t < n_tensors):
                raise PlanError(f"plan.remade entry ({first}, {last}, {t}, {label!r}) must "
                                f"name backward steps first <= last and a tensor")

    def _instructions_valid(self, n_steps, n_tensors, steps):
        """Whether every instruction is of a known kind and names an existing step (a forward
        one for a Recompute) or tensor: the scan runs in C (``map``, ``compress``, ``min``,
        ``all``; a plan holds ~10^5 instructions and every replay checks its plan)."""
        ins = self.instructions
        if not ins:
            return True
        kinds = list(map(type, ins))   # exact types, as the engine dispatches on them
        try:
            ends = {k: n_steps if _ON_STEP[k] else n_tensors for k in set(kinds)}
        except KeyError:   # a kind the engine does not know
            return False
        try:
            args = list(map(itemgetter(0), ins))
            return (min(args) >= 0 and all(map(lt, args, map(ends.__getitem__, kinds)))
                    and all(steps[a].phase == "F"
                            for a in compress(args, map(_IS_RECOMPUTE.__getitem__, kinds))))
        except TypeError:     # an argument that is not an integer
            return False

    def _name_bad_instruction(self, n_steps, n_tensors, steps):
        """Raise :class:`PlanError` naming the first instruction that is not valid."""
        for i, ins in enumerate(self.instructions):
            kind = type(ins)   # exact types, as the engine dispatches on them
            if kind is Compute or kind is Recompute:
                if not 0 <= ins[0] < n_steps:
                    raise PlanError(f"plan instruction {i} ({kind.__name__}) references "
                                    f"step {ins[0]}, but the program has steps 0..{n_steps - 1}")
                if kind is Recompute and steps[ins[0]].phase != "F":
                    raise PlanError(f"plan instruction {i}: Recompute({ins[0]}) must name a "
                                    f"forward step")
            elif kind in _TENSOR_INSTRUCTIONS:
                if not 0 <= ins[0] < n_tensors:
                    raise PlanError(f"plan instruction {i} ({kind.__name__}) references missing "
                                    f"tensor {ins[0]}; the program has tensors "
                                    f"0..{n_tensors - 1}")
            else:
                raise PlanError(f"plan instruction {i} (={ins!r}) is not one of "
                                f"{', '.join(sorted(INSTRUCTIONS))}")

    def to_dict(self):
        d = {"plan_version": PLAN_VERSION, "policy": self.policy, "workspace": self.workspace,
                "lru": self.lru, "free_after_offload": self.free_after_offload,
                "preallocate": self.preallocate, "sync_copies": self.sync_copies,
                "pinned_host": self.pinned_host, "as_captured": self.as_captured,
                "dtr": self.dtr, "notes": self.notes, "host_resident": list(self.host_resident),
                "host_static_bytes": self.host_static_bytes,
                "host_buffered": list(self.host_buffered),
                "unpacked": [list(u) for u in self.unpacked],
                "extra_packs": [list(e) for e in self.extra_packs],
                "staged_packs": [list(e) for e in self.staged_packs],
                "remade": [list(r) for r in self.remade],
                "host_events": [list(e) for e in self.host_events],
                "algos": {str(i): dict(v) for i, v in sorted(self.algos.items())},
                "instructions": [[type(i).__name__, i[0]] for i in self.instructions]}
        if self.program is not None:
            from .trace import program_to_dict
            d["program"] = program_to_dict(self.program)
        return d

    @classmethod
    def from_dict(cls, d, *, source="plan"):
        if not isinstance(d, dict) or d.get("plan_version") != PLAN_VERSION:
            raise TraceError(f"{source}: plan_version must be {PLAN_VERSION}")
        program = None
        if d.get("program") is not None:
            from .trace import program_from_dict
            program = program_from_dict(d["program"], source=source)
        ins = []
        for k, item in enumerate(d.get("instructions", [])):
            try:
                name, arg = item
                ins.append(INSTRUCTIONS[name](int(arg)))
            except (KeyError, TypeError, ValueError):
                raise TraceError(f"{source}: instructions[{k}] (={item!r}) must be "
                                 f"[name, int] with name in {sorted(INSTRUCTIONS)}") from None
        return cls(policy=d.get("policy", "loaded"), instructions=ins,
                   workspace=d.get("workspace", "none"), lru=bool(d.get("lru", False)),
                   free_after_offload=bool(d.get("free_after_offload", False)),
                   preallocate=bool(d.get("preallocate", False)),
                   sync_copies=bool(d.get("sync_copies", False)),
                   pinned_host=bool(d.get("pinned_host", True)),
                   as_captured=bool(d.get("as_captured", False)), dtr=d.get("dtr"), notes=d.get("notes", {}),
                   host_resident=tuple(int(t) for t in d.get("host_resident", ())),
                   host_static_bytes=int(d.get("host_static_bytes", 0)),
                   host_buffered=tuple(int(t) for t in d.get("host_buffered", ())),
                   program=program,
                   unpacked=tuple((int(f), int(a), int(b), int(n), str(lab))
                                  for f, a, b, n, lab in d.get("unpacked", ())),
                   extra_packs=tuple((int(k), int(n)) for k, n in d.get("extra_packs", ())),
                   staged_packs=tuple((int(k), int(n)) for k, n in d.get("staged_packs", ())),
                   remade=tuple((int(a), int(b), int(t), str(lab))
                                for a, b, t, lab in d.get("remade", ())),
                   host_events=tuple((int(i), str(m), str(ph), int(n))
                                     for i, m, ph, n in d.get("host_events", ())),
                   algos=_algos_from(d.get("algos", {}), source))

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f)

    @classmethod
    def load(cls, path):
        try:
            with open(path) as f:
                d = json.load(f)
        except json.JSONDecodeError as e:
            raise TraceError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
        return cls.from_dict(d, source=str(path))


def _algos_from(d, source):
    try:
        return {int(i): {str(k): str(v) for k, v in passes.items()} for i, passes in d.items()}
    except (AttributeError, TypeError, ValueError):
        raise TraceError(f"{source}: algos must map instruction indices to "
                         f"{{pass: algorithm name}}") from None
