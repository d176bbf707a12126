"""Model specs: ``torchvision:NAME``, ``torchvision:resnet:3,4,36,3``, ``snsim:NAME``,
``hf:NAME``, ``zoo:NAME`` (the torch twin of a zoo transformer: ``zoo:gpt2``,
``zoo:gpt:layers=4,width=256``, ``zoo:vit-b16``) or ``module:callable``.

A spec names how to build an ``nn.Module`` for classification training: image
classification, dense (per-pixel) classification -- torchvision's segmentation models, whose
output is ``{"out": N x C x H x W}`` and whose target is an ``N x H x W`` class map -- and video
classification (torchvision's video models: a sample is ``3 x T x H x W``). The same spec builds
the model for a real capture on a GPU and for a CPU-only prediction, so both see the same
module tree, parameter order and forward code.

``snsim:transformer_encoder`` and ``snsim:gpt`` are transformers written here with plain
``torch.nn`` (:func:`transformer_classes`); their input is a batch of int64 token ids of
length ``seq`` (``input_shape == (seq,)``), not an image.

``hf:NAME`` is a Hugging Face causal, masked or seq2seq language model (GPT-2, Llama; BERT,
RoBERTa; T5, BART), or the sequence or image classifier its config names (:func:`hf_head`),
built from its config with no weights
(:func:`hf_config`: the local Hugging Face cache, then the configs shipped in
``snsim/presets/hf``; never the network). Its input is token ids too, passed as both
``input_ids`` and ``labels`` so the model computes its own loss (``HFLanguageModel``).
Attention is ``attn_implementation="sdpa"`` on every device — what Hugging Face picks on CUDA —
so a CPU prediction takes CUDA's fused kernel like the ``snsim:`` models.

``module:callable`` returns an ``nn.Module``, or ``(module, make_input)`` where
``make_input(batch, device)`` returns the input batch of a model that does not take images.
"""
from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass, field

from ..errors import ConfigError, UnknownNameError

DEFAULT_INPUT_SHAPE = (3, 224, 224)
# torchvision models that need another input size
_INPUT_SHAPES = {"inception_v3": (3, 299, 299)}
# torchvision's segmentation reference trains on 480 x 480 crops
# (references/segmentation/presets.py: SegmentationPresetTrain(base_size=520, crop_size=480))
SEGMENTATION_INPUT_SHAPE = (3, 480, 480)
# torchvision's video reference trains on 16-frame clips (references/video_classification:
# --clip-len 16); each model's crop is its weights' own (112 for the R(2+1)D family, 224 for
# S3D, MViT and Swin3D)
VIDEO_CLIP_FRAMES = 16
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
    input_dtype: str = "float32"
    vocab_size: int = 0
    # make_input(batch, device) of a module:callable that returned (model, make_input)
    input_factory: object = field(default=None, compare=False)

    def build(self):
        """Construct the ``nn.Module`` (on the current default device)."""
        model = _build(self.text, self.input_shape)
        if isinstance(model, tuple):
            model, factory = model
            object.__setattr__(self, "input_factory", factory)
        return model

    @property
    def tokens(self):
        """True when the input is int64 token ids rather than a float tensor."""
        return self.input_dtype == "int64"

    def make_input(self, batch, device=None):
        """A random input batch: ``randn`` images or ``randint`` token ids."""
        import torch
        if self.input_factory is not None:
            return self.input_factory(batch, device)
        shape = (batch,) + tuple(self.input_shape)
        if self.tokens:
            return torch.randint(0, self.vocab_size, shape, device=device)
        return torch.randn(shape, device=device)


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


def split_sized(text):
    """``(model text, input shape or None)`` of ``MODEL@SIZE``, the diagnosis scripts' and
    probes' way to name a model at another input size (``x``-separated: ``hf:gpt2@512``,
    ``torchvision:resnet50@3x160x160``).

    >>> split_sized("torchvision:resnet50@3x160x160")
    ('torchvision:resnet50', (3, 160, 160))
    >>> split_sized("hf:gpt2")
    ('hf:gpt2', None)
    """
    text, _, size = text.partition("@")
    return text, tuple(int(v) for v in size.split("x")) if size else None


