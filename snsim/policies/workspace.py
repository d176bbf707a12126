"""Dynamic convolution workspace selection (SPEC §6) on top of liveness."""
from ..plan import WORKSPACE_MODES, Plan
from ._schedule import build_instructions
from .base import Policy, choice, register


@register
class Workspace(Policy):
    name = "workspace"
    description = "liveness + the fastest conv algorithm whose workspace fits the free memory"
    reference = "SuperNeurons (Wang et al., PPoPP 2018): dynamic convolution workspaces"
    planning_cost = "one pass over the steps; algorithms are picked at run time, in the engine"
    OPTIONS = {"ws_policy": choice("dynamic", WORKSPACE_MODES)}

    def plan(self, program, hardware, budget_bytes):
        return Plan(policy=self.name, instructions=build_instructions(program),
                    workspace=self.options["ws_policy"],
                    notes=dict(self.options))
