"""The global-memory buffers of CUDA's reduction kernel, for CPU-only predictions.

ATen's CUDA reductions (``sum``, ``mean``: ``gpu_reduce_kernel`` in
aten/src/ATen/native/cuda/Reduce.cuh) pick a launch configuration from the reduction's
geometry (``setReduceConfig``). When one output's inputs are split across thread blocks
(``should_global_reduce``), the kernel takes two blocks from the caching allocator for the
duration of the call: a staging buffer of ``sizeof(acc) * num_outputs * ctas_per_output``
(times ``block.x * output_vec_size`` when outputs are spread over a warp's lanes) and one
``int`` semaphore per output block. A fake run cannot see them, and they are large where a
big tensor is reduced to few outputs: a bias or scale gradient. The H200 histories
(traces/h200/plans_history) show them exactly as this module computes them:

* convnext_base b32 bf16: ``sum`` over (0, 2, 3) of a channels-last float32
  [32, 128, 56, 56] (a layer scale's gradient): 102,760,448 B and 4 B;
* swin_s b32 bf16: a linear bias gradient, ``sum`` over 1,568 rows of a bfloat16
  [1568, 768]: 9,830,400 B and 24 B; over 6,272 rows of [6272, 384]: 19,267,584 B and 12 B.

Geometry (:func:`reduce_geometry`) is read from the tensor the fake run reduces; the device's
multiprocessor count and threads per multiprocessor (:data:`DEVICE_PROPERTIES`) enter the
block count.
"""
from __future__ import annotations

#: ``(multiProcessorCount, maxThreadsPerMultiProcessor)`` of each preset's GPU (CUDA device
#: properties; NVIDIA's data sheets: H100/H200 SXM 132 SMs, A100 108, V100 80, P100 56,
#: K40c 15 SMX; 2,048 resident threads per SM on all of them)
DEVICE_PROPERTIES = {"h200": (132, 2048), "h100": (132, 2048), "a100-40gb": (108, 2048),
                     "v100": (80, 2048), "p100": (56, 2048), "k40c": (15, 2048)}

_MAX_NUM_THREADS = 512      # mnt_wrapper<T>::MAX_NUM_THREADS (256 only for complex double)
_WARP = 32
_INPUT_VEC = 4              # ReduceConfig::input_vec_size
_VT0 = 4                    # gpu_reduce_kernel's default vt0
_MIN_VALUES_PER_THREAD = 16
_MAX_VALUES_PER_THREAD = 256


def reduce_geometry(t, dims, as_int=int):
    """What :func:`reduction_buffers` needs of a reduction of tensor ``t`` over ``dims`` (a
    list of dims; empty or None: all): ``(shape, strides, storage offset, reduced dims,
    element bytes, accumulator bytes)``, or None for a tensor that is not floating point.
    ``as_int`` reads a size (a data-dependent size of a fake run: its upper bound,
    :func:`snsim.torchsim.record.concrete_int`)."""
    if not t.is_floating_point() or t.is_complex():
        return None
    n = t.dim()
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        red = tuple(range(n))
    else:
        red = tuple(sorted({d % max(n, 1) for d in (dims if isinstance(dims, (list, tuple))
                                                    else [dims])}))
    el = t.element_size()
    acc = 8 if el == 8 else 4          # at::acc_type: float for half, bfloat16 and float
    return (tuple(as_int(s) for s in t.shape), tuple(as_int(s) for s in t.stride()),
            as_int(t.storage_offset()), red, el, acc)


def _last_pow2(n):
    n |= n >> 1
    n |= n >> 2
    n |= n >> 4
    n |= n >> 8
    n |= n >> 16
    return max(1, n - (n >> 1))


