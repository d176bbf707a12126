"""Chen et al.'s sqrt(n) checkpointing (arXiv 1604.06174) on the same engine (SPEC §11).

Keep the output of one layer every ~sqrt(n) layers of the forward route, choosing only
articulation points of the DAG (as Checkmate does, so a segment has one way in); drop every
other activation and replay each segment once in backward: about one extra forward, O(sqrt n)
memory.
"""
import math

from ..errors import ConfigError
from ..graph import adjacency, articulation_points
from ..plan import Plan
from ._schedule import build_instructions
from .base import Policy, integer, register


def sqrt_checkpoints(program, every=None):
    """Layer ids kept as checkpoints: articulation points about ``every`` layers apart."""
    layers = program.layer_types()
    if layers is None:
        raise ConfigError("policy chen_sqrt needs the layer graph; this program has none")
    order = [s.layer for s in program.steps if s.phase == "F"]
    every = every or max(1, math.isqrt(len(order)))
    cuts = articulation_points(layers, *(program.adjacency or adjacency(program.graph)))
    keep = {order[0], order[-1]}
    since = 0
    for n in order:
        since += 1
        if n in cuts and since >= every:
            keep.add(n)
            since = 0
    return keep


@register
class ChenSqrt(Policy):
    name = "chen_sqrt"
    description = "baseline: Chen et al. sqrt(n) checkpoints at articulation points, segments replayed once"
    reference = "Chen et al., Training Deep Nets with Sublinear Memory Cost (arXiv 1604.06174)"
    planning_cost = "articulation points of the layer DAG (linear) and one pass"
    OPTIONS = {"every": integer(None, minimum=1, optional=True)}

    def plan(self, program, hardware, budget_bytes):
        every = self.options["every"]
        keep = sqrt_checkpoints(program, every)
        ins = build_instructions(program, recompute="speed", checkpoint_layers=keep)
        return Plan(policy=self.name, instructions=ins,
                    notes={"every": every, "checkpoints": len(keep)})
