"""Memory policies, one file each, behind a name registry (``get_policy(name)``)."""
from .base import POLICIES, Policy, applicable_policies, get_policy, list_policies, register
from . import keep_all, liveness, offload, recompute, workspace, superneurons  # noqa: F401
from . import vdnn, chen_sqrt  # noqa: F401  (baselines; each import registers its policy)
from . import checkpoint, cpu_offload  # noqa: F401  (the plans PyTorch users write)
from . import capuchin, dtr  # noqa: F401  (peer planners, SPEC §11)

__all__ = ["POLICIES", "Policy", "applicable_policies", "get_policy", "list_policies",
           "register"]
