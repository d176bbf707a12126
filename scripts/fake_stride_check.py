"""Where a fake run's strides are not a real step's: every aten op of one training step of a
model on the CPU, run for real and under FakeTensorMode, its outputs' strides compared op by
op (issue 8: what a CPU run does differently from CUDA must be modelled as CUDA does it).

A fake run takes each op's output strides from its meta kernel. Where a meta kernel strides an
output otherwise than the real kernels do, everything after it in the fake run can differ: a
gradient that is contiguous for real comes out permuted, and each layer after it copies it
(``native_layer_norm_backward``'s dX: the meta kernel gives it dY's strides, the CPU and CUDA
kernels make it contiguous; :func:`snsim.torchsim.record.cuda_output_layout`). The real CPU
kernels stride as the CUDA ones do for the ops a training step uses, so a difference here
names a meta kernel to check against CUDA's source.

    PYTHONPATH=. python scripts/fake_stride_check.py torchvision:swin_t:1 \\
        torchvision:convnext_tiny:2:bf16 --input-size 64

Each argument is ``MODEL:BATCH[:bf16]`` (bf16: under CPU autocast). Per model: the op counts,
the ops whose output strides differ (dims of size 1 left out: their strides mean nothing),
and the ops only one run made (aligned by name with difflib; views the fake run names
otherwise, ``detach`` and ``device`` calls are no ops of a step and left out). A real step on
the CPU computes: keep batches small (1-2) and ``--input-size`` as small as the model takes.
``--restride``: the fake run as snsim's recorder runs it, its outputs restrided
(:func:`snsim.torchsim.record.cuda_output_layout`) and views modified in place handed on as
``as_strided`` on their base (:func:`snsim.torchsim.predict.regenerated_views_as_strided`):
what is left is what the recorder still differs in.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import difflib
import sys

#: calls that are no op of a step (FakeTensorMode's own, or autograd's bookkeeping)
SKIP = frozenset({"device", "detach", "lift_fresh", "alias", "empty", "sym_size", "sym_stride"})


def strides_of(t):
    """``t``'s strides with those of its size-1 dims left out (any stride is right there)."""
    return tuple((n, s) for n, s in zip(t.shape, t.stride()) if n != 1)


def step_ops(spec, batch, *, fake, amp, size=None, restride=False):
    """``[(op name, output shapes and strides)]`` of one training step of ``spec``; with
    ``restride``, a fake run as snsim's recorder runs it (its outputs restrided, views
    modified in place handed on as ``as_strided``)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    from snsim.torchsim.predict import regenerated_views_as_strided
    from snsim.torchsim.record import cuda_output_layout, split_outputs

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seq = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func._overloadpacket.__name__
            if restride:
                out = cuda_output_layout(name, out, "cpu")
            if name not in SKIP:
                self.seq.append((name, tuple((tuple(o.shape), strides_of(o))
                                             for o in tree_leaves(out)
                                             if isinstance(o, torch.Tensor))))
            return out

    torch.manual_seed(0)
    model = spec.build()
    x = spec.make_input(batch)
    if size is not None and not spec.tokens:
        x = torch.randn(batch, x.shape[1], size, size)
    classes = spec.vocab_size or 1000
    labels = torch.randint(0, classes, x.shape if spec.tokens else (batch,))
    log = Log()

    def loss_of(out):
        out = getattr(out, "logits", out)
        out = out if isinstance(out, torch.Tensor) else split_outputs(out)[0]
        if out.dim() == 0:      # a model that returns its own loss (snsim's causal LMs)
            return out
        if out.dim() == 4:      # a segmentation model's class map: any loss of it will do
            return out.float().mean()
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]),
                                                 labels.reshape(-1) % out.shape[-1])

    if not fake:
        with log, torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = loss_of(model(x))
        with log:
            loss.backward()
        return log.seq
    mode = FakeTensorMode()
    state = {k: torch.nn.Parameter(mode.from_tensor(v.detach()), requires_grad=v.requires_grad)
             for k, v in model.named_parameters()}
    state.update({k: mode.from_tensor(v) for k, v in model.named_buffers()})
    x, labels = mode.from_tensor(x), mode.from_tensor(labels)
    views = regenerated_views_as_strided() if restride else contextlib.nullcontext()
    with mode, views:
        with log, torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = loss_of(torch.func.functional_call(model, state, (x,)))
        with log:
            loss.backward()
    return log.seq


def compare(real, fake):
    """``(ops whose strides differ: Counter, the first such pair per op, ops only one run
    made: Counter)``, the two runs' ops aligned by name."""
    diff, first, only = collections.Counter(), {}, collections.Counter()
    sm = difflib.SequenceMatcher(None, [a for a, _ in real], [a for a, _ in fake],
                                 autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != "equal":
            only.update(f"real:{a}" for a, _ in real[i1:i2])
            only.update(f"fake:{a}" for a, _ in fake[j1:j2])
            continue
        for (name, s_real), (_, s_fake) in zip(real[i1:i2], fake[j1:j2]):
            if s_real != s_fake:
                diff[name] += 1
                first.setdefault(name, (s_real, s_fake))
    return diff, first, only


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="MODEL:BATCH[:bf16]")
    ap.add_argument("--input-size", type=int, default=None,
                    help="an image model's input height and width (default: its own)")
    ap.add_argument("--restride", action="store_true",
                    help="the fake run as snsim's recorder runs it (outputs restrided, "
                         "views modified in place handed on as as_strided)")
    args = ap.parse_args(argv)
    from snsim.errors import ConfigError
    from snsim.torchsim.models import resolve_sized
    for text in args.models:
        amp = text.endswith(":bf16")
        parts = (text[:-len(":bf16")] if amp else text).rsplit(":", 1)
        try:
            model, batch = parts[0], int(parts[1])
            spec = resolve_sized(model)
        except (IndexError, ValueError, ConfigError) as e:
            print(f"{text}: expected MODEL:BATCH[:bf16] ({e})", file=sys.stderr)
            return 2
        real = step_ops(spec, batch, fake=False, amp=amp, size=args.input_size)
        fake = step_ops(spec, batch, fake=True, amp=amp, size=args.input_size,
                        restride=args.restride)
        diff, first, only = compare(real, fake)
        print(f"{text}: {len(real)} ops real, {len(fake)} fake; strides differ: "
              f"{dict(diff.most_common(10)) or 'none'}; one run only: "
              f"{dict(only.most_common(8)) or 'none'}")
        for name, (s_real, s_fake) in first.items():
            print(f"    {name}: real {s_real[:2]} fake {s_fake[:2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
