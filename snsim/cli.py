"""Command line: ``snsim describe | run | compare | ...``.

Every user error (an :class:`~snsim.errors.SnsimError`) prints one line ``snsim: error: ...``
and exits with status 2; tracebacks are for bugs only. ``snsim run`` exits with status 3
(:data:`EXIT_DOES_NOT_FIT`) when the run does not fit the budget, so scripts and CI can act on
the verdict.
"""
from __future__ import annotations

import argparse
import json
import sys

from .errors import ConfigError, SnsimError
from .units import format_bytes, parse_bytes

DEFAULT_NETWORK = "resnet50"
DEFAULT_BATCH = 32
DEFAULT_GPU = "k40c"
EXIT_DOES_NOT_FIT = 3
# the allocator a framework's programs run under when --allocator is not given
DEFAULT_ALLOCATORS = {"superneurons": "pool", "pytorch": "pytorch"}
COMMANDS = []   # (name, module) pairs; each module has add_parser(sub) and run(args)


def command(name):
    def deco(fn):
        COMMANDS.append((name, fn))
        return fn
    return deco


# -- output helpers ------------------------------------------------------------------------
def emit(rows, fmt, *, out=None, title=None, columns=None):
    """Print a list of dicts as an aligned table, JSON or CSV."""
    import pandas as pd
    out = out or sys.stdout
    df = pd.DataFrame(rows, columns=columns)
    if fmt == "json":
        out.write(json.dumps(rows if len(rows) != 1 or title == "list" else rows[0],
                             indent=2, default=_json_default) + "\n")
    elif fmt == "csv":
        df.to_csv(out, index=False)
    else:
        if title:
            out.write(title + "\n")
        with pd.option_context("display.max_rows", None, "display.max_columns", None,
                               "display.width", 200):
            out.write(df.to_string(index=False) + "\n")


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def _add_network_args(p, *, batch=True):
    p.add_argument("--network", default=DEFAULT_NETWORK,
                   help=f"zoo network name (default {DEFAULT_NETWORK}); see `snsim list`")
    if batch:
        p.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                       help=f"mini-batch size (default {DEFAULT_BATCH})")
    p.add_argument("--input-size", type=int, default=None, help="image side in pixels (224)")
    seq_arg(p)
    p.add_argument("--variant", default="torchvision", choices=("torchvision", "release"),
                   help="torchvision topology (224 px) or the SuperNeurons release's (227 px)")
    p.add_argument("--gpu", default=DEFAULT_GPU, help="hardware preset or YAML path (k40c)")
    p.add_argument("--optimizer", default="sgd-momentum",
                   help="sgd | sgd-momentum | nesterov | adam (sets optimizer-state bytes)")
    p.add_argument("--trace", default=None,
                   help="a snsim trace JSON to simulate instead of a zoo network")
    _framework_arg(p)


def seq_arg(p):
    p.add_argument("--seq", type=int, default=None,
                   help="sequence length of a token model (gpt2, llama3-8b, bert-base, ...)")


def _framework_arg(p):
    p.add_argument("--framework", default="superneurons", choices=("superneurons", "pytorch"),
                   help="program semantics of a zoo network: SuperNeurons' framework (default; "
                   "the K40c paper reproduction) or what PyTorch autograd saves for the "
                   "torchvision twin")
    precision_args(p)


def precision_args(p):
    """``--amp`` and ``--param-dtype``, one definition for a zoo network (``--framework
    pytorch``) and a PyTorch model (``snsim predict``, ``capture``, ``execute``, ``maxbatch
    --model``); their values are checked where the step is set up
    (:class:`snsim.torchsim.amp.TrainSetup`), one line per rule broken."""
    p.add_argument("--amp", default="none",
                   help="none | bf16 | fp16: autocast around forward and loss, fp32 master "
                        "weights, GradScaler for fp16 (default none: fp32)")
    p.add_argument("--param-dtype", default="fp32",
                   help="fp32 | bf16 | fp16: the dtype the model trains in; bf16 and fp16 are "
                        "pure low-precision training (model.to(dtype): weights, gradients, "
                        "optimizer state and input, no autocast; not with --amp) "
                        "(default fp32)")


