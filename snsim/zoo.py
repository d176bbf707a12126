"""The network zoo, built by code (SPEC §8).

Two variants: ``"torchvision"`` (default, 224 px, torchvision topology; parameter counts equal
torchvision's) and ``"release"`` (SuperNeurons' release definitions at 227 px: AlexNet with LRN,
ResNet v1 with the stride on the first 1x1 and an unpadded stem pool).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import checks
from .errors import ConfigError, UnknownNameError
from .graph import ATTENTION_KERNELS, GraphBuilder

RESNET_BLOCKS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
    152: ("bottleneck", (3, 8, 36, 3)),
    # the SuperNeurons release's very deep networks
    256: ("bottleneck", (3, 16, 62, 3)),
    512: ("bottleneck", (6, 32, 124, 6)),
    1024: ("bottleneck", (12, 64, 248, 12)),
    2500: ("bottleneck", (6, 32, 788, 6)),
}
VGG_CONVS = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}
DENSENET_BLOCKS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}
VARIANTS = ("torchvision", "release")


# -- building blocks ----------------------------------------------------------------------
def _conv_bn_relu(b, x, out, kernel, stride=1, pad=0, *, relu=True, name="", act="relu"):
    x = b.conv(x, out, kernel, stride, pad, bias=False, name=name + "conv")
    x = b.bn(x, name=name + "bn")
    return b.act(x, act, name=name + "relu") if relu else x


def _residual_join(b, fork, short, main):
    """JOIN(sum) of a block's shortcut and main branch, then ReLU.

    An identity shortcut goes on the fork's ``next[0]``, as in the release, so the gradient flows
    in place ReLU -> JOIN (input 0) -> FORK (SPEC §2.3).
    """
    j = b.join([short, main], name="join")
    if short == fork:
        b.order_consumers(fork, [j, next(v for v in b.G.successors(fork) if v != j)])
    return b.relu(j, name="relu")


def lenet(*, batch, input_size=28, num_classes=10, variant="torchvision", twin=False):
    """LeNet (Caffe's MNIST variant): conv20-pool-conv50-pool-fc500-relu-fc10."""
    b = GraphBuilder("lenet", batch=batch, input_shape=(1, input_size, input_size))
    x = b.data()
    x = b.pool(b.conv(x, 20, 5, name="conv1"), 2, 2, name="pool1")
    x = b.pool(b.conv(x, 50, 5, name="conv2"), 2, 2, name="pool2")
    x = b.relu(b.fc(x, 500, name="fc1"), name="relu1")
    return b.finish(b.softmax(b.fc(x, num_classes, name="fc2")))


def alexnet(*, batch, input_size=None, num_classes=1000, variant="torchvision",
            twin=False):
    """AlexNet: torchvision's (64/192/384/256/256, no LRN) or the release's (96/256/384/384/256, LRN)."""
    release = variant == "release"
    size = input_size or (227 if release else 224)
    b = GraphBuilder("alexnet", batch=batch, input_shape=(3, size, size))
    x = b.data()
    if release:
        spec = [(96, 11, 4, 0, True, True), (256, 5, 1, 2, True, True), (384, 3, 1, 1, False, False),
                (384, 3, 1, 1, False, False), (256, 3, 1, 1, False, True)]
    else:
        spec = [(64, 11, 4, 2, False, True), (192, 5, 1, 2, False, True), (384, 3, 1, 1, False, False),
                (256, 3, 1, 1, False, False), (256, 3, 1, 1, False, True)]
    for i, (out, k, s, p, lrn, pool) in enumerate(spec, 1):
        x = b.relu(b.conv(x, out, k, s, p, name=f"conv{i}"), name=f"relu{i}")
        if lrn:
            x = b.lrn(x, 5, 1e-4, 0.75, 1.0, name=f"lrn{i}")
        if pool:
            x = b.pool(x, 3, 2, name=f"pool{i}")
    if b.shape(x)[2:] != (6, 6) or (twin and not release):
        if release:
            raise ConfigError(f"alexnet (release): input_size {size} gives {b.shape(x)[2:]} "
                              f"feature maps; its classifier needs 6x6 (use 227)")
        x = b.adaptive_pool(x, 6, name="avgpool")   # torchvision's AdaptiveAvgPool2d((6, 6))
    for i in (6, 7):
        if not release:
            x = b.dropout(x, 0.5, name=f"drop{i}")
        x = b.relu(b.fc(x, 4096, name=f"fc{i}"), name=f"relu{i}")
        if release:
            x = b.dropout(x, 0.5, name=f"drop{i}")
    return b.finish(b.softmax(b.fc(x, num_classes, name="fc8")))


def vgg(depth=None, *, batch, input_size=None, num_classes=1000, variant="torchvision",
        convs=None, twin=False):
    """VGG-11/13/16/19 (configuration A/B/D/E, no BN), 3x3 convs with bias, FC 4096-4096-classes.

    ``convs`` gives any number of 3x3 convs per stage (five stages); ``depth`` names a standard
    configuration.
    """
    size = input_size or (227 if variant == "release" else 224)
    convs = tuple(convs) if convs is not None else VGG_CONVS[depth]
    depth = sum(convs) + 3
    b = GraphBuilder(f"vgg{depth}", batch=batch, input_shape=(3, size, size))
    x = b.data()
    for stage, (n, width) in enumerate(zip(convs, (64, 128, 256, 512, 512)), 1):
        for i in range(1, n + 1):
            x = b.relu(b.conv(x, width, 3, 1, 1, name=f"conv{stage}_{i}"), name=f"relu{stage}_{i}")
        x = b.pool(x, 2, 2, name=f"pool{stage}")
    if b.shape(x)[2:] != (7, 7) or twin:
        x = b.adaptive_pool(x, 7, name="avgpool")   # torchvision's AdaptiveAvgPool2d((7, 7))
    for i in (6, 7):
        x = b.dropout(b.relu(b.fc(x, 4096, name=f"fc{i}"), name=f"relu{i}"), 0.5, name=f"drop{i}")
    return b.finish(b.softmax(b.fc(x, num_classes, name="fc8")))


def resnet(blocks, *, batch, input_size=None, num_classes=1000, kind="bottleneck",
           variant="torchvision", name=None, twin=False):
    """ResNet with any blocks-per-stage tuple (SPEC §8).

    Each block is FORK -> shortcut on ``next[0]`` (identity, or conv1x1+BN projection) and the
    main branch on ``next[1]`` -> JOIN(sum) -> ReLU, as in the release.
    """
    release = variant == "release"
    size = input_size or (227 if release else 224)
    blocks = tuple(int(n) for n in blocks)
    if len(blocks) != 4 or min(blocks) < 1:
        raise ConfigError(f"resnet blocks {blocks} must be four positive integers, e.g. (3,4,6,3)")
    if name is None:
        depth = (3 if kind == "bottleneck" else 2) * sum(blocks) + 2
        name = f"resnet{depth}"
    b = GraphBuilder(name, batch=batch, input_shape=(3, size, size))
    x = b.data()
    x = _conv_bn_relu(b, x, 64, 7, 2, 3, name="stem.")
    x = b.pool(x, 3, 2, 0 if release else 1, name="stem.pool")
    expansion = 4 if kind == "bottleneck" else 1
    cin = 64
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512)), 1):
        for i in range(n):
            b.scope(f"layer{stage}.{i}.")
            stride = 2 if (i == 0 and stage > 1) else 1
            cout = width * expansion
            f = b.fork(x, name="fork")
            if stride != 1 or cin != cout:
                short = _conv_bn_relu(b, f, cout, 1, stride, relu=False, name="downsample.")
            else:
                short = f
            if kind == "bottleneck":
                # release: stride on the first 1x1 (v1); torchvision: on the 3x3 (v1.5)
                s1, s2 = (stride, 1) if release else (1, stride)
                y = _conv_bn_relu(b, f, width, 1, s1, name="a.")
                y = _conv_bn_relu(b, y, width, 3, s2, 1, name="b.")
                y = _conv_bn_relu(b, y, cout, 1, relu=False, name="c.")
            else:
                y = _conv_bn_relu(b, f, width, 3, stride, 1, name="a.")
                y = _conv_bn_relu(b, y, cout, 3, 1, 1, relu=False, name="b.")
            x = _residual_join(b, f, short, y)
            cin = cout
    b.scope("")
    x = b.global_pool(x, name="avgpool")
    return b.finish(b.softmax(b.fc(x, num_classes, name="fc")))


