"""Keep-all (Caffe-like): every managed tensor allocated at setup, no reuse inside a step."""
from ..plan import Compute, Free, Plan
from .base import Policy, register


@register
class KeepAll(Policy):
    name = "keep_all"
    description = "framework baseline: all tensors allocated up front, nothing freed in the step"
    reference = "Caffe's and early frameworks' allocation: every buffer for the whole step"
    planning_cost = "one pass over the tensors"

    def plan(self, program, hardware, budget_bytes):
        ins = [Compute(s.index) for s in program.steps]
        first, _ = program.uses()
        ins += [Free(t) for t, k in enumerate(first) if k >= 0]  # teardown after the iteration
        return Plan(policy=self.name, instructions=ins, preallocate=True)