def precision_of(args):
    """``(amp, param_dtype)`` of the command line (``--amp none``: None)."""
    amp = getattr(args, "amp", None)
    return (None if amp in (None, "none") else amp), getattr(args, "param_dtype", "fp32")


def _fmt_arg(p):
    p.add_argument("--format", default="table", choices=("table", "json", "csv"),
                   help="table for people (default), json or csv for programs (every field)")


def semantics_label(program):
    """``pytorch semantics, bf16 autocast``: whose semantics a program follows, and the
    precision of a zoo program in PyTorch semantics."""
    label = f"{program.framework or program.source} semantics"
    return f"{label}, {program.precision}" if program.precision else label


def load_program(args):
    """The program named by --trace, or the zoo network of --network/--batch."""
    from .api import make_program, resolve_hardware
    hw = resolve_hardware(args.gpu)
    if getattr(args, "trace", None):
        from .trace import read_trace
        net = read_trace(args.trace)
        amp, param_dtype = precision_of(args)
        if amp or param_dtype != "fp32":
            raise ConfigError("--amp and --param-dtype apply to a zoo --network (a trace "
                              "holds the precision it was captured or predicted in)")
        return hw, make_program(net, hardware=hw, optimizer=args.optimizer)
    if args.batch is not None and args.batch <= 0:
        raise ConfigError(f"--batch (={args.batch}) must be a positive integer")
    from .zoo import seq_input_size
    size = seq_input_size(args.network, seq=args.seq, input_size=args.input_size)
    amp, param_dtype = precision_of(args)
    return hw, make_program(args.network, batch=args.batch, hardware=hw, input_size=size,
                            variant=args.variant, optimizer=args.optimizer,
                            framework=args.framework, amp=amp, param_dtype=param_dtype)


# -- describe --------------------------------------------------------------------------------
def describe_rows(program):
    steps = program.steps
    fwd = sum(s.time_s for s in steps if s.phase == "F")
    bwd = sum(s.time_s for s in steps if s.phase == "B")
    upd = sum(s.time_s for s in steps if s.phase == "U")
    G = program.graph
    params = sum(a.get("params", 0) for _, a in G.nodes(data=True)) if G is not None else \
        program.static_bytes.get("parameter", 0) // 4
    ws = max((program.working_set_bytes(s) for s in steps), default=0)
    biggest = max(steps, key=program.working_set_bytes)
    return {
        "network": program.name, "batch": program.batch,
        "framework": program.framework or program.source, "hardware": program.hardware,
        **({"precision": program.precision} if program.precision else {}),
        "layers": G.number_of_nodes() if G is not None else len({s.layer for s in steps}),
        "route_steps": sum(1 for s in steps if s.phase in "FB"),
        "parameters": params,
        "parameter_bytes": program.static_bytes.get("parameter", 0),
        "static_bytes": program.static_total_bytes,
        "activation_bytes": program.activation_bytes(),
        "keep_all_bytes": program.keep_all_bytes(),
        "largest_working_set_bytes": ws,
        "largest_working_set_step": f"{biggest.name} {biggest.phase}",
        "lower_bound_bytes": program.lower_bound_bytes(),
        "fwd_time_s": fwd, "bwd_time_s": bwd, "update_time_s": upd,
    }


