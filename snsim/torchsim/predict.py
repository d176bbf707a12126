"""Predict a training step's memory and time on a CPU, without a GPU (``snsim predict``).

The model runs under ``FakeTensorMode`` — every tensor is metadata only, no kernel computes
anything — with the same :func:`~snsim.torchsim.record.train_step`, optimizer (foreach kernels,
as PyTorch picks on CUDA) and :class:`~snsim.torchsim.record.Recorder` as a real capture. The
recording gives the same program a capture would: the exact alloc/free order of the steady
iteration and of the warm-up before it. Two things a CPU cannot see are modelled:

* CUDA-only dispatch: ``F.dropout`` takes the fused ``native_dropout`` kernel (a 1-byte mask)
  on CUDA but a float mask on CPU; it is redirected to ``native_dropout`` here.
* memory no tensor owns (cuDNN/cuBLAS workspaces): from the hidden-allocation tables of
  committed captures of the same GPU (:mod:`~snsim.torchsim.hidden`), else none.

Times are modelled per op (:mod:`~snsim.torchsim.opcost`): interpolated from the preset's
kernel table where it has one (``snsim calibrate``), with the host issuing the ops as a second
resource; else a roofline. ``provenance["time_sources"]`` says how much came from each.
"""
from __future__ import annotations

import contextlib
import time

from ..errors import ConfigError
from .models import resolve_model


@contextlib.contextmanager
def cuda_like_dispatch():
    """Make CPU fake tensors take the ops CUDA tensors take (fused dropout)."""
    import torch
    import torch.nn.functional as F
    orig = F.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and not inplace and input.numel() > 0:
            return torch.native_dropout(input, p, True)[0]
        return orig(input, p, training, inplace)

    F.dropout = dropout
    try:
        yield
    finally:
        F.dropout = orig


@contextlib.contextmanager
def no_init():
    """Skip ``torch.nn.init`` while building a fake model: values do not matter, and some
    initialisers read data (``.item()``) that fake tensors do not have."""
    import torch.nn.init as init
    names = [n for n in dir(init) if n.endswith("_") and not n.startswith("_")
             and callable(getattr(init, n))]
    saved = {n: getattr(init, n) for n in names}

    def keep(tensor, *args, **kwargs):
        return tensor

    for n in names:
        setattr(init, n, keep)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(init, n, f)


def infer_num_classes(model, x):
    """Classes of a classification model: the last dimension of its logits (fake run)."""
    import torch
    from .record import split_outputs
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits, _ = split_outputs(model(x[:2]))
    finally:
        model.train(was)
    return int(logits.shape[-1]) if logits.dim() > 0 else 1