def resolve_sized(text):
    """:func:`resolve_model` of ``MODEL@SIZE`` (:func:`split_sized`)."""
    name, shape = split_sized(text)
    return resolve_model(name, input_shape=shape)


def resolve_model(spec, *, input_shape=None):
    """Resolve a model spec without building the model.

    Parameters
    ----------
    spec : str
        ``torchvision:NAME`` (any classification, segmentation or video model in
        ``torchvision.models``),
        ``torchvision:resnet:B1,B2,B3,B4`` (``ResNet(Bottleneck, [B1, B2, B3, B4])``) or
        ``snsim:transformer_encoder`` / ``snsim:gpt`` (token-id inputs),
        ``hf:NAME`` (a Hugging Face model from its config: token-id inputs, or images for an
        image classifier) or
        ``package.module:callable`` (a function or class returning an ``nn.Module``, or
        ``(module, make_input)``).
    input_shape : tuple of int, optional
        One sample's shape; default 3×224×224 (3×299×299 for inception_v3, 3×480×480 for
        segmentation, 3×16×crop×crop for video models), ``(seq,)`` for the
        ``snsim:`` transformers (default 512) and ``hf:`` models (default 512, at most the
        config's positions; an image classifier: channels x image_size x image_size), or the
        callable's ``input_shape`` attribute.

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
    if head == "zoo":
        return _zoo_twin(spec, rest, shape)
    if head == "snsim":
        if rest not in SNSIM_MODELS:
            raise UnknownNameError(f"snsim model {rest!r} is unknown; known: "
                                   f"{', '.join(sorted(SNSIM_MODELS))}")
        entry = SNSIM_MODELS[rest]
        if shape is not None and len(shape) != 1:
            raise ConfigError(f"model spec {spec!r} takes token ids: its input shape is (seq,), "
                              f"not {shape}")
        return ModelSpec(text=spec, name=rest, input_shape=shape or (entry["seq"],),
                         input_dtype="int64", vocab_size=entry["vocab_size"])
    if head == "hf":
        config = hf_config(rest)
        if hf_head(config) == "image_classification":
            side = int(getattr(config, "image_size", 224) or 224)
            default = (int(getattr(config, "num_channels", 3) or 3), side, side)
            if shape is not None and len(shape) != 3:
                raise ConfigError(f"model spec {spec!r} takes images: its input shape is "
                                  f"(channels, height, width), not {shape}")
            return ModelSpec(text=spec, name=rest.split("/")[-1], input_shape=shape or default)
        if shape is not None and len(shape) != 1:
            raise ConfigError(f"model spec {spec!r} takes token ids: its input shape is (seq,), "
                              f"not {shape}")
        seq = shape[0] if shape else min(512, _hf_positions(config) or 512)
        limit = _hf_positions(config)
        if limit and seq > limit:
            raise ConfigError(f"model spec {spec!r}: --seq (={seq}) exceeds the config's "
                              f"{limit} positions")
        return ModelSpec(text=spec, name=rest.split("/")[-1], input_shape=(seq,),
                         input_dtype="int64", vocab_size=int(config.vocab_size))
    if head == "torchvision":
        if rest.startswith("resnet:"):
            _check_image_shape(spec, shape, 3)
            blocks = _parse_blocks(rest.split(":", 1)[1], spec)
            name = "resnet_" + "-".join(map(str, blocks))
            return ModelSpec(text=spec, name=name, input_shape=shape or DEFAULT_INPUT_SHAPE)
        kind = torchvision_kind(rest, spec)
        if kind == "video":
            _check_image_shape(spec, shape, 4)
            return ModelSpec(text=spec, name=rest, input_shape=shape or _video_shape(rest))
        _check_image_shape(spec, shape, 3)
        default = SEGMENTATION_INPUT_SHAPE if kind == "segmentation" else \
            _INPUT_SHAPES.get(rest, DEFAULT_INPUT_SHAPE)
        return ModelSpec(text=spec, name=rest, input_shape=shape or default,
                         aux_loss_weight=_AUX_WEIGHT.get(rest, 0.4))
    fn = _import_callable(head, rest, spec)
    attr = getattr(fn, "input_shape", None)
    return ModelSpec(text=spec, name=rest.split(".")[-1],
                     input_shape=shape or (tuple(attr) if attr else DEFAULT_INPUT_SHAPE))


# torchvision's model families that train as classification (``torchvision.models`` itself is
# image classification); detection and optical flow take targets of another kind
_TV_FAMILIES = ("segmentation", "video")
_TV_UNSUPPORTED = {"detection": "detection models take lists of boxes as targets",
                   "optical_flow": "optical-flow models take image pairs and flow targets"}


def torchvision_kind(name, spec=None):
    """``"classification"``, ``"segmentation"`` or ``"video"``: the torchvision family of
    model ``name``.

    Raises
    ------
    UnknownNameError
        No family has it.
    ConfigError
        A detection or optical-flow model: no target of their kind is built here (a
        ``module:callable`` that returns ``(model, make_input)`` and a model computing its own
        loss can run them).
    """
    tv = _tv()
    if name in tv.models.list_models(module=tv.models):
        return "classification"
    for family in _TV_FAMILIES:
        if name in tv.models.list_models(module=getattr(tv.models, family)):
            return family
    for family, why in _TV_UNSUPPORTED.items():
        module = getattr(tv.models, family, None)
        if module is not None and name in tv.models.list_models(module=module):
            raise ConfigError(f"model spec {spec or name!r}: torchvision {family} models are not "
                              f"supported ({why}); wrap the model in a module:callable whose "
                              f"forward returns its 0-d loss")
    known = ", ".join(sorted(tv.models.list_models(module=tv.models))[:8])
    extra = "; ".join(f"{f}: " + ", ".join(sorted(tv.models.list_models(
        module=getattr(tv.models, f)))[:4]) for f in _TV_FAMILIES)
    raise UnknownNameError(f"torchvision model {name!r} is unknown; known: classification "
                           f"{known}, ...; {extra}, ...")


def _check_image_shape(spec, shape, dims):
    if shape is None or len(shape) == dims:
        return
    what = "(channels, height, width), e.g. --input-shape 3,224,224" if dims == 3 else \
        "(channels, frames, height, width), e.g. --input-shape 3,16,112,112"
    raise ConfigError(f"model spec {spec!r} takes {'images' if dims == 3 else 'video clips'}: "
                      f"its input shape is {what}, not {shape} (--seq is for token models)")


def _video_shape(name):
    """``(3, 16, crop, crop)``: the crop of the model's own weights' transforms."""
    tv = _tv()
    crop = tv.models.get_model_weights(name).DEFAULT.transforms().crop_size
    return (3, VIDEO_CLIP_FRAMES, int(crop[0]), int(crop[-1]))


def _zoo_twin(spec, name, shape):
    """The torch twin of a zoo transformer: ``snsim:gpt``'s classes at a ``gpt`` configuration,
    torchvision's ``VisionTransformer`` at a ``vit`` one (same parameters, same ops), Hugging
    Face's ``LlamaForCausalLM`` at a ``llama`` one and ``BertForSequenceClassification`` (two
    labels) at a ``bert`` one (same parameters; their q, k and v are three linear layers where
    the zoo packs one)."""
    from ..zoo import parse_transformer
    cfg = parse_transformer(name)
    if cfg is None:
        raise ConfigError(f"model spec {spec!r}: zoo twins exist for the zoo's transformers "
                          f"(gpt2, gpt:..., tinyllama-1.1b, llama:..., bert-base, bert:..., "
                          f"vit-b16, vit:...), not {name!r}")
    if cfg.kind in ("llama", "bert") and cfg.attention == "eager":
        raise ConfigError(f"model spec {spec!r}: the Hugging Face twin runs SDPA; "
                          f"attention=eager has a twin for gpt:... only")
    if cfg.kind == "llama" and cfg.dropout:
        raise ConfigError(f"model spec {spec!r}: the zoo's llama drops out its residual "
                          f"branches, Hugging Face's Llama has no such dropout: a llama with "
                          f"dropout has no twin")
    if cfg.kind in ("gpt", "vit") and cfg.n_kv_heads != cfg.heads:
        raise ConfigError(f"model spec {spec!r}: the {cfg.kind} twin has as many key/value "
                          f"heads as heads; grouped-query heads (kv_heads) have a twin for "
                          f"llama:... only")
    if cfg.kind == "vit":
        size = cfg.image
        if shape is not None and (len(shape) != 3 or shape[0] != 3 or shape[1] != shape[2]):
            raise ConfigError(f"model spec {spec!r}: input shape {shape} must be (3, S, S)")
        size = shape[1] if shape is not None else size
        if size % cfg.patch:
            raise ConfigError(f"model spec {spec!r}: input size {size} must be a multiple of "
                              f"the patch size {cfg.patch}")
        return ModelSpec(text=spec, name=name, input_shape=(3, size, size))
    if shape is not None and len(shape) != 1:
        raise ConfigError(f"model spec {spec!r} takes token ids: its input shape is (seq,), "
                          f"not {shape}")
    seq = shape[0] if shape is not None else cfg.seq
    if cfg.positions and seq > cfg.positions:
        raise ConfigError(f"model spec {spec!r}: sequence {seq} exceeds its {cfg.positions} "
                          f"learned positions")
    return ModelSpec(text=spec, name=name, input_shape=(seq,), input_dtype="int64",
                     vocab_size=cfg.vocab)


def _build_zoo_twin(name):
    from ..zoo import parse_transformer
    cfg = parse_transformer(name)
    if cfg.kind in ("llama", "bert"):
        return hf_classes().HFLanguageModel(_zoo_hf_config(cfg))
    if cfg.kind == "vit":
        from torchvision.models import VisionTransformer
        return VisionTransformer(image_size=cfg.image, patch_size=cfg.patch,
                                 num_layers=cfg.layers, num_heads=cfg.heads,
                                 hidden_dim=cfg.width, mlp_dim=cfg.hidden, dropout=cfg.dropout)
    return transformer_classes().GPT(vocab_size=cfg.vocab, d_model=cfg.width,
                                     n_layer=cfg.layers, n_head=cfg.heads,
                                     max_seq=cfg.positions, dropout=cfg.dropout,
                                     hidden=cfg.hidden,
                                     attention="eager" if cfg.attention == "eager" else "sdpa")


def _zoo_hf_config(cfg):
    """The Hugging Face config of a zoo ``llama`` or ``bert`` configuration ``cfg``."""
    tf = _transformers()
    if cfg.kind == "llama":
        return tf.LlamaConfig(
            vocab_size=cfg.vocab, hidden_size=cfg.width, intermediate_size=cfg.hidden,
            num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
            num_key_value_heads=cfg.n_kv_heads, max_position_embeddings=cfg.seq,
            tie_word_embeddings=False, architectures=["LlamaForCausalLM"])
    return tf.BertConfig(
        vocab_size=cfg.vocab, hidden_size=cfg.width, num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads, intermediate_size=cfg.hidden,
        max_position_embeddings=cfg.positions, type_vocab_size=cfg.token_types,
        hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
        num_labels=2, architectures=["BertForSequenceClassification"])


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


def _build(spec, input_shape=None):
    torch = _torch()
    head, _, rest = spec.partition(":")
    if head == "zoo":
        return _build_zoo_twin(rest)
    if head == "snsim":
        return SNSIM_MODELS[rest]["build"](seq=int(input_shape[0]) if input_shape else None)
    if head == "torchvision":
        tv = _tv()
        if rest.startswith("resnet:"):
            from torchvision.models.resnet import Bottleneck, ResNet
            return ResNet(Bottleneck, _parse_blocks(rest.split(":", 1)[1], spec))
        kwargs = {"weights": None}
        if rest in _AUX_WEIGHT:
            kwargs["init_weights"] = True
        if torchvision_kind(rest) == "segmentation":
            kwargs["weights_backbone"] = None   # its default downloads ImageNet weights
        return tv.models.get_model(rest, **kwargs)
    if head == "hf":
        return hf_classes().HFLanguageModel(hf_config(rest))
    model = _import_callable(head, rest, spec)()
    if isinstance(model, tuple):
        if len(model) != 2 or not isinstance(model[0], torch.nn.Module) \
                or not callable(model[1]):
            raise ConfigError(f"model spec {spec!r} returned a tuple; it must be "
                              f"(torch.nn.Module, make_input(batch, device))")
        return model
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"model spec {spec!r} returned {type(model).__name__}, not a "
                          f"torch.nn.Module")
    return model


# -- Hugging Face models (hf:NAME) ----------------------------------------------------------------
HF_CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "presets", "hf")


def _transformers():
    _torch()
    try:
        import transformers
    except ModuleNotFoundError:
        raise ConfigError("transformers is not installed; install snsim[hf] (pip install "
                          "transformers) to use hf: model specs") from None
    return transformers


# models whose learned position embeddings number a sequence's positions from the padding
# index on (transformers' create_position_ids_from_input_ids: padding_idx + 1 is the first
# token's), so pad_token_id + 1 of their max_position_embeddings rows hold no usable position:
# RoBERTa's 514 take sequences of 512
PADDED_POSITIONS = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert",
                              "data2vec-text", "roberta-prelayernorm", "longformer", "ibert",
                              "mpnet", "xmod"})


# config fields of models without a table of learned positions, which run any length: rotary
# embeddings (Llama, Qwen2, GPT-NeoX: computed per position) and T5's relative position buckets
# (its n_positions, 512 for t5-small, names no limit)
UNBOUNDED_POSITIONS = ("rope_parameters", "rope_scaling", "rope_theta", "rotary_pct",
                       "rotary_dim", "relative_attention_num_buckets")


def _hf_positions(config):
    """The longest sequence ``config``'s position embeddings take (0: no learned limit)."""
    if any(getattr(config, k, None) is not None for k in UNBOUNDED_POSITIONS):
        return 0
    n = int(getattr(config, "max_position_embeddings", None) or
            getattr(config, "n_positions", 0) or 0)
    if n and getattr(config, "model_type", "") in PADDED_POSITIONS:
        n -= int(getattr(config, "pad_token_id", 0) or 0) + 1
    return n


