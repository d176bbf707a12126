"""Cost-aware recomputation (SPEC §5): drop cheap layers' outputs, replay them in backward.

On a PyTorch program (``placement=auto`` on a capture or a prediction, or ``modules``) it is
the plan ``snsim execute`` runs: each segment under ``torch.utils.checkpoint``
(:mod:`snsim.policies._boundary`); ``mode`` applies to the layer graph only.
"""
from ..plan import Plan
from ._boundary import PLACEMENTS, boundary_plan, on_modules
from ._schedule import RECOMPUTE_MODES, build_instructions
from .base import Policy, choice, register


@register
class Recompute(Policy):
    name = "recompute"
    description = "liveness + cheap layers (ACT, BN, POOL, LRN, DROPOUT) dropped and replayed; speed/memory/cost-aware"
    reference = "SuperNeurons (Wang et al., PPoPP 2018): cost-aware recomputation"
    planning_cost = ("a few linear passes: segments, their modes, the plan; rebuilt (up to 8 "
                     "rounds) when replays would raise the peak above liveness'")
    OPTIONS = {"mode": choice("cost-aware", RECOMPUTE_MODES),
               "placement": choice("auto", PLACEMENTS)}

    def plan(self, program, hardware, budget_bytes):
        if on_modules(program, self.options["placement"], self.name):
            return boundary_plan(self.name, program, recompute=True, offload=False)
        ins = build_instructions(program, recompute=self.options["mode"])
        return Plan(policy=self.name, instructions=ins,
                    notes={**self.options, "placement": "layers"})