def _layer_rows(program):
    G = program.graph
    rows = []
    by_layer = {}
    for s in program.steps:
        if s.phase in "FB":   # a layer may have several B steps (PyTorch: conv data + filter)
            by_layer.setdefault(s.layer, {}).setdefault(s.phase, []).append(s)
    for n, steps in by_layer.items():
        a = G.nodes[n] if G is not None and n in G else {}
        f, b = steps.get("F", []), steps.get("B", [])
        rows.append({"layer_id": n, "name": (f or b)[0].name, "type": (f or b)[0].type,
                     "out_shape": "x".join(map(str, a.get("out_shape", ()))),
                     "params": a.get("params", 0), "macs": a.get("macs", 0),
                     "fwd_time_s": sum(s.time_s for s in f),
                     "bwd_time_s": sum(s.time_s for s in b),
                     "fwd_working_set_bytes": max((program.working_set_bytes(s) for s in f),
                                                  default=0),
                     "bwd_working_set_bytes": max((program.working_set_bytes(s) for s in b),
                                                  default=0)})
    return rows


def cmd_describe(args):
    hw, program = load_program(args)
    if args.layers:
        emit(_layer_rows(program), args.format, title="list")
        return 0
    row = describe_rows(program)
    if args.format != "table":
        emit([row], args.format)
        return 0
    from .verdict import time_source
    src = time_source(program)
    pretty = [(k, f"{v:,}" if isinstance(v, int) and not k.endswith("_bytes") else
               (f"{v:,} B ({format_bytes(v)})" if k.endswith("_bytes") else
                (f"{v:.6g} s ({src})" if k.endswith("_time_s") else v)))
              for k, v in row.items()]
    width = max(len(k) for k, _ in pretty)
    for k, v in pretty:
        print(f"{k:<{width}}  {v}")
    return 0


# -- run / compare ----------------------------------------------------------------------------
ALLOCATOR_HELP = ("allocator model: ideal (exact bytes), pool (SuperNeurons' 1 KiB-block pool) "
                  "or pytorch (the CUDA caching allocator); default: the framework's own (pool "
                  "for --framework superneurons, pytorch for --framework pytorch and captures)")


def allocator_arg(p):
    p.add_argument("--allocator", default=None, choices=("ideal", "pool", "pytorch"),
                   help=ALLOCATOR_HELP)


def default_allocator(program=None, framework="superneurons"):
    """The allocator that matches a program's semantics: the paper's pool for SuperNeurons'
    framework, PyTorch's caching allocator for PyTorch semantics and captured programs."""
    if program is not None:
        if program.source == "capture":
            return "pytorch"
        framework = program.framework or framework
    return DEFAULT_ALLOCATORS.get(framework, "pool")


def _allocator(args, program=None):
    """``--allocator``, or the framework's own when it is not given (sets ``args.allocator``)."""
    if getattr(args, "allocator", None) is None:
        args.allocator = default_allocator(program, getattr(args, "framework", "superneurons"))
        args.allocator_defaulted = True
    return args.allocator


def _allocator_label(args):
    if getattr(args, "allocator_defaulted", False):
        return f"allocator {args.allocator} (default)"
    return f"allocator {args.allocator}"


def _run_args(p):
    p.add_argument("--budget", default=None, help="GPU memory budget, e.g. 12GiB (default: the "
                   "preset's DRAM minus its CUDA context)")
    allocator_arg(p)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="policy option, e.g. --option mode=memory (repeatable)")
    p.add_argument("--check-invariants", action="store_true",
                   help="let the engine check its own rules as it runs (slower)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="every figure of the run, not only the verdict and the breakdown")


def _parse_options(items):
    """``--option KEY=VALUE`` pairs as text; each policy's declared options parse the values."""
    opts = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise ConfigError(f"--option {item!r} must look like KEY=VALUE")
        opts[k.strip()] = v.strip()
    return opts


def output_path(path, flag, *, folder=False):
    """Check that ``path`` can be written (a file, or a ``folder``) and create its folders.

    Raises :class:`ConfigError` naming ``flag`` when a parent is a file or cannot be created,
    so a bad output path fails before any work and as one line.
    """
    from pathlib import Path
    path = Path(path)
    target = path if folder else path.parent
    for p in (target, *target.parents):
        if p.exists():
            if not p.is_dir():
                raise ConfigError(f"{flag} {path}: {p} is a file, not a folder")
            break
    if not folder and path.is_dir():
        raise ConfigError(f"{flag} {path} is a folder; give a file name")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{flag} {path}: cannot create folder {target}: "
                          f"{e.strerror or e}") from None
    return path


