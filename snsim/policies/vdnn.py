"""vDNN (Rhu et al., MICRO 2016) on the same engine (SPEC §11).

In forward the input maps of every CONV layer (``layers="conv"``) or of every layer
(``layers="all"``) are copied to the host and freed once the copy and the layer are done; in
backward they are prefetched ahead of their use. No tensor cache: what does not fit is
infeasible. Conv algorithms are memory-optimal (no workspace) or performance-optimal (fastest).
"""
from ..graph import LAYER_TYPES
from ..plan import Plan
from ._schedule import build_instructions
from .base import Policy, choice, integer, register


@register
class VDNN(Policy):
    name = "vdnn"
    description = "baseline vDNN: inputs of CONV (or all) layers offloaded and freed, prefetched in backward"
    reference = "vDNN (Rhu et al., MICRO 2016)"
    planning_cost = "one pass over the steps"
    OPTIONS = {"layers": choice("conv", ("conv", "all")),
               "algos": choice("memory", ("memory", "performance")),
               "prefetch_depth": integer(1, minimum=0)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        inputs_of = ("CONV",) if o["layers"] == "conv" else LAYER_TYPES
        ins = build_instructions(program, offload=True, offload_inputs_of=inputs_of,
                                 prefetch_depth=o["prefetch_depth"])
        return Plan(policy=self.name, instructions=ins, free_after_offload=True,
                    workspace="none" if o["algos"] == "memory" else "fastest", notes=dict(o))
