"""Mixed precision (``--amp bf16|fp16``) and the optimizer choice of a training step.

:class:`TrainSetup` names what a capture, a prediction or an execution trains with: the
optimizer, its implementation (``foreach`` or ``fused`` kernels) and the autocast dtype. It is
checked once, where the command line is read, with one line per rule broken.

On a GPU the step runs as PyTorch's AMP recipe does: ``torch.autocast("cuda", dtype)`` around
forward and loss, fp32 master weights (the parameters stay fp32; autocast casts them), and a
``torch.amp.GradScaler`` for fp16 (its scale, found-inf and growth-tracker buffers and its
unscale/inf-check kernels are part of the step).

On a CPU (``snsim predict`` under ``FakeTensorMode``) CUDA's autocast cannot run: the autograd
engine needs a CUDA device for CUDA tensors' backward. :func:`cuda_autocast_on_cpu` reproduces
it at the same place in the dispatcher — the Autocast dispatch key, above autograd — so the
casts are autograd ops, saved and freed exactly as CUDA's are: it registers, for the duration
of the region, Python kernels on the ``AutocastCPU`` key that apply **CUDA's** policy, read
from the installed torch's own lists (``ATen/autocast_mode.h``: ``AT_FORALL_LOWER_PRECISION_FP``,
``AT_FORALL_FP32``, ``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_PROMOTE`` and the ``norm``
redispatch), and CPU autocast's own kernels become pass-throughs. The weight-cast cache follows
``at::autocast::cached_cast``: a cast to the low dtype of an fp32 leaf that requires grad (not a
view) is made once per region and kept until the region ends; afterwards only the autograd
nodes that saved it keep it alive.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re

from ..errors import ConfigError

OPTIMIZERS = ("sgd", "sgd-momentum", "nesterov", "adam", "adamw")
OPTIMIZER_IMPLS = ("foreach", "fused")
AMP_DTYPES = ("bf16", "fp16")
#: ``--param-dtype``: the dtype the model trains in. ``fp32`` (the default) keeps fp32 weights
#: (with or without autocast); ``bf16`` and ``fp16`` are pure low-precision training as users
#: write it, ``model.to(torch.bfloat16)``: parameters, gradients, optimizer state and the input
#: batch in that dtype, no autocast, no GradScaler (it refuses fp16 gradients)
PARAM_DTYPES = ("fp32", "bf16", "fp16")
#: ``torch.set_float32_matmul_precision``'s settings: ``highest`` (torch's default) runs fp32
#: matmuls in fp32; ``high`` lets cuBLAS run them on TF32 tensor cores, as does ``medium`` on
#: CUDA (cuBLAS has no bf16 path for fp32 operands; ``torch.backends.cuda.matmul.allow_tf32``
#: reads True for both)
MATMUL_PRECISIONS = ("highest", "high", "medium")


@dataclasses.dataclass(frozen=True)
class TrainSetup:
    """What one training step trains with.

    Attributes
    ----------
    optimizer : str
        One of :data:`OPTIMIZERS`.
    optimizer_impl : str
        ``foreach`` (multi-tensor kernels, PyTorch's default on CUDA) or ``fused`` (one fused
        kernel per parameter group, device and dtype; ``fused=True`` of torch.optim).
    amp : str or None
        ``bf16`` or ``fp16`` autocast; None: fp32.
    skipped_steps : int
        fp16 only: the first optimizer steps GradScaler skips because the gradients overflowed
        at its initial scale (2**16; each skip halves it). A foreach optimizer makes its state
        (momentum, Adam's moments) at its first step taken, after the skipped iterations have
        filled the allocator's cache, so the reserved peak can be lower (VGG-19-BN b64 fp16
        recompute on the H200: 3 skipped, reserved 5.25 GiB, against 6.02 with none). Whether
        a run skips depends on its gradients' size at the start; None (the default) has a
        prediction estimate it (:func:`estimate_skipped_steps`), 0 for bf16 and fp32.
    matmul_precision : str
        ``torch.set_float32_matmul_precision`` for the step (:data:`MATMUL_PRECISIONS`):
        ``high`` or ``medium`` run fp32 matmuls (Linear, bmm, attention's math path) on
        TF32 tensor cores; ``highest`` (torch's default) in fp32. Convolutions follow
        ``torch.backends.cudnn.allow_tf32``, True by default, in every setting. Memory is
        the same; step time reads the kernel table's TF32 matmul rows.
    """

    optimizer: str = "sgd-momentum"
    optimizer_impl: str = "foreach"
    amp: str | None = None
    skipped_steps: int | None = None
    matmul_precision: str = "highest"
    param_dtype: str = "fp32"

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"--optimizer {self.optimizer!r} is unknown; known: "
                              f"{', '.join(OPTIMIZERS)}")
        if self.optimizer_impl not in OPTIMIZER_IMPLS:
            raise ConfigError(f"--optimizer-impl {self.optimizer_impl!r} is unknown; known: "
                              f"{', '.join(OPTIMIZER_IMPLS)}")
        if self.amp not in (None,) + AMP_DTYPES:
            raise ConfigError(f"--amp {self.amp!r} is unknown; known: none, "
                              f"{', '.join(AMP_DTYPES)}")
        if self.skipped_steps is not None and (
                isinstance(self.skipped_steps, bool) or not isinstance(self.skipped_steps, int)
                or not 0 <= self.skipped_steps <= MAX_SKIPPED_STEPS):
            raise ConfigError(f"--skipped-steps {self.skipped_steps!r} must be an integer from "
                              f"0 to {MAX_SKIPPED_STEPS}")
        if self.skipped_steps and self.amp != "fp16":
            raise ConfigError("--skipped-steps: only fp16's GradScaler skips optimizer steps "
                              "(use it with --amp fp16)")
        if self.matmul_precision not in MATMUL_PRECISIONS:
            raise ConfigError(f"--matmul-precision {self.matmul_precision!r} is unknown; "
                              f"known: {', '.join(MATMUL_PRECISIONS)}")
        if self.param_dtype not in PARAM_DTYPES:
            raise ConfigError(f"--param-dtype {self.param_dtype!r} is unknown; known: "
                              f"{', '.join(PARAM_DTYPES)}")
        if self.param_dtype != "fp32" and self.amp:
            raise ConfigError(f"--param-dtype {self.param_dtype} with --amp {self.amp}: "
                              f"autocast keeps fp32 master weights; use one of the two")

    @classmethod
    def from_precision_field(cls, optimizer, optimizer_impl, field):
        """From the diagnosis scripts' one precision field (``model:batch:opt:impl:amp``):
        ``none``, ``bf16`` or ``fp16`` (autocast), or ``purebf16``/``purefp16``
        (``--param-dtype``, no autocast).

        >>> TrainSetup.from_precision_field("adamw", "foreach", "purebf16").precision_label
        'pure bf16'
        """
        field = field or "none"
        pure = field.startswith("pure")
        return cls.parse(optimizer, optimizer_impl, "none" if pure else field,
                         param_dtype=field[len("pure"):] if pure else "fp32")

    @classmethod
    def parse(cls, optimizer="sgd-momentum", optimizer_impl="foreach", amp=None,
              skipped_steps=None, matmul_precision="highest", param_dtype="fp32"):
        """From command-line strings (``--amp none`` is fp32; ``--skipped-steps auto`` is
        None)."""
        amp = None if amp in (None, "", "none", "fp32") else amp
        return cls(optimizer, optimizer_impl, amp, skipped_steps,
                   matmul_precision or "highest", param_dtype or "fp32")

    @property
    def tf32_matmuls(self):
        """Whether fp32 matmuls run on TF32 tensor cores (:attr:`matmul_precision`)."""
        return self.matmul_precision != "highest"

    @property
    def dtype(self):
        """The autocast ``torch.dtype`` (None: fp32)."""
        import torch
        return {"bf16": torch.bfloat16, "fp16": torch.float16, None: None}[self.amp]

    @property
    def slug(self):
        """File-name suffix: empty for the default (sgd-momentum, foreach, fp32)."""
        parts = [] if self.optimizer == "sgd-momentum" else [self.optimizer]
        if self.optimizer_impl != "foreach":
            parts.append(self.optimizer_impl)
        if self.amp:
            parts.append(self.amp)
        if self.skipped_steps:
            parts.append(f"skip{self.skipped_steps}")
        if self.tf32_matmuls:
            parts.append(f"mm{self.matmul_precision}")
        if self.param_dtype != "fp32":
            parts.append(f"pure{self.param_dtype}")
        return "".join("_" + p for p in parts)

    def to_dict(self):
        d = {"optimizer": self.optimizer, "optimizer_impl": self.optimizer_impl,
             "amp": self.amp or "none"}
        if self.skipped_steps:
            d["skipped_steps"] = self.skipped_steps
        if self.tf32_matmuls:
            d["matmul_precision"] = self.matmul_precision
        if self.param_dtype != "fp32":
            d["param_dtype"] = self.param_dtype
        return d

    @property
    def precision_label(self):
        """What the step computes in, for titles: ``bf16 autocast``, ``pure bf16``, ``fp32``
        or ``fp32 (TF32 matmuls)``.

        >>> TrainSetup(param_dtype="bf16").precision_label
        'pure bf16'
        """
        if self.amp:
            return f"{self.amp} autocast"
        if self.param_dtype != "fp32":
            return f"pure {self.param_dtype}"
        return "fp32 (TF32 matmuls)" if self.tf32_matmuls else "fp32"

    @property
    def param_torch_dtype(self):
        """The parameters' ``torch.dtype`` (:attr:`param_dtype`)."""
        import torch
        return {"fp32": torch.float32, "bf16": torch.bfloat16,
                "fp16": torch.float16}[self.param_dtype]

    def cast_model(self, model):
        """``model`` (changed in place) in :attr:`param_dtype`, as ``model.to(dtype)`` casts
        it: every floating parameter and buffer; unchanged for fp32. Called where the model is
        built, before it moves to the GPU, so the GPU never holds its fp32 copy.

        Each tensor is replaced rather than swapped (``nn.Module.to`` swaps a fake tensor,
        which fails while the fake mode holds a reference to it), once per tensor, so that
        tied weights (a decoder's embedding and output layer) stay one tensor."""
        if self.param_dtype == "fp32":
            return model
        import torch
        dtype = self.param_torch_dtype
        done = {}

        def cast(t, param):
            if id(t) not in done:
                new = t.detach().to(dtype)
                done[id(t)] = (torch.nn.Parameter(new, requires_grad=t.requires_grad)
                               if param else new)
            return done[id(t)]

        with torch.no_grad():
            for m in model.modules():
                for table, param in ((m._parameters, True), (m._buffers, False)):
                    for key, t in table.items():
                        if t is not None and t.is_floating_point():
                            table[key] = cast(t, param)
        return model

    def make_input(self, spec, batch, device=None):
        """``spec``'s random input batch on ``device`` as a :attr:`param_dtype` model takes it:
        a floating batch made on the CPU and cast on its way to the device (the device never
        holds an fp32 copy), token ids (any non-floating input) as they are; for fp32,
        ``spec.make_input(batch, device)``. A ``module:callable``'s own ``make_input`` makes
        its batch on the device, and only a floating tensor it returns is cast there."""
        if self.param_dtype == "fp32":
            return spec.make_input(batch, device)
        import torch
        own = spec.input_factory is not None
        x = spec.make_input(batch, device if own else None)
        if not isinstance(x, torch.Tensor):
            return x
        if not x.is_floating_point():
            return x if own or device is None else x.to(device)
        return x.to(device=device, dtype=self.param_torch_dtype)

    def make_optimizer(self, params):
        """The torch optimizer (lr and decay as every snsim run uses them)."""
        import torch
        params = list(params)
        impl = {"foreach": True} if self.optimizer_impl == "foreach" else {"fused": True}
        if self.optimizer == "sgd":
            return torch.optim.SGD(params, lr=0.01, weight_decay=1e-4, **impl)
        if self.optimizer == "sgd-momentum":
            return torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4, **impl)
        if self.optimizer == "nesterov":
            return torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True,
                                   weight_decay=1e-4, **impl)
        if self.optimizer == "adam":
            return torch.optim.Adam(params, lr=1e-3, **impl)
        return torch.optim.AdamW(params, lr=1e-3, **impl)

    def grad_scaler(self, device_type):
        """A ``GradScaler`` for fp16 (None otherwise). On a CPU fake run it never skips a step
        (:class:`_NoOverflowScaler`): a prediction is of the steady step without overflow."""
        if self.amp != "fp16":
            return None
        import torch
        if device_type == "cuda":
            return torch.amp.GradScaler("cuda")
        return _no_overflow_scaler(device_type, self.skipped_steps or 0)

    def autocast(self, device_type):
        """A context factory for forward and loss: ``torch.autocast`` on the device (on a CPU,
        inside :meth:`step_scope`, it applies CUDA's policy); None for fp32."""
        if self.amp is None:
            return None
        import torch
        return functools.partial(torch.autocast, device_type, dtype=self.dtype)

    def step_scope(self, device_type):
        """A context factory for the whole training step, backward included: the step's
        :attr:`matmul_precision` (:func:`matmul_precision`; a CPU recording reads it to price
        fp32 matmuls as TF32), and on a CPU with amp, CUDA's autocast policy
        (:func:`cuda_autocast_on_cpu`), so that every autocast region in it — forward and
        loss, and the regions ``torch.utils.checkpoint`` re-enters to recompute a block in
        backward — casts as CUDA would. None where neither applies."""
        autocast = self.amp is not None and device_type != "cuda"
        if not autocast and not self.tf32_matmuls:
            return None
        return functools.partial(_step_scope, self.dtype if autocast else None,
                                 self.matmul_precision)