def _budget(args, hw, program):
    if args.budget is None:
        return hw.budget_bytes
    budget = parse_bytes(args.budget, field="--budget")
    if budget < program.static_total_bytes:
        raise ConfigError(f"--budget ({budget:,} B) is below the static bytes "
                          f"({program.static_total_bytes:,} B: parameters, gradients, optimizer "
                          f"state, buffers, input) of {program.name} batch {program.batch}")
    return budget


# figures that only mean something when the run fits: null in JSON/CSV, "—" in tables
_ONLY_IF_FITS = ("peak_ideal_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
                 "peak_tensor_bytes", "step_time_s", "images_per_s", "compute_time_s",
                 "recompute_time_s", "stall_time_s")


def result_row(r, program=None):
    """The run's figures, flat; those of a run that does not fit are None (it never finished)."""
    from .verdict import time_source, verdict
    row = r.summary()
    keep = ["network", "batch", "framework", "policy", "hardware", "allocator", "feasible",
            "peak_ideal_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "peak_tensor_bytes",
            "static_bytes",
            "lower_bound_bytes", "step_time_s", "images_per_s", "compute_time_s",
            "recompute_time_s", "stall_time_s", "h2d_bytes", "d2h_bytes", "evictions",
            "cache_hits", "cache_misses", "prefetch_late", "recomputed_layers", "budget_bytes",
            "failure"]
    out = {"verdict": verdict(r, program)}
    out.update((k, row[k]) for k in keep)
    if program is not None and program.precision:
        out["precision"] = program.precision
    out["time_source"] = time_source(program) if program is not None else "modelled"
    out["context_bytes"] = r.context_bytes
    if not r.feasible:
        out.update(dict.fromkeys(_ONLY_IF_FITS))
        out["short_bytes"] = r.failure.short_bytes
    return out


# what the verbose table's less obvious keys mean
_EXPLAIN = {
    "peak_ideal_bytes": "exact live bytes",
    "peak_allocated_bytes": "after the allocator's rounding",
    "peak_reserved_bytes": "the allocator's segments",
    "peak_tensor_bytes": "ideal, without conv workspaces",
    "static_bytes": "parameters, gradients, optimizer state, buffers, input",
    "lower_bound_bytes": "static + the largest step's working set: no policy needs less",
    "step_time_s": "one iteration",
    "compute_time_s": "compute stream busy",
    "stall_time_s": "compute waiting for memory, copies or the launching thread",
    "cache_hits": "tensor-cache reads found on the GPU",
    "cache_misses": "reads fetched back from the host",
    "prefetch_late": "prefetches that arrived after the step wanted them",
    "context_bytes": "CUDA context (an estimate)",
}


