"""SuperNeurons: liveness + unified tensor pool + cost-aware recomputation + dynamic workspaces.

``release=True`` follows the authors' release code where it differs from the paper (SPEC §3.3):
no eager offload or prefetch, only the LRU tensor cache with synchronous swaps (Q8), and
zero-workspace conv algorithms because the release's workspace search is dormant (Q9). FORK
copies and separate BN/ReLU outputs (Q2, Q4) hold in both modes. The release's id-filtered
liveness (Q1), LRU recency (Q5) and the other quirks are not modelled.

On a PyTorch program (``placement=auto`` on a capture or a prediction, or ``modules``) it is
the plan ``snsim execute`` runs, SuperNeurons placed on module boundaries: the segments
checkpointed, the convolution outputs saved outside them offloaded
(:mod:`snsim.policies._boundary`); the other options apply to the layer graph only.
"""
from ..plan import WORKSPACE_MODES, Plan
from ._boundary import PLACEMENTS, boundary_plan, on_modules
from ._schedule import RECOMPUTE_MODES, build_instructions
from .base import Policy, choice, flag, integer, layer_types, register


@register
class SuperNeurons(Policy):
    name = "superneurons"
    description = "liveness + offload/prefetch + LRU cache + cost-aware recompute + dynamic workspace"
    reference = "SuperNeurons (Wang et al., PPoPP 2018): all of its mechanisms together"
    planning_cost = "as recompute, plus the offload and prefetch marks"
    OPTIONS = {"mode": choice("cost-aware", RECOMPUTE_MODES),
               "offload_types": layer_types(("CONV",)),
               "prefetch_depth": integer(1, minimum=0), "free_after_offload": flag(False),
               "ws_policy": choice("dynamic", WORKSPACE_MODES), "release": flag(False),
               "placement": choice("auto", PLACEMENTS)}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        if on_modules(program, o["placement"], self.name):
            return boundary_plan(self.name, program, recompute=True, offload=True)
        release = o["release"]
        ins = build_instructions(program, recompute=o["mode"], offload=not release,
                                 offload_types=o["offload_types"],
                                 prefetch_depth=o["prefetch_depth"])
        return Plan(policy=self.name, instructions=ins, lru=True,
                    workspace="none" if release else o["ws_policy"],
                    free_after_offload=o["free_after_offload"],
                    notes={**o, "placement": "layers"})
