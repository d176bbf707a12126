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
