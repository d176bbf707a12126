"""Dynamic convolution workspace selection (SPEC §6) on top of liveness."""
from ..errors import ConfigError
from ..plan import WORKSPACE_MODES, Plan
from ._schedule import build_instructions
from .base import Policy, register


@register
class Workspace(Policy):
    name = "workspace"
    description = "liveness + the fastest conv algorithm whose workspace fits the free memory"
    OPTIONS = {"ws_policy": "dynamic"}

    def plan(self, program, hardware, budget_bytes):
        mode = self.options["ws_policy"]
        if mode not in WORKSPACE_MODES:
            raise ConfigError(f"policy workspace: ws_policy (={mode!r}) must be one of {WORKSPACE_MODES}")
        return Plan(policy=self.name, instructions=build_instructions(program), workspace=mode,
                    notes=dict(self.options))
