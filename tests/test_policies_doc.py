"""The docs/POLICIES.md generator (snsim/experiments/policies_doc.py)."""
import pytest

from snsim.experiments import policies_doc
from snsim.policies import POLICIES, list_policies, register
from snsim.policies.liveness import Liveness


@pytest.fixture
def new_policy():
    """A policy registered after the generator was written: it must appear on its own."""
    @register
    class Brandnew(Liveness):
        name = "brandnew"
        description = "a policy nobody told the generator about"
        planning_cost = "nothing at all"
        in_all = False
    yield "brandnew"
    del POLICIES["brandnew"]


def test_every_policy_and_network_appear(new_policy):
    frames, plan_s, missing = policies_doc.measure([("lenet", 8), ("no_such_net", 1)],
                                                   (0.5, 1.0))
    assert missing == ["no_such_net"] and list(frames) == [("lenet", 8)]
    text = policies_doc.render(frames, plan_s, missing)
    for name in list_policies():
        assert f"### `{name}`" in text          # a section per registered policy
        assert f"| `{name}` |" in text          # and a row of the summary table
    assert "a policy nobody told the generator about" in text and "nothing at all" in text
    assert "| `brandnew` | no (name it) |" in text
    # the frontier table: one row per policy that ran, one column per budget
    table = text.split("### lenet, batch 8")[1].split("\n\n")[2].splitlines()
    assert table[0].startswith("| policy |") and table[0].count("x) |") == 2
    assert len(table) == 2 + len(frames[("lenet", 8)]["policy"].unique())
    assert "Not in this build's zoo (listed in `NETWORKS`): no_such_net." in text


def test_docstrings_become_markdown():
    text = policies_doc._markdown("Uses ``x`` and :func:`snsim.foo` (SPEC §3.1); see SPEC "
                                  "§12.3's rule and SPEC §4.")
    assert text == "Uses `x` and `snsim.foo`; see rule and the design notes (docs/DESIGN.md)."
    assert policies_doc._cell_text("a | b\nc") == "a \\| b c"


def test_bad_networks_option_is_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        policies_doc.main(["--networks", "alexnet"])
    assert e.value.code == 2
    assert "--networks entry 'alexnet' must be NAME:BATCH" in capsys.readouterr().err
