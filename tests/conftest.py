import sys
import textwrap

import pytest

from snsim.graph import GraphBuilder


@pytest.fixture
def tiny_chain():
    """data(1x4x4) -> conv(2ch 3x3 p1) -> relu -> fc(10) -> softmax, batch 1.

    Hand-derived sizes: conv.y = relu.y = 1*2*4*4*4 B = 128 B; fc.y = softmax.y = 40 B.
    """
    b = GraphBuilder("tiny", batch=1, input_shape=(1, 4, 4))
    x = b.data()
    x = b.conv(x, 2, 3, 1, 1, name="conv")
    x = b.relu(x, name="relu")
    x = b.fc(x, 10, name="fc")
    G = b.finish(b.softmax(x))
    for n in G:
        G.nodes[n]["fwd_time_s"] = 1e-3
        G.nodes[n]["bwd_time_s"] = 2e-3
        G.nodes[n]["update_time_s"] = 1e-4
    return G


@pytest.fixture
def tiny_block():
    """data -> conv -> FORK -> (identity | conv-bn-relu-conv) -> JOIN -> relu -> fc -> softmax."""
    b = GraphBuilder("tinyres", batch=1, input_shape=(1, 4, 4))
    x = b.conv(b.data(), 2, 3, 1, 1, name="conv0")
    f = b.fork(x, name="fork")
    short = f                                  # next[0]: identity shortcut (created first)
    y = b.conv(f, 2, 3, 1, 1, name="a")        # next[1]: main branch
    y = b.relu(b.bn(y, name="bn"), name="r")
    y = b.conv(y, 2, 3, 1, 1, name="b")
    j = b.join([short, y], name="join")
    b.order_consumers(f, [j, 4])               # identity on next[0], main branch on next[1]
    x = b.relu(j, name="out")
    G = b.finish(b.softmax(b.fc(x, 10, name="fc")))
    for n in G:
        G.nodes[n].update(fwd_time_s=1e-3, bwd_time_s=2e-3, update_time_s=1e-4)
    return G


@pytest.fixture(autouse=True, scope="session")
def _engine_checks_its_invariants():
    """Every engine run in the suite checks its own rules as it goes (issue 9, item 4)."""
    from snsim.engine.core import Engine
    Engine.check_invariants_default = True
    yield
    Engine.check_invariants_default = False


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: property-based tests (hypothesis); the default "
                                       "profile runs a few hundred examples, "
                                       "--hypothesis-profile=long >= 10,000")


try:   # the test extra installs hypothesis; without it the fuzz tests are skipped
    from hypothesis import settings as _hyp_settings
except ImportError:   # pragma: no cover
    pass
else:
    # ci: derandomized, so a CI run is reproducible; long: random, run with --hypothesis-seed
    _hyp_settings.register_profile("ci", max_examples=150, derandomize=True, print_blob=True)
    _hyp_settings.register_profile("long", max_examples=5000, print_blob=True)
    # scripts/mutate.py: a few examples per mutant, always the same ones
    _hyp_settings.register_profile("quick", max_examples=25, derandomize=True)
    _hyp_settings.load_profile("ci")


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    """A user package ``snsim_plan_models`` with tiny models (torch needed to import it), and
    no committed traces (``SNSIM_TRACES``): no workspace tables."""
    (tmp_path / "snsim_plan_models.py").write_text(textwrap.dedent("""
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Block(nn.Module):
            def __init__(self, c=8):
                super().__init__()
                self.conv = nn.Conv2d(c, c, 3, padding=1)
                self.bn = nn.BatchNorm2d(c)

            def forward(self, x):
                return torch.relu(self.bn(self.conv(x))) + x

        class Net(nn.Module):
            input_shape = (3, 16, 16)

            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 8, 3, padding=1)
                self.blocks = nn.Sequential(*[Block() for _ in range(4)])
                self.fc = nn.Linear(8, 5)

            def forward(self, x):
                x = self.blocks(self.stem(x))
                return self.fc(x.mean((2, 3)))

        class Attn(nn.Module):
            input_shape = (128, 32)

            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(32, 96)
                self.fc = nn.Linear(32, 3)

            def forward(self, x):
                b, s, c = x.shape
                q, k, v = (t.view(b, s, 4, 8).transpose(1, 2)
                           for t in self.qkv(x).split(32, dim=2))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.fc(y.transpose(1, 2).reshape(b, s, c).mean(1))

        class GqaAttn(nn.Module):
            # four query heads over two key/value heads (enable_gqa), fp32: CUDA runs the
            # math composite (scores and probabilities of s x s per query head)
            input_shape = (128, 32)

            def __init__(self):
                super().__init__()
                self.q = nn.Linear(32, 32)
                self.kv = nn.Linear(32, 32)
                self.fc = nn.Linear(32, 3)

            def forward(self, x):
                b, s, c = x.shape
                q = self.q(x).view(b, s, 4, 8).transpose(1, 2)
                k, v = (t.view(b, s, 2, 8).transpose(1, 2)
                        for t in self.kv(x).split(16, dim=2))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                return self.fc(y.transpose(1, 2).reshape(b, s, c).mean(1))

        class Rnn(nn.Module):
            # an LSTM: the CPU runs oneDNN's RNN where CUDA runs cuDNN's
            input_shape = (12, 16)

            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(16, 32, batch_first=True)
                self.fc = nn.Linear(32, 3)

            def forward(self, x):
                return self.fc(self.rnn(x)[0][:, -1])

        class Wide(nn.Module):
            input_shape = (256,)

            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(256, 4096)
                self.fc2 = nn.Linear(4096, 4096)
                self.fc3 = nn.Linear(4096, 5)

            def forward(self, x):
                return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))

        class ItemNet(nn.Module):
            input_shape = (16,)

            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 4)

            def forward(self, x):
                y = self.fc(x)
                return y / (y.abs().max().item() + 1.0)

        class MaskNet(ItemNet):
            def forward(self, x):
                y = self.fc(x)
                return y * (y[y > 0].sum() + 1)

        class BranchNet(ItemNet):
            def forward(self, x):
                y = self.fc(x)
                if y.sum().item() > 0:
                    y = y * 2
                return y

        class OnesMaskNet(ItemNet):
            # a transformers release's causal-mask code: torch.all(attention_mask == 1)
            def forward(self, x):
                mask = torch.ones(x.shape[0], dtype=torch.long)
                y = self.fc(x)
                if torch.all(mask == 1):
                    return y * 2
                return self.fc(torch.cat([x, x, x, x]))[: x.shape[0]]

        class CausalEncoder(nn.Module):
            # a causal mask registered as a buffer: nn.TransformerEncoder compares it with its
            # own causal mask (torch.equal, a branch on two tensors' values) to pick the kernel
            input_shape = (16, 32)

            def __init__(self):
                super().__init__()
                layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
                self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.fc = nn.Linear(32, 3)
                keep = torch.ones(16, 16, dtype=torch.bool).tril()
                self.register_buffer("mask", torch.zeros(16, 16).masked_fill(~keep, -1e9))

            def forward(self, x):
                return self.fc(self.enc(x, mask=self.mask).mean(1))

        class BandedEncoder(CausalEncoder):
            # a band the encoder cannot take for causal: the mask goes to the kernel as a bias
            def __init__(self):
                super().__init__()
                i = torch.arange(16)
                self.mask = torch.zeros(16, 16).masked_fill((i[:, None] - i).abs() > 3, -1e9)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SNSIM_TRACES", str(tmp_path / "no_traces"))
    sys.modules.pop("snsim_plan_models", None)
    yield "snsim_plan_models"
    sys.modules.pop("snsim_plan_models", None)