@contextlib.contextmanager
def matmul_precision(precision):
    """``torch.set_float32_matmul_precision(precision)`` for the duration, then the previous
    setting back."""
    import torch
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


@contextlib.contextmanager
def _step_scope(autocast_dtype, precision):
    with matmul_precision(precision), (
            cuda_autocast_on_cpu(autocast_dtype) if autocast_dtype is not None
            else contextlib.nullcontext()):
        yield


# 2**16 (GradScaler's initial scale) halved this often is below fp16's smallest subnormal: a
# step that still overflows has inf/NaN gradients at any scale, not a scale that is too high
MAX_SKIPPED_STEPS = 40


def warm_up(step, scaler, iters):
    """Run ``step()`` ``iters`` times, then on until the last one was not skipped by
    ``scaler`` (a CUDA ``GradScaler``; None: no fp16). Returns the number of skipped steps.

    A GradScaler starts at 2**16 and skips the optimizer step of every iteration whose
    gradients overflow, halving its scale; a large network's first fp16 iterations often do
    (the H200 run of resnext101_32x8d b32 skipped all 7 of the plan suite's iterations, so
    no momentum buffer was ever made: its measured peak was 355 MB, the buffers, below a
    steady step's). What is measured after the warm-up is the steady step a prediction
    models (optimizer state made, the step taken).

    Raises
    ------
    ConfigError
        ``MAX_SKIPPED_STEPS`` steps skipped: the gradients are not finite at any scale.
    """
    skipped = done = 0
    took = True
    while done < iters or not took:
        if skipped >= MAX_SKIPPED_STEPS:
            raise ConfigError(f"fp16: GradScaler skipped {skipped} optimizer steps (scale "
                              f"{scaler.get_scale():g}): the gradients are not finite at any "
                              f"scale")
        before = scaler.get_scale() if scaler is not None else 0.0
        step()
        done += 1
        took = scaler is None or scaler.get_scale() >= before
        skipped += not took
    return skipped