def _div_up(a, b):
    return -(-a // b)


def _iterator(shape, strides, red):
    """The reduction's TensorIterator dims after reordering and coalescing: reduced dims first
    (by input stride, fastest first), then kept dims (by the contiguous output's strides:
    last dim first); ``[(size, input stride in elements, reduced)]``."""
    n = len(shape)
    kept = [d for d in reversed(range(n)) if d not in red and shape[d] != 1]
    reduced = sorted((d for d in red if shape[d] != 1), key=lambda d: (strides[d], -d))
    dims = [(shape[d], strides[d], True) for d in reduced] + \
           [(shape[d], strides[d], False) for d in kept]
    out = []
    for size, stride, r in dims:
        # adjacent dims of one kind coalesce where the input's strides chain (kept dims chain in
        # the contiguous output too; reduced ones have stride 0 there)
        if out and out[-1][2] == r and out[-1][0] * out[-1][1] == stride:
            prev = out[-1]
            out[-1] = (prev[0] * size, prev[1], r)
        else:
            out.append((size, stride, r))
    return out


def reduction_buffers(geometry, hardware):
    """Bytes of the staging buffer and the semaphores CUDA's reduction kernel allocates for
    one call (``[]`` when it reduces within thread blocks), as ``setReduceConfig`` and
    ``ReduceConfig.global_memory_size`` / ``semaphore_size`` compute them.

    >>> g = ((1568, 768), (768, 1), 0, (0,), 2, 4)   # bf16 linear bias gradient
    >>> reduction_buffers(g, "h200")
    [9830400, 24]
    """
    props = DEVICE_PROPERTIES.get(hardware)
    if geometry is None or props is None:
        return []
    shape, strides, offset, red, el, acc = geometry
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0:
        return []
    num_outputs = 1
    for d, s in enumerate(shape):
        if d not in red:
            num_outputs *= s
    inputs_per_output = numel // num_outputs
    it = _iterator(shape, strides, red)
    nrd = sum(1 for _, _, r in it if r)
    ndim = len(it)
    output_vec = 1
    if ndim > 0:
        on_fastest = nrd == ndim or it[0][1] < it[nrd][1]
        if on_fastest:
            dim0, dim1, fastest = inputs_per_output, num_outputs, it[0][1]
        else:
            dim0, dim1, fastest = num_outputs, inputs_per_output, it[nrd][1]
    else:
        on_fastest, fastest, dim0, dim1 = True, 1, 1, 1
    if fastest == 1:
        if on_fastest and dim0 > 128 and nrd == 1 and _VT0 >= _INPUT_VEC:
            dim0 //= _INPUT_VEC      # vectorize along the input
        elif not on_fastest:
            # get_output_vec_size: the input's base address (a block of the caching allocator is
            # 512-aligned, so only the view's offset counts), the output dim's size and every
            # other input stride must divide by the vector size
            output_vec = 4
            for v in [offset, it[nrd][0]] + [s for j, (_, s, _) in enumerate(it) if j != nrd]:
                while v % output_vec:
                    output_vec //= 2
            dim0 //= output_vec
    max_threads = _MAX_NUM_THREADS // output_vec
    d0 = _last_pow2(dim0) if dim0 < max_threads else max_threads
    d1 = _last_pow2(dim1) if dim1 < max_threads else max_threads
    bw = min(d0, _WARP)
    bh = min(d1, max_threads // bw)
    bw = min(d0, max_threads // bh)
    num_threads = bw * bh
    step_input = step_output = 1
    block_x_reduce = False
    if ndim == 0 or on_fastest:
        block_x_reduce = True
        step_input *= bw
    else:
        step_output *= bw
    values_per_thread = _div_up(inputs_per_output, step_input)
    split_y = values_per_thread >= bh * 16 or values_per_thread >= _MAX_VALUES_PER_THREAD
    if split_y:
        step_input *= bh
    else:
        step_output *= bh
    num_mp, threads_per_mp = props
    target_grid = num_mp * (threads_per_mp // num_threads)
    grid_x = _div_up(num_outputs // output_vec, step_output)
    values_per_thread = _div_up(inputs_per_output, step_input)
    if not (split_y and values_per_thread >= _MAX_VALUES_PER_THREAD and grid_x <= target_grid):
        return []
    ctas = max(min(_div_up(target_grid, grid_x),
                   _div_up(values_per_thread, _MIN_VALUES_PER_THREAD)),
               _div_up(values_per_thread, _MAX_VALUES_PER_THREAD))
    if ctas <= 1:
        return []
    size = acc * num_outputs * ctas
    if not block_x_reduce:
        size *= bw * output_vec
    return [size, 4 * grid_x]


#: LayerNorm's backward splits the gamma/beta gradients' column sums over thread blocks when
#: there are many rows and few columns (``LaunchGammaBetaBackwardCUDAKernel``,
#: aten/src/ATen/native/cuda/layer_norm_kernel.cu, torch 2.11): more rows than this, and
#: ``N / 32 < multiProcessorCount / 2``
_LN_SPLIT_ROWS = 64 * 1024
_LN_ROWS_PER_BLOCK = 32
_LN_MAX_GRID = 64 * 1024 // 2


def layer_norm_backward_geometry(args, as_int=int):
    """What :func:`layer_norm_backward_buffers` needs of a ``native_layer_norm_backward``
    call's arguments ``(grad_out, input, normalized_shape, mean, rstd, weight, bias,
    output_mask)``: ``(rows M, columns N, gradient element bytes, gradients)`` -- the
    gradients of gamma and beta the call computes (0-2) -- or None when it computes
    neither."""
    if len(args) < 8:
        return None
    x, shape, weight, bias, mask = args[1], args[2], args[5], args[6], args[7]
    grads = [t for t, want in ((weight, mask[1]), (bias, mask[2])) if want and t is not None]
    if not grads:
        return None
    n = 1
    for s in shape:
        n *= as_int(s)
    if n == 0:
        return None
    return (as_int(x.numel()) // n, n, grads[0].element_size(), len(grads))


def layer_norm_backward_buffers(geometry, hardware):
    """``(partial_bytes, per_gradient)``: the blocks the CUDA kernel takes for LayerNorm's
    gamma and beta gradients when it splits their column sums over thread blocks -- one
    ``[blocks_y, N]`` buffer per gradient (of the gradient's dtype), held through the call --
    and, for each gradient in turn, what its final ``blocks.sum(0)`` takes: its output (``N``
    elements: it replaces the gradient the call allocated) and that reduction's staging buffer
    and semaphores (:func:`reduction_buffers`). ``(0, [])`` when the call sums in one pass
    (``M <= 65536`` rows, or ``N / 32 >= multiProcessorCount / 2`` columns).

    The H200 history of swin_v2_t b24 bf16 superneurons (traces/h200/plans_history) shows each
    backward of its first stage's LayerNorms (M = 24 * 56 * 56 = 75,264 rows of N = 96,
    float32) taking two 903,168 B blocks (2,352 x 96 x 4) and, per gradient, 384 B, 466,944 B
    and 8 B:

    >>> layer_norm_backward_buffers((75264, 96, 4, 2), "h200")
    (903168, [384, 466944, 8])
    >>> layer_norm_backward_buffers((18816, 192, 4, 2), "h200")     # its second stage
    (0, [])
    """
    props = DEVICE_PROPERTIES.get(hardware)
    if geometry is None or props is None:
        return 0, []
    m, n, el, _ = geometry
    if not (m > _LN_SPLIT_ROWS and n // _WARP < props[0] // 2):
        return 0, []
    blocks_x = _div_up(n, _WARP)
    blocks_y = min(_LN_MAX_GRID // blocks_x, _div_up(m, _LN_ROWS_PER_BLOCK))
    acc = 8 if el == 8 else 4
    return blocks_y * n * el, [n * el] + reduction_buffers(
        ((blocks_y, n), (n, 1), 0, (0,), el, acc), hardware)
