"""Cost-aware recomputation (SPEC §5): drop cheap layers' outputs, replay them in backward."""
from ..plan import Plan
from ._schedule import RECOMPUTE_MODES, build_instructions
from .base import Policy, choice, register


@register
class Recompute(Policy):
    name = "recompute"
    description = "liveness + cheap layers (ACT, BN, POOL, LRN, DROPOUT) dropped and replayed; speed/memory/cost-aware"
    reference = "SuperNeurons (Wang et al., PPoPP 2018): cost-aware recomputation"
    planning_cost = ("a few linear passes: segments, their modes, the plan; rebuilt (up to 8 "
                     "rounds) when replays would raise the peak above liveness'")
    OPTIONS = {"mode": choice("cost-aware", RECOMPUTE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        ins = build_instructions(program, recompute=self.options["mode"])
        return Plan(policy=self.name, instructions=ins, notes=dict(self.options))
