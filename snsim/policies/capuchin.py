"""Capuchin: swap where the copy hides, recompute where it does not (Peng et al., ASPLOS 2020).

From one iteration's per-step times (measured in a capture, modelled for a zoo network or a
prediction: ``Step.time_s``) the planner lays out the compute timeline and, while liveness'
peak is above the budget, frees memory at the peak step with one more tensor, chosen from the
forward activations live across it between their last forward use and their first backward use:

* **swap**: copy out after the last forward use (on the D2H stream), copy back in before the
  backward use (H2D), each placed on its stream's timeline around the copies already chosen, so
  the link is counted as occupied by earlier swaps (one shared timeline when the GPU has one copy
  engine or a shared link). The copy-in starts at the latest moment that still lands it before
  the backward step (Capuchin's in-trigger); the prefetch is issued at the start of the step
  running then. ``FreeTime`` is the slack left; a swap whose copies cannot fit costs the
  backward step the wait.
* **recompute**: drop after the last forward use and replay the producing forward step right
  before the backward use; possible when the producer's inputs are resident then (Capuchin
  recomputes from resident sources; snsim does not chain replays).

Ranking (the paper's hybrid policy): swaps that hide completely first, largest ``FreeTime``
first; when none covers the peak, the option with the most memory saved per second of overhead
(MSPS: bytes / recompute seconds, bytes / swap wait) — recomputation usually, for cheap layers.
``mode=swap`` or ``mode=recompute`` restricts the choice; ``ws_policy`` picks the conv
algorithms' workspace (SPEC §6: ``none`` by default, as liveness; ``dynamic`` uses only the
memory the plan leaves free). Offloaded tensors are freed when their
copy ends (``free_after_offload``). The plan may still not fit (no tensor covers the peak);
the engine then reports where memory runs out. The estimate counts requested bytes (the
ideal allocator's peak): under a caching allocator, rounding and fragmentation can need more
than the budget the plan was made for (measured: the ResNet-50 b128 H200 capture fits at 0.5x
of liveness' peak on the ideal allocator, not at 0.7x of its reserved peak on ``pytorch``).

Planning cost: one pass for the timeline and liveness (O(steps + deps)), then per chosen tensor
one scan of the candidates live at the peak and a slot search on the copy timelines:
O(chosen x (candidates + chosen)) — milliseconds on ResNet-50.
"""
from __future__ import annotations

import bisect

# numpy is imported in the functions that use it: loading it costs a CLI command that never
# calls them (maxdepth, run) 0.16 s

from ..plan import WORKSPACE_MODES, Compute, Drop, Offload, Plan, Prefetch, Recompute
from ._schedule import build_instructions
from .base import Policy, choice, register

MODES = ("hybrid", "swap", "recompute")
_INF = float("inf")


class _Link:
    """Busy intervals of one copy stream, disjoint and sorted (so their ends are sorted too),
    for first-fit slot searches by bisection."""

    def __init__(self):
        self.starts, self.ends = [], []

    def earliest(self, t0_s, dur_s):
        """The earliest start >= t0_s of a free slot of length dur_s."""
        start = t0_s
        i = bisect.bisect_right(self.ends, start)   # the first interval ending after start
        while i < len(self.starts) and self.starts[i] < start + dur_s:
            start = max(start, self.ends[i])
            i += 1
        return start

    def latest(self, lo_s, hi_s, dur_s):
        """The latest start in [lo_s, hi_s - dur_s] of a free slot of length dur_s, or None."""
        end = hi_s
        i = bisect.bisect_left(self.starts, end) - 1  # the last interval starting before end
        while i >= 0 and self.ends[i] > end - dur_s:
            end = min(end, self.starts[i])
            i -= 1
        start = end - dur_s
        return start if start >= lo_s else None

    def reserve(self, start_s, end_s):
        i = bisect.bisect(self.starts, start_s)
        self.starts.insert(i, start_s)
        self.ends.insert(i, end_s)
        return i

    def release(self, i):
        del self.starts[i], self.ends[i]