def _show(k, v):
    if v is None:
        return "—"
    if k.endswith("_bytes") and isinstance(v, int):
        return f"{v:,} B ({format_bytes(v)})"
    if k.endswith("_per_s") and isinstance(v, float):   # a rate: images_per_s
        return f"{v:.6g} /s"
    if k.endswith("_s") and isinstance(v, float):
        return f"{v:.6g} s"
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def print_run(r, program, args, out=None):
    """The table output of ``snsim run``: verdict, what it ran, the breakdown at the peak."""
    from .verdict import LABELS, capture_step_note, peak_breakdown, verdict
    out = out or sys.stdout
    w = out.write
    w(verdict(r, program) + "\n")
    placed = {"modules": " on module boundaries", "layers": " on the layer graph"}.get(
        (r.options or {}).get("placement"), "")
    w(f"{program.name} batch {program.batch}, policy {r.policy}{placed}, "
      f"{_allocator_label(args)}, {semantics_label(program)}\n")
    note = capture_step_note(program)
    if note:
        w(f"({note})\n")
    rows = {LABELS.get(k, k): v for k, v in peak_breakdown(r).items()}
    w(("memory at the peak" if r.feasible else "memory at the largest point before it stopped")
      + " (simulated):\n")
    width = max(map(len, rows)) + 2
    for k, v in rows.items():
        note = {"CUDA context": "  (estimate from the preset)",
                "device total": "  (what nvidia-smi would show)"}.get(k, "")
        if k == "device total" and not r.feasible:
            note = "  (before it stopped)"
        w(f"  {k:<{width}}{v / 2**30:>8.2f} GiB{note}\n")
    if not r.feasible:
        w(f"  {r.failure}\n")
    elif r.evictions:
        w("  (the tensor cache keeps offloaded tensors until memory is needed, so this peak "
          "follows the budget;\n   a smaller --budget asks how little it needs)\n")
    if args.verbose:
        row = result_row(r, program)
        row.pop("verdict")
        kw = max(map(len, row))
        w("\n")
        for k, v in row.items():
            why = f"   ({_EXPLAIN[k]})" if k in _EXPLAIN and v is not None else ""
            w(f"{k:<{kw}}  {_show(k, v)}{why}\n")
    else:
        w("(--verbose: every figure)\n")


def _simulate(args, hw, program, policy, options=None):
    from .engine.core import run_plan
    from .policies import get_policy
    budget = _budget(args, hw, program)
    plan = get_policy(policy, **(options or {})).plan(program, hw, budget)
    return run_plan(program, plan, hw, budget_bytes=budget, allocator=_allocator(args, program),
                    check_invariants=getattr(args, "check_invariants", False))


def cmd_run(args):
    if getattr(args, "trace_out", None):
        output_path(args.trace_out, "--trace-out")
    hw, program = load_program(args)
    r = _simulate(args, hw, program, args.policy, _parse_options(args.option))
    if getattr(args, "trace_out", None):
        from .perfetto import write_chrome_trace
        write_chrome_trace(r, args.trace_out, program=program)
        print(f"trace: {args.trace_out} (open in https://ui.perfetto.dev)", file=sys.stderr)
    if args.format == "table":
        print_run(r, program, args)
    else:
        row = result_row(r, program)
        if args.format == "json":
            from .verdict import peak_breakdown
            row["peak_breakdown"] = peak_breakdown(r)
        emit([row], args.format)
    return 0 if r.feasible else EXIT_DOES_NOT_FIT


def _short(text, n=48):
    return text if len(text) <= n else text[:n - 1] + "…"


