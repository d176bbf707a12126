"""Beyond the paper: how deep ZeRO-Offload lets SuperNeurons go (issue 13, SPEC §16).

``snsim maxdepth --family resnet --gpu k40c --batch 16 --policy superneurons`` stops where
parameters, gradients and momentum alone fill the GPU (the static wall). With
``superneurons+zero_offload`` they live on the host, and the search's static bound is that of
the plan's program (:meth:`~snsim.policies.base.Policy.bound_program`), so it goes on.

:func:`measure_zero_depth` runs both searches; :func:`zero_depth_lines` writes the Markdown of
``snsim reproduce``'s "beyond the paper" section for them, with what limits depth past the
wall, computed from the family's programs (static bound, host bytes, pinned limit, step time),
not asserted. Self-contained: ``reproduce`` calls the two functions where its report has the
ZeRO-Offload place.
"""
from __future__ import annotations

from ..api import resolve_hardware
from ..policies import get_policy
from ..program import OPTIMIZER_STATE_FACTOR, build_program
from .search import _DepthSpace, get_family, max_depth

ZERO_FAMILY = "resnet"
ZERO_BATCH = 16
ZERO_POLICIES = ("superneurons", "superneurons+zero_offload")


def measure_zero_depth(hw="k40c", *, family=ZERO_FAMILY, batch=ZERO_BATCH, limit_depth=None,
                       budget_bytes=None, allocator="pool", on_probe=None):
    """``max_depth`` of ``family`` under :data:`ZERO_POLICIES`, and the per-block growth of
    what limits ``superneurons+zero_offload`` (from two small members: every family grows
    exactly linearly per block, as the search's bound extrapolation checks).

    Returns
    -------
    (SearchReport, dict)
        The search, and ``growth``: per member ``k`` of the family, the zero_offload
        program's ``lower_bound_bytes`` (``bound0_bytes`` at ``k0``, ``bound_per_k_bytes``),
        the parameter bytes (``param0_bytes``, ``param_per_k_bytes``) and ``k0``.
    """
    hw = resolve_hardware(hw)
    rep = max_depth(family, batch=batch, hardware=hw, policies=list(ZERO_POLICIES),
                    max_depth=limit_depth, budget_bytes=budget_bytes, allocator=allocator,
                    on_probe=on_probe)
    fam = get_family(family)
    space = _DepthSpace(fam, batch=batch, input_size=None, variant="torchvision")
    pol = get_policy("superneurons+zero_offload")
    pts = []
    for k in (fam.min_size + 1, 2 * fam.min_size + 2):
        p = build_program(space.graph(k), hardware=hw, optimizer="sgd-momentum",
                          framework=space.framework)
        q = pol.bound_program(p, hw)
        pts.append((k, q.lower_bound_bytes(), p.static_bytes.get("parameter", 0)))
    (k0, b0, p0), (k1, b1, p1) = pts
    growth = {"k0": k0, "bound0_bytes": b0, "bound_per_k_bytes": (b1 - b0) / (k1 - k0),
              "param0_bytes": p0, "param_per_k_bytes": (p1 - p0) / (k1 - k0),
              # host bytes per parameter byte: masters, gradient buffers, optimizer state
              "host_per_param": 2 + OPTIMIZER_STATE_FACTOR["sgd-momentum"]}
    return rep, growth


def zero_depth_lines(rep, growth, hw="k40c"):
    """Markdown lines: the two policies' maximum depths and what limits depth past the wall."""
    hw = resolve_hardware(hw)
    fam = get_family(rep.subject)
    base, zero = rep.best("superneurons"), rep.best("superneurons+zero_offload")
    g = growth
    lines = ["### ZeRO-Offload: past the static wall", "",
             f"`snsim maxdepth --family {rep.subject} --gpu {hw.name} --batch {rep.batch} "
             f"--policy superneurons,superneurons+zero_offload` (budget {rep.budget_bytes:,} B, "
             f"allocator {rep.rows[0].result.allocator if rep.rows[0].result else '?'}):",
             "", "| policy | max depth | step time at max (s) | why the next depth fails |",
             "|---|---|---|---|"]
    for r in (base, zero):
        step = "" if r.step_time_s is None else f"{r.step_time_s:.3f}"
        lines.append(f"| {r.policy} | {r.max_depth} | {step} | {r.next_failure} |")
    lines.append("")
    if g["bound_per_k_bytes"] > 0:
        k_gpu = g["k0"] + (rep.budget_bytes - g["bound0_bytes"]) / g["bound_per_k_bytes"]
        gpu = (f"on the GPU only the buffers (batch-norm statistics, "
               f"{g['bound_per_k_bytes']:,.0f} B per block) and the working layer's parameters "
               f"stay, so the static bound reaches the budget only near depth "
               f"{fam.depth(int(k_gpu)):,}")
    else:
        gpu = "the GPU's static bound no longer grows with depth"
    per_k = g["param_per_k_bytes"]
    k_max = zero.max_size if zero.max_size is not None else g["k0"]
    params = g["param0_bytes"] + per_k * (k_max - g["k0"])
    pinned_k = g["k0"] + (hw.host_pinned_bytes / 2 - g["param0_bytes"]) / per_k
    host_per_param = g["host_per_param"]   # zero_offload's host_total_bytes per parameter byte
    dram_k = g["k0"] + (hw.host_dram_bytes / host_per_param - g["param0_bytes"]) / per_k
    lines += [f"With parameters, gradients and optimizer state on the host, {gpu}. What "
              f"limits depth instead is the host: at depth {zero.max_depth:,} the fp32 masters "
              f"are {params / 2**30:,.1f} GiB, pinned with their gradients "
              f"({2 * params / 2**30:,.1f} GiB; the preset's {hw.host_pinned_bytes / 2**30:,.0f} "
              f"GiB of pinned host memory is exceeded from depth "
              f"{fam.depth(int(pinned_k) + 1):,}, after which every copy runs at the pageable "
              f"bandwidth), plus the optimizer state ({host_per_param:g} x the parameters on "
              f"the host in all, which alone the preset's {hw.host_dram_bytes / 2**30:,.0f} GiB "
              f"of host memory, host_dram_bytes, would hold up to about depth "
              f"{fam.depth(int(dram_k)):,}; the activations superneurons offloads share that "
              f"memory, so it runs out sooner: see why the next depth fails), and one step takes "
              f"{zero.step_time_s:,.1f} s (PCIe copies of every parameter twice and its "
              f"gradient once, and the CPU optimizer)."
              + (" The search ends at its depth limit, before host memory runs out."
                 if zero.next_size > rep.limit else ""), ""]
    return lines