@functools.cache
def hf_config(name):
    """The ``transformers`` config of ``hf:NAME``, without the network: a model directory
    NAME's ``config.json``, else the local Hugging Face cache, else
    ``snsim/presets/hf/<last part of NAME>.json``.

    Raises
    ------
    ConfigError
        No local config for NAME (one line naming both places looked in), or a directory's or
        preset's config.json that is missing, not JSON, without a model_type or of a type
        transformers does not know (one line naming the file).
    """
    tf = _transformers()
    if not name:
        raise ConfigError("model spec 'hf:' needs a model name, e.g. hf:gpt2")
    if os.path.isdir(name):     # a model directory of one's own: its config.json, whole
        path = os.path.join(name, "config.json")
        if not os.path.exists(path):
            raise ConfigError(f"hf:{name}: the directory has no config.json")
        return _config_from_json(path)
    try:
        return tf.AutoConfig.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError):
        pass
    path = os.path.join(HF_CONFIG_DIR, name.split("/")[-1] + ".json")
    if not os.path.exists(path):
        shipped = sorted(f[:-5] for f in os.listdir(HF_CONFIG_DIR) if f.endswith(".json"))
        raise ConfigError(f"hf:{name}: no config in the local Hugging Face cache nor in "
                          f"{os.path.relpath(path)} (snsim does not download; shipped: "
                          f"{', '.join(shipped)})")
    return _config_from_json(path)


