"""Memory plans executed in PyTorch: recompute segments, offload/prefetch of conv outputs.

A plan is a ``transform(model) -> model`` that changes how a model trains, not what it
computes. The same transform runs on the GPU (``snsim execute``) and, with ``shadow=True``, on
the CPU under ``FakeTensorMode`` (the simulator's prediction of the same plan): a shadow
offloader makes no copies but allocates and frees device memory exactly where the real one does.

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
"""
from __future__ import annotations

import collections

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.weak import WeakIdKeyDictionary

from ..errors import ConfigError

POLICIES = ("recompute", "offload", "superneurons")
_POOLS = (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)
_CONTAINERS = (nn.Sequential, nn.ModuleDict, nn.ModuleList)


def _is_leaf(m):
    return next(m.children(), None) is None


def find_segments(model):
    """The recompute segments of ``model``.

    Returns
    -------
    list of (str, object)
        ``(path, nn.Module)`` for a block, ``(path, (container, [child names]))`` for a run of
        leaf layers inside a plain conv stack.
    """
    out = []

    def container(m, path):
        kids = list(m.named_children())
        if kids and all(_is_leaf(c) for _, c in kids):
            if any(isinstance(c, nn.modules.conv._ConvNd) for _, c in kids) and \
                    isinstance(m, nn.Sequential):
                run = []
                for name, c in kids:
                    run.append(name)
                    if isinstance(c, _POOLS):
                        if len(run) > 1:
                            out.append((f"{path}[{run[0]}:{run[-1]}]", (m, list(run))))
                        run = []
                if len(run) > 1 and any(isinstance(dict(kids)[n], nn.modules.conv._ConvNd)
                                        for n in run):
                    out.append((f"{path}[{run[0]}:{run[-1]}]", (m, list(run))))
            return
        for name, c in kids:
            p = f"{path}.{name}" if path else name
            if _is_leaf(c):
                continue
            if isinstance(c, _CONTAINERS):
                container(c, p)
            else:
                out.append((p, c))

    if isinstance(model, _CONTAINERS):
        container(model, "")
    else:
        for name, c in model.named_children():
            if _is_leaf(c):
                continue
            if isinstance(c, _CONTAINERS):
                container(c, name)
            else:
                out.append((name, c))
    return out


def apply_recompute(model, *, preserve_rng_state=True):
    """Wrap every segment of :func:`find_segments` in a non-reentrant checkpoint."""
    segs = find_segments(model)
    if not segs:
        raise ConfigError(f"{type(model).__name__} has no block or conv stack to recompute")
    runs = collections.defaultdict(list)
    for path, seg in segs:
        if isinstance(seg, nn.Module):
            orig = seg.forward

            def fwd(*args, _orig=orig, **kwargs):
                return checkpoint(_orig, *args, use_reentrant=False,
                                  preserve_rng_state=preserve_rng_state, **kwargs)
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
                    x = checkpoint(_run_all, mods, x, use_reentrant=False,
                                   preserve_rng_state=preserve_rng_state)
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
        offloader does, so a recording predicts the real run's memory.
    keep_inflight : int
        Offloads whose GPU source may still be held; packing one more waits for the oldest
        copy and releases its source.
    prefetch_depth : int
        Offloaded tensors prefetched ahead of the one being unpacked.
    min_bytes : int
        Smaller saved tensors stay on the GPU.
    """

    def __init__(self, *, shadow=False, keep_inflight=2, prefetch_depth=2, min_bytes=1 << 20):
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
        if isinstance(out, torch.Tensor):
            self.conv_out[out.untyped_storage()] = True

    def begin(self, module, args):
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
        del src

    def pack(self, t):
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
                self.pending.append((None, t.detach()))
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
        if e.gpu is not None or e.unpacked >= e.packs:
            return
        if self.shadow:
            e.gpu = torch.empty(e.numel, dtype=e.dtype)
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
            torch.cuda.current_stream().wait_event(e.event)
            e.event = None
        t = e.gpu.as_strided(h.size, h.stride, h.offset)
        e.unpacked += 1
        if e.unpacked >= e.packs:
            e.gpu = None
        return t


def apply_offload(model, *, shadow=False, **options):
    """Install an :class:`Offloader` on ``model`` (hooks on the root and on every conv)."""
    off = Offloader(shadow=shadow, **options)
    for m in model.modules():
        if isinstance(m, nn.modules.conv._ConvNd):
            m.register_forward_hook(off.on_conv)
    model.register_forward_pre_hook(off.begin)
    model.register_forward_hook(off.end)
    model._snsim_offloader = off
    return model


def make_transform(policy, *, shadow=False, keep_inflight=2, prefetch_depth=2,
                   min_offload_bytes=1 << 20):
    """``transform(model) -> model`` for an execution policy.

    Parameters
    ----------
    policy : {"recompute", "offload", "superneurons"}
    shadow : bool
        For a CPU ``FakeTensorMode`` prediction (no copies, no RNG state).

    Raises
    ------
    UnknownNameError
        An unknown policy.
    """
    from ..errors import UnknownNameError
    if policy not in POLICIES:
        raise UnknownNameError(f"execution policy {policy!r} is unknown; known: "
                               f"{', '.join(POLICIES)}")
    opts = dict(keep_inflight=keep_inflight, prefetch_depth=prefetch_depth,
                min_bytes=min_offload_bytes)

    def transform(model):
        if policy in ("recompute", "superneurons"):
            apply_recompute(model, preserve_rng_state=not shadow)
        if policy in ("offload", "superneurons"):
            apply_offload(model, shadow=shadow, **opts)
        return model
    return transform
