"""SuperNeurons: liveness + unified tensor pool + cost-aware recomputation + dynamic workspaces."""
from ..plan import Plan
from ._schedule import build_instructions
from .base import Policy, register


@register
class SuperNeurons(Policy):
    name = "superneurons"
    description = "liveness + offload/prefetch + LRU cache + cost-aware recompute + dynamic workspace"
    OPTIONS = {"mode": "cost-aware", "offload_types": ("CONV",), "prefetch_depth": 1,
               "free_after_offload": False, "ws_policy": "dynamic"}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        ins = build_instructions(program, recompute=o["mode"], offload=True,
                                 offload_types=tuple(o["offload_types"]),
                                 prefetch_depth=int(o["prefetch_depth"]))
        return Plan(policy=self.name, instructions=ins, workspace=o["ws_policy"], lru=True,
                    free_after_offload=bool(o["free_after_offload"]), notes=dict(o))
