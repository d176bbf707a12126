"""Liveness analysis (SPEC §3.1): free each tensor after its last use."""
from ..plan import Plan
from ._schedule import build_instructions
from .base import Policy, register


@register
class Liveness(Policy):
    name = "liveness"
    description = "free every tensor right after its last use"
    reference = "SuperNeurons (Wang et al., PPoPP 2018): liveness analysis"
    planning_cost = "one pass over the steps (linear in steps + tensor uses)"

    def plan(self, program, hardware, budget_bytes):
        return Plan(policy=self.name, instructions=build_instructions(program), as_captured=True)