def capuchin_choices(program, hardware, budget_bytes, mode="hybrid"):
    """Choose tensors to swap and to recompute until the estimated peak fits the budget.

    Returns ``(swaps, recomputes, est_peak_bytes)``: ``swaps`` maps a tensor to
    ``(offload after step, prefetch before step)``; ``recomputes`` maps a tensor to
    ``(drop after step, replay before step)``; the peak is liveness' with those tensors away,
    on the ideal allocator (static bytes included).
    """
    import numpy as np
    steps, tensors = program.steps, program.tensors
    n_steps = len(steps)
    first, last = program.uses()
    size = np.array([t.nbytes for t in tensors], dtype=np.int64)
    dur = np.array([s.time_s for s in steps])
    end_s = np.cumsum(dur)
    start_s = end_s - dur
    mem = np.zeros(n_steps + 1, dtype=np.int64)   # liveness: resident from first to last use
    for t in range(len(tensors)):
        if first[t] >= 0:
            mem[first[t]] += size[t]
            mem[last[t] + 1] -= size[t]
    mem = np.cumsum(mem)[:n_steps]
    target = budget_bytes - program.static_total_bytes

    producer = [-1] * len(tensors)
    in_place = [False] * len(tensors)     # also written by a later forward step without outputs
    last_f = [-1] * len(tensors)
    first_b = [-1] * len(tensors)
    for s in steps:
        if s.phase == "F":
            for t in s.outputs:
                if producer[t] < 0:
                    producer[t] = s.index
            if not s.outputs:
                for t in s.deps:
                    in_place[t] = True
            for t in s.deps:
                last_f[t] = s.index
        elif s.phase == "B":
            for t in s.deps:
                if first_b[t] < 0:
                    first_b[t] = s.index
    cands = [t for t in range(len(tensors))
             if tensors[t].kind == "activation" and last_f[t] >= 0 and first_b[t] > last_f[t] + 1]

    shared = hardware.copy_engines < 2 or hardware.link_shared
    d2h = _Link()
    h2d = d2h if shared else _Link()
    swaps, recomputes = {}, {}
    needed_at = {}        # tensor -> steps where a chosen replay reads it
    replayed_producers = set()

    def removable(t, lo, hi):
        return all(not lo <= k <= hi for k in needed_at.get(t, ()))

    def swap_option(t, peak):
        lf, fb = last_f[t], first_b[t]
        out_dur = hardware.transfer_time_s(int(size[t]), "d2h", True)
        in_dur = hardware.transfer_time_s(int(size[t]), "h2d", True)
        out0 = d2h.earliest(end_s[lf], out_dur)
        out1 = out0 + out_dur
        held = d2h.reserve(out0, out1) if shared else None   # one link: in after out
        in0 = h2d.latest(out1, start_s[fb], in_dur)
        if in0 is None:   # cannot hide: as early as the link allows, the step waits
            in0 = h2d.earliest(out1, in_dur)
        if held is not None:
            d2h.release(held)
        wait_s = max(0.0, in0 + in_dur - start_s[fb])
        free_s = in0 - out1          # Capuchin's FreeTime: SwapInStart - SwapOutEnd
        lo = int(np.searchsorted(start_s, out1, side="left"))   # first step after the copy-out
        j = int(np.searchsorted(start_s, in0, side="right")) - 1  # the step running at copy-in
        j = min(max(j, lf + 1), fb)
        covers = lo <= peak < j and removable(t, lo, j - 1)
        return dict(kind="swap", lo=lo, hi=j - 1, at=(lf, j), wait_s=wait_s, free_s=free_s,
                    copies=((out0, out1), (in0, in0 + in_dur)), covers=covers)

    def recompute_option(t, peak):
        k = producer[t]
        lf, fb = last_f[t], first_b[t]
        if k < 0 or in_place[t] or k in replayed_producers or not lf < peak < fb:
            return None
        s = steps[k]
        for x in s.inputs:   # the replay reads them at fb: resident then
            if not first[x] <= fb <= last[x] or x in recomputes or \
                    (x in swaps and swaps[x][1] > fb):
                return None
        if not removable(t, lf + 1, fb - 1):
            return None
        transient = sum(int(size[y]) for y in s.outputs if y != t and not first[y] <= fb <= last[y])
        return dict(kind="recompute", lo=lf + 1, hi=fb - 1, at=(lf, fb), cost_s=s.time_s,
                    transient=transient, step=k)

    def msps(t, o):
        overhead = o["cost_s"] if o["kind"] == "recompute" else o["wait_s"]
        return int(size[t]) / overhead if overhead > 0 else _INF

    # Lazy greedy: the link only fills up, so a swap's FreeTime only shrinks and its wait only
    # grows, and a recomputation's MSPS is fixed; the last value seen bounds each candidate,
    # and candidates are evaluated best bound first until no bound can beat the best found.
    free_bound, msps_bound = {}, {}
    while len(mem) and mem.max() > target:
        peak = int(mem.argmax())
        live = [t for t in cands if t not in swaps and t not in recomputes
                and last_f[t] < peak < first_b[t]]
        best, best_key = None, None
        if mode != "recompute":   # a swap the copies hide, the largest FreeTime first
            for t in sorted(live, key=lambda t: (-free_bound.get(t, _INF), t)):
                if best is not None and free_bound.get(t, _INF) < best_key[0]:
                    break
                o = swap_option(t, peak)
                hidden = o["wait_s"] == 0.0
                free_bound[t] = o["free_s"] if hidden else -_INF
                if hidden and o["covers"]:
                    key = (o["free_s"], int(size[t]), -t)
                    if best is None or key > best_key:
                        best, best_key = (t, o), key
        if best is None:          # the most memory saved per second of overhead
            for t in sorted(live, key=lambda t: (-msps_bound.get(t, _INF), t)):
                if best is not None and msps_bound.get(t, _INF) < best_key[0]:
                    break
                bound = 0.0
                for o in ((swap_option(t, peak) if mode != "recompute" else None),
                          (recompute_option(t, peak) if mode != "swap" else None)):
                    if o is None:
                        continue
                    m = msps(t, o)
                    bound = max(bound, m)
                    if o.get("covers", True) and (best is None or (m, -t) > best_key):
                        best, best_key = (t, o), (m, -t)
                if mode != "swap" and producer[t] >= 0:   # valid later, at this MSPS
                    c = steps[producer[t]].time_s
                    bound = max(bound, int(size[t]) / c if c > 0 else _INF)
                msps_bound[t] = bound
        if best is None:
            break
        t, o = best
        mem[o["lo"]:o["hi"] + 1] -= size[t]
        if o["kind"] == "swap":
            swaps[t] = o["at"]
            (a, b), (c, d) = o["copies"]
            d2h.reserve(a, b)
            h2d.reserve(c, d)
        else:
            recomputes[t] = o["at"]
            replayed_producers.add(o["step"])
            fb = o["at"][1]
            mem[fb] += o["transient"]
            for x in steps[o["step"]].inputs:
                needed_at.setdefault(x, []).append(fb)
    peak_bytes = int(mem.max()) if len(mem) else 0
    return swaps, recomputes, program.static_total_bytes + peak_bytes


