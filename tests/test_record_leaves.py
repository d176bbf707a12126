"""record.leaves: the recorder's own walk of an aten call's arguments gives the leaves torch's
pytree gives, in the same order, for every container aten calls use."""
import collections

import pytest

torch = pytest.importorskip("torch")
from torch.utils._pytree import tree_leaves  # noqa: E402

from snsim.torchsim.record import leaves  # noqa: E402


@pytest.mark.parametrize("tree", [
    ((1, None), [2, (3,)], {"a": 4, "b": [5, None]}),
    (torch.Size([2, 3]), torch.max(torch.ones(3, 4), dim=1),       # a return type
     collections.OrderedDict(x=1, y=(2,))),
    (), [], {}, ([[[]]],), 7,
    (torch.ones(2), [torch.zeros(1), None], {"out": torch.ones(3), "alpha": 2.0}),
])
def test_same_leaves_as_pytree(tree):
    got, want = leaves(tree), tree_leaves(tree)
    assert len(got) == len(want)
    assert all(a is b for a, b in zip(got, want))
