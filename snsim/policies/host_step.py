"""Time of PyTorch's CPU optimizer step over host fp32 parameters (zero_offload, SPEC §16).

``torch.optim`` runs its single-tensor kernels on CPU tensors (``foreach`` and ``fused`` are off
for them): a Python loop over the parameters, a few elementwise ops per tensor. The step costs

- the bytes those ops stream, :data:`HOST_UPDATE_BYTES_PER_PARAM` per parameter, at the
  preset's ``host_mem_bytes_per_s``;
- the fresh pages of the temporaries the ops allocate (Adam's ``exp_avg_sq.sqrt()`` and its
  division, SGD's ``grad.add(param, alpha=wd)``): glibc serves a temporary of at least its
  dynamic mmap threshold with a new mapping, and gives the top of its heap back to the kernel
  when the free space there reaches the trim threshold, so those pages are faulted in (and
  zeroed by the kernel) again on the next step: :func:`fresh_pages` replays glibc's rules on
  the parameter sizes, after the host input batch the process freed (which raises the
  threshold), each page at ``host_page_fault_s``;
- a dispatch per op (``host_op_overhead_s``: Python, the dispatcher, an OpenMP region).
"""
from __future__ import annotations

from ..errors import ConfigError

#: Host DRAM bytes moved per fp32 parameter by one step of PyTorch's single-tensor CPU optimizer
#: (torch/optim/{sgd,adam}.py), from first principles: each elementwise op streams its operands
#: once (4 B per element read); each element written costs 8 B, since x86 stores to a line not
#: in cache first read it (read-for-ownership), so bytes = 4 x (reads + 2 x writes):
#: sgd: ``d_p = grad.add(param, alpha=wd)`` (r2 w1) + ``param.add_(d_p)`` (r2 w1): 4 x 8 = 32 B;
#: sgd-momentum: + ``buf.mul_(m)`` (r1 w1) + ``buf.add_(d_p)`` (r2 w1): 4 x 15 = 60 B;
#: nesterov: + ``d_p = d_p.add(buf, alpha=m)`` (r2 w1): 4 x 19 = 76 B;
#: adam: ``exp_avg.lerp_(grad)`` (r2 w1), ``exp_avg_sq.mul_()`` (r1 w1), ``.addcmul_(grad,
#: grad)`` (r2 w1), ``denom = (exp_avg_sq.sqrt() / bc2).add_(eps)`` (3 x r1 w1),
#: ``param.addcdiv_(exp_avg, denom)`` (r3 w1): 4 x 25 = 100 B; adamw: + ``param.mul_(1 -
#: lr*wd)`` (r1 w1): 4 x 28 = 112 B.
HOST_UPDATE_BYTES_PER_PARAM = {"sgd": 32, "sgd-momentum": 60, "nesterov": 76, "adam": 100,
                               "adamw": 112}
#: ATen ops per parameter tensor, the ops above plus Adam's ``step_t += 1`` and ``.item()``.
HOST_OPS_PER_TENSOR = {"sgd": 2, "sgd-momentum": 4, "nesterov": 5, "adam": 9, "adamw": 10}
#: Temporaries per tensor, each the tensor's size: 1 is freed before the next is made; 2 means
#: the second is made while the first lives (``sqrt()`` then ``/ bc2``; ``add`` then ``add``),
#: then the first is freed, then the second.
HOST_TEMPORARIES_PER_TENSOR = {"sgd": 1, "sgd-momentum": 1, "nesterov": 2, "adam": 2,
                               "adamw": 2}

PAGE_BYTES = 4096
_MMAP_THRESHOLD_MAX = 32 << 20      # glibc DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
_MMAP_THRESHOLD_START = 128 << 10   # DEFAULT_MMAP_THRESHOLD
_TOP_PAD = 128 << 10                # DEFAULT_TOP_PAD
_CHUNK_OVERHEAD = 80                # posix_memalign(64): alignment slack + chunk header
_MMAP_HEADER = 16


