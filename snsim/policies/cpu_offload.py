"""``torch.autograd.graph.save_on_cpu`` as a plan (SPEC §15).

Every activation that backward reads is copied to host memory after its last forward use and
its GPU copy released; in backward each one is copied back when the step that needs it runs.
There is no side stream and no prefetch: the copies run on the compute stream's critical path,
pinned (``pin_memory=true``) or pageable. ``modules=CLASS[,…]`` limits the context to those
blocks (as wrapping only their forward in ``save_on_cpu``).
"""
from ..plan import Plan
from ._groups import select_modules, steps_in
from ._schedule import build_instructions
from .base import Policy, flag, names, register


@register
class CpuOffload(Policy):
    name = "cpu_offload"
    description = ("torch save_on_cpu: every saved activation to host in forward, back in "
                   "backward, copies serialised with compute (pin_memory=true|false, modules=)")
    reference = "PyTorch's torch.autograd.graph.save_on_cpu"
    planning_cost = "one pass over the steps"
    OPTIONS = {"pin_memory": flag(True), "modules": names()}

    def plan(self, program, hardware, budget_bytes):
        o = self.options
        if o["modules"]:
            inside = {k for p in select_modules(program, self.name, o["modules"])
                      for k in steps_in(program, p)}
            chosen = {t for k in inside for t in program.steps[k].outputs}
        else:
            chosen = {t.tensor_id for t in program.tensors if t.kind == "activation"}
        ins = build_instructions(program, offload=True, offload_tensors=chosen, prefetch_depth=0,
                                 offload_at_last_forward_use=True)
        return Plan(policy=self.name, instructions=ins, free_after_offload=True,
                    sync_copies=True, pinned_host=o["pin_memory"], notes=dict(o))