def skipped_since(scaler, scale_before):
    """Optimizer steps ``scaler`` skipped since its scale was ``scale_before`` (each skip
    halves it; it grows only after 2,000 clean steps). 0 without a scaler."""
    import math
    if scaler is None:
        return 0
    after = scaler.get_scale()
    return max(0, round(math.log2(scale_before / after))) if after < scale_before else 0


#: GradScaler's initial scale, and fp16's largest finite value
_INITIAL_SCALE = 2.0 ** 16
_FP16_MAX = 65504.0
#: the batch the estimate's fp32 step runs at (at most the run's own), and a token model's
#: sequence (one sequence of at most this many tokens). At batch 2 the largest entry rests on
#: two samples and its square-root scaling fell short (ResNeXt-50 b64: 20.2 at batch 2 scales
#: to 3.57, the batch-64 step's own is 4.54, batch 8's 12.5 scales to 4.42): over the 183
#: counted runs without Swin-V2, batch 8 estimates 163 exactly (batch 2: 154), every one
#: within one step (182), too low in 10 and too high in 10 (23 and 5), at twice the CPU
#: (median 1.2 s a model, at most 49 s; scripts/skipped_steps_check.py)
SKIP_PROBE_BATCH = 8
SKIP_PROBE_TOKENS = 128