def _pages(nbytes):
    return -(-nbytes // PAGE_BYTES)


class _GlibcHeap:
    """glibc malloc for the optimizer's temporaries (made and freed last-in first-out):
    the dynamic mmap threshold (raised to a freed mapping's size, up to 32 MiB; trim threshold
    twice it), the heap top grown with ``top_pad`` and trimmed back, pages faulted on first
    touch."""

    def __init__(self):
        self.mmap_threshold = _MMAP_THRESHOLD_START
        self.trim_threshold = 2 * _MMAP_THRESHOLD_START
        self.used = self.brk = self.touched = 0
        self.chunks = []                 # heap chunks above the base, [nbytes, free]
        self.faults = 0

    def alloc(self, nbytes):
        if nbytes + _MMAP_HEADER >= self.mmap_threshold:
            self.faults += _pages(nbytes)
            return ("mmap", _pages(nbytes + _MMAP_HEADER) * PAGE_BYTES)
        n = nbytes + _CHUNK_OVERHEAD
        for i, c in enumerate(self.chunks):       # a free chunk below the top
            if c[1] and c[0] >= n:
                rest = c[0] - n
                c[:] = [n, False]
                if rest:
                    self.chunks.insert(i + 1, [rest, True])
                return ("heap", c)
        end = self.used + n
        if end > self.brk:
            self.brk = _pages(end + _TOP_PAD) * PAGE_BYTES
        if end > self.touched:
            self.faults += _pages(end) - _pages(self.touched)
            self.touched = end
        self.used = end
        c = [n, False]
        self.chunks.append(c)
        return ("heap", c)

    def free(self, handle):
        kind, c = handle
        if kind == "mmap":
            if self.mmap_threshold < c <= _MMAP_THRESHOLD_MAX:
                self.mmap_threshold, self.trim_threshold = c, 2 * c
            return
        c[1] = True
        i = 0
        while i < len(self.chunks) - 1:           # coalesce free neighbours
            if self.chunks[i][1] and self.chunks[i + 1][1]:
                self.chunks[i][0] += self.chunks.pop(i + 1)[0]
            else:
                i += 1
        while self.chunks and self.chunks[-1][1]:  # merge into the top
            self.used -= self.chunks.pop()[0]
        if self.brk - self.used >= self.trim_threshold:
            self.brk = _pages(self.used + _TOP_PAD) * PAGE_BYTES
            self.touched = min(self.touched, self.brk)


def _check(optimizer):
    if optimizer not in HOST_UPDATE_BYTES_PER_PARAM:
        raise ConfigError(f"policy 'zero_offload': optimizer {optimizer!r} has no host update "
                          f"model; known: {', '.join(HOST_UPDATE_BYTES_PER_PARAM)}")


def fresh_pages(tensor_bytes, optimizer, *, freed_before=(), max_steps=8):
    """Pages faulted in by one steady-state step's temporaries (glibc's rules, in order).

    ``freed_before``: sizes of host buffers the process allocates and frees before the step,
    in order -- the host copy of the input batch (a data loader's batch; the executor's
    ``x.cpu()``): one of at least the mmap threshold and at most 32 MiB raises the threshold
    to its size (and the trim threshold to twice it), so temporaries up to that size come
    from the heap and are not trimmed away between tensors. ViT-B/16 b32 AdamW under ZeRO
    took 2 faults per CPU step, ConvNeXt-T b48 1, VGG-16 b32 Nesterov 233,476, GPT-2-medium
    b4 AdamW 492,197 (the H100 lease's ``ru_minflt``, traces/h100/zero/zero_faults.jsonl);
    replayed with the input batch freed first: 0, 0, 233,472, 492,242; without it 109,824,
    27,456, 241,440 and 492,194.

    Steps are replayed until the heap's state repeats from one step to the next (usually the
    second), so the last step's faults are every later step's.

    Examples
    --------
    >>> fresh_pages([64 << 20], "adam")        # two 64 MiB temporaries, both mmapped
    32768
    >>> fresh_pages([9_437_184] * 2, "sgd-momentum")   # reused from the heap
    0
    """
    _check(optimizer)
    heap = _GlibcHeap()
    for n in freed_before:
        if n > 0:
            heap.free(heap.alloc(int(n)))
    two = HOST_TEMPORARIES_PER_TENSOR[optimizer] == 2
    state, faults = None, 0
    for _ in range(max_steps):
        before = heap.faults
        for n in tensor_bytes:
            a = heap.alloc(n)
            if two:
                b = heap.alloc(n)
                heap.free(a)
                heap.free(b)
            else:
                heap.free(a)
        faults = heap.faults - before
        now = (heap.mmap_threshold, heap.brk - heap.used, heap.touched - heap.used,
               tuple(map(tuple, heap.chunks)))
        if now == state:
            break
        state = now
    return faults


def host_step_parts_s(tensor_bytes, optimizer, hardware, *, freed_before=()):
    """The CPU optimizer step over fp32 tensors of ``tensor_bytes``, in seconds, by part:
    ``stream_s`` (bytes at ``host_mem_bytes_per_s``), ``pages_s`` (fresh pages of the
    temporaries at ``host_page_fault_s``; ``freed_before`` as :func:`fresh_pages`),
    ``dispatch_s`` (ops at ``host_op_overhead_s``)."""
    _check(optimizer)
    tensor_bytes = [int(n) for n in tensor_bytes]
    params = sum(tensor_bytes) // 4
    return {"stream_s": params * HOST_UPDATE_BYTES_PER_PARAM[optimizer]
            / hardware.host_mem_bytes_per_s,
            "pages_s": fresh_pages(tensor_bytes, optimizer, freed_before=freed_before)
            * hardware.host_page_fault_s,
            "dispatch_s": len(tensor_bytes) * HOST_OPS_PER_TENSOR[optimizer]
            * hardware.host_op_overhead_s}


def host_update_time_s(tensor_bytes, optimizer, hardware):
    """Seconds of the CPU optimizer step over fp32 tensors of ``tensor_bytes`` (in order)."""
    return sum(host_step_parts_s(tensor_bytes, optimizer, hardware).values())
