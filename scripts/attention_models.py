"""Models whose attention takes a mask, for held-out runs of ``snsim predict`` (held-out set 26).

``nn.TransformerEncoder`` classifiers over a sequence of feature vectors (one sample: 256 x 512
fp32), six layers of eight heads, with a mask registered as a buffer, as users write them:

* ``causal_encoder``: an additive causal mask. ``TransformerEncoder`` compares it with its own
  causal mask (a branch on tensor values, :func:`snsim.torchsim.predict.record_fake`'s values
  attempt), finds it causal and runs attention ``is_causal`` with no mask;
* ``banded_encoder``: a boolean band (each position attends to the 32 before and after it).
  ``MultiheadAttention`` turns it into an additive mask of the input's dtype and
  ``scaled_dot_product_attention`` takes it as a bias (cuDNN's kernel in fp16/bf16,
  the memory-efficient one in fp32 on the H200: traces/h200/sdpa_choice).

    snsim predict --model scripts.attention_models:banded_encoder --batch 32 --amp bf16
"""
import torch
from torch import nn

SEQ, WIDTH, HEADS, LAYERS, WINDOW = 256, 512, 8, 6, 32


class MaskedEncoder(nn.Module):
    def __init__(self, mask):
        super().__init__()
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, 100)
        self.register_buffer("mask", mask)

    def forward(self, x):
        return self.head(self.enc(x, mask=self.mask).mean(1))


def causal_encoder():
    keep = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
    return MaskedEncoder(torch.zeros(SEQ, SEQ).masked_fill(~keep, float("-inf")))


def banded_encoder():
    i = torch.arange(SEQ)
    # True: not allowed to attend (nn.MultiheadAttention's boolean mask convention)
    return MaskedEncoder((i[:, None] - i[None, :]).abs() > WINDOW)


causal_encoder.input_shape = banded_encoder.input_shape = (SEQ, WIDTH)
