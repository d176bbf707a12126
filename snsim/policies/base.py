"""The policy protocol and the name registry.

A policy turns ``(program, hardware, budget_bytes)`` into a :class:`~snsim.plan.Plan`. It never
touches the clock; run-time reactions (LRU eviction) are switched on in the plan and carried out
by the engine. A new policy is one new file plus one import line in ``snsim/policies/__init__``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..checks import show
from ..errors import ConfigError, UnknownNameError
from ..graph import LAYER_TYPES

POLICIES = {}


@dataclass(frozen=True, kw_only=True)
class Option:
    """A declared policy option: its default, its rule in words, and its parser.

    ``parse`` takes a typed value (API, sweep YAML) or the text of ``--option KEY=VALUE`` and
    returns the canonical value, or raises ``ValueError`` when the value breaks ``rule``.
    """

    default: Any
    rule: str
    parse: Callable[[Any], Any]


_TRUE = {"true": True, "yes": True, "on": True, "1": True,
         "false": False, "no": False, "off": False, "0": False}


def flag(default):
    """A boolean option: ``true``/``false`` (also ``yes``/``no``, ``on``/``off``, ``1``/``0``)."""
    def parse(v):
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lower() in _TRUE:
            return _TRUE[v.strip().lower()]
        raise ValueError
    return Option(default=default, rule="true or false", parse=parse)


def integer(default, *, minimum, optional=False):
    """An integer option ``>= minimum``; ``optional`` also accepts ``none``/``null``."""
    def parse(v):
        if optional and (v is None or (isinstance(v, str) and v.strip().lower() in
                                       ("none", "null", ""))):
            return None
        if isinstance(v, str) and v.strip().lstrip("+-").isdigit():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ValueError
        return v
    rule = f"an integer >= {minimum}" + (" or none" if optional else "")
    return Option(default=default, rule=rule, parse=parse)


def choice(default, values):
    """One of ``values`` (strings, matched exactly)."""
    def parse(v):
        if v not in values:
            raise ValueError
        return v
    return Option(default=default, rule=f"one of {', '.join(values)}", parse=parse)


def layer_types(default):
    """A set of layer types: ``CONV``, ``CONV,FC``, ``[CONV, FC]`` or a list; any case."""
    def parse(v):
        if isinstance(v, str):
            v = v.strip()
            if v.startswith("[") and v.endswith("]"):
                v = v[1:-1]
            v = [x for x in (x.strip() for x in v.split(",")) if x]
        if not isinstance(v, (list, tuple)) or not v or not all(isinstance(x, str) for x in v):
            raise ValueError
        out = tuple(dict.fromkeys(x.strip().upper() for x in v))
        if not set(out) <= set(LAYER_TYPES):
            raise ValueError
        return out
    return Option(default=default, rule=f"one or more layer types of {', '.join(LAYER_TYPES)}, "
                  f"e.g. CONV or CONV,FC", parse=parse)


def names(default=None):
    """Module class names: ``Bottleneck``, ``Bottleneck,BasicBlock``, ``[A, B]`` or a list;
    ``none`` for the default."""
    def parse(v):
        if v is None or (isinstance(v, str) and v.strip().lower() in ("none", "null", "")):
            return None
        if isinstance(v, str):
            v = v.strip()
            if v.startswith("[") and v.endswith("]"):
                v = v[1:-1]
            v = [x.strip().strip("'\"") for x in v.split(",")]
        if not isinstance(v, (list, tuple)) or not v or \
                not all(isinstance(x, str) and x.isidentifier() for x in v):
            raise ValueError
        return tuple(dict.fromkeys(v))
    return Option(default=default, rule="one or more module class names, e.g. Bottleneck or "
                  "Bottleneck,BasicBlock", parse=parse)


def register(cls):
    """Class decorator: add a policy class to the registry under ``cls.name``."""
    POLICIES[cls.name] = cls
    return cls


class Policy:
    """Base class: keyword options declared in ``OPTIONS`` (name -> :class:`Option`).

    Options are checked and made canonical here, once; ``plan`` reads ``self.options``.
    """

    name = "base"
    description = ""
    OPTIONS = {}
    #: part of the searches' ``all`` (maxdepth, maxbatch); False where one run costs seconds
    #: on deep networks (dtr, capuchin), so that ``all`` keeps its time target
    in_search_all = True

    def __init__(self, **options):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise ConfigError(f"policy {self.name!r}: unknown option(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(self.OPTIONS)) or 'none'}")
        self.options = {k: spec.default for k, spec in self.OPTIONS.items()}
        for k, v in options.items():
            spec = self.OPTIONS[k]
            try:
                self.options[k] = spec.parse(v)
            except ValueError:
                raise ConfigError(f"policy {self.name!r}: option {k} (={show(v)}) must be "
                                  f"{spec.rule}") from None

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