def _config_from_json(path):
    """The ``transformers`` config a ``config.json`` describes; one line naming the file and
    what is wrong with it otherwise."""
    import json
    tf = _transformers()
    try:
        with open(path) as f:
            d = json.load(f)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(d, dict) or "model_type" not in d:
        raise ConfigError(f"{path}: field model_type is missing")
    try:
        return tf.AutoConfig.for_model(**d)
    except ValueError:
        raise ConfigError(f"{path}: model_type {d['model_type']!r} is unknown to "
                          f"transformers {tf.__version__}") from None


# the head a Hugging Face architecture's class name says, by its ending (:func:`hf_head`)
HF_HEADS = (("ForCausalLM", "causal"), ("LMHeadModel", "causal"), ("ForMaskedLM", "masked"),
            ("ForConditionalGeneration", "seq2seq"),
            ("ForSequenceClassification", "classification"),
            ("ForTokenClassification", "token_classification"),
            ("ForQuestionAnswering", "question_answering"),
            ("ForImageClassification", "image_classification"))


def head_of_architecture(arch):
    """The head (:data:`HF_HEADS`) an architecture's class name (a config's ``architectures``
    entry) says; None when it names no head (``GPT2Model``, ``""``).

    Raises
    ------
    ConfigError
        Another ``...For...`` head (a multiple-choice one), refused rather than trained as
        another (one line).
    """
    for suffix, head in HF_HEADS:
        if arch.endswith(suffix):
            return head
    if "For" in arch:
        raise ConfigError(f"hf config names {arch}: snsim trains causal, masked and seq2seq "
                          f"language models, sequence, token and image classifiers and "
                          f"extractive question answering (architectures ending "
                          f"{', '.join(suffix for suffix, _ in HF_HEADS)})")
    return None


