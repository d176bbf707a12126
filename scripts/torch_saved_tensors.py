"""What autograd saves for each op of the zoo's torchvision twins (docs/DESIGN.md, "PyTorch
semantics"): run on a CPU with ``python scripts/torch_saved_tensors.py`` (needs torch).

Each line names an op, its output shape and every tensor its backward node packs through
``torch.autograd.graph.saved_tensors_hooks``: shape, dtype and whether it is the op's input, a
parameter or another tensor (an output, statistics, indices, a mask). CUDA differs for dropout
(``native_dropout`` keeps a 1-byte bool mask where the CPU keeps a float one).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.graph import saved_tensors_hooks


def probe(name, fn, *shapes, params=()):
    xs = [torch.randn(*s, requires_grad=True) for s in shapes]
    saved = []

    def pack(t):
        ptr = t.data_ptr()
        role = ("input" if any(ptr == x.data_ptr() for x in xs) else
                "param" if any(ptr == p.data_ptr() for p in params) else "other")
        saved.append((tuple(t.shape), str(t.dtype).replace("torch.", ""), role))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        y = fn(*xs)
    print(f"{name:28s} out={tuple(y.shape)} saved={saved}")


def main():
    conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
    probe("conv2d", conv, (2, 3, 5, 5), params=list(conv.parameters()))
    bn = nn.BatchNorm2d(8).train()
    probe("batchnorm (train)", bn, (2, 8, 5, 5), params=list(bn.parameters()))
    probe("bn -> relu_ (in place)", lambda x: F.relu(bn(x), inplace=True), (2, 8, 5, 5),
          params=list(bn.parameters()))
    probe("relu (not in place)", F.relu, (2, 8, 5, 5))
    probe("maxpool 3/2/1", nn.MaxPool2d(3, 2, 1), (2, 8, 9, 9))
    probe("avgpool2d 2/2", nn.AvgPool2d(2, 2), (2, 8, 8, 8))
    probe("adaptive avg 1x1", nn.AdaptiveAvgPool2d((1, 1)), (2, 8, 7, 7))
    probe("adaptive avg 7x7 from 7x7", nn.AdaptiveAvgPool2d((7, 7)), (2, 8, 7, 7))
    probe("adaptive avg 6x6 from 13", nn.AdaptiveAvgPool2d((6, 6)), (2, 8, 13, 13))
    lin = nn.Linear(16, 4)
    probe("flatten + linear", lambda x: lin(torch.flatten(x, 1)), (2, 4, 2, 2),
          params=list(lin.parameters()))
    probe("dropout (train)", lambda x: F.dropout(x, 0.5, True), (2, 16))
    probe("add", lambda a, b: a + b, (2, 8), (2, 8))
    probe("add_ (in place)", lambda a, b: (a * 1).add_(b), (2, 8), (2, 8))
    probe("cat", lambda a, b: torch.cat([a, b], 1), (2, 8), (2, 8))
    probe("cat of one tensor", lambda a: torch.cat([a], 1), (2, 8))
    target = torch.randint(0, 4, (2,))
    probe("cross_entropy", lambda x: F.cross_entropy(x, target), (2, 4))


if __name__ == "__main__":
    main()