def cmd_compare(args):
    from .policies import all_note, all_policies
    from .verdict import time_source, where
    hw, program = load_program(args)
    from .policies import get_policy
    rows = []
    skipped = []
    names = [n.strip() for n in args.policies.split(",")] if args.policies else all_policies()
    for name in names:
        why = None if args.policies else get_policy(name).unsupported(program)
        if why:   # every policy was asked for: leave out those that cannot plan this program
            skipped.append(f"{name} ({why})")
            continue
        r = _simulate(args, hw, program, name)
        ok = r.feasible

        def fit(v, ok=ok):
            return v if ok else None
        rows.append({"policy": r.policy, "feasible": r.feasible, "framework": r.framework,
                     "step_time_ms": fit(round(r.step_time_s * 1e3, 3)),
                     "images_per_s": fit(round(r.images_per_s, 1)),
                     "peak_ideal_GiB": fit(round(r.peak_ideal_bytes / 2**30, 3)),
                     "peak_allocated_GiB": fit(round(r.peak_allocated_bytes / 2**30, 3)),
                     "peak_reserved_GiB": fit(round(r.peak_reserved_bytes / 2**30, 3)),
                     "tensor_peak_GiB": fit(round(r.peak_tensor_bytes / 2**30, 3)),
                     "recompute_ms": fit(round(r.recompute_time_s * 1e3, 3)),
                     "stall_ms": fit(round(r.stall_time_s * 1e3, 3)),
                     "h2d_MiB": round(r.h2d_bytes / 2**20, 1),
                     "evictions": r.evictions, "failure": str(r.failure or ""),
                     "failed_at": where(r.failure) if r.failure else ""})
    # fits first, then the fastest
    rows.sort(key=lambda d: (not d["feasible"], d["step_time_ms"] or 0.0))
    budget = _budget(args, hw, program)
    src = time_source(program)
    if args.format == "json":
        emit(rows, "json", title="list")
    elif args.format == "csv":
        emit(rows, "csv")
    else:
        fits = [d for d in rows if d["feasible"]]
        if fits:
            b = fits[0]
            print(f"fastest that fits: {b['policy']}, {b['step_time_ms']:,.1f} ms ({src}), peak "
                  f"{b['peak_reserved_GiB']:.2f} of {budget / 2**30:.2f} GiB; {len(fits)} of "
                  f"{len(rows)} policies fit")
        else:
            print(f"does not fit: no policy fits {program.name} batch {program.batch} in "
                  f"{budget / 2**30:.2f} GiB")
        print(f"{program.name} batch {program.batch}, {hw.name}, budget {format_bytes(budget)}, "
              f"{semantics_label(program)}, {_allocator_label(args)}")
        if args.verbose:
            table = [{k: v for k, v in d.items() if k not in ("framework", "failed_at")}
                     for d in rows]
        else:
            def r1(v):
                return None if v is None else round(v, 1)
            table = [{"policy": d["policy"], "fits": "yes" if d["feasible"] else "no",
                      "step_ms": r1(d["step_time_ms"]), "img/s": d["images_per_s"],
                      "peak_GiB": d["peak_reserved_GiB"], "recompute_ms": r1(d["recompute_ms"]),
                      "stall_ms": r1(d["stall_ms"]), "h2d_MiB": d["h2d_MiB"],
                      "out of memory at": _short(d["failed_at"], 27)} for d in rows]
        emit_table(table)
        if not args.verbose:
            print(f"(times {src}; peak: reserved by the allocator; --verbose: every figure and "
                  "the whole failure)")
    if skipped:
        print(f"not run: {'; '.join(skipped)}", file=sys.stderr)
    if not args.policies and all_note():
        print(all_note(), file=sys.stderr)
    return 0


def emit_table(rows, out=None):
    """An aligned table with "—" for missing figures."""
    import pandas as pd
    out = out or sys.stdout
    df = pd.DataFrame(rows).astype(object)
    df = df.where(df.notna(), "—")
    with pd.option_context("display.max_rows", None, "display.max_columns", None,
                           "display.width", 400, "display.max_colwidth", 400):
        out.write(df.to_string(index=False) + "\n")


def cmd_export(args):
    from .api import resolve_hardware
    from .trace import export_zoo
    hw = resolve_hardware(args.gpu)
    output_path(args.out, "--out", folder=True)
    from .zoo import seq_input_size
    for name in args.network:
        path = export_zoo(name, batch=args.batch, hardware=hw, out_dir=args.out,
                          input_size=seq_input_size(name, seq=args.seq,
                                                    input_size=args.input_size),
                          variant=args.variant)
        print(path)
    return 0


_CUSTOM_NETWORKS = ("resnet:a,b,c,d", "gpt|llama|bert|vit:key=value,...")