def hf_head(config):
    """The head snsim trains a Hugging Face config with: ``"causal"`` (next-token: GPT-2,
    Llama), ``"masked"`` (every token a target: BERT, RoBERTa), ``"seq2seq"`` (an
    encoder-decoder whose decoder predicts the labels: T5, BART), ``"classification"`` (a
    fine-tuned sequence classifier: one label per sequence), ``"token_classification"`` (one
    label per token: named-entity tagging), ``"question_answering"`` (an extractive reader: a
    start and an end position per sequence) or ``"image_classification"`` (an image model: ViT,
    Swin, ConvNeXt; its input is images). The config's first ``architectures`` entry says it
    (``...ForCausalLM`` / ``...LMHeadModel``, ``...ForMaskedLM``,
    ``...ForConditionalGeneration``, ``...ForSequenceClassification``,
    ``...ForTokenClassification``, ``...ForQuestionAnswering``, ``...ForImageClassification``;
    any other ``...For...`` head, a multiple-choice one say, is refused, not trained as
    another); without a head named, the model type's place
    in transformers' auto mappings: an encoder-decoder's seq2seq head, an encoder's masked one
    (BERT is in the causal mapping too, as a decoder: ``is_decoder`` picks it), else causal.

    Raises
    ------
    ConfigError
        Another head named, or a model type with none of the three language-model heads (one
        line naming it)."""
    tf = _transformers()
    head = head_of_architecture((getattr(config, "architectures", None) or [""])[0])
    if head is not None:
        return head
    from transformers.models.auto import modeling_auto as auto
    kind = config.model_type
    if getattr(config, "is_encoder_decoder", False) and \
            kind in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "seq2seq"
    if kind in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES and not getattr(config, "is_decoder",
                                                                     False):
        return "masked"
    if kind in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    if kind in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "seq2seq"
    raise ConfigError(f"hf model type {kind!r} has no causal, masked or seq2seq "
                      f"language-model head in transformers {tf.__version__}; snsim trains "
                      f"those three")