def cifar_resnet(n=5, *, batch, input_size=32, num_classes=10, variant="torchvision",
                 twin=False):
    """CIFAR ResNet-(6n+2) of He et al.: 16/32/64 channels, option-A (pool + PADDING) shortcuts."""
    b = GraphBuilder(f"cifar_resnet{6 * n + 2}", batch=batch, input_shape=(3, input_size, input_size))
    x = _conv_bn_relu(b, b.data(), 16, 3, 1, 1, name="stem.")
    cin = 16
    for stage, width in enumerate((16, 32, 64), 1):
        for i in range(n):
            b.scope(f"layer{stage}.{i}.")
            stride = 2 if (i == 0 and stage > 1) else 1
            f = b.fork(x, name="fork")
            if stride != 1:
                short = b.pool(f, 1, 2, mode="avg", name="subsample")
                short = b.padding(short, (width - cin) // 2, name="pad")
            else:
                short = f
            y = _conv_bn_relu(b, f, width, 3, stride, 1, name="a.")
            y = _conv_bn_relu(b, y, width, 3, 1, 1, relu=False, name="b.")
            x = _residual_join(b, f, short, y)
            cin = width
    b.scope("")
    x = b.global_pool(x, name="avgpool")
    return b.finish(b.softmax(b.fc(x, num_classes, name="fc")))


def densenet(depth=None, *, batch, input_size=None, num_classes=1000, growth=32, bn_size=4,
             variant="torchvision", blocks=None, twin=False):
    """DenseNet-121/169/201 (torchvision, naive concatenation: quadratic activation memory).

    Each dense layer reads CONCAT(all earlier features of its block); an output used by many
    later concats is a plain fan-out (no FORK copies), as in PyTorch. ``blocks`` gives any
    layers per dense block; ``depth`` names a standard configuration.
    """
    size = input_size or 224
    blocks = tuple(blocks) if blocks is not None else DENSENET_BLOCKS[depth]
    depth = 2 * sum(blocks) + len(blocks) + 1
    b = GraphBuilder(f"densenet{depth}", batch=batch, input_shape=(3, size, size))
    x = _conv_bn_relu(b, b.data(), 64, 7, 2, 3, name="features.0.")
    x = b.pool(x, 3, 2, 1, name="features.pool0")
    for bi, n in enumerate(blocks, 1):
        feats = [x]
        for li in range(1, n + 1):
            b.scope(f"denseblock{bi}.layer{li}.")
            # torchvision concatenates even a single input (a copy)
            inp = feats[0] if len(feats) == 1 and not twin else b.concat(feats, name="cat")
            y = b.relu(b.bn(inp, name="norm1"), name="relu1")
            y = b.conv(y, bn_size * growth, 1, bias=False, name="conv1")
            y = b.relu(b.bn(y, name="norm2"), name="relu2")
            feats.append(b.conv(y, growth, 3, 1, 1, bias=False, name="conv2"))
        b.scope(f"denseblock{bi}.")
        x = b.concat(feats, name="out")
        if bi < len(blocks):
            b.scope(f"transition{bi}.")
            c = b.shape(x)[1]
            x = b.relu(b.bn(x, name="norm"), name="relu")
            x = b.pool(b.conv(x, c // 2, 1, bias=False, name="conv"), 2, 2, mode="avg", name="pool")
    b.scope("")
    x = b.relu(b.bn(x, name="norm5"), name="relu5")
    x = b.global_pool(x, name="avgpool")
    return b.finish(b.softmax(b.fc(x, num_classes, name="classifier")))


#: MobileNetV2's inverted residual stages: (expansion t, channels c, blocks n, first stride s)
MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(*, batch, input_size=None, num_classes=1000, variant="torchvision", twin=False):
    """MobileNetV2 (Sandler et al., CVPR 2018) as torchvision builds it (width 1.0, 224 px).

    Inverted residual blocks ``features.1`` .. ``features.17``: a 1x1 expansion (none when
    t = 1), a 3x3 depthwise conv (``groups`` = channels) and a linear 1x1 projection, each
    conv followed by BN (and ``ReLU6(inplace=True)``: SuperNeurons' semantics take it as a ReLU,
    PyTorch's save a copy of its input, ``program_torch``); a
    block with stride 1 and as many channels out as in adds its input (FORK/JOIN, no
    activation after the sum). Then a 1x1 conv to 1280, global average pool, dropout 0.2 and
    the classifier.
    """
    size = input_size or 224
    b = GraphBuilder("mobilenet_v2", batch=batch, input_shape=(3, size, size))
    b.scope("features.0.")
    x = _conv_bn_relu(b, b.data(), 32, 3, 2, 1, act="relu6")
    cin, block = 32, 1
    for t, c, n, s in MOBILENET_V2_STAGES:
        for i in range(n):
            b.scope(f"features.{block}.")
            stride = s if i == 0 else 1
            residual = stride == 1 and cin == c
            f = b.fork(x, name="fork") if residual else x
            hidden = cin * t
            y = _conv_bn_relu(b, f, hidden, 1, name="expand.", act="relu6") if t != 1 else f
            y = b.act(b.bn(b.conv(y, hidden, 3, stride, 1, bias=False, groups=hidden,
                                  name="dw.conv"), name="dw.bn"), "relu6", name="dw.relu")
            y = _conv_bn_relu(b, y, c, 1, relu=False, name="project.")
            if residual:
                j = b.join([f, y], name="join")
                b.order_consumers(f, [j, next(v for v in b.G.successors(f) if v != j)])
                y = j
            x, cin, block = y, c, block + 1
    b.scope(f"features.{block}.")
    x = _conv_bn_relu(b, x, 1280, 1, act="relu6")
    b.scope("")
    x = b.dropout(b.global_pool(x, name="avgpool"), 0.2, name="classifier.0")
    return b.finish(b.softmax(b.fc(x, num_classes, name="classifier.1")))


def inception_v4(*, batch, input_size=299, num_classes=1000, variant="torchvision",
                 twin=False):
    """Inception-v4 as in timm's ``inception_v4`` (BasicConv2d = conv without bias + BN + ReLU).

    Parameter count 42,679,816, equal to timm's model (SPEC §8: ≈42.7 M with BN).
    """
    b = GraphBuilder("inception_v4", batch=batch, input_shape=(3, input_size, input_size))
    cbr = _conv_bn_relu

    def branches(x, specs, name):
        # specs: one list per branch of ("conv", out, k, s, p) or ("maxpool"/"avgpool",)
        f = b.fork(x, name=name + "fork")
        outs = []
        for bi, spec in enumerate(specs):
            y = f
            for li, op in enumerate(spec):
                tag = f"{name}b{bi}.{li}."
                if op[0] == "conv":
                    y = cbr(b, y, *op[1:], name=tag)
                elif op[0] == "maxpool":
                    y = b.pool(y, 3, 2, name=tag + "maxpool")
                elif op[0] == "avgpool":
                    y = b.pool(y, 3, 1, 1, mode="avg", name=tag + "avgpool")
                elif op[0] == "split":
                    # a branch that forks again into two convs whose outputs are concatenated
                    g = b.fork(y, name=tag + "fork")
                    outs.extend(cbr(b, g, *c[1:], name=f"{tag}{j}.") for j, c in enumerate(op[1:]))
                    y = None
                    break
            if y is not None:
                outs.append(y)
        return b.concat(outs, name=name + "concat")

    x = b.data()
    x = cbr(b, x, 32, 3, 2, name="stem.0.")
    x = cbr(b, x, 32, 3, 1, name="stem.1.")
    x = cbr(b, x, 64, 3, 1, 1, name="stem.2.")
    x = branches(x, [[("maxpool",)], [("conv", 96, 3, 2, 0)]], "mixed3a.")
    x = branches(x, [[("conv", 64, 1, 1, 0), ("conv", 96, 3, 1, 0)],
                     [("conv", 64, 1, 1, 0), ("conv", 64, (1, 7), 1, (0, 3)),
                      ("conv", 64, (7, 1), 1, (3, 0)), ("conv", 96, 3, 1, 0)]], "mixed4a.")
    x = branches(x, [[("conv", 192, 3, 2, 0)], [("maxpool",)]], "mixed5a.")
    for i in range(4):
        x = branches(x, [[("conv", 96, 1, 1, 0)],
                         [("conv", 64, 1, 1, 0), ("conv", 96, 3, 1, 1)],
                         [("conv", 64, 1, 1, 0), ("conv", 96, 3, 1, 1), ("conv", 96, 3, 1, 1)],
                         [("avgpool",), ("conv", 96, 1, 1, 0)]], f"inception_a{i}.")
    x = branches(x, [[("conv", 384, 3, 2, 0)],
                     [("conv", 192, 1, 1, 0), ("conv", 224, 3, 1, 1), ("conv", 256, 3, 2, 0)],
                     [("maxpool",)]], "reduction_a.")
    for i in range(7):
        x = branches(x, [[("conv", 384, 1, 1, 0)],
                         [("conv", 192, 1, 1, 0), ("conv", 224, (1, 7), 1, (0, 3)),
                          ("conv", 256, (7, 1), 1, (3, 0))],
                         [("conv", 192, 1, 1, 0), ("conv", 192, (7, 1), 1, (3, 0)),
                          ("conv", 224, (1, 7), 1, (0, 3)), ("conv", 224, (7, 1), 1, (3, 0)),
                          ("conv", 256, (1, 7), 1, (0, 3))],
                         [("avgpool",), ("conv", 128, 1, 1, 0)]], f"inception_b{i}.")
    x = branches(x, [[("conv", 192, 1, 1, 0), ("conv", 192, 3, 2, 0)],
                     [("conv", 256, 1, 1, 0), ("conv", 256, (1, 7), 1, (0, 3)),
                      ("conv", 320, (7, 1), 1, (3, 0)), ("conv", 320, 3, 2, 0)],
                     [("maxpool",)]], "reduction_b.")
    for i in range(3):
        x = branches(x, [[("conv", 256, 1, 1, 0)],
                         [("conv", 384, 1, 1, 0),
                          ("split", ("conv", 256, (1, 3), 1, (0, 1)), ("conv", 256, (3, 1), 1, (1, 0)))],
                         [("conv", 384, 1, 1, 0), ("conv", 448, (3, 1), 1, (1, 0)),
                          ("conv", 512, (1, 3), 1, (0, 1)),
                          ("split", ("conv", 256, (1, 3), 1, (0, 1)), ("conv", 256, (3, 1), 1, (1, 0)))],
                         [("avgpool",), ("conv", 256, 1, 1, 0)]], f"inception_c{i}.")
    x = b.global_pool(x, name="global_pool")
    x = b.dropout(x, 0.2, name="dropout")
    return b.finish(b.softmax(b.fc(x, num_classes, name="fc")))


# -- transformers ----------------------------------------------------------------------------
TRANSFORMER_KINDS = ("gpt", "llama", "bert", "vit")


@dataclass(frozen=True, slots=True, kw_only=True)
class TransformerConfig:
    """Sizes of a zoo transformer (one of :data:`TRANSFORMER_KINDS`).

    ``gpt``: GPT-2 (pre-LayerNorm, GELU MLP, learned positions, LM head tied to the token
    embedding). ``llama``: Llama (RMSNorm, SwiGLU MLP, rotary positions, grouped-query attention,
    untied LM head, no biases). ``bert``: BERT (post-LayerNorm encoder, token types, pooler and a
    sequence classifier). ``vit``: ViT (16x16 patch conv, class token, pre-LayerNorm encoder).
    ``ffn`` is the MLP's hidden width (``mlp_ratio * width`` unless given).
    """

    kind: str
    layers: int
    width: int
    heads: int
    kv_heads: int = 0          # 0: as many as heads (no grouping)
    ffn: int = 0               # 0: mlp_ratio * width
    mlp_ratio: float = 4.0
    vocab: int = 0             # token models
    positions: int = 0         # learned positions (gpt, bert, vit: set from the patch grid)
    token_types: int = 0       # bert
    seq: int = 1024            # default sequence length of a token model
    patch: int = 16            # vit
    image: int = 224           # vit
    dropout: float = 0.0       # on embeddings and residual branches (not on attention scores)
    attention: str = "flash"   # "eager" (S x S scores kept) or "flash" (fused SDPA)

    def __post_init__(self):
        def bad(field, rule):
            raise ConfigError(f"{self.kind} transformer: {field} "
                              f"(={checks.show(getattr(self, field))}) must be {rule}")
        if self.kind not in TRANSFORMER_KINDS:
            raise UnknownNameError(f"transformer kind {self.kind!r} is unknown; known: "
                                   f"{', '.join(TRANSFORMER_KINDS)}")
        for field in ("layers", "width", "heads", "seq", "patch", "image"):
            v = getattr(self, field)
            if not (checks.is_int(v) and 1 <= v <= 2**31):
                bad(field, "an integer in [1, 2**31]")
        for field in ("kv_heads", "ffn", "vocab", "positions", "token_types"):
            v = getattr(self, field)
            if not (checks.is_int(v) and 0 <= v <= 2**31):
                bad(field, "an integer in [0, 2**31]")
        if not (checks.is_real(self.mlp_ratio) and self.mlp_ratio > 0):
            bad("mlp_ratio", "a number > 0")
        if not (checks.is_real(self.dropout) and 0 <= self.dropout < 1):
            bad("dropout", "in [0, 1)")
        if self.attention not in ATTENTION_KERNELS:
            bad("attention", f"one of {', '.join(ATTENTION_KERNELS)}")
        if self.width % self.heads:
            bad("heads", f"a divisor of width (={self.width})")
        if self.heads % self.n_kv_heads:
            bad("kv_heads", f"a divisor of heads (={self.heads})")
        if self.kind in ("gpt", "llama", "bert") and not self.vocab:
            bad("vocab", "> 0 for a token model")
        if self.kind == "vit" and self.image % self.patch:
            bad("patch", f"a divisor of image (={self.image})")

    @property
    def n_kv_heads(self):
        return self.kv_heads or self.heads

    @property
    def hidden(self):
        """The MLP's hidden width."""
        return self.ffn or int(round(self.mlp_ratio * self.width))

    def with_options(self, **options):
        """A copy with some fields changed (each checked again)."""
        return replace(self, **options)


#: named configurations; each count is pinned in tests/test_zoo_transformers.py with its source
TRANSFORMERS = {
    # GPT-2 (Radford et al. 2019; HF GPT2LMHeadModel configs): vocab 50257, 1024 positions
    "gpt2": TransformerConfig(kind="gpt", layers=12, width=768, heads=12, vocab=50257,
                              positions=1024),
    "gpt2-medium": TransformerConfig(kind="gpt", layers=24, width=1024, heads=16, vocab=50257,
                                     positions=1024),
    "gpt2-large": TransformerConfig(kind="gpt", layers=36, width=1280, heads=20, vocab=50257,
                                    positions=1024),
    "gpt2-xl": TransformerConfig(kind="gpt", layers=48, width=1600, heads=25, vocab=50257,
                                 positions=1024),
    # TinyLlama-1.1B (Zhang et al. 2024): Llama-2 architecture, 4 kv heads (GQA)
    "tinyllama-1.1b": TransformerConfig(kind="llama", layers=22, width=2048, heads=32,
                                        kv_heads=4, ffn=5632, vocab=32000, seq=2048),
    # Llama-2-7B (Touvron et al. 2023) and Llama-3-8B (Meta 2024; 8 kv heads)
    "llama2-7b": TransformerConfig(kind="llama", layers=32, width=4096, heads=32, ffn=11008,
                                   vocab=32000, seq=4096),
    "llama3-8b": TransformerConfig(kind="llama", layers=32, width=4096, heads=32, kv_heads=8,
                                   ffn=14336, vocab=128256, seq=8192),
    # BERT (Devlin et al. 2019; HF bert-base-uncased / bert-large-uncased configs)
    "bert-base": TransformerConfig(kind="bert", layers=12, width=768, heads=12, vocab=30522,
                                   positions=512, token_types=2, seq=512, dropout=0.1),
    "bert-large": TransformerConfig(kind="bert", layers=24, width=1024, heads=16, vocab=30522,
                                    positions=512, token_types=2, seq=512, dropout=0.1),
    # ViT (Dosovitskiy et al. 2021; torchvision vit_b_16 / vit_l_16)
    "vit-b16": TransformerConfig(kind="vit", layers=12, width=768, heads=12),
    "vit-l16": TransformerConfig(kind="vit", layers=24, width=1024, heads=16),
}
#: the configuration ``gpt:...``, ``llama:...`` ... start from
_KIND_BASE = {"gpt": "gpt2", "llama": "tinyllama-1.1b", "bert": "bert-base", "vit": "vit-b16"}
_OPTION_KEYS = {"layers": int, "width": int, "heads": int, "kv_heads": int, "ffn": int,
                "mlp_ratio": float, "vocab": int, "positions": int, "token_types": int,
                "patch": int, "image": int, "dropout": float, "attention": str}
_CUSTOM_TRANSFORMER = re.compile(r"^(gpt|llama|bert|vit)[:(](.*?)\)?$")


def parse_transformer(name):
    """The :class:`TransformerConfig` of a name: ``gpt2``, ``llama3-8b``, ... or a kind with
    options, ``gpt:layers=4,width=256,heads=4,attention=eager`` (keys: the config's fields),
    starting from the kind's base (gpt2, tinyllama-1.1b, bert-base, vit-b16); None for a name
    that is no transformer.

    >>> parse_transformer("gpt:layers=2,width=128,heads=4").hidden
    512
    """
    key = str(name).strip().lower()
    if key in TRANSFORMERS:
        return TRANSFORMERS[key]
    m = _CUSTOM_TRANSFORMER.match(key.replace(" ", ""))
    if not m:
        return None
    kind, text = m.groups()
    options = {}
    for item in filter(None, text.split(",")):
        k, eq, v = item.partition("=")
        if not eq or k not in _OPTION_KEYS:
            raise ConfigError(f"network {name!r}: {item!r} must be key=value with a key of "
                              f"{', '.join(_OPTION_KEYS)}")
        try:
            options[k] = _OPTION_KEYS[k](v)
        except ValueError:
            raise ConfigError(f"network {name!r}: {k} (={v!r}) must be "
                              f"{_OPTION_KEYS[k].__name__}") from None
    base = TRANSFORMERS[_KIND_BASE[kind]]
    if "width" in options and "ffn" not in options:
        options["ffn"] = 0   # the hidden width follows the width (mlp_ratio)
    if kind == "llama" and ("width" in options or "heads" in options) and "kv_heads" not in options:
        options["kv_heads"] = 0
    return base.with_options(**options)


def transformer(cfg, *, batch, input_size=None, num_classes=None, variant="torchvision",
                twin=False, name="transformer"):
    """Build a zoo transformer; ``input_size`` is the sequence length of a token model (the
    image side of a ViT).

    Layers are named as in the reference implementation (GPT: nanoGPT / ``snsim:gpt``'s
    ``blocks.{i}.attn.c_attn``; Llama: Hugging Face's ``layers.{i}.self_attn``; BERT: HF's
    ``encoder.layer.{i}``; ViT: torchvision's ``encoder.layers.encoder_layer_{i}``). The
    q, k and v projections are one packed linear layer (same parameters as three).
    """
    if cfg.kind == "vit":
        size = input_size or cfg.image
        if size % cfg.patch:
            raise ConfigError(f"{name}: input_size (={size}) must be a multiple of the patch "
                              f"size {cfg.patch}")
        b = GraphBuilder(name, batch=batch, input_shape=(3, size, size))
        x = b.conv(b.data(), cfg.width, cfg.patch, cfg.patch, name="conv_proj")
        x = b.embed(x, cfg.width, positions=(size // cfg.patch) ** 2 + 1, cls_token=True,
                    name="encoder.pos_embedding")
    else:
        seq = input_size or cfg.seq
        b = GraphBuilder(name, batch=batch, input_shape=(seq,))
        x = b.embed(b.data(elem_bytes=8), cfg.width, vocab=cfg.vocab, positions=cfg.positions,
                    token_types=cfg.token_types,
                    name={"gpt": "wte", "llama": "embed_tokens", "bert": "embeddings"}[cfg.kind])
    drop = (lambda v, nm: b.dropout(v, cfg.dropout, name=nm)) if cfg.dropout else \
        (lambda v, nm: v)
    hd = cfg.width // cfg.heads
    qkv = (cfg.heads + 2 * cfg.n_kv_heads) * hd
    causal = cfg.kind in ("gpt", "llama")
    norm = "rms" if cfg.kind == "llama" else "layer"
    bias = cfg.kind != "llama"
    if cfg.kind == "bert":
        x = drop(b.norm(x, name="embeddings.LayerNorm"), "embeddings.dropout")
    else:
        x = drop(x, "drop")

    def attn(h, proj, out):
        # Hugging Face's Llama and BERT: three nn.Linear (q, k, v); GPT-2's c_attn and
        # nn.MultiheadAttention's in-projection: one
        h = b.linear(h, qkv, bias=bias, name=proj,
                     linears=3 if cfg.kind in ("llama", "bert") else 1)
        h = b.attention(h, heads=cfg.heads, kv_heads=cfg.n_kv_heads, causal=causal,
                        kernel=cfg.attention, rotary=cfg.kind == "llama",
                        mha=cfg.kind == "vit", name="attn")
        return b.linear(h, cfg.width, bias=bias, name=out)

    def mlp(h, up, down, act="gelu"):
        if cfg.kind == "llama":   # SwiGLU: down(silu(gate(h)) * up(h))
            g = b.act(b.linear(h, cfg.hidden, bias=False, name="mlp.gate_proj"), "silu",
                      name="mlp.act_fn")
            h = b.mul(g, b.linear(h, cfg.hidden, bias=False, name="mlp.up_proj"), name="mlp.mul")
        else:
            h = b.act(b.linear(h, cfg.hidden, name=up), act, name=up.rsplit(".", 1)[0] + ".gelu")
        return b.linear(h, cfg.width, bias=bias, name=down)

    names = {   # (norm1, qkv, out, norm2, mlp up, mlp down) per kind
        "gpt": ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"),
        "llama": ("input_layernorm", "self_attn.qkv_proj", "self_attn.o_proj",
                  "post_attention_layernorm", "mlp.up_proj", "mlp.down_proj"),
        "bert": ("attention.output.LayerNorm", "attention.self.qkv", "attention.output.dense",
                 "output.LayerNorm", "intermediate.dense", "output.dense"),
        "vit": ("ln_1", "self_attention.in_proj", "self_attention.out_proj", "ln_2",
                "mlp.0", "mlp.3"),
    }[cfg.kind]
    prefix = {"gpt": "blocks.{}.", "llama": "layers.{}.", "bert": "encoder.layer.{}.",
              "vit": "encoder.layers.encoder_layer_{}."}[cfg.kind]
    for i in range(cfg.layers):
        b.scope(prefix.format(i))
        n1, q, o, n2, up, down = names
        if cfg.kind == "bert":   # post-LN: x = LN(x + f(x))
            # the adds inside BertSelfOutput and BertOutput, as Hugging Face's modules have them
            h = drop(attn(x, q, o), "attention.output.dropout")
            x = b.norm(b.join([x, h], inplace=False, name="attention.output.add"), name=n1)
            h = drop(mlp(x, up, down), "output.dropout")
            x = b.norm(b.join([x, h], inplace=False, name="output.add"), name=n2)
        else:                    # pre-LN: x = x + f(LN(x))
            h = drop(attn(b.norm(x, kind=norm, name=n1), q, o), "dropout_1")
            x = b.join([x, h], inplace=False, name="add1")
            h = drop(mlp(b.norm(x, kind=norm, name=n2), up, down), "dropout_2")
            x = b.join([x, h], inplace=False, name="add2")
    b.scope("")
    if cfg.kind in ("gpt", "llama"):
        x = b.norm(x, kind=norm, name="ln_f" if cfg.kind == "gpt" else "norm")
        x = b.linear(x, cfg.vocab, bias=False, tied=cfg.kind == "gpt", name="lm_head")
        # Hugging Face's Llama loss (ForCausalLMLoss) computes in fp32 whatever the logits' dtype
        return b.finish(b.softmax(x, name="loss", float_logits=cfg.kind == "llama"))
    if cfg.kind == "bert":
        x = b.act(b.linear(b.token(x, name="pooler.first_token"), cfg.width,
                           name="pooler.dense"), "tanh", name="pooler.activation")
        x = drop(x, "dropout")
        G = b.finish(b.softmax(b.linear(x, num_classes or 2, name="classifier")))
        # a module's arguments stay referenced until it returns (program_torch): BertModel's
        # local embedding_output through the encoder, each BertLayer's input, BertAttention's,
        # and BertSelfOutput's and BertOutput's two (the residual besides the branch)
        G.graph["held_spans"] = ["encoder"] + [
            f"encoder.layer.{i}{m}" for i in range(cfg.layers)
            for m in ("", ".attention", ".attention.output", ".output")]
        return G
    x = b.token(b.norm(x, name="encoder.ln"), name="class_token")
    return b.finish(b.softmax(b.linear(x, num_classes or 1000, name="heads.head")))


# -- registry ----------------------------------------------------------------------------
def _canonical(name):
    return re.sub(r"[-_\s]", "", str(name).lower())


NETWORKS = {
    "lenet": lenet,
    "alexnet": alexnet,
    **{f"vgg{d}": (lambda d: lambda **kw: vgg(d, **kw))(d) for d in VGG_CONVS},
    **{f"resnet{d}": (lambda d: lambda **kw: resnet(RESNET_BLOCKS[d][1], kind=RESNET_BLOCKS[d][0],
                                                     name=f"resnet{d}", **kw))(d)
       for d in RESNET_BLOCKS},
    **{f"densenet{d}": (lambda d: lambda **kw: densenet(d, **kw))(d) for d in DENSENET_BLOCKS},
    "inceptionv4": inception_v4,
    "mobilenetv2": mobilenet_v2,
    "cifarresnet32": lambda **kw: cifar_resnet(5, **kw),
    "resnet32cifar": lambda **kw: cifar_resnet(5, **kw),
}
_CUSTOM_RESNET = re.compile(r"^resnet[:(]?(\d+),(\d+),(\d+),(\d+)\)?$")


# one name per network in every output: the name its graph carries (aliases stay accepted)
_CANONICAL = {"inceptionv4": "inception_v4", "mobilenetv2": "mobilenet_v2",
              "cifarresnet32": "cifar_resnet32", "resnet32cifar": "cifar_resnet32"}


def canonical_name(name):
    """The one name a zoo network goes by in outputs; other spellings are accepted as input.

    >>> canonical_name("Inception-v4"), canonical_name("resnet32cifar"), canonical_name("ResNet50")
    ('inception_v4', 'cifar_resnet32', 'resnet50')
    """
    key = _canonical(name)
    if key in NETWORKS:
        return _CANONICAL.get(key, key)
    if parse_transformer(name) is not None:
        return str(name).strip().lower().replace(" ", "")
    m = _CUSTOM_RESNET.match(key)
    return f"resnet:{','.join(m.groups())}" if m else str(name)


def list_networks():
    """The zoo's networks, one canonical name each (plus ``resnet:a,b,c,d`` for any block
    tuple); :func:`build_network` also accepts other spellings (case, ``-`` and ``_`` are
    ignored; ``resnet32cifar`` is ``cifar_resnet32``)."""
    return sorted({_CANONICAL.get(k, k) for k in NETWORKS} | set(TRANSFORMERS))


def seq_input_size(name, *, seq=None, input_size=None):
    """The input size a command's ``--seq`` sets: the sequence length of a token model
    (``gpt2``, ``gpt:...``, the ``gpt`` and ``llama`` families); ``input_size`` without it.

    >>> seq_input_size("gpt2", seq=256)
    256
    >>> seq_input_size("resnet50", seq=256)
    Traceback (most recent call last):
    ...
    snsim.errors.ConfigError: --seq (=256) applies to token models (gpt, llama, bert), not to 'resnet50'
    """
    if seq is None:
        return input_size
    cfg = parse_transformer(name) if str(name).lower() not in ("gpt", "llama") else True
    if cfg is None or getattr(cfg, "kind", "") == "vit":
        raise ConfigError(f"--seq (={seq}) applies to token models (gpt, llama, bert), not to "
                          f"{name!r}")
    if not (checks.is_int(seq) and 1 <= seq <= 2**31):
        raise ConfigError(f"--seq (={checks.show(seq)}) must be an integer in [1, 2**31]")
    if input_size is not None and input_size != seq:
        raise ConfigError(f"--seq (={seq}) and --input-size (={input_size}) disagree")
    return seq


def check_sizes(*, batch, input_size=None, num_classes=None):
    """Raise :class:`ConfigError` unless the sizes a zoo builder takes are integers >= 1."""
    for field, value in (("batch", batch), ("input_size", input_size),
                         ("num_classes", num_classes)):
        if (value is not None or field == "batch") and not (
                checks.is_int(value) and 1 <= value <= 2**31):
            raise ConfigError(f"{field} (={checks.show(value)}) must be an integer in "
                              f"[1, 2**31]")


def build_network(name, *, batch, input_size=None, variant="torchvision", num_classes=None,
                  twin=False, seq=None):
    """Build a zoo network by name.

    Parameters
    ----------
    name : str
        ``alexnet``, ``vgg16``, ``resnet50``, ``resnet2500``, ``resnet:3,4,6,3``,
        ``inception_v4``, ``densenet121``, ``cifar_resnet32``, ``lenet`` ... (case, ``-`` and
        ``_`` are ignored).
    batch : int
        Mini-batch size.
    input_size : int, optional
        Image side in pixels (224 default; 227 in the release variant); a token model's
        sequence length.
    seq : int, optional
        Sequence length of a token model (``gpt2``, ``llama3-8b``, ``bert-base``,
        ``gpt:layers=4,...``); an error for other networks.
    variant : {"torchvision", "release"}
    twin : bool
        Include every op the torchvision model runs even where it changes no shape
        (AlexNet's and VGG's adaptive average pool at 224 px, DenseNet's one-input ``cat``), as
        the PyTorch-semantics program needs (:mod:`snsim.program_torch`).

    Raises
    ------
    UnknownNameError
        For a name not in the zoo.

    Examples
    --------
    >>> G = build_network("resnet50", batch=32)
    >>> sum(d["params"] for _, d in G.nodes(data=True))
    25557032
    """
    if variant not in VARIANTS:
        raise UnknownNameError(f"variant {variant!r} is unknown; known: {', '.join(VARIANTS)}")
    check_sizes(batch=batch, input_size=input_size, num_classes=num_classes)
    key = _canonical(str(name))
    kwargs = {"batch": batch, "variant": variant, "twin": bool(twin)}
    if input_size is not None:
        kwargs["input_size"] = input_size
    if num_classes is not None:
        kwargs["num_classes"] = num_classes
    cfg = parse_transformer(name)
    if seq is not None:
        if cfg is None or cfg.kind == "vit":
            raise ConfigError(f"seq (={seq}) applies to token models (gpt, llama, bert), not "
                              f"to network {name!r}")
        if input_size is not None and input_size != seq:
            raise ConfigError(f"seq (={seq}) and input_size (={input_size}) disagree")
        check_sizes(batch=batch, input_size=seq)
        kwargs["input_size"] = seq
    m = _CUSTOM_RESNET.match(key.replace(" ", ""))
    if cfg is not None:
        G = transformer(cfg, name=canonical_name(name), **kwargs)
    elif m:
        G = resnet(tuple(int(g) for g in m.groups()), **kwargs)
    elif key not in NETWORKS:
        raise UnknownNameError(f"network {name!r} is unknown; known: {', '.join(list_networks())}"
                               f", or resnet:a,b,c,d for any blocks per stage, or "
                               f"gpt:/llama:/bert:/vit:key=value,... for any transformer")
    else:
        G = NETWORKS[key](**kwargs)
    return with_module_tree(G)


#: block classes of the twins that are containers (torchvision's _DenseBlock is a ModuleDict)
_CONTAINER_CLASSES = frozenset({"_DenseBlock"})


def with_module_tree(G):
    """``G`` with ``graph["modules"]`` (:func:`module_tree`) and ``graph["containers"]``."""
    tree = module_tree(G)
    G.graph["modules"] = tree
    G.graph["containers"] = [p for p, c in tree.items() if c in _CONTAINER_CLASSES]
    return G


# the block classes of the torchvision/timm twins, by the zoo's path names
_BLOCK_CLASSES = ((re.compile(r"layer\d+\.\d+$"), None),   # Bottleneck or BasicBlock
                  (re.compile(r"denseblock\d+\.layer\d+$"), "_DenseLayer"),
                  (re.compile(r"denseblock\d+$"), "_DenseBlock"),
                  (re.compile(r"transition\d+$"), "_Transition"),
                  (re.compile(r"inception_([abc])\d+$"), "Inception"),
                  (re.compile(r"reduction_([ab])$"), "Reduction"),
                  (re.compile(r"mixed(\d[a-z])$"), "Mixed"),
                  # transformer blocks: snsim:gpt's Block, Hugging Face's Llama and BERT layers,
                  # torchvision's ViT EncoderBlock
                  (re.compile(r"blocks\.\d+$"), "Block"),
                  (re.compile(r"layers\.\d+$"), "LlamaDecoderLayer"),
                  (re.compile(r"encoder\.layer\.\d+$"), "BertLayer"),
                  (re.compile(r"encoder\.layers\.encoder_layer_\d+$"), "EncoderBlock"),
                  (re.compile(r"features\.(?:[1-9]|1[0-7])$"), "InvertedResidual"))


def module_tree(G):
    """``{path: class}`` of the blocks of a zoo network, named as in its torchvision (or timm)
    twin — ``layer1.0: Bottleneck``, ``denseblock1.layer1: _DenseLayer`` — the groups a plan
    such as ``checkpoint`` wraps. Paths that hold no layer are left out.

    Examples
    --------
    >>> tree = build_network("resnet50", batch=1).graph["modules"]
    >>> tree["layer1.0"], sum(c == "Bottleneck" for c in tree.values())
    ('Bottleneck', 16)
    """
    names = [d["name"] for _, d in G.nodes(data=True)]
    prefixes = dict.fromkeys(n.rsplit(".", k)[0] for n in names for k in range(1, n.count(".") + 1))
    bottleneck = set()   # paths p with a layer named p + ".c.*" (one pass, not one per path)
    for n in names:
        i = n.find(".c.")
        while i >= 0:
            bottleneck.add(n[:i])
            i = n.find(".c.", i + 1)
    tree = {}
    for p in prefixes:
        for pattern, cls in _BLOCK_CLASSES:
            m = pattern.match(p)
            if not m:
                continue
            if cls is None:
                cls = "Bottleneck" if p in bottleneck else "BasicBlock"
            elif m.groups():
                cls += m.group(1).upper() if cls != "Mixed" else m.group(1)
            tree[p] = cls
            break
    return tree
