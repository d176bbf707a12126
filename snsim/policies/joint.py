"""Joint recomputation and offload: one MILP for small graphs, a heuristic that scales.

``solver=milp`` — POET's formulation (Patil et al., *POET: Training Neural Networks on Tiny
Devices with Integrated Rematerialization and Paging*, ICML 2022) on Checkmate's stages
(``_remat``): besides ``R`` and ``S``, each activation that backward reads may be copied to the
host right after it is made (``P[x]``) and back once before a backward stage (``In[t, x]``).
POET charges paging energy; here it is charged in time: a stage's copies share the PCIe link
and what they need beyond the stage's compute (its step and its replays) is a stall added to
the objective (replay seconds + stall seconds). The model assumes a copy out is done within
its stage (the GPU copy is released at the next stage); the engine replays the plan on its own
copy streams, so its step time is the check. Planning cost: Checkmate's, plus O(n^2) paging
binaries; graphs of a few dozen layers.

``solver=heuristic`` — ours, for deep networks (ResNet-2500): SuperNeurons' cost-aware
replay of cheap layers, and the CONV outputs (``offload_types``) copied to the host *except a
resident tail*: the last ones made are the first backward needs, so they stay on the GPU and
spare the link the copies it could not hide (SuperNeurons copies them all and waits on them
when memory fills at the end of forward). The tail is the longest one whose estimated peak fits
the budget (a bisection over its length with a clockless replay that releases a copied tensor
when its copy ends on a FIFO link at the modelled rate). Each copy back is issued as late as
the link allows (latest start, in order of use, walking back from the step that needs it) —
Capuchin's rule — instead of a fixed window. The tensor cache (``lru``) absorbs what the
estimate misses. Planning cost: O(log n) clockless replays of the plan (ResNet-2500: 10-20 s
on this 2-core machine under load).

Measured (K40c, ideal allocator): ResNet-2500 batch 1 at the K40c budget, 0.664 s against
``superneurons``' 0.870-0.882 s; VGG-16 batch 32 at 3.28 GiB, 0.696 s against 0.908 s. Where
it does not win: at 0.7x VGG-16's liveness peak it equals ``superneurons`` (0.807 s) and loses
to ``sac_knapsack`` (0.755 s) and ``checkmate`` (0.791 s); on the captured VGG-16 batch 32
(H200, 0.7x of liveness' managed bytes) it is slower than ``superneurons`` (0.095 s against
0.087 s): its estimate found no tail that fits, so it copied everything out. (These figures
predate the engine's fix of a CONV layer's update step, which used to run a forward
convolution.) The joint MILP does not choose the convolution algorithms (``checkmate`` does,
``ws_policy=planned``): it sees the zero-workspace ones, and the engine's ``ws_policy=dynamic``
picks from the free memory at run time, so the step time can rank plans differently from the
objective (VGG-16 batch 32 at 0.7x, before that fix: joint's MILP objective 0.003 s against
zero-workspace checkmate's 0.014 s, yet 0.860 s against 0.791 s).

``solver=auto`` — the MILP up to ``milp_max_steps`` steps, else the heuristic.
"""
from ..graph import LAYER_TYPES
from ..plan import WORKSPACE_MODES, Compute, Drop, Free, Offload, Plan, Prefetch, Recompute
from ._schedule import RECOMPUTE_MODES, build_instructions
from .base import Policy, choice, integer, layer_types, register
from .checkmate import solve_remat

_MARGIN = 0.97   # the heuristic's estimate targets this share of the budget


def paged_peak(program, hardware, ins):
    """Clockless managed peak of a plan with copies: compute runs back to back at the steps'
    times, a copy out occupies a FIFO link and releases the GPU copy when it ends, a copy
    back allocates at issue. Returns peak bytes."""
    steps = program.steps
    size = [t.nbytes for t in program.tensors]
    resident = [False] * len(size)
    freed = [False] * len(size)
    pending = []            # (release time, tensor), in link order
    now = link = 0.0
    live = peak = 0
    head = 0
    for x in ins:
        kind = type(x)
        if kind is Compute or kind is Recompute:
            while head < len(pending) and pending[head][0] <= now:
                t = pending[head][1]
                head += 1
                if resident[t] and not freed[t]:
                    resident[t] = False
                    live -= size[t]
            s = steps[x.step]
            by = [y for y in s.outputs if freed[y]] if kind is Recompute else ()
            for t in s.deps:
                if not resident[t]:
                    resident[t] = True
                    freed[t] = False
                    live += size[t]
            peak = max(peak, live)
            for y in by:
                resident[y] = False
                freed[y] = True
                live -= size[y]
            now += s.time_s
        elif kind is Free or kind is Drop:
            if resident[x.tensor]:
                resident[x.tensor] = False
                live -= size[x.tensor]
            freed[x.tensor] = kind is Free
        elif kind is Offload:
            link = max(link, now) + hardware.transfer_time_s(size[x.tensor], "d2h")
            pending.append((link, x.tensor))
        elif kind is Prefetch:
            if not resident[x.tensor]:
                resident[x.tensor] = True
                live += size[x.tensor]
                peak = max(peak, live)
    return peak