@functools.cache
def hf_classes():
    """``HFLanguageModel``: a Hugging Face language model built from a config with no weights
    (:func:`hf_head`: ``AutoModelForCausalLM``, ``AutoModelForMaskedLM``,
    ``AutoModelForSeq2SeqLM``, ``AutoModelForSequenceClassification``,
    ``AutoModelForTokenClassification``, ``AutoModelForQuestionAnswering`` or
    ``AutoModelForImageClassification``), whose
    ``forward(tokens)`` returns the model's own loss with ``labels=tokens``: next-token cross
    entropy for a causal model (Hugging Face shifts the labels; ``use_cache=False``, training
    keeps no KV cache), cross entropy at every position for a masked one (an encoder such as
    BERT: every token is a target, where pre-training masks 15 %; the logits, and so the
    memory, are the same), for a seq2seq one the encoder reads the tokens and the decoder
    predicts them (its inputs are the labels shifted right, as Hugging Face makes them: a
    sequence as long as the source), for a sequence classifier one class id (0) per
    sequence (a config's ``problem_type`` ``multi_label_classification``: a 0/1 target per
    label, its loss a binary cross entropy; ``regression``: a real target, mean squared
    error), for a token classifier one per token, and for question answering a start and
    an end position (0) per sequence (the mean of the two cross entropies).
    Weights are fp32 even where the config names another ``torch_dtype`` (SmolLM2: bfloat16),
    as for every other snsim model: ``--amp`` means autocast over fp32 master weights.

    Attention is Hugging Face's ``sdpa`` kernel under the name ``snsim_sdpa``, whose mask
    function returns no mask: our inputs have no padding and no packing, where Hugging Face's
    own ``sdpa`` mask also returns None on CUDA and SDPA runs ``is_causal=True`` (a fused
    kernel). Under ``FakeTensorMode`` Hugging Face cannot read the position ids, so its own mask
    would materialise the s×s mask and take the math path instead."""
    import copy
    import types

    import torch
    tf = _transformers()

    class HFLanguageModel(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            config = copy.deepcopy(config)
            self.head = hf_head(config)
            if self.head in ("causal", "seq2seq"):     # training keeps no KV cache
                config.use_cache = False
            auto = {"causal": tf.AutoModelForCausalLM, "masked": tf.AutoModelForMaskedLM,
                    "seq2seq": tf.AutoModelForSeq2SeqLM,
                    "classification": tf.AutoModelForSequenceClassification,
                    "token_classification": tf.AutoModelForTokenClassification,
                    "question_answering": tf.AutoModelForQuestionAnswering,
                    "image_classification": tf.AutoModelForImageClassification}[self.head]
            # fp32 weights whatever the config's torch_dtype (transformers 5 builds in it):
            # snsim trains fp32 master weights, under autocast with --amp (fp16's GradScaler
            # cannot unscale bf16 gradients at all). The keyword is dtype from 4.56 on.
            dtype = {hf_classes().dtype_keyword: torch.float32}
            try:
                self.model = auto.from_config(
                    config, attn_implementation=hf_classes().attn_implementation, **dtype)
            except ValueError as e:
                # a model without an SDPA path (T5: its relative position bias) runs its own
                # eager attention on CUDA too
                if "attention" not in str(e).lower():
                    raise
                self.model = auto.from_config(config, attn_implementation="eager", **dtype)

        def forward(self, tokens):
            if self.head == "masked":
                return self.model(input_ids=tokens, labels=tokens).loss
            if self.head in ("classification", "image_classification"):   # one class each
                labels = torch.zeros(tokens.shape[0], dtype=torch.long, device=tokens.device)
                kind = getattr(self.model.config, "problem_type", None)
                if kind == "multi_label_classification":     # a 0/1 target per label
                    labels = torch.zeros(tokens.shape[0], self.model.config.num_labels,
                                         device=tokens.device)
                elif kind == "regression":                   # real-valued targets
                    labels = labels.float()
                if self.head == "image_classification":
                    return self.model(pixel_values=tokens, labels=labels).loss
                return self.model(input_ids=tokens, labels=labels).loss
            if self.head == "token_classification":
                return self.model(input_ids=tokens, labels=torch.zeros_like(tokens)).loss
            if self.head == "question_answering":
                pos = torch.zeros(tokens.shape[0], dtype=torch.long, device=tokens.device)
                return self.model(input_ids=tokens, start_positions=pos,
                                  end_positions=pos).loss
            return self.model(input_ids=tokens, labels=tokens, use_cache=False).loss

    impl = "sdpa"
    if hasattr(tf, "AttentionMaskInterface"):     # transformers >= 4.53
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        def no_mask(*args, **kwargs):
            return None
        tf.AttentionInterface.register("snsim_sdpa", sdpa_attention_forward)
        tf.AttentionMaskInterface.register("snsim_sdpa", no_mask)
        impl = "snsim_sdpa"
    # older releases return no mask for unpadded inputs themselves (fake tensors included)
    major, minor = (int(p) for p in tf.__version__.split(".")[:2])
    dtype_keyword = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    return types.SimpleNamespace(HFLanguageModel=HFLanguageModel, attn_implementation=impl,
                                 dtype_keyword=dtype_keyword)


# -- transformers written with plain torch.nn (snsim:NAME) ----------------------------------------
SNSIM_MODELS = {
    "transformer_encoder": {"seq": 512, "vocab_size": 32000,
                            "build": lambda seq=None: transformer_classes().EncoderClassifier()},
    "gpt": {"seq": 512, "vocab_size": 50304,
            "build": lambda seq=None: transformer_classes().GPT(max_seq=max(1024, seq or 0))},
}


@functools.cache
def transformer_classes():
    """The ``snsim:`` transformer classes (defined on first use: models.py imports without torch).

    ``EncoderClassifier``
        Token embedding, ``nn.TransformerEncoder`` (6 post-LN ``nn.TransformerEncoderLayer``,
        d=512, 8 heads, FFN 2048, ``batch_first``, dropout 0.1 as PyTorch defaults), mean over
        the sequence, a linear classifier over 1000 classes.
    ``GPT``
        GPT-2 style decoder (12 pre-LN blocks, d=768, 12 heads, vocab 50304): token + learned
        position embeddings, causal ``F.scaled_dot_product_attention``, GELU MLP (4d), final
        LayerNorm, LM head tied to the token embedding. ``forward(tokens)`` returns the mean
        next-token cross entropy (a 0-d loss; the last position has no target).
    """
    import math
    import types

    import torch
    import torch.nn.functional as F
    from torch import nn

    class EncoderClassifier(nn.Module):
        def __init__(self, vocab_size=32000, d_model=512, nhead=8, num_layers=6,
                     dim_feedforward=2048, num_classes=1000):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, d_model)
            def layer():
                return nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward,
                                                  batch_first=True)
            self.encoder = nn.TransformerEncoder(layer(), 0, enable_nested_tensor=False)
            # fresh layers, not nn.TransformerEncoder's deep copies: a deep copy of a fake
            # parameter belongs to another FakeTensorMode
            self.encoder.layers = nn.ModuleList(layer() for _ in range(num_layers))
            self.encoder.num_layers = num_layers
            self.head = nn.Linear(d_model, num_classes)

        def forward(self, tokens):
            h = self.encoder(self.embed(tokens))
            return self.head(h.mean(dim=1))

    class CausalSelfAttention(nn.Module):
        def __init__(self, d_model, n_head, dropout, attention="sdpa"):
            super().__init__()
            self.n_head = n_head
            self.dropout = dropout
            self.attention = attention
            self.c_attn = nn.Linear(d_model, 3 * d_model)
            self.c_proj = nn.Linear(d_model, d_model)
            self.resid_drop = nn.Dropout(dropout)

        def forward(self, x):
            b, s, c = x.shape
            q, k, v = self.c_attn(x).split(c, dim=2)
            q, k, v = (t.view(b, s, self.n_head, c // self.n_head).transpose(1, 2)
                       for t in (q, k, v))
            if self.attention == "eager":   # nanoGPT's math path: the s x s scores exist
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
                att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
                y = att @ v
            else:
                y = F.scaled_dot_product_attention(
                    q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
            y = y.transpose(1, 2).contiguous().view(b, s, c)
            return self.resid_drop(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, d_model, dropout, hidden=None):
            super().__init__()
            hidden = hidden or 4 * d_model
            self.c_fc = nn.Linear(d_model, hidden)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(hidden, d_model)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            return self.drop(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, d_model, n_head, dropout, hidden=None, attention="sdpa"):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d_model)
            self.attn = CausalSelfAttention(d_model, n_head, dropout, attention)
            self.ln_2 = nn.LayerNorm(d_model)
            self.mlp = MLP(d_model, dropout, hidden)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size=50304, d_model=768, n_layer=12, n_head=12, max_seq=1024,
                     dropout=0.0, hidden=None, attention="sdpa"):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, d_model)
            self.wpe = nn.Embedding(max_seq, d_model)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.ModuleList(Block(d_model, n_head, dropout, hidden, attention)
                                        for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, tokens):
            b, s = tokens.shape
            pos = torch.arange(s, device=tokens.device)
            x = self.drop(self.wte(tokens) + self.wpe(pos))
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            targets = F.pad(tokens[:, 1:], (0, 1), value=-100)
            return F.cross_entropy(logits.view(b * s, -1), targets.reshape(-1),
                                   ignore_index=-100)

    return types.SimpleNamespace(EncoderClassifier=EncoderClassifier, GPT=GPT, Block=Block,
                                 CausalSelfAttention=CausalSelfAttention, MLP=MLP)