def cmd_list(args):
    from .hardware import list_hardware
    from .policies import POLICIES
    from .zoo import list_networks
    if args.format == "json":
        doc = {"networks": list_networks() + list(_CUSTOM_NETWORKS),
               "hardware": list_hardware(),
               "policies": {n: cls.description for n, cls in sorted(POLICIES.items())},
               "frameworks": sorted(DEFAULT_ALLOCATORS),
               "allocators": {"ideal": "exact bytes", "pool": "SuperNeurons' 1 KiB-block pool",
                              "pytorch": "the PyTorch CUDA caching allocator"}}
        print(json.dumps(doc, indent=2))
        return 0
    print("networks:  " + ", ".join(list_networks() + list(_CUSTOM_NETWORKS)))
    print("hardware:  " + ", ".join(list_hardware()))
    for name, cls in sorted(POLICIES.items()):
        print(f"policy {name:<14} {cls.description}"
              + ("" if cls.in_all else " [not in 'all': name it]"))
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="snsim", description="Simulate GPU memory scheduling "
                                "for DNN training (SuperNeurons, PPoPP 2018).")
    from . import __version__
    p.add_argument("--version", action="version", version=f"snsim {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("describe", help="network size, memory bounds and modelled times")
    _add_network_args(d)
    _fmt_arg(d)
    d.add_argument("--layers", action="store_true", help="per-layer table")
    d.set_defaults(func=cmd_describe)

    from .policies import all_note, list_policies
    policies = ", ".join(list_policies())
    r = sub.add_parser("run", help="simulate one training iteration under a policy",
                       description="Simulate one training iteration. The first line is the "
                       "verdict (fits: / does not fit:); the exit status is 0 when the run "
                       f"fits and {EXIT_DOES_NOT_FIT} when it does not (2: an error).")
    _add_network_args(r)
    r.add_argument("--policy", default="superneurons",
                   help=f"memory policy (default superneurons): {policies}")
    _run_args(r)
    _fmt_arg(r)
    r.add_argument("--trace-out", default=None,
                   help="write a Chrome/Perfetto trace (.json or .json.gz)")
    r.set_defaults(func=cmd_run)

    c = sub.add_parser("compare", help="every policy side by side")
    _add_network_args(c)
    c.add_argument("--policies", default=None,
                   help=f"comma-separated subset of {policies} (default: all"
                   + (f"; {all_note()}" if all_note() else "") + ")")
    _run_args(c)
    _fmt_arg(c)
    c.set_defaults(func=cmd_compare)

    e = sub.add_parser("export", help="write modelled traces of zoo networks")
    e.add_argument("network", nargs="+", help="zoo network names")
    e.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                   help=f"mini-batch size (default {DEFAULT_BATCH})")
    e.add_argument("--input-size", type=int, default=None, help="image side in pixels (224)")
    seq_arg(e)
    e.add_argument("--variant", default="torchvision", choices=("torchvision", "release"),
                   help="torchvision topology (224 px) or the SuperNeurons release's (227 px)")
    e.add_argument("--gpu", default=DEFAULT_GPU,
                   help="hardware preset or YAML path whose model times the traces (k40c)")
    e.add_argument("--out", default="traces", help="output folder (default traces/)")
    e.set_defaults(func=cmd_export)

    ls = sub.add_parser("list", help="networks, hardware presets and policies")
    ls.add_argument("--format", default="table", choices=("table", "json"),
                    help="table (default) or json")
    ls.set_defaults(func=cmd_list)

    for name, add in COMMANDS:
        add(sub)
    return p


def _load_plugins():
    # optional command modules add themselves to COMMANDS on import
    import importlib
    for mod in ("snsim.sweep_cli", "snsim.experiments.cli", "snsim.torchsim.cli"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name is None or not mod.startswith(e.name):
                raise


def main(argv=None):
    _load_plugins()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SnsimError as e:
        print(f"snsim: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except FileNotFoundError as e:
        print(f"snsim: error: {e.filename}: no such file", file=sys.stderr)
        return 2
    except OSError as e:    # the environment, not a bug: a full disk, a permission
        where = f"{e.filename}: " if e.filename else ""
        print(f"snsim: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # run the imported module's main, so plugin commands that register on `snsim.cli` are seen
    from snsim.cli import main as _main
    sys.exit(_main())
