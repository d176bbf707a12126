"""Memory policies, one file each, behind a name registry (``get_policy(name)``)."""
from .base import POLICIES, Policy, get_policy, list_policies, register
from . import keep_all, liveness, offload, recompute, workspace, superneurons  # noqa: F401  (registers)

__all__ = ["POLICIES", "Policy", "get_policy", "list_policies", "register"]
