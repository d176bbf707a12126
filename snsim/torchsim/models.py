"""Model specs: ``torchvision:NAME``, ``torchvision:resnet:3,4,36,3`` or ``module:callable``.

A spec names how to build an ``nn.Module`` for classification training. The same spec builds
the model for a real capture on a GPU and for a CPU-only prediction, so both see the same
module tree, parameter order and forward code.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import ConfigError, UnknownNameError

DEFAULT_INPUT_SHAPE = (3, 224, 224)
# torchvision models that need another input size
_INPUT_SHAPES = {"inception_v3": (3, 299, 299)}
# torchvision models whose training forward returns auxiliary logits (weights of their losses)
_AUX_WEIGHT = {"inception_v3": 0.4, "googlenet": 0.3}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """A resolved model spec.

    Parameters
    ----------
    text : str
        The spec as given.
    name : str
        A short name for files and tables (``resnet50``, ``resnet_3-16-62-3``, ``make_net``).
    input_shape : tuple of int
        One sample's shape, without the batch dimension.
    aux_loss_weight : float
        Weight of each auxiliary output's cross entropy (Inception, GoogLeNet).
    """

    text: str
    name: str
    input_shape: tuple
    aux_loss_weight: float = 0.4

    def build(self):
        """Construct the ``nn.Module`` (on the current default device)."""
        return _build(self.text)


def _torch():
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        raise ConfigError("PyTorch is not installed; install snsim[torch] (pip install torch "
                          "torchvision) to capture, predict or execute models") from None
    return torch


def _tv():
    _torch()
    try:
        import torchvision
    except ModuleNotFoundError:
        raise ConfigError("torchvision is not installed; pip install torchvision to use "
                          "torchvision: model specs") from None
    return torchvision


def _parse_blocks(text, spec):
    try:
        blocks = [int(b) for b in text.split(",")]
    except ValueError:
        blocks = []
    if len(blocks) != 4 or min(blocks) < 1:
        raise ConfigError(f"model spec {spec!r}: resnet blocks must be 4 positive integers, e.g. "
                          f"torchvision:resnet:3,4,36,3")
    return blocks


def resolve_model(spec, *, input_shape=None):
    """Resolve a model spec without building the model.

    Parameters
    ----------
    spec : str
        ``torchvision:NAME`` (any classification model in ``torchvision.models``),
        ``torchvision:resnet:B1,B2,B3,B4`` (``ResNet(Bottleneck, [B1, B2, B3, B4])``) or
        ``package.module:callable`` (a function or class returning an ``nn.Module``).
    input_shape : tuple of int, optional
        One sample's shape; default 3×224×224 (3×299×299 for inception_v3), or the callable's
        ``input_shape`` attribute.

    Returns
    -------
    ModelSpec

    Raises
    ------
    UnknownNameError
        The torchvision model, module or callable does not exist.
    ConfigError
        The spec is malformed.

    Examples
    --------
    >>> resolve_model("torchvision:resnet:3,16,62,3").name
    'resnet_3-16-62-3'
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigError(f"model spec {spec!r} must look like torchvision:resnet50, "
                          f"torchvision:resnet:3,4,36,3 or package.module:callable")
    head, _, rest = spec.partition(":")
    shape = tuple(int(v) for v in input_shape) if input_shape else None
    if head == "torchvision":
        if rest.startswith("resnet:"):
            blocks = _parse_blocks(rest.split(":", 1)[1], spec)
            name = "resnet_" + "-".join(map(str, blocks))
            return ModelSpec(text=spec, name=name, input_shape=shape or DEFAULT_INPUT_SHAPE)
        tv = _tv()
        known = tv.models.list_models(module=tv.models)
        if rest not in known:
            raise UnknownNameError(f"torchvision model {rest!r} is unknown; known classification "
                                   f"models include {', '.join(sorted(known)[:12])}, ...")
        return ModelSpec(text=spec, name=rest,
                         input_shape=shape or _INPUT_SHAPES.get(rest, DEFAULT_INPUT_SHAPE),
                         aux_loss_weight=_AUX_WEIGHT.get(rest, 0.4))
    fn = _import_callable(head, rest, spec)
    attr = getattr(fn, "input_shape", None)
    return ModelSpec(text=spec, name=rest.split(".")[-1],
                     input_shape=shape or (tuple(attr) if attr else DEFAULT_INPUT_SHAPE))


def _import_callable(module, attr, spec):
    if not module or not attr:
        raise ConfigError(f"model spec {spec!r} must look like package.module:callable")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise UnknownNameError(f"model spec {spec!r}: cannot import module {module!r} "
                               f"({e})") from None
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UnknownNameError(f"model spec {spec!r}: module {module!r} has no callable "
                                   f"{attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"model spec {spec!r}: {attr!r} is not callable")
    return obj


def _build(spec):
    torch = _torch()
    head, _, rest = spec.partition(":")
    if head == "torchvision":
        tv = _tv()
        if rest.startswith("resnet:"):
            from torchvision.models.resnet import Bottleneck, ResNet
            return ResNet(Bottleneck, _parse_blocks(rest.split(":", 1)[1], spec))
        kwargs = {"weights": None}
        if rest in _AUX_WEIGHT:
            kwargs["init_weights"] = True
        return tv.models.get_model(rest, **kwargs)
    model = _import_callable(head, rest, spec)()
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"model spec {spec!r} returned {type(model).__name__}, not a "
                          f"torch.nn.Module")
    return model