def late_prefetches(program, hardware, ins, offloaded):
    """Insert ``Prefetch(x)`` for every offloaded x as late as a FIFO link allows: copies in
    order of first backward read, each ending by its read and starting before the next one's
    start, issued at the last op that starts no later than the copy must."""
    steps = program.steps
    start = []
    now = 0.0
    for x in ins:
        start.append(now)
        if type(x) is Compute or type(x) is Recompute:
            now += steps[x.step].time_s
    out_at, use_at = {}, {}
    for k, x in enumerate(ins):
        kind = type(x)
        if kind is Offload and x.tensor in offloaded:
            out_at[x.tensor] = k
        elif kind is Compute or kind is Recompute:
            s = steps[x.step]
            if kind is Recompute or s.phase == "B":
                for t in s.deps:
                    if t in out_at and t not in use_at and (kind is Recompute or
                                                            t not in s.outputs):
                        use_at[t] = k
    ops = [k for k, x in enumerate(ins) if type(x) is Compute or type(x) is Recompute]
    insert = {}
    nxt = float("inf")
    j = len(ops) - 1
    for t in sorted(use_at, key=lambda t: use_at[t], reverse=True):
        end = min(start[use_at[t]], nxt)
        begin = end - hardware.transfer_time_s(program.tensors[t].nbytes, "h2d")
        nxt = begin
        while j > 0 and (start[ops[j]] > begin or ops[j] > use_at[t]):
            j -= 1
        k = max(ops[j], out_at[t] + 1)
        insert.setdefault(k, []).append(t)
    out = []
    for k, x in enumerate(ins):
        for t in reversed(insert.get(k, ())):
            out.append(Prefetch(t))
        out.append(x)
    return out


def heuristic_plan(program, hardware, budget_bytes, *, mode, offload_types):
    """The resident-tail heuristic; returns ``(instructions, notes)``."""
    managed = budget_bytes - program.static_total_bytes
    types = frozenset(offload_types)
    _, last = program.uses()
    made = {}
    for s in program.steps:
        if s.phase == "F":
            for y in s.outputs:
                made.setdefault(y, s.index)
    cands = sorted((t.tensor_id for t in program.tensors
                    if t.kind == "activation" and t.producer_type in types
                    and t.tensor_id in made and program.steps[last[t.tensor_id]].phase == "B"),
                   key=lambda t: (made[t], t))

    def build(tail):
        chosen = set(cands[:len(cands) - tail])
        ins = build_instructions(program, recompute=mode, offload=bool(chosen),
                                 offload_tensors=chosen, prefetch_depth=0,
                                 offload_at_last_forward_use=True)
        if chosen:
            ins = late_prefetches(program, hardware, ins, chosen)
        return ins, paged_peak(program, hardware, ins)

    lo, hi = 0, len(cands)          # the longest tail whose estimate fits
    best = build(0)
    if best[1] > managed * _MARGIN:
        return best[0], {"resident_tail": 0, "offloaded": len(cands),
                         "estimated_peak_bytes": best[1], "fits_estimate": False}
    while lo < hi:
        mid = (lo + hi + 1) // 2
        cur = build(mid)
        if cur[1] <= managed * _MARGIN:
            lo, best = mid, cur
        else:
            hi = mid - 1
    return best[0], {"resident_tail": lo, "offloaded": len(cands) - lo,
                     "estimated_peak_bytes": best[1], "fits_estimate": True}


@register
class Joint(Policy):
    name = "joint"
    in_all = False   # a solver run per probe or row: runs only when named
    description = ("recompute + offload: POET-style MILP charged in link time (small graphs) "
                   "or a resident-tail heuristic that scales (solver=auto|milp|heuristic)")
    OPTIONS = {"solver": choice("auto", ("auto", "milp", "heuristic")),
               "time_limit_s": integer(60, minimum=1),
               "milp_max_steps": integer(120, minimum=0),
               "mode": choice("cost-aware", RECOMPUTE_MODES),
               "offload_types": layer_types(tuple(LAYER_TYPES)),
               "ws_policy": choice("dynamic", WORKSPACE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        use_milp = o["solver"] == "milp" or (o["solver"] == "auto"
                                             and len(program.steps) <= o["milp_max_steps"])
        if use_milp:
            size = [t.nbytes for t in program.tensors]
            link = ([hardware.transfer_time_s(b, "h2d") for b in size],
                    [hardware.transfer_time_s(b, "d2h") for b in size])
            ins, notes, _ = solve_remat(program, budget_bytes, solver="milp",
                                        time_limit_s=o["time_limit_s"], link=link)
            notes = {**o, **notes, "method": "milp"}
            if ins is None:
                return Plan(policy=self.name, instructions=build_instructions(program),
                            workspace=o["ws_policy"], notes=notes)
            return Plan(policy=self.name, instructions=ins, free_after_offload=True,
                        workspace=o["ws_policy"], notes=notes)
        ins, notes = heuristic_plan(program, hardware, budget_bytes, mode=o["mode"],
                                    offload_types=o["offload_types"])
        return Plan(policy=self.name, instructions=ins, lru=True, free_after_offload=True,
                    workspace=o["ws_policy"], notes={**o, **notes, "method": "heuristic"})
