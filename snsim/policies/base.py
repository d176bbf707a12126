"""The policy protocol and the name registry.

A policy turns ``(program, hardware, budget_bytes)`` into a :class:`~snsim.plan.Plan`. It never
touches the clock; run-time reactions (LRU eviction) are switched on in the plan and carried out
by the engine. A new policy is one new file plus one import line in ``snsim/policies/__init__``.
"""
from __future__ import annotations

from ..errors import ConfigError, UnknownNameError

POLICIES = {}


def register(cls):
    """Class decorator: add a policy class to the registry under ``cls.name``."""
    POLICIES[cls.name] = cls
    return cls


class Policy:
    """Base class: keyword options declared in ``OPTIONS`` (name -> default)."""

    name = "base"
    description = ""
    OPTIONS = {}

    def __init__(self, **options):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise ConfigError(f"policy {self.name!r}: unknown option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(self.OPTIONS)) or 'none'}")
        self.options = {**self.OPTIONS, **options}

    def plan(self, program, hardware, budget_bytes):  # pragma: no cover - interface
        raise NotImplementedError

    def unsupported(self, program):
        """Why this policy cannot plan ``program`` (one line), or None when it can."""
        return None


def list_policies():
    return sorted(POLICIES)


def applicable_policies(program):
    """The registered policies that can plan ``program`` (``checkpoint`` needs blocks)."""
    return [n for n in list_policies() if POLICIES[n]().unsupported(program) is None]


def get_policy(name, **options):
    """Instantiate a registered policy by name.

    >>> get_policy("liveness").name
    'liveness'
    """
    if isinstance(name, Policy):
        return name
    key = str(name).lower().replace("-", "_")
    if key not in POLICIES:
        raise UnknownNameError(f"policy {name!r} is unknown; known: {', '.join(list_policies())}")
    return POLICIES[key](**options)
