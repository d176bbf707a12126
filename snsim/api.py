"""The pure entry point: ``simulate(...)`` builds, plans and replays; it prints and writes nothing."""
from __future__ import annotations

from collections.abc import Mapping

import networkx as nx

from .checks import show
from .engine.core import run_plan
from .errors import ConfigError
from .graph import check_graph
from .gcpause import without_gc
from .hardware import load_hardware
from .policies import get_policy
from .program import FRAMEWORKS, Program, build_program
from .units import parse_bytes
from .zoo import build_network


def resolve_hardware(hardware):
    """A :class:`HardwareSpec` from a preset name, a YAML path or a spec (checked either way)."""
    return load_hardware(hardware)


def make_program(network, *, batch=None, hardware="k40c", input_size=None,
                 variant="torchvision", optimizer="sgd-momentum", fork_copies=True,
                 first_conv_dx=False, framework="superneurons", amp=None, param_dtype="fp32"):
    """A :class:`~snsim.program.Program` from a zoo name, a layer DAG or a program.

    ``framework`` picks the semantics of a zoo network or DAG: ``"superneurons"`` (SPEC §2.3,
    the paper's framework; default) or ``"pytorch"`` (what autograd saves for the torchvision
    twin, :mod:`snsim.program_torch`). A prepared Program keeps its own. ``amp``
    (``"bf16"``/``"fp16"`` autocast) and ``param_dtype`` (pure 16-bit training) need PyTorch
    semantics.
    """
    hw = resolve_hardware(hardware)
    check_framework(framework)
    if isinstance(network, Program):
        return network
    if isinstance(network, str):
        if batch is None:
            raise ConfigError(f"network {network!r}: batch is required")
        network = build_network(network, batch=batch, input_size=input_size, variant=variant,
                                twin=framework == "pytorch")
    elif isinstance(network, nx.DiGraph):
        check_graph(network, source="network")    # a caller's graph: checked once, here
    else:
        raise ConfigError(f"network must be a zoo name, a networkx.DiGraph or a Program, "
                          f"not {type(network).__name__}")
    return build_program(network, hardware=hw, optimizer=optimizer, fork_copies=fork_copies,
                         first_conv_dx=first_conv_dx, framework=framework, amp=amp,
                         param_dtype=param_dtype)


def check_framework(framework):
    """Raise :class:`ConfigError` unless ``framework`` is a known program semantics."""
    if framework not in FRAMEWORKS:
        raise ConfigError(f"framework {framework!r} is unknown; known: {', '.join(FRAMEWORKS)}")


@without_gc   # building, planning and replaying allocate ~10^5 objects (snsim/gcpause.py)
def simulate(network, *, batch=None, hardware="k40c", policy="liveness", budget_bytes=None,
             allocator="ideal", allocator_options=None, policy_options=None, input_size=None,
             variant="torchvision", optimizer="sgd-momentum", record=True,
             framework="superneurons", check_invariants=None, amp=None, param_dtype="fp32"):
    """Simulate one training iteration of ``network`` under ``policy``.

    Parameters
    ----------
    network : str, networkx.DiGraph or Program
        A zoo name (``"resnet50"``), a layer DAG, or a prepared program.
    batch : int
        Mini-batch size (for zoo names).
    hardware : str or HardwareSpec
        A preset name (``"k40c"``) or a loaded spec.
    policy : str or Policy
        ``keep_all``, ``liveness``, ``offload``, ``recompute``, ``workspace``, ``superneurons``.
    budget_bytes : int or str, optional
        GPU memory for the allocator; default the preset's ``dram - context - reserve``.
    allocator : {"ideal", "pool", "pytorch"}
    framework : {"superneurons", "pytorch"}
        Semantics of a zoo network: SuperNeurons' framework (SPEC §2.3) or what PyTorch's
        autograd saves for the torchvision twin (SPEC §2.4). The Result records it.
    amp, param_dtype
        ``"bf16"``/``"fp16"`` autocast, or pure 16-bit training (``"bf16"``/``"fp16"``); PyTorch
        semantics only (:func:`snsim.program_torch.build_torch_program`).
    check_invariants : bool, optional
        Let the engine check its own rules as it runs (slower); a broken one raises
        :class:`~snsim.errors.InvariantError` naming the event. Default: off.

    Returns
    -------
    Result
        Feasible or not; an infeasible run records where memory ran out.

    Examples
    --------
    >>> r = simulate("lenet", batch=8, policy="liveness")
    >>> r.feasible, r.peak_ideal_bytes < simulate("lenet", batch=8, policy="keep_all").peak_ideal_bytes
    (True, True)
    """
    for field, opts in (("policy_options", policy_options),
                        ("allocator_options", allocator_options)):
        if opts is not None and not isinstance(opts, Mapping):
            raise ConfigError(f"{field} (={show(opts)}) must be a mapping of option names to "
                              f"values")
    hw = resolve_hardware(hardware)
    program = make_program(network, batch=batch, hardware=hw, input_size=input_size,
                           variant=variant, optimizer=optimizer, framework=framework, amp=amp,
                           param_dtype=param_dtype)
    if budget_bytes is not None:
        budget_bytes = parse_bytes(budget_bytes, field="budget")
    budget = hw.budget_bytes if budget_bytes is None else budget_bytes
    pol = get_policy(policy, **(policy_options or {}))
    plan = pol.plan(program, hw, budget)
    return run_plan(program, plan, hw, budget_bytes=budget, allocator=allocator,
                    allocator_options=allocator_options, record=record,
                    check_invariants=check_invariants)