def record_fake(spec, batch, optimizer="sgd-momentum", *, iterations=3, transform=None):
    """Record ``iterations`` training iterations of ``spec`` under ``FakeTensorMode``.

    Parameters
    ----------
    spec : ModelSpec
    batch : int
    optimizer : str
    iterations : int
        The last one is the steady iteration; the ones before are warm-up.
    transform : callable, optional
        ``transform(model) -> model`` applied before training (an execution plan).

    Returns
    -------
    dict
        ``rec`` (the Recorder), ``static_names``, ``info``, ``stream``, ``model_params``.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from .record import (Instrument, Recorder, make_optimizer, optimizer_state, register_static,
                         train_step)

    with FakeTensorMode(), torch.device("cpu"), cuda_like_dispatch():
        try:
            with no_init():
                model = spec.build()
        except ConfigError:
            raise
        except Exception as e:
            raise ConfigError(f"model {spec.text!r} cannot be built: "
                              f"{_first_line(e)}") from None
        model.train()
        x = torch.randn((batch,) + tuple(spec.input_shape))
        try:
            n_classes = infer_num_classes(model, x)
        except Exception as e:
            raise ConfigError(f"model {spec.text!r} cannot be traced on input "
                              f"{(batch,) + tuple(spec.input_shape)}: {_first_line(e)}") from None
        y = torch.randint(0, n_classes, (batch,))
        if transform is not None:
            model = transform(model)
        opt = make_optimizer(optimizer, model.parameters())
        rec = Recorder(device_type="cpu")
        static_names = register_static(rec, model, x, y)
        param_names = {id(p): n for n, p in model.named_parameters()}
        inst = Instrument(model, rec)
        with rec.active():
            for it in range(iterations):
                rec.begin_iteration()
                with inst:
                    try:
                        train_step(model, opt, x, y, inst=inst,
                                   aux_loss_weight=spec.aux_loss_weight)
                    except Exception as e:
                        raise ConfigError(f"model {spec.text!r} cannot be trained under "
                                          f"FakeTensorMode: {_first_line(e)}") from None
                if it == 0:
                    for name, key, t in optimizer_state(opt, param_names):
                        if key == "step" and t.dim() == 0:
                            rec.exclude(t)   # a CPU scalar on CUDA too
                        else:
                            sid = rec.sid_of(t)
                            if sid is not None:
                                static_names[sid] = (name, "optimizer_state")
        n_params = sum(p.numel() for p in model.parameters())
    return _streams(rec, static_names, n_params)


def _first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _streams(rec, static_names, n_params):
    stream = []
    info = {}
    for i, (nbytes, ptr, name) in enumerate(rec.storages):
        info[i] = (nbytes, name)
    op_name = {}
    for m, kind, sid, op in rec.events:
        if kind == "a" and op >= 0:
            op_name[sid] = rec.ops[op][1] if op < len(rec.ops) else ""
    for sid, nm in op_name.items():
        info[sid] = (info[sid][0], nm)
    for m, kind, sid, op in rec.events:
        if sid not in rec.excluded:
            stream.append((m, kind, sid))
    return {"rec": rec, "static_names": static_names, "info": info, "stream": stream,
            "n_params": n_params}


def predict_program(model, batch, *, optimizer="sgd-momentum", gpu="h200", input_shape=None,
                    transform=None, hidden=True, hidden_exclude=()):
    """The trace ``program`` dict of a CPU-only prediction (modelled op times).

    Returns
    -------
    (dict, dict)
        The program and a provenance dict.
    """
    from ..hardware import load_hardware
    from .build import build_program
    from .opcost import op_times_s
    spec = resolve_model(model, input_shape=input_shape) if isinstance(model, str) else model
    if batch <= 0:
        raise ConfigError(f"--batch (={batch}) must be a positive integer")
    hw = load_hardware(gpu)
    wall = time.perf_counter()
    r = record_fake(spec, batch, optimizer, transform=transform)
    rec = r["rec"]
    stream, info = r["stream"], r["info"]
    notes = {}
    if hidden:
        from .hidden import add_hidden
        stream, info, notes = add_hidden(rec, stream, info, hw.name, batch=batch,
                                         exclude=hidden_exclude)
    time_report = {}
    times = op_times_s(rec.ops, hw, rec.marks, report=time_report)
    prog = build_program(marks=rec.marks, ops=rec.ops, stream=stream, info=info,
                         iteration=rec.iteration, static_names=r["static_names"],
                         op_times_s=times, name=spec.name, batch=batch, optimizer=optimizer,
                         hardware=hw.name, source="predict", saved=rec.saved)
    prog["notes"].update(notes)
    prov = {"kind": "modeled", "hardware": hw.name, "tool": "snsim predict", "model": spec.text,
            "batch": batch, "optimizer": optimizer, "input_shape": list(spec.input_shape),
            "parameters": r["n_params"], "record_wall_s": round(time.perf_counter() - wall, 3),
            "time_sources": time_report}
    try:
        import torch
        prov["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        pass
    return prog, prov


def predict(model, batch, *, optimizer="sgd-momentum", gpu="h200", input_shape=None,
            transform=None, hidden=True, hidden_exclude=()):
    """Predict peak allocated/reserved bytes and step time of one training iteration.

    Parameters
    ----------
    model : str or ModelSpec
        ``torchvision:resnet50``, ``torchvision:resnet:3,4,36,3`` or ``package.module:callable``.
    batch : int
    optimizer : str
    gpu : str
        Hardware preset for modelled times and hidden-allocation tables.
    hidden : bool
        Model workspaces from the captures' tables (:mod:`~snsim.torchsim.hidden`).
    hidden_exclude : iterable of str
        Capture file names whose tables are not used (leave-one-out comparisons).

    Returns
    -------
    dict
        ``peak_allocated_bytes``, ``peak_reserved_bytes``, ``peak_requested_bytes``,
        ``step_time_s`` and ``program`` (the trace program).
    """
    from ..captured import replay_capture
    from ..hardware import load_hardware
    prog, prov = predict_program(model, batch, optimizer=optimizer, gpu=gpu,
                                 input_shape=input_shape, transform=transform, hidden=hidden,
                                 hidden_exclude=hidden_exclude)
    hw = load_hardware(gpu)
    res = replay_capture(prog, hw)
    return {"network": prog["name"], "batch": batch, "optimizer": optimizer, "hardware": hw.name,
            "feasible": res.feasible, "budget_bytes": res.budget_bytes,
            "peak_requested_bytes": res.peak_ideal_bytes,
            "peak_allocated_bytes": res.peak_allocated_bytes,
            "peak_reserved_bytes": res.peak_reserved_bytes, "static_bytes": res.static_bytes,
            "step_time_s": res.step_time_s, "time_sources": prov["time_sources"],
            "program": prog, "provenance": prov}
