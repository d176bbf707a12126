"""The unified tensor pool (SPEC §4): offload CONV outputs, prefetch them back, LRU cache.

On a PyTorch program (``placement=auto`` on a capture or a prediction, or ``modules``) it is
the ``Offloader`` ``snsim execute`` installs (:mod:`snsim.policies._boundary`); the other
options apply to the layer graph only.
"""
from ..plan import Plan
from ._boundary import PLACEMENTS, boundary_plan, on_modules
from ._schedule import build_instructions
from .base import Policy, choice, flag, integer, layer_types, register


@register
class Offload(Policy):
    name = "offload"
    description = "liveness + CONV outputs offloaded to pinned host memory, prefetched in backward, LRU tensor cache"
    reference = "SuperNeurons (Wang et al., PPoPP 2018): the unified tensor pool"
    planning_cost = "one pass over the steps; the LRU cache acts at run time, in the engine"
    OPTIONS = {"offload_types": layer_types(("CONV",)),
               "prefetch_depth": integer(1, minimum=0),
               "free_after_offload": flag(False), "lru": flag(True),
               "placement": choice("auto", PLACEMENTS)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        if on_modules(program, o["placement"], self.name):
            return boundary_plan(self.name, program, recompute=False, offload=True)
        ins = build_instructions(program, offload=True, offload_types=o["offload_types"],
                                 prefetch_depth=o["prefetch_depth"])
        return Plan(policy=self.name, instructions=ins, lru=o["lru"],
                    free_after_offload=o["free_after_offload"],
                    notes={**o, "placement": "layers"})
