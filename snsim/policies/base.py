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


def number(default, *, minimum, maximum, optional=False):
    """A real number in ``[minimum, maximum]``; ``optional`` also accepts ``none``/``auto``."""
    def parse(v):
        if optional and (v is None or (isinstance(v, str) and v.strip().lower() in
                                       ("none", "null", "auto", ""))):
            return None
        if isinstance(v, bool):
            raise ValueError
        try:
            v = float(v)    # ValueError on text that is not a number
        except TypeError:
            raise ValueError from None
        if not minimum <= v <= maximum:
            raise ValueError
        return v
    rule = f"a number in [{minimum}, {maximum}]" + (" or auto" if optional else "")
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
    #: where it comes from (a paper, a framework feature), for docs/POLICIES.md
    reference = ""
    #: what planning costs, in words (docs/POLICIES.md adds measured times)
    planning_cost = ""
    #: part of ``--policy all``; a policy whose planning is slow (a solver) sets it False and
    #: runs only when named
    in_all = True

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

    def bound_program(self, program, hardware):
        """The program this policy's plans run: ``program`` itself, unless the policy rewrites
        it (``zero_offload`` moves parameters off the GPU). Its ``lower_bound_bytes`` bounds
        every plan of the policy from below (the capacity searches' static bound)."""
        return program


def list_policies():
    return sorted(POLICIES)


def all_policies():
    """What ``all`` means: the registered policies that keep ``in_all`` (sorted)."""
    return [n for n in list_policies() if POLICIES[n].in_all]


def left_out_of_all():
    """The registered policies that ``all`` leaves out (they run when named)."""
    return [n for n in list_policies() if not POLICIES[n].in_all]


def all_note():
    """One line saying which policies ``all`` leaves out, or None when it leaves out none."""
    out = left_out_of_all()
    if not out:
        return None
    return (f"'all' leaves out {', '.join(out)} (slow: a solver, a run-time planner or a "
            f"search past the static wall); name "
            f"{'it' if len(out) == 1 else 'them'} to run {'it' if len(out) == 1 else 'them'}")


def applicable_policies(program):
    """The registered policies that can plan ``program`` (``checkpoint`` needs blocks)."""
    return [n for n in list_policies() if POLICIES[n]().unsupported(program) is None]


def get_policy(name, **options):
    """Instantiate a registered policy by name.

    ``A+B`` composes: policy ``B`` with option ``base=A``, for a policy ``B`` that plans on
    top of another (it declares a ``base`` option, e.g. ``superneurons+zero_offload``).

    >>> get_policy("liveness").name
    'liveness'
    >>> get_policy("superneurons+zero_offload").options["base"]
    'superneurons'
    """
    if isinstance(name, Policy):
        return name
    if "+" in str(name):
        base, _, outer = str(name).rpartition("+")
        key = outer.lower().replace("-", "_")
        if key not in POLICIES or "base" not in POLICIES[key].OPTIONS:
            takes = [n for n in list_policies() if "base" in POLICIES[n].OPTIONS]
            raise UnknownNameError(f"policy {name!r}: {outer!r} does not compose with a base "
                                   f"policy; A+B needs B in {', '.join(takes) or 'none'}")
        if "base" in options:
            raise ConfigError(f"policy {name!r} names its base; do not give option base too")
        return POLICIES[key](base=base.lower().replace("-", "_"), **options)
    key = str(name).lower().replace("-", "_")
    if key not in POLICIES:
        raise UnknownNameError(f"policy {name!r} is unknown; known: {', '.join(list_policies())}")
    return POLICIES[key](**options)
