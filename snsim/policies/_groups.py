"""Module groups of a program: the blocks a plan wraps (``checkpoint``, ``cpu_offload``).

A captured or predicted program carries its module tree (``Program.extra["modules"]``: module
path -> class name); a zoo program built with PyTorch semantics carries the same map in
``G.graph["modules"]``. A step belongs to a module when its name is the module's path or lies
under it (``layer1.0`` holds ``layer1.0.conv1`` and the functional code of ``layer1.0``).
"""
from __future__ import annotations

from collections import Counter

from ..errors import ConfigError

_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def module_map(program):
    """``{path: class}`` of the program's modules, or None when it has no module tree."""
    mods = program.extra.get("modules")
    if mods is None:
        mods = program.graph_attrs().get("modules")
    return None if mods is None else dict(mods)


def _parse_classes(value):
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def select_modules(program, policy, modules=None, every=None):
    """Module paths a plan wraps, in forward order.

    Parameters
    ----------
    modules : str or sequence of str, optional
        Class names (``"Bottleneck"``, ``"Bottleneck,BasicBlock"``); default: the repeated
        block class, i.e. the non-container class with children that has the most instances.
    every : int, optional
        Keep every N-th selected instance (the 1st, N+1-th, …), as ``if i % N == 0``.

    Raises
    ------
    ConfigError
        No module tree, a class the model does not have, or no repeated block to default to.
    """
    mods = module_map(program)
    if mods is None:
        raise ConfigError(f"policy {policy}: program {program.name!r} has no module tree "
                          f"(a user graph, or a capture older than 2026-11-29); wrap blocks "
                          f"of a zoo network, a capture or a prediction")
    paths = list(mods)
    # a block is a module with something under it: a submodule, or a step of the program
    under = paths + [s.name for s in program.steps if s.phase == "F"]
    parents = _proper_prefixes(under)
    classes = _parse_classes(modules)
    if classes:
        missing = [c for c in classes if c not in set(mods.values())]
        if missing:
            have = sorted({c for p, c in mods.items() if p in parents})
            raise ConfigError(f"policy {policy}: option modules names {', '.join(missing)}, "
                              f"which {program.name!r} does not have; its block classes: "
                              f"{', '.join(have) or 'none'}")
    else:
        blk = block_class(mods, parents, program.extra.get("containers") or
                          program.graph_attrs().get("containers", ()))
        if blk is None:
            raise ConfigError(f"policy {policy}: {program.name!r} has no repeated block class "
                              f"to wrap; name one with --option modules=CLASS")
        classes = (blk,)
    chosen, taken = [], set()
    for p in paths:
        if mods[p] in classes and not _under_any(p, taken):
            chosen.append(p)
            taken.add(p)
    if every is not None:
        every = int(every)
        if every < 1:
            raise ConfigError(f"policy {policy}: option every (={every}) must be >= 1")
        chosen = chosen[::every]
    return chosen


def _proper_prefixes(names):
    """Every dotted proper prefix of ``names`` (``a.b.c`` -> ``a``, ``a.b``). A prefix already
    found has its own prefixes found too, so each name stops at the first one it shares:
    about one set lookup per name, not one split per level."""
    found = set()
    for n in names:
        i = n.rfind(".")
        while i >= 0:
            p = n[:i]
            if p in found:
                break
            found.add(p)
            i = n.rfind(".", 0, i)
    return found


def _under_any(path, paths):
    """Whether ``path`` lies strictly under one of ``paths`` (a set of module paths): a lookup
    per enclosing path, not a scan of the set (ResNet-2500 has 833 blocks)."""
    return any(path.rsplit(".", k)[0] in paths for k in range(1, path.count(".") + 1))


def block_class(mods, parents, containers=()):
    """The repeated building block a user would checkpoint, or None.

    Among modules that have children (``parents``), are not containers (``Sequential``,
    ``ModuleList``, ``ModuleDict`` or a subclass: ``containers`` paths, or those class names)
    and whose class has at least two instances, take the instances not nested in another
    such instance; the block class is the most common class among them (first seen wins a
    tie). ResNet: ``Bottleneck``; DenseNet: ``_DenseLayer``; MobileNetV2: ``InvertedResidual``.
    The torch side (:func:`snsim.torchsim.plans.block_class`) uses this rule too.

    Parameters
    ----------
    mods : dict
        ``{path: class name}`` in registration order.
    """
    containers = set(containers)
    cand = [p for p, c in mods.items()
            if p in parents and p not in containers and c not in _CONTAINERS]
    counts = Counter(mods[p] for p in cand)
    repeated = {c for c, n in counts.items() if n >= 2}
    outer, taken = [], set()
    for p in cand:
        if mods[p] in repeated and not _under_any(p, taken):
            outer.append(p)
            taken.add(p)
    if not outer:
        return None
    first = {}
    for p in outer:
        first.setdefault(mods[p], len(first))
    n = Counter(mods[p] for p in outer)
    return max(n, key=lambda c: (n[c], -first[c]))


def steps_in(program, path):
    """Indices of the forward steps inside module ``path``."""
    pre = path + "."
    return [s.index for s in program.steps
            if s.phase == "F" and (s.name == path or s.name.startswith(pre))]


def step_owners(program, paths):
    """``{forward step: path}``: the module of ``paths`` each forward step lies in (its name
    is the path or lies under it; of nested paths, the later in ``paths``), in one pass over
    the steps (:func:`steps_in` for every path)."""
    wanted = set(paths)
    inside = {p: [] for p in wanted}
    for s in program.steps:
        if s.phase == "F":
            name = s.name
            if name in wanted:
                inside[name].append(s.index)
            i = name.find(".")
            while i >= 0:
                if name[:i] in wanted:
                    inside[name[:i]].append(s.index)
                i = name.find(".", i + 1)
    owner = {}
    for path in paths:
        for k in inside[path]:
            owner[k] = path
    return owner


def internal_tensors(program, paths, *, keep_types=(), keep_ops=()):
    """``{tensor_id: path}``: activations made inside each module that no forward step outside
    it reads (what ``torch.utils.checkpoint`` does not keep), and the buffers no tensor owns
    that the module's forward makes and a later step reads (backward, or the module's own
    forward), except outputs of ``keep_types`` steps (selective checkpointing keeps
    conv/matmul outputs).

    ``keep_ops`` names the aten ops whose outputs are kept where the program names its tensors
    by the op that made them (captures and predictions); a program that does not (the zoo:
    ``layer.y``) keeps the outputs of its ``keep_types`` steps instead."""
    steps = program.steps
    owner = step_owners(program, paths)
    _, last = program.uses()
    keep_ops = frozenset(keep_ops)
    by_op = bool(keep_ops) and any(t.name in keep_ops for t in program.tensors)
    made = {}
    for k, path in owner.items():
        if not by_op and steps[k].type in keep_types:
            continue
        for t in steps[k].outputs:
            kind = program.tensors[t].kind
            if by_op and program.tensors[t].name in keep_ops:
                continue
            # a buffer no tensor owns that the block's forward makes and a later step frees
            # (a capture's hidden allocation held by the block's autograd nodes, or by a later
            # op of its forward) is the block's own, as an activation is: checkpoint keeps
            # neither past the block's forward, and its replay makes them again
            if kind == "activation" or (kind == "workspace" and last[t] > k):
                made[t] = path
    for s in steps:
        if s.phase == "F":
            for t in s.inputs:
                if t in made and owner.get(s.index) != made[t]:
                    del made[t]
    return made