@register
class Capuchin(Policy):
    name = "capuchin"
    description = "Capuchin: swap where the link hides the copy, recompute by MSPS where not"
    in_all = False   # ResNet k=150 at the K40c limit: ~2.4 s to plan
    OPTIONS = {"mode": choice("hybrid", MODES), "ws_policy": choice("none", WORKSPACE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        swaps, recomputes, est = capuchin_choices(program, hardware, budget_bytes,
                                                  self.options["mode"])
        before, after = {}, {}
        for t, (lf, j) in sorted(swaps.items()):
            after.setdefault(lf, []).append(Offload(t))
            before.setdefault(j, []).append(Prefetch(t))
        producer = {}
        for s in program.steps:
            if s.phase == "F":
                for t in s.outputs:
                    producer.setdefault(t, s.index)
        for t, (lf, fb) in sorted(recomputes.items(), key=lambda kv: (producer[kv[0]], kv[0])):
            after.setdefault(lf, []).append(Drop(t))
            before.setdefault(fb, []).append(Recompute(producer[t]))
        out = []
        for ins in build_instructions(program):
            if type(ins) is Compute:
                out.extend(before.get(ins.step, ()))
                out.append(ins)
                out.extend(after.get(ins.step, ()))
            else:
                out.append(ins)
        return Plan(policy=self.name, instructions=out, free_after_offload=True,
                    workspace=self.options["ws_policy"],
                    notes={**self.options, "swapped": len(swaps),
                           "recomputed": len(recomputes), "estimated_peak_bytes": est})
