"""Memory plans executed in PyTorch, and the one plan spec every command parses.

A plan is a ``transform(model) -> model`` that changes how a model trains, not what it
computes. The same transform runs on the GPU (``snsim execute``) and, with ``shadow=True``, on
the CPU under ``FakeTensorMode`` (``snsim predict --policy``, the simulator's prediction of the
same plan): shadow code makes no copies but allocates and frees device memory exactly where
the real one does, and records each host copy as an op (``snsim::d2h_pinned`` ...) whose time
the step-time model charges (:mod:`~snsim.torchsim.opcost`).

The plans PyTorch users write (SPEC §12.3, §15):

``plain``
    No plan: the framework's own behaviour.
``checkpoint`` (``modules=CLASS[,CLASS...]``, ``every=N``, ``selective=true|false``)
    Every outermost instance of the named module classes runs under
    ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``. Without ``modules`` the
    model's *block class* is used (:func:`block_class`); a model without one (VGG, AlexNet)
    gets the conv-stack segments of ``recompute``. ``every=N`` wraps the 1st, (N+1)-th, ...
    of those *top-level blocks* (the outermost instances, in forward-registration order).
    ``selective=true`` adds ``create_selective_checkpoint_contexts``: convolution, matmul and
    fused-attention outputs are ``MUST_SAVE``, everything else ``PREFER_RECOMPUTE``.
``cpu_offload`` (``pin_memory=true|false``, ``modules=CLASS[,CLASS...]``)
    ``torch.autograd.graph.save_on_cpu(pin_memory=...)`` around the model's forward (or around
    every outermost instance of the named classes): every tensor autograd saves there, weights
    included, is copied to host memory in forward and back to a new device tensor in backward,
    on the compute stream (no overlap).

SuperNeurons' plans, placed on module boundaries:

``recompute``
    One non-reentrant ``torch.utils.checkpoint`` per *segment*: residual/dense/inception
    blocks (the non-leaf modules inside containers, the block boundaries being SuperNeurons'
    checkpoint layers) and, in plain conv stacks (VGG, AlexNet), the runs of layers that end at
    a pooling layer. Backward replays each segment's forward once (speed-centric, SPEC §5).
``offload``
    Saved tensors whose storage a convolution produced (SuperNeurons offloads CONV outputs)
    are copied to pinned host buffers on a side CUDA stream while the forward runs on; the GPU
    copy is released once the copy ``keep_inflight`` offloads later has finished (a bounded,
    deterministic in-flight window). In backward, unpacking a tensor prefetches it and the next
    ``prefetch_depth`` offloaded tensors on an H2D stream; destinations are allocated on the
    compute stream (SPEC §12.3).
``superneurons``
    Both: segments are recomputed; what is saved outside them (stem, transitions) is offloaded.

This module imports torch only when a plan is applied, so :class:`PlanSpec` parses anywhere.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
import re
import warnings
from dataclasses import dataclass

from ..errors import ConfigError, UnknownNameError
from ..program import ROOT_MODULE

POLICIES = ("plain", "checkpoint", "cpu_offload", "recompute", "offload", "superneurons")
# option -> kind, per policy
PLAN_OPTIONS = {
    "plain": {},
    "checkpoint": {"modules": "classes", "every": "count", "selective": "bool"},
    "cpu_offload": {"pin_memory": "bool", "modules": "classes"},
    "recompute": {},
    "offload": {},
    "superneurons": {},
}
_RULES = {"classes": "a comma-separated list of module class names, e.g. Bottleneck,BasicBlock",
          "count": "an integer >= 1", "bool": "true or false"}
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _parse_value(policy, key, value):
    kind = PLAN_OPTIONS[policy][key]
    text = str(value).strip()
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
    elif kind == "count":
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n >= 1 and not isinstance(value, bool):
            return n
    else:
        names = value if isinstance(value, (list, tuple)) else text.split(",")
        names = tuple(n.strip() for n in names)
        if names and all(n.isidentifier() for n in names):
            return names
    raise ConfigError(f"--option {key} (={text!r}) of policy {policy} must be {_RULES[kind]}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanSpec:
    """A memory plan: a policy name and its parsed options (``--policy P --option k=v``).

    Parameters
    ----------
    policy : str
        One of :data:`POLICIES`.
    options : tuple of (str, object)
        Parsed option values, sorted by key: ``modules`` a tuple of class names, ``every`` an
        int, ``selective`` / ``pin_memory`` a bool.

    Examples
    --------
    >>> p = PlanSpec.parse("checkpoint", ["modules=Bottleneck", "every=2"])
    >>> p.get("modules"), p.get("every"), p.get("selective", False)
    (('Bottleneck',), 2, False)
    >>> p.label
    'checkpoint(every=2,modules=Bottleneck)'
    >>> PlanSpec.parse("cpu_offload", {"pin_memory": "true"}).get("pin_memory")
    True
    """

    policy: str = "plain"
    options: tuple = ()

    def __post_init__(self):
        if self.policy not in PLAN_OPTIONS:
            raise UnknownNameError(f"policy {self.policy!r} is unknown here; plans that run "
                                   f"in PyTorch: {', '.join(POLICIES)}")
        allowed = PLAN_OPTIONS[self.policy]
        for key, _ in self.options:
            if key not in allowed:
                takes = ", ".join(sorted(allowed)) or "no options"
                raise ConfigError(f"--option {key} is not an option of policy {self.policy} "
                                  f"(it takes {takes})")

    @classmethod
    def parse(cls, policy="plain", options=None):
        """Parse ``KEY=VALUE`` strings (or a mapping) for ``policy``.

        Raises
        ------
        UnknownNameError
            An unknown policy.
        ConfigError
            An option the policy does not take, a malformed item or a bad value (one line
            naming the option and the rule).
        """
        policy = policy or "plain"
        if policy not in PLAN_OPTIONS:
            cls(policy=policy)            # raises the unknown-policy error
        items = {}
        if isinstance(options, dict):
            items = dict(options)
        else:
            for item in options or ():
                key, sep, value = str(item).partition("=")
                key = key.strip()
                if not sep or not key:
                    raise ConfigError(f"--option {item!r} must look like KEY=VALUE")
                if key in items:
                    raise ConfigError(f"--option {key} is given twice")
                items[key] = value
        for key in items:
            if key not in PLAN_OPTIONS[policy]:
                cls(policy=policy, options=((key, None),))   # raises the not-an-option error
        parsed = tuple(sorted((k, _parse_value(policy, k, v)) for k, v in items.items()))
        return cls(policy=policy, options=parsed)

    def get(self, key, default=None):
        return dict(self.options).get(key, default)

    @property
    def label(self):
        """``policy`` or ``policy(k=v,...)``: a name for files and tables."""
        if not self.options:
            return self.policy
        parts = []
        for k, v in self.options:
            v = ",".join(v) if isinstance(v, tuple) else (str(v).lower()
                                                         if isinstance(v, bool) else v)
            parts.append(f"{k}={v}")
        return f"{self.policy}({','.join(parts)})"

    @property
    def slug(self):
        """The label as a file-name part: ``checkpoint-every2-modulesBottleneck``."""
        out = [self.policy]
        for k, v in self.options:
            v = "+".join(v) if isinstance(v, tuple) else (str(v).lower()
                                                         if isinstance(v, bool) else str(v))
            out.append(f"{k.replace('_', '')}{v}")
        return "-".join(out)

    def to_dict(self):
        return {"policy": self.policy,
                "options": {k: list(v) if isinstance(v, tuple) else v for k, v in self.options}}


def as_plan(plan, options=None):
    """A :class:`PlanSpec` from a PlanSpec, a policy name (+ options) or None (plain)."""
    if isinstance(plan, PlanSpec):
        return plan
    return PlanSpec.parse(plan or "plain", options)


def _nn():
    from torch import nn
    return nn


def _pools():
    nn = _nn()
    return (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)


def _containers():
    nn = _nn()
    return (nn.Sequential, nn.ModuleDict, nn.ModuleList)


def _is_leaf(m):
    return next(m.children(), None) is None


def find_segments(model):
    """The recompute segments of ``model``.

    Returns
    -------
    list of (str, object)
        ``(path, nn.Module)`` for a block, ``(path, (container, [child names]))`` for a run of
        leaf layers inside a plain conv stack. A module that holds a container of blocks
        (ViT's ``Encoder``, ``nn.TransformerEncoder``), or holds one through wrappers (a
        Hugging Face ``GPT2LMHeadModel``: ``transformer.h``), is searched like a container, so
        its blocks are the segments rather than the whole module.
    """
    out = []

    def holds_blocks(m):
        # a container child of >= 2 modules of one non-container block class, or a wrapper
        # child (neither leaf nor container) that holds one: a Hugging Face model's
        # GPT2LMHeadModel.transformer.h
        for g in m.children():
            kids = list(g.children())
            if isinstance(g, _containers()):
                if len(kids) >= 2 and len({type(k) for k in kids}) == 1 and \
                        not _is_leaf(kids[0]) and not isinstance(kids[0], _containers()):
                    return True
            elif kids and holds_blocks(g):
                return True
        return False

    def container(m, path):
        kids = list(m.named_children())
        if kids and all(_is_leaf(c) for _, c in kids):
            if any(isinstance(c, _nn().modules.conv._ConvNd) for _, c in kids) and \
                    isinstance(m, _nn().Sequential):
                run = []
                for name, c in kids:
                    run.append(name)
                    if isinstance(c, _pools()):
                        if len(run) > 1:
                            out.append((f"{path}[{run[0]}:{run[-1]}]", (m, list(run))))
                        run = []
                if len(run) > 1 and any(isinstance(dict(kids)[n], _nn().modules.conv._ConvNd)
                                        for n in run):
                    out.append((f"{path}[{run[0]}:{run[-1]}]", (m, list(run))))
            return
        for name, c in kids:
            p = f"{path}.{name}" if path else name
            if _is_leaf(c):
                continue
            if isinstance(c, _containers()) or holds_blocks(c):
                container(c, p)
            else:
                out.append((p, c))

    if isinstance(model, _containers()):
        container(model, "")
    else:
        for name, c in model.named_children():
            if _is_leaf(c):
                continue
            if isinstance(c, _containers()) or holds_blocks(c):
                container(c, name)
            else:
                out.append((name, c))
    return out


# checkpoint's determinism check of a shadow run: the default one (shape, dtype, device of each
# saved tensor), also counting its calls -- one per tensor the checkpoint packs in forward
_COUNT_CHECK = "snsim_count_saved"
_SAVED_PACKS = [0]


def _register_count_check():
    from torch.utils import checkpoint as ck
    fns = getattr(ck, "_allowed_determinism_checks_to_fns", None)
    if fns is None or "default" not in fns:
        raise ConfigError("this torch's torch.utils.checkpoint has no determinism-check table "
                          "(_allowed_determinism_checks_to_fns): a shadow checkpoint cannot "
                          "count the tensors it saves")
    if _COUNT_CHECK not in fns:
        default = fns["default"]

        def count(x):
            _SAVED_PACKS[0] += 1
            return default(x)
        fns[_COUNT_CHECK] = count


# selective checkpointing's policy calls in a shadow run (:func:`selective_context_fn`)
_POLICY_CALLS = [0]

# batch norms a CPU run records that CUDA runs as cudnn_batch_norm / _batch_norm_with_update,
# whose backward also saves the reserve-space output (derivatives.yaml): one saved tensor more
_CPU_BATCH_NORMS = frozenset({"native_batch_norm", "_native_batch_norm_legit"})


def _host_counted(fn, selective=False):
    """``fn`` as a shadow checkpoint runs it: its first call (the forward) records a
    ``checkpoint`` host event of the tensors the checkpoint packed (counted by the determinism
    check, plus the reserve space each batch norm saves on CUDA and not on the CPU); later
    calls (the recomputation in backward) record one with the same count, on the active
    recorder. ``selective``: the call also runs selective checkpointing's dispatch mode over
    each of its aten ops, in forward and recomputation alike (a ``selective`` event with the
    ops the mode asked its policy about in forward, :data:`_POLICY_CALLS`: not the ops it
    ignores -- ``detach``, and ``prim::device``, which only a tensor subclass such as the fake
    tensors of the recording dispatches -- nor the reserve ``empty`` of each CPU batch norm,
    which CUDA's single batch-norm op does not call).

    Each call also records a ``checkpoint_args`` event of its tensor arguments beyond the
    first: with ``preserve_rng_state`` (the real plan's default) checkpoint stashes one CUDA
    RNG state per tensor argument in forward (``get_device_states`` does not deduplicate
    devices) and gets and sets one per tensor argument around the recomputation
    (``fork_rng``, ``set_device_states``), and saves each argument for backward; the probe's
    per-call cost holds one (DenseNet's layers take the block's feature list: up to 24)."""
    import torch
    from torch.utils._pytree import tree_leaves
    from .record import active_recorder
    saved = []

    def run(*args, **kwargs):
        rec = active_recorder()
        if rec is None or not torch.is_grad_enabled():
            return fn(*args, **kwargs)
        at = len(rec.ops)
        extra_args = sum(isinstance(t, torch.Tensor) for t in tree_leaves(args)) - 1
        if saved:                       # the recomputation (backward)
            rec.host_event("checkpoint", "B", saved[0], at=at)
            if extra_args > 0:
                rec.host_event("checkpoint_args", "B", extra_args, at=at)
            if selective:
                rec.host_event("selective", "B", saved[1], at=at)
            return fn(*args, **kwargs)
        before, asked = _SAVED_PACKS[0], _POLICY_CALLS[0]
        out = fn(*args, **kwargs)
        bns = sum(op[1] in _CPU_BATCH_NORMS for op in rec.ops[at:])
        saved[:] = [_SAVED_PACKS[0] - before + bns, _POLICY_CALLS[0] - asked - bns]
        rec.host_event("checkpoint", "F", saved[0], at=at)
        if extra_args > 0:
            rec.host_event("checkpoint_args", "F", extra_args, at=at)
        if selective:
            rec.host_event("selective", "F", saved[1], at=at)
        return out
    return run


def apply_recompute(model, *, shadow=False, segments=None, context_fn=None):
    """Wrap every segment (default: :func:`find_segments`) in a non-reentrant checkpoint.

    Parameters
    ----------
    shadow : bool
        For a ``FakeTensorMode`` prediction: no RNG state (fake tensors have none), and every
        checkpoint call records its host work on the active recorder (:func:`_host_counted`:
        one ``checkpoint`` event per call in forward and per recomputation, with the number of
        tensors it saves).
    segments : list of (str, object), optional
        ``(path, module)`` or ``(path, (container, [child names]))`` as :func:`find_segments`
        returns them.
    context_fn : callable, optional
        ``checkpoint``'s ``context_fn`` (selective checkpointing).
    """
    from torch.utils.checkpoint import checkpoint
    nn = _nn()
    segs = find_segments(model) if segments is None else segments
    if not segs:
        raise ConfigError(f"{type(model).__name__} has no block or conv stack to recompute")
    kw = {"use_reentrant": False, "preserve_rng_state": not shadow}
    if context_fn is not None:
        kw["context_fn"] = context_fn
    wrap = (lambda f: f)
    if shadow:
        _register_count_check()
        kw["determinism_check"] = _COUNT_CHECK
        wrap = functools.partial(_host_counted, selective=context_fn is not None)
    runs = collections.defaultdict(list)
    for path, seg in segs:
        if isinstance(seg, nn.Module):
            orig = seg.forward

            def fwd(*args, _orig=orig, **kwargs):
                # a list argument is copied: the recomputation must see it as it was at the
                # call (DenseNet's layers take the block's feature list, which grows after)
                args = tuple(list(a) if isinstance(a, list) else a for a in args)
                return checkpoint(wrap(_orig), *args, **kw, **kwargs)
            seg.forward = fwd
        else:
            cont, names = seg
            runs[id(cont)].append((cont, names))
    for groups in runs.values():
        cont = groups[0][0]
        order = [n for n, _ in cont.named_children()]
        starts = {names[0]: names for _, names in groups}

        def seq_fwd(x, _cont=cont, _order=order, _starts=starts):
            i = 0
            while i < len(_order):
                names = _starts.get(_order[i])
                if names:
                    mods = [getattr(_cont, n) for n in names]
                    x = checkpoint(wrap(_run_all), mods, x, **kw)
                    i += len(names)
                else:
                    x = getattr(_cont, _order[i])(x)
                    i += 1
            return x
        cont.forward = seq_fwd
    model._snsim_segments = [p for p, _ in segs]
    return model


def _run_all(mods, x):
    for m in mods:
        x = m(x)
    return x


class _Handle:
    __slots__ = ("entry", "size", "stride", "offset")

    def __init__(self, entry, t):
        self.entry = entry
        self.size = tuple(t.shape)
        self.stride = tuple(t.stride())
        self.offset = t.storage_offset()


class _Entry:
    __slots__ = ("index", "numel", "dtype", "host", "gpu", "event", "packs", "unpacked")

    def __init__(self, index, numel, dtype):
        self.index = index
        self.numel = numel
        self.dtype = dtype
        self.host = None
        self.gpu = None
        self.event = None
        self.packs = 0
        self.unpacked = 0


class Offloader:
    """Offload conv-produced saved tensors to pinned host memory and prefetch them back.

    Parameters
    ----------
    shadow : bool
        Make no copies (CPU fake tensors): allocate and free device memory where the real
        offloader does, so a recording predicts the real run's memory; record its copies and
        waits as ops (:func:`side_copy_ops`) and its hook calls as host events, so it predicts
        the real run's time.
    keep_inflight : int
        Offloads whose GPU source may still be held; packing one more waits for the oldest
        copy and releases its source.
    prefetch_depth : int
        Offloaded tensors prefetched ahead of the one being unpacked.
    min_bytes : int
        Smaller saved tensors stay on the GPU.
    """

    def __init__(self, *, shadow=False, keep_inflight=2, prefetch_depth=2, min_bytes=1 << 20):
        import torch
        from torch.utils.weak import WeakIdKeyDictionary  # noqa: F401
        self.shadow = shadow
        self.keep_inflight = keep_inflight
        self.prefetch_depth = prefetch_depth
        self.min_bytes = min_bytes
        self.conv_out = WeakIdKeyDictionary()
        self.entries = []
        self.by_storage = WeakIdKeyDictionary()
        self.pending = collections.deque()
        self.hosts = {}
        self.offloaded_bytes = 0
        self.iterations = 0
        self._ctx = None
        if not shadow:
            self.d2h = torch.cuda.Stream()
            self.h2d = torch.cuda.Stream()

    # -- forward -----------------------------------------------------------------------------
    def on_conv(self, module, args, out):
        import torch
        if self.shadow:       # in forward, and again in a recomputation (phase: B)
            _hook_event("B" if self._ctx is None else "F", "conv_hook")
        if isinstance(out, torch.Tensor):
            self.conv_out[out.untyped_storage()] = True

    def begin(self, module, args):
        import torch
        from torch.utils.weak import WeakIdKeyDictionary  # noqa: F401
        self.entries = []
        self.by_storage = WeakIdKeyDictionary()
        self.pending.clear()
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
        self._ctx.__enter__()

    def end(self, module, args, out):
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None
        while self.pending:
            self._retire()
        self.iterations += 1

    def _retire(self):
        ev, src = self.pending.popleft()
        if ev is not None:
            ev.synchronize()
        elif self.shadow:
            side_copy_ops()["copy_sync"](src)
        del src

    def pack(self, t):
        import torch
        if self.shadow:
            _hook_event("F", "offloader_hook")
        st = t.untyped_storage()
        e = self.by_storage.get(st)
        if e is None:
            nbytes = t.numel() * t.element_size()
            if (st not in self.conv_out or not t.is_floating_point() or nbytes < self.min_bytes
                    or not t.is_contiguous() or t.storage_offset() != 0
                    or nbytes != st.nbytes()):
                return t.detach()
            e = _Entry(len(self.entries), t.numel(), t.dtype)
            self.entries.append(e)
            self.by_storage[st] = e
            self.offloaded_bytes += nbytes
            if self.shadow:
                src = t.detach()
                _hook_event("F", "offload_copy")
                side_copy_ops()["d2h_pinned_async"](src)
                self.pending.append((None, src))
            else:
                host = self.hosts.get(e.index)
                if host is None or host.numel() != e.numel or host.dtype != e.dtype:
                    host = self.hosts[e.index] = torch.empty(e.numel, dtype=e.dtype,
                                                            pin_memory=True)
                e.host = host
                src = t.detach()
                self.d2h.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(self.d2h):
                    host.copy_(src.reshape(-1), non_blocking=True)
                    ev = torch.cuda.Event()
                    ev.record()
                self.pending.append((ev, src))
            while len(self.pending) > self.keep_inflight:
                self._retire()
        e.packs += 1
        return _Handle(e, t)

    # -- backward ----------------------------------------------------------------------------
    def _issue(self, e):
        import torch
        if e.gpu is not None or e.unpacked >= e.packs:
            return
        if self.shadow:
            _hook_event("B", "offload_copy")
            e.gpu = torch.empty(e.numel, dtype=e.dtype)
            side_copy_ops()["h2d_pinned_async"](e.gpu)
            e.event = True
            return
        dst = torch.empty(e.numel, dtype=e.dtype, device="cuda")
        # dst comes from the compute stream's pool: its block may still be read by kernels
        # queued before, so the copy waits for them (no record_stream, one pool)
        self.h2d.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.h2d):
            dst.copy_(e.host, non_blocking=True)
            e.event = torch.cuda.Event()
            e.event.record()
        e.gpu = dst

    def unpack(self, h):
        import torch
        if self.shadow:
            _hook_event("B", "offloader_hook")
        if not isinstance(h, _Handle):
            return h
        e = h.entry
        self._issue(e)
        k = e.index - 1
        issued = 0
        while k >= 0 and issued < self.prefetch_depth:
            nxt = self.entries[k]
            if nxt.unpacked < nxt.packs and nxt.gpu is None:
                self._issue(nxt)
                issued += 1
            k -= 1
        if e.event is not None:
            if self.shadow:
                side_copy_ops()["copy_wait"](e.gpu)
            else:
                torch.cuda.current_stream().wait_event(e.event)
            e.event = None
        t = e.gpu.as_strided(h.size, h.stride, h.offset)
        e.unpacked += 1
        if e.unpacked >= e.packs:
            e.gpu = None
        return t



def apply_offload(model, *, shadow=False, **options):
    """Install an :class:`Offloader` on ``model`` (hooks on the root and on every conv)."""
    nn = _nn()
    off = Offloader(shadow=shadow, **options)
    for m in model.modules():
        if isinstance(m, nn.modules.conv._ConvNd):
            m.register_forward_hook(off.on_conv)
    model.register_forward_pre_hook(off.begin)
    model.register_forward_hook(off.end)
    model._snsim_offloader = off
    return model


# -- checkpoint -------------------------------------------------------------------------------
def _is_container(m):
    return isinstance(m, _containers())


def module_classes(model):
    """``{class name: instances}`` of every module class in ``model``."""
    return collections.Counter(type(m).__name__ for m in model.modules())


def outermost_instances(model, classes):
    """``[(path, module)]``: instances of the named classes not inside another one, in
    ``named_modules`` (registration) order."""
    out = []
    for path, m in model.named_modules():
        if type(m).__name__ not in classes or m is model:
            continue
        if any(path.startswith(p + ".") for p, _ in out):
            continue
        out.append((path, m))
    return out


def container_paths(model):
    """Paths of the containers in ``model`` (``Sequential``, ``ModuleList``, ``ModuleDict`` and
    their subclasses, e.g. DenseNet's ``_DenseBlock``): recorded with captured and predicted
    programs so the engine's ``checkpoint`` picks the same block class as this module."""
    return [path for path, m in model.named_modules() if m is not model and _is_container(m)]


def block_class(model):
    """The model's *block class*: the repeated building block a user would checkpoint
    (:func:`snsim.policies._groups.block_class`, the engine's rule too). None for plain conv
    stacks (VGG, AlexNet).

    Examples
    --------
    >>> import torchvision
    >>> block_class(torchvision.models.resnet18()), block_class(torchvision.models.vgg11())
    ('BasicBlock', None)
    """
    from ..policies._groups import block_class as rule
    mods = {path: type(m).__name__ for path, m in model.named_modules() if m is not model}
    parents = {path for path, m in model.named_modules() if not _is_leaf(m)}
    return rule(mods, parents, container_paths(model))


def _save_ops():
    import torch
    from ..policies.checkpoint import SELECTIVE_SAVE_OPS
    aten = torch.ops.aten
    return {getattr(aten, n).default for n in SELECTIVE_SAVE_OPS if hasattr(aten, n)}


def selective_context_fn(counted=False):
    """``checkpoint``'s ``context_fn`` of SPEC §12.3's selective checkpointing: outputs of
    convolutions, matmuls and fused attention are saved, everything else is recomputed.
    ``counted``: every policy call (one per op the forward's dispatch mode does not ignore)
    adds one to :data:`_POLICY_CALLS` (a shadow run's count of the mode's work)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    save = _save_ops()

    def policy_fn(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE

    def counting_policy_fn(ctx, op, *args, **kwargs):
        _POLICY_CALLS[0] += 1
        return policy_fn(ctx, op, *args, **kwargs)
    return functools.partial(create_selective_checkpoint_contexts,
                             counting_policy_fn if counted else policy_fn)


def checkpoint_segments(model, plan):
    """The segments ``checkpoint`` wraps: ``[(path, module or (container, names))]``.

    Raises
    ------
    ConfigError
        A class of ``modules=`` that the model does not have, or nothing to wrap.
    """
    classes = plan.get("modules")
    if classes:
        have = module_classes(model)
        missing = [c for c in classes if c not in have]
        if missing:
            blk = block_class(model)
            hint = f"; its block class is {blk}" if blk else ""
            raise ConfigError(f"--option modules: {type(model).__name__} has no module class "
                              f"{', '.join(missing)}{hint}")
        segs = outermost_instances(model, set(classes))
    else:
        blk = block_class(model)
        segs = outermost_instances(model, {blk}) if blk else find_segments(model)
    if not segs:
        raise ConfigError(f"{type(model).__name__} has no block to checkpoint")
    return segs[::plan.get("every", 1)]


def apply_checkpoint(model, plan, *, shadow=False):
    """Wrap the blocks of :func:`checkpoint_segments` in non-reentrant checkpoints."""
    ctx = None
    if plan.get("selective", False):
        # the recorder's saved-tensor hooks only list what autograd saves; torch >= 2.13 warns
        # that SAC-saved tensors bypass them
        warnings.filterwarnings("ignore", message="A saved_tensors_hooks context")
        ctx = selective_context_fn(counted=shadow)
    return apply_recompute(model, shadow=shadow, segments=checkpoint_segments(model, plan),
                           context_fn=ctx)


# -- cpu_offload: torch.autograd.graph.save_on_cpu ---------------------------------------------
@functools.cache
def copy_ops():
    """Custom ops that stand for the host copies of a shadow run (no kernel, no output):
    ``snsim::d2h_pinned``, ``d2h_pageable``, ``h2d_pinned``, ``h2d_pageable``, keyed
    ``(direction, pinned)``, and ``snsim::d2h_pinned_sync`` (key ``("d2h", "sync")``: a
    pinned D2H copy the host waits for, :func:`save_on_cpu_pack_blocks`); the recorder sees
    them as ops reading the device tensor, and the op-time model charges PCIe time."""
    import torch
    ops = {}
    for direction, kind, key in (("d2h", "pinned", True), ("d2h", "pageable", False),
                                 ("h2d", "pinned", True), ("h2d", "pageable", False),
                                 ("d2h", "pinned_sync", "sync")):
        op = torch.library.custom_op(f"snsim::{direction}_{kind}", _no_copy,
                                     mutates_args=(), schema="(Tensor x) -> ()")
        op.register_fake(_no_copy)
        ops[(direction, key)] = op
    return ops


@functools.cache
def save_on_cpu_pack_blocks():
    """Whether the installed torch's ``save_on_cpu(pin_memory=True)`` packs with a
    synchronous D2H copy (:func:`pack_copy_blocks` of its source): the launching thread then
    waits, at every saved tensor, for the GPU to reach and finish that copy. torch 2.11 does
    (the H200, ``steptime_probe.py soc``: 15 us per pack of 4 KiB, 182 us of 8 MiB, the
    copy's GPU time plus 8-17 us, against 5-11 us to issue the same copy non-blocking).
    False when the source cannot be read."""
    import inspect

    import torch
    try:
        return pack_copy_blocks(inspect.getsource(torch.autograd.graph.save_on_cpu.__init__))
    except (OSError, TypeError):
        return False


# the first torch release whose save_on_cpu packs with ``non_blocking`` (pytorch PR #175421,
# merged 2026-02-20): the H200's 2.11.0 blocks (``steptime_probe.py soc``), 2.14.1's source
# passes ``non_blocking``; 2.12 is the first release branched after the merge
SAVE_ON_CPU_NON_BLOCKING_FROM = (2, 12)


def torch_release(version):
    """``(major, minor)`` of a torch version string (``2.11.0+cu130``, ``2.12``).

    Raises
    ------
    ConfigError
        Not a version (one line naming ``--torch-version``).

    Examples
    --------
    >>> torch_release("2.11.0+cu130"), torch_release("2.12")
    ((2, 11), (2, 12))
    """
    m = re.match(r"^\s*(\d+)\.(\d+)(?:[.+a-z0-9]*)?\s*$", str(version))
    if not m:
        raise ConfigError(f"--torch-version (={version!r}) must be a torch release such as "
                          f"2.11 or 2.11.0+cu130, or 'installed'")
    return int(m.group(1)), int(m.group(2))


def is_installed_torch(version):
    """Whether a ``--torch-version`` value names the installed torch (None or
    ``"installed"``)."""
    return version is None or str(version).strip() == "installed"


# the release :func:`modelled_torch` set, None outside it (the installed torch's)
_MODELLED_RELEASE = contextvars.ContextVar("snsim_modelled_torch", default=None)


@contextlib.contextmanager
def modelled_torch(version):
    """Within it, the CUDA behaviour a recording models is torch ``version``'s (a
    ``--torch-version`` value; None or ``"installed"``: the installed torch's), for every
    version-dependent rule (:func:`modelled_release`): what the release that will run the step
    does on the GPU, not what the torch recording the step on this CPU would do."""
    token = _MODELLED_RELEASE.set(None if is_installed_torch(version)
                                  else torch_release(version))
    try:
        yield
    finally:
        _MODELLED_RELEASE.reset(token)


def modelled_release():
    """``(major, minor)`` of the torch release being modelled: the one :func:`modelled_torch`
    set, else the installed torch's.

    >>> with modelled_torch("2.5.1"):
    ...     modelled_release()
    (2, 5)
    """
    got = _MODELLED_RELEASE.get()
    if got is not None:
        return got
    import torch
    return torch_release(torch.__version__)


def pack_blocks_of(version):
    """Whether torch ``version``'s ``save_on_cpu(pin_memory=True)`` waits for each pack's
    copy (:data:`SAVE_ON_CPU_NON_BLOCKING_FROM`); the installed torch
    (:func:`is_installed_torch`): its own source (:func:`save_on_cpu_pack_blocks`).

    >>> pack_blocks_of("2.11.0+cu130"), pack_blocks_of("2.14.1")
    (True, False)
    """
    if is_installed_torch(version):
        return save_on_cpu_pack_blocks()
    return torch_release(version) < SAVE_ON_CPU_NON_BLOCKING_FROM


def pack_copy_blocks(source):
    """Whether ``save_on_cpu``'s ``pack_to_cpu`` in ``source`` copies into its pinned
    tensor with a blocking ``copy_``: no ``non_blocking`` argument (torch before pytorch PR
    #175421, February 2026) or a constant False. False for source without such a copy.

    Examples
    --------
    >>> old = '''
    ... def __init__(self, pin_memory=False):
    ...     def pack_to_cpu(tensor):
    ...         if not pin_memory:
    ...             return (tensor.device, tensor.cpu())
    ...         packed = torch.empty(tensor.size(), pin_memory=True)
    ...         packed.copy_(tensor)
    ...         return (tensor.device, packed)'''
    >>> new = old.replace("copy_(tensor)", "copy_(tensor, non_blocking=is_pinnable)")
    >>> pack_copy_blocks(old), pack_copy_blocks(new)
    (True, False)
    """
    import ast
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return False
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "pack_to_cpu"):
            continue
        for c in ast.walk(fn):
            if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                    and c.func.attr == "copy_"):
                continue
            kw = {k.arg: k.value for k in c.keywords}
            flag = kw.get("non_blocking", c.args[1] if len(c.args) > 1 else None)
            if flag is None or (isinstance(flag, ast.Constant) and not flag.value):
                return True
    return False


def _no_copy(x):
    return None


@functools.cache
def side_copy_ops():
    """Custom ops of a shadow run for the SuperNeurons offloader's copies, which run on side
    streams (:class:`Offloader`): ``snsim::d2h_pinned_async`` / ``h2d_pinned_async`` (a
    pinned copy on the D2H / H2D stream, issued after the compute stream's queued work:
    ``wait_stream``), ``snsim::copy_sync`` (the host waits for the last side copy of that
    tensor: ``Event.synchronize``) and ``snsim::copy_wait`` (the compute stream waits for it:
    ``wait_event``). Each reads the device tensor, which pairs a wait with its copy."""
    import torch
    ops = {}
    for name in ("d2h_pinned_async", "h2d_pinned_async", "copy_sync", "copy_wait"):
        op = torch.library.custom_op(f"snsim::{name}", _no_copy, mutates_args=(),
                                     schema="(Tensor x) -> ()")
        op.register_fake(_no_copy)
        ops[name] = op
    return ops


def _hook_event(phase, mechanism="saved_tensors_hook"):
    """A hook call (a saved-tensor hook's pack: F, unpack: B; or another ``mechanism`` of
    :data:`snsim.torchsim.opcost.PLAN_HOST_MECHANISMS`) on the active recorder, if any."""
    from .record import active_recorder
    rec = active_recorder()
    if rec is not None:
        rec.host_event(mechanism, phase, 1)


def _dense(t):
    """Non-overlapping and dense (a permutation of a contiguous layout): ``.cpu()`` keeps
    such strides and copies directly."""
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


class ShadowSaveOnCpu:
    """``save_on_cpu``'s device-memory behaviour for a ``FakeTensorMode`` run.

    ``pack`` keeps no reference to the device tensor (its storage dies when the forward's own
    references do, as with the real host copy), allocates the device temporary ``copy_`` makes
    of a tensor it cannot copy directly, and records the D2H copy (``d2h_pinned_sync`` where the
    installed torch's pinned pack waits for it: :func:`save_on_cpu_pack_blocks`) after a
    ``pinned_pack`` host event (the pinned host tensor it allocates). ``unpack``
    allocates a new device tensor and records the H2D copy.
    """

    def __init__(self, pin_memory=False, pack_blocks=None):
        self.pin_memory = pin_memory
        # the torch that runs the plan: None, the installed one's (save_on_cpu_pack_blocks)
        self.pack_blocks = save_on_cpu_pack_blocks() if pack_blocks is None else pack_blocks
        self.packed_bytes = 0
        self.packs = 0

    def pack(self, t):
        _hook_event("F")
        from .record import active_recorder
        rec = active_recorder()
        if rec is not None and rec.sid_of(t) in rec.excluded:
            return t    # in host memory on CUDA (a philox seed): packed and unpacked there
        if self.pin_memory:     # the pinned host tensor the copy goes into
            _hook_event("F", "pinned_pack")
        ops = copy_ops()
        src = t
        # pinned: copy_ into a contiguous host tensor; pageable: .cpu() keeps dense strides
        if (not t.is_contiguous()) if self.pin_memory else (not _dense(t)):
            src = t.contiguous()
        ops[("d2h", "sync" if self.pin_memory and self.pack_blocks else self.pin_memory)](src)
        nbytes = t.numel() * t.element_size()
        self.packed_bytes += nbytes
        self.packs += 1
        return (tuple(t.shape), t.dtype)

    def unpack(self, packed):
        import torch
        _hook_event("B")
        if isinstance(packed, torch.Tensor):
            return packed
        shape, dtype = packed
        out = torch.empty(shape, dtype=dtype)
        copy_ops()[("h2d", self.pin_memory)](out)
        return out


class _HooksAround:
    """Enter a saved-tensor-hooks context at a module's forward pre-hook, leave at its hook."""

    def __init__(self, make_ctx):
        self.make_ctx = make_ctx
        self.stack = []

    def pre(self, module, args):
        ctx = self.make_ctx()
        ctx.__enter__()
        self.stack.append(ctx)

    def post(self, module, args, out):
        if self.stack:
            self.stack.pop().__exit__(None, None, None)


def apply_cpu_offload(model, plan, *, shadow=False, pack_blocks=None):
    """``save_on_cpu(pin_memory=...)`` around the forward of ``model`` (or of every outermost
    instance of ``modules=``); with ``shadow``, :class:`ShadowSaveOnCpu` instead, whose pinned
    pack waits for its copy if ``pack_blocks`` (None: as the installed torch's does)."""
    import torch
    pin = bool(plan.get("pin_memory", False))
    if shadow:
        sh = ShadowSaveOnCpu(pin_memory=pin, pack_blocks=pack_blocks)
        model._snsim_shadow_offload = sh

        def make_ctx():
            return torch.autograd.graph.saved_tensors_hooks(sh.pack, sh.unpack)
    else:
        def make_ctx():
            return torch.autograd.graph.save_on_cpu(pin_memory=pin)
    classes = plan.get("modules")
    if classes:
        have = module_classes(model)
        missing = [c for c in classes if c not in have]
        if missing:
            raise ConfigError(f"--option modules: {type(model).__name__} has no module class "
                              f"{', '.join(missing)}")
        targets = [m for _, m in outermost_instances(model, set(classes))]
    else:
        targets = [model]
    hooks = _HooksAround(make_ctx)
    for m in targets:
        m.register_forward_pre_hook(hooks.pre)
        m.register_forward_hook(hooks.post)
    model._snsim_segments = [p for p, _ in outermost_instances(model, set(classes))] \
        if classes else [ROOT_MODULE]
    return model


# -- one transform per plan ---------------------------------------------------------------------
def make_transform(plan, *, shadow=False, options=None, keep_inflight=2, prefetch_depth=2,
                   min_offload_bytes=1 << 20, save_on_cpu_blocks=None):
    """``transform(model) -> model`` for a plan.

    Parameters
    ----------
    plan : PlanSpec or str
        A plan, or a policy name (then ``options``, ``KEY=VALUE`` strings or a mapping).
    shadow : bool
        For a CPU ``FakeTensorMode`` prediction (no copies, no RNG state).
    save_on_cpu_blocks : bool, optional
        A shadow ``cpu_offload``: whether the torch that will run the plan packs with a
        synchronous copy (:func:`save_on_cpu_pack_blocks`); None: the installed torch.

    Raises
    ------
    UnknownNameError
        An unknown policy.
    ConfigError
        A bad option, or (when the transform runs) a module class the model does not have.
    """
    plan = as_plan(plan, options)
    opts = dict(keep_inflight=keep_inflight, prefetch_depth=prefetch_depth,
                min_bytes=min_offload_bytes)

    def transform(model):
        p = plan.policy
        if p == "checkpoint":
            apply_checkpoint(model, plan, shadow=shadow)
        elif p == "cpu_offload":
            apply_cpu_offload(model, plan, shadow=shadow, pack_blocks=save_on_cpu_blocks)
        if p in ("recompute", "superneurons"):
            apply_recompute(model, shadow=shadow)
        if p in ("offload", "superneurons"):
            apply_offload(model, shadow=shadow, **opts)
        model._snsim_plan = plan
        return model
    return transform
