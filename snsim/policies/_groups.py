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


def select_modules(program, policy, modules=None, every=None, segments_without_block=False):
    """Module paths a plan wraps, in forward order.

    Parameters
    ----------
    modules : str or sequence of str, optional
        Class names (``"Bottleneck"``, ``"Bottleneck,BasicBlock"``); default: the repeated
        block class, i.e. the non-container class with children that has the most instances.
    every : int, optional
        Keep every N-th selected instance (the 1st, N+1-th, …), as ``if i % N == 0``.
    segments_without_block : bool
        Without ``modules``, in a model with no repeated block class (VGG, AlexNet), take the
        segments of :func:`recompute_segments` (``{segment: member paths}``), as the torch
        side's ``checkpoint`` does.

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
            segs = recompute_segments(program) if segments_without_block else {}
            if not segs:
                raise ConfigError(f"policy {policy}: {program.name!r} has no repeated block "
                                  f"class to wrap; name one with --option modules=CLASS")
            return {k: segs[k] for k in list(segs)[::int(every or 1)]}
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
    """``{forward step: group}``: the group of ``paths`` each forward step lies in, in one
    pass over the steps (:func:`steps_in` for every group).

    ``paths`` are module paths, each its own group, or ``{group: member paths}``
    (:func:`recompute_segments`' runs of layers, ``features[0:4]``); a step lies in a member
    when its name is the member's path or lies under it, and of nested members in the
    innermost."""
    member = member_groups(paths)
    owner = {}
    for s in program.steps:
        if s.phase == "F":
            g = group_of(s.name, member)
            if g is not None:
                owner[s.index] = g
    return owner


def member_groups(paths):
    """``{module path: group}`` of :func:`step_owners`' ``paths``."""
    if isinstance(paths, dict):
        return {m: g for g, ms in paths.items() for m in ms}
    return {p: p for p in paths}


def group_of(name, member):
    """The group of the innermost member path that is ``name`` or lies above it, or None: a
    lookup per enclosing path (``member``: ``{module path: group}``)."""
    while True:
        g = member.get(name)
        if g is not None:
            return g
        i = name.rfind(".")
        if i < 0:
            return None
        name = name[:i]


def steps_in_groups(program, paths):
    """The steps, forward and backward, that lie in a group of ``paths`` (module paths, or
    ``{group: member paths}``): :func:`group_of` of each step's name."""
    member = member_groups(paths)
    return {s.index for s in program.steps if group_of(s.name, member) is not None}


#: module classes ``find_segments`` takes for convolutions and for the pooling layers that end
#: a run of layers (``torch.nn``'s ``_ConvNd`` subclasses and the four pools it names)
CONV_CLASSES = frozenset({"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                          "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
                          "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"})
POOL_CLASSES = frozenset({"MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"})


def recompute_segments(program):
    """``{segment: member module paths}``, in forward order: the blocks SuperNeurons' plans
    placed on module boundaries checkpoint, as :func:`snsim.torchsim.plans.find_segments`
    finds them on the model, from the program's module tree.

    Inside a container (and inside a module that holds a container of two or more blocks of
    one class: ViT's ``Encoder``, or holds one through wrappers: a Hugging Face
    ``GPT2LMHeadModel``'s ``transformer.h``), every non-leaf child that is not a container is a
    segment,
    and a container is searched in turn; a container of leaf layers with a convolution is cut
    into runs that end at a pooling layer (VGG's ``features[0:4]``). The model's own children
    are searched the same way (its leaves are not segments). The tree records each module's
    class, not its base classes: a container whose class is neither ``ModuleList`` nor
    ``ModuleDict`` is taken for a ``Sequential`` (torchvision's ``_Transition``,
    ``Conv2dNormActivation``).

    Raises
    ------
    ConfigError
        A program without a module tree.
    """
    mods = module_map(program)
    if mods is None:
        raise ConfigError(f"program {program.name!r} has no module tree (a user graph, or a "
                          f"capture older than 2026-11-29): SuperNeurons' plans placed on "
                          f"module boundaries need one; use --option placement=layers")
    containers = set(program.extra.get("containers") or
                     program.graph_attrs().get("containers", ()))
    kids, placed = {"": []}, set()
    for p in list(mods) + sorted(containers):
        # a container never called (a ModuleList) is in no module map: its path comes from
        # its children's
        while p and p not in placed:
            placed.add(p)
            kids.setdefault(p, [])
            parent = p.rpartition(".")[0]
            kids.setdefault(parent, []).append(p)
            p = parent

    def leaf(p):
        return not kids[p]

    def is_container(p):
        # a module never called whose children were is iterated by its parent: a ModuleList
        return p in containers or mods.get(p, "ModuleList") in _CONTAINERS

    def holds_blocks(p):
        for g in kids[p]:
            ks = kids[g]
            if is_container(g):
                if len(ks) >= 2 and len({mods.get(k) for k in ks}) == 1 \
                        and not leaf(ks[0]) and not is_container(ks[0]):
                    return True
            elif ks and holds_blocks(g):      # a wrapper that holds one (transformer.h)
                return True
        return False

    out = {}

    def search(p):
        for c in kids[p]:
            if leaf(c):
                continue
            if is_container(c) or holds_blocks(c):
                container(c)
            else:
                out[c] = (c,)

    def container(p):
        ks = kids[p]
        if not all(leaf(c) for c in ks):
            search(p)
            return
        if mods.get(p) in ("ModuleList", "ModuleDict") or \
                not any(mods.get(c) in CONV_CLASSES for c in ks):
            return
        run = []
        for c in ks:
            run.append(c)
            if mods.get(c) in POOL_CLASSES:
                if len(run) > 1:
                    out[_run_label(p, run)] = tuple(run)
                run = []
        if len(run) > 1 and any(mods.get(c) in CONV_CLASSES for c in run):
            out[_run_label(p, run)] = tuple(run)

    search("")
    return out


def _run_label(container, run):
    """``features[0:4]``: a run of a container's children, as ``find_segments`` names it."""
    first, last = (c.rpartition(".")[2] for c in (run[0], run[-1]))
    return f"{container}[{first}:{last}]"


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