def estimate_skipped_steps(spec, batch, probe_batch=SKIP_PROBE_BATCH, seed=0):
    """How many optimizer steps fp16's GradScaler will skip at the start of a run of ``spec``
    at ``batch``, and the largest scaled gradient it rests on: ``(steps, max_grad)``.

    GradScaler starts at 2**16 and skips every step whose scaled gradients hold an inf,
    halving its scale. A run's first steps see the same weights (nothing was updated) and
    here the same batch, so the gradients are the same each time, and the scale halves until
    the largest gradient times it fits fp16: ``ceil(log2(max|g| * 2**16 / 65504))`` steps.
    Two kinds of gradient must fit (:func:`_largest_gradients`, one real fp32 step on this CPU
    from freshly initialised, seeded weights and the input and targets the run makes):

    - the weights' gradients, which autocast makes in fp16 for a convolution or matmul;
    - every gradient that enters an fp16 kernel of the backward (a convolution's or matmul's
      grad_output): an inf there reaches the weights. Swin-V2's ``F.normalize`` of a window's
      zero padding rows passes ``grad / eps`` (eps 1e-12) back to its query-key-value matmul,
      which is why it skipped 26-28 steps on the H100 and H200.

    The step runs at ``min(batch, probe_batch)``, a token model's at one sequence of at most
    :data:`SKIP_PROBE_TOKENS` tokens (a step of a language model's full batch takes minutes on
    a CPU), and is scaled to the run. The loss is the mean over its terms (samples; a token
    model's tokens). A weight's gradient sums over them, and at initialisation their
    contributions are independent and of either sign, so its largest entry shrinks as one over
    the square root of their number: scaled by ``sqrt(probe terms / run terms)``. An
    activation's gradient belongs to one term, so it shrinks as one over their number. Measured
    on the H100 and H200 (``measured.skipped_warmup_steps``; docs/VALIDATION.md): VGG-16-BN b64
    2, VGG-19-BN b48 3, ResNet-50 b48 3, ResNet-101 b64 5, ResNet-152 b48 7, Inception-v3 b64
    6, Swin-V2-T b32 27, ResNet-34 and the language models 0.

    Raises
    ------
    ConfigError
        The fp32 step's gradients are not finite."""
    import math
    b = max(1, min(int(batch), int(probe_batch)))
    probe, terms = spec, (b, int(batch))
    if spec.tokens and len(spec.input_shape) == 1 and spec.input_factory is None:
        seq = int(spec.input_shape[0])
        b, short = 1, min(seq, SKIP_PROBE_TOKENS)
        probe, terms = dataclasses.replace(spec, input_shape=(short,)), (short, batch * seq)
    weights, activations = _largest_gradients(probe, b, seed)
    if not (math.isfinite(weights) and math.isfinite(activations)):
        raise ConfigError(f"--skipped-steps auto: {spec.text}'s fp32 gradients are not "
                          "finite; give the count (--skipped-steps N)")
    share = terms[0] / terms[1]
    top = max(weights * math.sqrt(share), activations * share)
    if top <= 0.0:
        return 0, top
    steps = math.ceil(math.log2(top * _INITIAL_SCALE / _FP16_MAX))
    return min(MAX_SKIPPED_STEPS, max(0, steps)), top


