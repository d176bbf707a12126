"""Memory policies, one file each, behind a name registry (``get_policy(name)``)."""
from .base import (POLICIES, Policy, all_note, all_policies, applicable_policies, get_policy,
                   left_out_of_all, list_policies, register)
from . import keep_all, liveness, offload, recompute, workspace, superneurons  # noqa: F401
from . import vdnn, chen_sqrt  # noqa: F401  (baselines; each import registers its policy)
from . import checkpoint, cpu_offload  # noqa: F401  (the plans PyTorch users write)
from . import zero_offload  # noqa: F401  (parameters and optimizer on the host)
from . import checkmate, sac_knapsack, joint  # noqa: F401  (solver-based planners)
from . import capuchin, dtr  # noqa: F401  (peer planners, SPEC §11)

__all__ = ["POLICIES", "Policy", "all_note", "all_policies", "applicable_policies", "get_policy",
           "left_out_of_all", "list_policies", "register"]
