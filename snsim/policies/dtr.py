"""Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021; SPEC §11), run by the engine.

The plan is liveness' (free every tensor after its last use); the policy only switches DTR on
(``Plan.dtr``). At run time the engine evicts, whenever an allocation does not fit the budget,
the resident forward activation with the lowest heuristic score, and rebuilds an evicted tensor
when a step needs it by replaying the forward steps that wrote it, recursively rebuilding their
evicted inputs (locked while in use). Mechanism and heuristics: :mod:`snsim.engine.dtr`.

Options: ``heuristic`` (``h_dtr``: the paper's ``(c + c(e*)) / (m * staleness)`` with the
evicted neighbourhood ``e*``; ``h_dtr_eq``: ``e*`` by union-find classes; ``h_dtr_local``:
``c / (m * staleness)``; ``lru``; ``largest``; ``msps``: Capuchin's memory saved per second);
``remat_limit``: fail once the replays pass this multiple of the iteration's compute time
(``none``: never); ``ws_policy``: the conv algorithms' workspace (SPEC §6; ``none`` by default,
as liveness, ``dynamic`` as SuperNeurons).

Planning cost: liveness' O(steps + deps); the work is at run time, one score per resident
candidate per eviction (see :mod:`snsim.engine.dtr`).
"""
from ..engine.dtr import HEURISTICS
from ..plan import WORKSPACE_MODES, Plan
from ._schedule import build_instructions
from .base import Policy, choice, integer, register


@register
class DTR(Policy):
    name = "dtr"
    description = "Dynamic Tensor Rematerialization: evict by h_DTR at run time, rebuild on access"
    in_all = False   # ResNet k=512 at the K40c limit: ~7 s CPU per run
    OPTIONS = {"heuristic": choice("h_dtr", HEURISTICS),
               "remat_limit": integer(3, minimum=0, optional=True),
               "ws_policy": choice("none", WORKSPACE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        return Plan(policy=self.name, instructions=build_instructions(program),
                    dtr={"heuristic": o["heuristic"], "remat_limit": o["remat_limit"]},
                    workspace=o["ws_policy"], notes=dict(o))