#: skipped iterations a recording runs at most: every skipped iteration makes the same
#: requests, and from the second on the cache they find is the one they leave, so the first
#: step taken finds the same cache after 3 as after 28 (VGG-19-BN b64 recompute: 1, 2 and 3
#: skipped give the same peaks, tests/test_amp.py)
RECORDED_SKIPS_MAX = 3


#: the backward's kernels that autocast runs in fp16 on a GPU (a convolution's and a matmul's
#: backward, attention's): every gradient they take must fit fp16 once scaled
_FP16_BACKWARD_KERNELS = frozenset({
    "mm", "bmm", "addmm", "baddbmm", "convolution_backward",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_flash_attention_backward"})


@functools.lru_cache(maxsize=8)
def _largest_gradients(spec, batch, seed):
    """``(weights, activations)``: the largest |gradient| of a weight, and of a tensor the
    backward made and handed to one of :data:`_FP16_BACKWARD_KERNELS`, in one fp32 training
    step of ``spec`` at ``batch`` on the CPU from seeded initial weights (kept: a batch search
    predicts the same model many times)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from .predict import infer_target_of
    from .record import compute_loss

    def storages(tree):
        return {t.untyped_storage().data_ptr() for t in tree_leaves(tree)
                if isinstance(t, torch.Tensor)}

    class _GradsIntoHalfKernels(TorchDispatchMode):
        """Tracks what the backward makes (an op's outputs that are not views of its inputs)
        and the largest of those a kernel of :data:`_FP16_BACKWARD_KERNELS` takes."""
        def __init__(self):
            super().__init__()
            self.made, self.top = set(), 0.0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            ins = storages((args, kwargs))
            if func.overloadpacket.__name__ in _FP16_BACKWARD_KERNELS:
                for t in tree_leaves((args, kwargs)):
                    if (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()
                            and t.untyped_storage().data_ptr() in self.made):
                        self.top = max(self.top, float(t.detach().abs().max()))
            self.made |= storages(out) - ins
            return out

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = spec.build()
        net.train()
        target = infer_target_of(net, spec.make_input(2))
        x = spec.make_input(batch)
        y = target.make(batch, "cpu")
        loss = compute_loss(net(x), y, spec.aux_loss_weight)
        with _GradsIntoHalfKernels() as grads:
            loss.backward()
    weights = max((float(p.grad.abs().max()) for p in net.parameters() if p.grad is not None),
                  default=0.0)
    return weights, grads.top


#: the most memory the estimate's fp32 step may take for weights and gradients
PROBE_MAX_BYTES = 8 << 30


@functools.lru_cache(maxsize=8)
def _probe_bytes(spec):
    """Bytes of ``spec``'s fp32 weights and gradients: the model built on the meta device, or
    where its constructor computes with tensors (torchvision's RegNets) on the CPU without
    parameter init. Kept, as :func:`_largest_gradients` is: a batch search asks again."""
    import torch
    try:
        with torch.device("meta"):
            net = spec.build()
    except Exception:       # a constructor that reads tensor values
        from .predict import no_init
        with no_init():
            net = spec.build()
    return 8 * sum(p.numel() for p in net.parameters())


def _probe_room_bytes():
    """What the estimate's step may take: half of this machine's free memory (Linux's
    available pages), at most :data:`PROBE_MAX_BYTES`."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):      # no such sysconf name here
        return PROBE_MAX_BYTES
    return min(PROBE_MAX_BYTES, free // 2)


def resolve_skipped_steps(setup, spec, batch):
    """``(setup, steps, source)``: ``setup`` with its :attr:`TrainSetup.skipped_steps` the
    skipped iterations to record (at most :data:`RECORDED_SKIPS_MAX`), the steps GradScaler
    skips, and where that came from: given, none (no fp16), or estimated
    (:func:`estimate_skipped_steps`)."""
    if setup.skipped_steps is not None:
        steps, source = setup.skipped_steps, "given"
    elif setup.amp != "fp16":
        steps, source = 0, "none (no GradScaler)"
    elif (need := _probe_bytes(spec)) > (room := _probe_room_bytes()):
        steps, source = 0, (f"not estimated: one fp32 step needs about {need / 2**30:.1f} GiB "
                            f"of this machine's memory for weights and gradients, more than "
                            f"{room / 2**30:.1f} GiB (half of what is free, at most "
                            f"{PROBE_MAX_BYTES / 2**30:.0f} GiB); none assumed, give the count "
                            f"with --skipped-steps N")
    else:
        steps, top = estimate_skipped_steps(spec, batch)
        source = (f"estimated: largest gradient {top:.3g} at batch {batch} (a smaller fp32 "
                  f"step on this CPU, scaled to the run's loss terms: estimate_skipped_steps)")
    recorded = min(steps, RECORDED_SKIPS_MAX)
    return dataclasses.replace(setup, skipped_steps=recorded), steps, source


def _no_overflow_scaler(device_type, skipped_steps=0):
    import torch

    from .record import record_host_read

    class _NoOverflowScaler(torch.amp.GradScaler):
        """GradScaler whose step does not read ``found_inf`` back (``.item()`` has no value
        on a fake tensor): the optimizer steps, as in a step without overflow, but for the
        first ``skipped_steps`` calls (:attr:`TrainSetup.skipped_steps`), which it skips as
        an overflow does. The read is recorded: on a GPU the host waits there for the
        backward to finish, before it issues the optimizer's kernels (a fused optimizer takes
        ``found_inf`` on the device and never comes here: it makes its state either way)."""

        to_skip = skipped_steps

        def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
            for found_inf in optimizer_state["found_inf_per_device"].values():
                record_host_read(found_inf)
            if self.to_skip:
                self.to_skip -= 1
                return None
            return optimizer.step(*args, **kwargs)

    return _NoOverflowScaler(device_type)


# -- CUDA's autocast policy, from the installed torch ---------------------------------------------
_LISTS = {"AT_FORALL_LOWER_PRECISION_FP": "lower", "AT_FORALL_FP32": "fp32",
          "AT_FORALL_FP32_SET_OPT_DTYPE": "fp32_set_opt_dtype", "AT_FORALL_PROMOTE": "promote"}


def autocast_header_path():
    import torch
    return os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "autocast_mode.h")


@functools.lru_cache(maxsize=None)
def cuda_autocast_policy():
    """``{"aten::op.overload": policy}`` of CUDA autocast, parsed from the installed torch's
    ``ATen/autocast_mode.h``; policies ``lower``, ``fp32``, ``fp32_set_opt_dtype``,
    ``promote``, ``fp32_append_dtype`` (``norm``)."""
    path = autocast_header_path()
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        raise ConfigError(f"{path}: not found; --amp on a CPU reads CUDA's autocast lists "
                          f"from the torch headers (install a torch wheel with include/)") \
            from None
    out = {}
    for macro, policy in _LISTS.items():
        m = re.search(r"#define " + macro + r"\(_\)(.*?)\n\s*\n", text, re.S)
        if m is None:
            raise ConfigError(f"{path}: macro {macro} not found; this torch's autocast lists "
                              f"cannot be read")
        for name, overload in re.findall(r"_\(\s*(\w+)\s*(?:,\s*(\w+))?\s*\)", m.group(1)):
            out[f"aten::{name}" + (f".{overload}" if overload else "")] = policy
    m = re.search(r"#define AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE\(_\)(.*?)\n\s*\n", text,
                  re.S)
    for overload in re.findall(r'"(norm\.\w+)"', m.group(1) if m else ""):
        out["aten::" + overload] = "fp32_append_dtype"
    out.update(_OUTSIDE_HEADER)
    return out


# CUDA autocast kernels registered in aten/src/ATen/autocast_mode.cpp (and cudnn/AutocastRNN.cpp)
# outside the header's lists: cuDNN's direct entry points run in the low dtype;
# binary_cross_entropy is banned ("unsafe to autocast": torch raises)
_OUTSIDE_HEADER = {"aten::cudnn_convolution": "lower",
                   "aten::cudnn_convolution_transpose": "lower",
                   "aten::_cudnn_rnn": "lower", "aten::binary_cross_entropy": "banned"}


def _eligible(t):
    """``at::autocast::is_eligible`` for a CUDA tensor: floating point, not fp64."""
    import torch
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


class _CastCache:
    """``at::autocast``'s cast cache: low-precision casts of fp32 leaves that require grad."""

    def __init__(self):
        self.casts = {}

    def cast(self, t, dtype):
        import torch
        if not _eligible(t) or t.dtype == dtype:
            return t
        if (dtype != torch.float32 and t.dtype == torch.float32 and t.requires_grad
                and t.is_leaf and not t._is_view()):
            hit = self.casts.get(id(t))
            if hit is None or hit[0] is not t:
                hit = (t, _nested_cast(t, dtype))
                self.casts[id(t)] = hit
            return hit[1]
        return _nested_cast(t, dtype)


def _nested_cast(t, dtype):
    """``t.to(dtype)`` as autocast issues it: from C++, inside the call of the op it casts for;
    the ops it records are marked so (:attr:`snsim.torchsim.record.Recorder.nested_ops`;
    ``scripts/host_by_family.py`` charges them to the op they feed, as the profiler does)."""
    from .record import active_recorder
    rec = active_recorder()
    n0 = len(rec.ops) if rec is not None else 0
    out = t.to(dtype)
    if rec is not None:
        rec.nested_ops.update(range(n0, len(rec.ops)))
    return out


def _cast_all(value, fn):
    import torch
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(fn(v) if isinstance(v, torch.Tensor) else v for v in value)
    return value


def _kernel(op, policy, cache, low_dtype):
    import torch
    from torch._C import DispatchKey, DispatchKeySet
    keys = DispatchKeySet(DispatchKey.AutocastCPU)
    schema_args = [a.name for a in op._schema.arguments]

    def below(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(keys):
            return op(*args, **kwargs)

    if policy is None:       # CPU autocast handles it, CUDA's does not: fall through, so
        return _fallthrough(op, below)   # the ops it calls see autocast, as on CUDA

    def cast_to(dtype):
        def run(*args, **kwargs):
            # autocast_mode.h's wrapper casts in a pack expansion, ``(*F)(cached_cast(...,
            # args)...)``, whose order C++ leaves to the compiler; GCC, which builds the Linux
            # CUDA wheels, evaluates it from the last argument to the first: the H200
            # histories (traces/h200/plans_history, swin_s b32 bf16) show every linear's bias
            # cast, then its weight, then its input, and a convolution's likewise
            f = functools.partial(cache.cast, dtype=dtype)
            kw = {k: _cast_all(kwargs[k], f) for k in reversed(list(kwargs))}
            cast = [_cast_all(a, f) for a in reversed(args)][::-1]
            return below(*cast, **{k: kw[k] for k in kwargs})
        return run

    if policy == "lower":
        return cast_to(low_dtype)
    if policy == "banned":
        def banned(*args, **kwargs):
            raise ConfigError("torch.nn.functional.binary_cross_entropy is unsafe to autocast "
                              "(CUDA autocast raises); use binary_cross_entropy_with_logits")
        return banned
    if policy == "fp32":
        return cast_to(torch.float32)
    if policy == "promote":
        def promote(*args, **kwargs):
            widest = low_dtype
            for a in list(args) + list(kwargs.values()):
                for t in (a if isinstance(a, (list, tuple)) else [a]):
                    if _eligible(t):
                        widest = torch.promote_types(widest, t.dtype)
            return cast_to(widest)(*args, **kwargs)
        return promote
    # fp32_set_opt_dtype / fp32_append_dtype: the kernel computes in fp32 and returns fp32;
    # the input is not copied (set_opt_dtype: only when the first argument is eligible)
    if policy == "fp32_set_opt_dtype":
        i = schema_args.index("dtype")
        fused = _HALF_TO_FLOAT.get(op.name())

        def set_dtype(*args, **kwargs):
            if not (args and _eligible(args[0])):
                return below(*args, **kwargs)
            if i < len(args):
                if args[i] is None:
                    args = args[:i] + (torch.float32,) + args[i + 1:]
            elif kwargs.get("dtype") is None:
                kwargs["dtype"] = torch.float32
            want = args[i] if i < len(args) else kwargs.get("dtype")
            if fused is not None and want == torch.float32 and _fake_half(args[0]):
                dim = args[1] if len(args) > 1 else kwargs["dim"]
                with torch._C._ExcludeDispatchKeyGuard(keys):
                    return getattr(torch.ops.aten, fused).default(args[0], dim, True)
            return below(*args, **kwargs)
        return set_dtype
    # norm.Scalar -> norm.ScalarOpt_dtype; norm.X (ScalarOpt_dim, names_ScalarOpt_dim, ...)
    # -> norm.X_dtype: the overload with a dtype, as autocast_mode.h's redispatch picks it
    # (torch releases list different overloads: any that has no dtype twin is cast to fp32)
    name = op._overloadname
    target = getattr(torch.ops.aten.norm, "ScalarOpt_dtype" if name == "Scalar"
                     else f"{name}_dtype", None)
    if target is None:
        return cast_to(torch.float32)

    def append_dtype(*args, **kwargs):
        if not (args and _eligible(args[0])):
            return below(*args, **kwargs)
        with torch._C._ExcludeDispatchKeyGuard(keys):
            return target(*args, **kwargs, dtype=torch.float32)
    return append_dtype


# softmax and log_softmax of an fp16 tensor into fp32 (autocast's fp32_set_opt_dtype): CUDA
# runs one kernel that reads fp16 and writes fp32 (aten/src/ATen/native/SoftMax.cpp,
# ``input_.is_cuda() && input_.scalar_type() == ScalarType::Half && dtype == Float`` ->
# ``_softmax(input, dim, half_to_float=true)``), where a CPU tensor is first copied to fp32;
# its backward hands an fp16 gradient back (``_softmax_backward_data(..., input_dtype=Half)``).
# bf16 takes the copy on CUDA too. The H200 history of MViT-V2-S b6 fp16
# (traces/h200/plans_history) has no fp32 copy of the attention before its softmax.
_HALF_TO_FLOAT = {"aten::softmax.int": "_softmax", "aten::log_softmax.int": "_log_softmax"}


def _fake_half(t):
    """An fp16 fake tensor (what ``snsim predict`` records: a real CPU tensor's kernel cannot
    convert half to float, the meta kernel a fake one runs can)."""
    from torch._subclasses.fake_tensor import FakeTensor
    import torch
    return isinstance(t, FakeTensor) and t.dtype == torch.float16


def _fallthrough(op, below):
    """CUDA's autocast fallthrough for an op only CPU autocast lists (``cross_entropy_loss``,
    ``cat``, ``stack``, ...): a composite op (``CompositeImplicitAutograd``) runs its
    decomposition with autocast still on, so the ops it calls get CUDA's policy as on CUDA;
    an op with its own kernels runs below the Autocast key."""
    import torch
    if not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
        return below

    def run(*args, **kwargs):
        return op.decompose(*args, **kwargs)
    return run


def _op(qualname):
    import torch
    name, _, overload = qualname[len("aten::"):].partition(".")
    packet = getattr(torch.ops.aten, name)
    return getattr(packet, overload or "default")


@contextlib.contextmanager
def cuda_autocast_on_cpu(dtype):
    """CUDA's autocast policy for CPU tensors (fake or real): see the module docstring.

    Every op with a CPU or a CUDA autocast kernel gets a Python kernel on ``AutocastCPU`` for
    the scope: CUDA's policy where CUDA has one, a pass-through otherwise. The kernels act only
    inside ``torch.autocast("cpu")`` regions (the key is set only there); the weight-cast cache
    is cleared where torch clears its own, when the outermost region exits
    (``torch.clear_autocast_cache``), so a region that ``torch.utils.checkpoint`` re-enters in
    backward casts the weights anew, as on CUDA.
    """
    import warnings
    import torch
    policy = cuda_autocast_policy()
    names = set(policy)
    # aten ops only: torchvision's own autocast kernels (nms, roi_align) are the same code for
    # CPU and CUDA and stay; its CUDA-only ones (deform_conv2d, ps_roi_*, roi_pool) are not
    # emulated
    names.update(n for n in torch._C._dispatch_get_all_op_names()
                 if n.startswith("aten::")
                 and torch._C._dispatch_has_kernel_for_dispatch_key(n, "AutocastCPU"))
    cache = _CastCache()
    _EMULATED.append((cache, dtype))
    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # "overriding a previously registered kernel"
            for qualname in sorted(names):
                try:
                    op = _op(qualname)
                except (AttributeError, RuntimeError):
                    continue      # listed in the header, not an op of this build
                lib.impl(op, _kernel(op, policy.get(qualname), cache, dtype), "AutocastCPU")
        clear = torch.clear_autocast_cache

        def clear_both():
            cache.casts.clear()
            clear()
        torch.clear_autocast_cache = clear_both
        try:
            yield
        finally:
            torch.clear_autocast_cache = clear
    finally:
        cache.casts.clear()
        lib._destroy()
        _EMULATED.pop()


#: the (cast cache, dtype) of each :func:`cuda_autocast_on_cpu` scope open, innermost last
_EMULATED = []


def emulated_autocast_cast():
    """Inside a :func:`cuda_autocast_on_cpu` scope's autocast region: a function casting one
    tensor as CUDA's autocast kernel casts an argument (the scope's cast cache, its dtype);
    else None. For Python code that stands in for an op with an autocast kernel and must
    cast as that kernel would (:func:`snsim.torchsim.predict.linear_bias_in_place`)."""
    import torch
    if not _EMULATED or not torch.is_autocast_enabled("cpu"):
        return None
    cache, dtype = _EMULATED[-1]
    return lambda t: cache.cast(t, dtype)


def as_setup(optimizer):
    """A :class:`TrainSetup` from a setup or an optimizer name (foreach kernels, fp32)."""
    return optimizer if isinstance(optimizer, TrainSetup) else TrainSetup(str(optimizer))
