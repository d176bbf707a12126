"""``snsim capture | predict | validate | execute | gauge`` (a :mod:`snsim.cli` plugin).

torch is imported only when a command that needs it runs, so ``snsim validate`` works where
torch is not installed.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..cli import command, emit, output_path, precision_args
from ..errors import ConfigError
from ..units import format_bytes, parse_bytes
from .calibrate import register as register_calibrate

DEFAULT_OUT_DIR = "traces/h200"
register_calibrate()   # ``snsim calibrate`` lives in calibrate.py


def _shape(text):
    if text is None:
        return None
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        shape = ()
    if not shape or min(shape) <= 0:
        raise ConfigError(f"--input-shape (={text!r}) must be positive integers such as 3,224,224")
    return shape


def _input_shape(args):
    """``--input-shape`` or ``--seq`` (token models: the shape is ``(seq,)``)."""
    shape = _shape(args.input_shape)
    seq = getattr(args, "seq", None)
    if seq is not None:
        if shape is not None:
            raise ConfigError("give --seq or --input-shape, not both")
        if seq <= 0:
            raise ConfigError(f"--seq (={seq}) must be a positive integer")
        shape = (seq,)
    return shape


def _plan_args(p, *, required=False, extra=()):
    from .plans import POLICIES
    p.add_argument("--policy", default=None if required else "plain", required=required,
                   choices=POLICIES + tuple(extra), help="memory plan run in PyTorch (default "
                   "plain): " + ", ".join(POLICIES + tuple(extra)))
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="plan option, repeatable: checkpoint modules=CLASS[,CLASS] every=N "
                        "selective=true; cpu_offload pin_memory=true modules=CLASS")
    p.add_argument("--budget", default=None,
                   help="memory the run may reserve, e.g. 40GiB (default: the GPU's budget)")
    p.add_argument("--plain-trace", default=None,
                   help="a capture of the same model without a plan: its measured step times "
                        "replace the modelled op times")


def _model_args(p, *, gpu=False):
    p.add_argument("--model", required=True,
                   help="torchvision:NAME (classification, segmentation or video), "
                        "torchvision:resnet:3,4,36,3, hf:NAME, snsim:gpt, "
                        "snsim:transformer_encoder, zoo:NAME (a zoo GPT/ViT's twin) or "
                        "package.module:callable")
    p.add_argument("--batch", type=int, required=True, help="mini-batch size")
    p.add_argument("--optimizer", default="sgd-momentum",
                   help="sgd | sgd-momentum | nesterov | adam | adamw (default sgd-momentum)")
    p.add_argument("--optimizer-impl", default="foreach",
                   help="foreach | fused: the optimizer's kernels (default foreach)")
    precision_args(p)
    p.add_argument("--matmul-precision", default="highest",
                   help="highest | high | medium: torch.set_float32_matmul_precision for the "
                        "step; high and medium run fp32 matmuls on TF32 tensor cores "
                        "(default highest, torch's: fp32)")
    p.add_argument("--input-shape", default=None,
                   help="one sample's shape, e.g. 3,224,224 (default per model)")
    p.add_argument("--seq", type=int, default=None,
                   help="sequence length of a token model (snsim:gpt, ...; default 512)")
    if not gpu:
        p.add_argument("--skipped-steps", type=_skipped_steps, default=None,
                       help="with --amp fp16: the first optimizer steps GradScaler skips "
                            "(its gradients overflow at the initial scale); a foreach "
                            "optimizer then makes its state after they filled the cache, "
                            "which can lower the reserved peak (default auto: estimated "
                            "from one fp32 step of the model on this CPU)")
    if gpu:
        p.add_argument("--timing-iters", type=int, default=5,
                       help="iterations timed with a CUDA event per step (default 5)")
        p.add_argument("--plain-iters", type=int, default=10,
                       help="iterations without hooks: the ground truth (default 10)")


def _skipped_steps(text):
    """``--skipped-steps``: ``auto`` (None: estimated) or a count."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither auto nor a count") from None


def _setup(args):
    """The training setup of ``--optimizer``, ``--optimizer-impl``, ``--amp``,
    ``--matmul-precision``, ``--param-dtype`` and (predict) ``--skipped-steps``."""
    from .amp import TrainSetup
    return TrainSetup.parse(args.optimizer, args.optimizer_impl, args.amp,
                            getattr(args, "skipped_steps", None), args.matmul_precision,
                            args.param_dtype)


def _default_out(name, batch, optimizer, policy=None):
    from .amp import as_setup
    suffix = as_setup(optimizer).slug
    pol = f"_{policy}" if policy else ""
    return f"{DEFAULT_OUT_DIR}/{name}_b{batch}{suffix}{pol}.json.gz"


def _print_kv(row):
    width = max(map(len, row))
    for k, v in row.items():
        if k.endswith("_bytes") and isinstance(v, int):
            v = f"{v:,} B ({format_bytes(v)})"
        elif k.endswith("_time_s") and isinstance(v, float):
            v = f"{v * 1e3:.3f} ms"
        elif isinstance(v, float):
            v = f"{v:.3f}"
        print(f"{k:<{width}}  {v}")


# -- capture ---------------------------------------------------------------------------------
def cmd_capture(args):
    from .capture import capture, write_capture
    from .models import resolve_model
    spec = resolve_model(args.model, input_shape=_input_shape(args))
    doc = capture(args.model, args.batch, optimizer=_setup(args),
                  input_shape=_input_shape(args), timing_iters=args.timing_iters,
                  plain_iters=args.plain_iters)
    out = args.out or _default_out(spec.name, args.batch, _setup(args))
    write_capture(doc, out)
    m = doc["measured"]
    _print_kv({"trace": str(out), "peak_allocated_bytes": m["peak_allocated_bytes"],
               "peak_reserved_bytes": m["peak_reserved_bytes"],
               "peak_requested_bytes": m["peak_requested_bytes"],
               "step_time_s": m["step_time_s"], "hooked_step_time_s": m["hooked_step_time_s"],
               "steps": len(doc["program"]["steps"]),
               "hidden_allocations": doc["program"]["notes"].get("hidden_allocations", 0)})
    return 0


@command("capture")
def _add_capture(sub):
    p = sub.add_parser("capture", help="capture a real training step on a CUDA GPU into a trace")
    _model_args(p, gpu=True)
    p.add_argument("--out", default=None,
                   help=f"trace path (default {DEFAULT_OUT_DIR}/NAME_bBATCH.json.gz)")
    p.set_defaults(func=cmd_capture)


# -- predict ---------------------------------------------------------------------------------
PREDICT_KEYS = ("network", "batch", "optimizer", "optimizer_impl", "amp", "matmul_precision",
                "param_dtype", "hardware", "plan", "peak_allocated_bytes", "peak_reserved_bytes",
                "peak_reserved_warm_process_bytes", "peak_requested_bytes", "static_bytes",
                "step_time_s", "step_time_host_range_s", "host_issue_s", "feasible", "failure",
                "budget_bytes", "step_time_source", "host_copy_time_s", "host_pace_factor",
                "torch_version", "libraries", "torch_modelled", "cuda_modelled",
                "workspace_sources")

ZERO_PREDICT_KEYS = ("cpu_step_s", "h2d_bytes", "d2h_bytes", "host_pinned_bytes",
                     "host_total_bytes")


def predict_verdict(r):
    """One line beginning ``fits:`` or ``does not fit:`` for a :func:`predict_plan` result."""
    from ..verdict import _gib, format_ms
    budget, peak = r["budget_bytes"], r["peak_reserved_bytes"]
    if r["feasible"]:
        return (f"fits: peak {_gib(peak)} of {_gib(budget)} ({100 * peak / budget:.0f}%), "
                f"step {format_ms(r['step_time_s'])} (predicted: {r['step_time_source']}) on "
                f"{r['hardware']}")
    if peak <= budget:     # the peaks of a run that stopped (a ZeRO run stops where it fails)
        return f"does not fit in {_gib(budget)}: {r['failure'] or 'the run stopped'}"
    return (f"does not fit: needs {_gib(peak)} reserved, budget {_gib(budget)} — "
            f"{r['failure'] or 'the peak is above the budget'}")


def _plan(args):
    from .plans import PlanSpec
    return PlanSpec.parse(args.policy, args.option)


def _budget(args):
    """``--budget`` in bytes: above zero and within what the GPU's allocator can reserve (a
    larger GPU is a preset of its own, ``--gpu my.yaml``)."""
    if not args.budget:
        return None
    budget = parse_bytes(args.budget, field="--budget")
    from ..hardware import load_hardware
    hw = load_hardware(getattr(args, "gpu", None) or "h200")
    if not 0 < budget <= hw.budget_bytes:
        raise ConfigError(f"--budget (={args.budget}) must be > 0 and at most {hw.name}'s "
                          f"{format_bytes(hw.budget_bytes)} (its memory less the CUDA context); "
                          f"model a larger GPU with --gpu my.yaml")
    return budget


def _host_gauge_s(args):
    """``--host-gauge-us`` in seconds, or None."""
    us = getattr(args, "host_gauge_us", None)
    if us is None:
        return None
    if not us > 0 or us == float("inf"):
        raise ConfigError(f"--host-gauge-us (={us}) must be a positive number of microseconds "
                          "(snsim gauge prints it)")
    return us * 1e-6


def _torch_modelled(args):
    """``--torch-version``: the torch release that will run the step, whose runtime behaviour
    the prediction models. Default: the one the GPU preset's kernel table was measured with
    (the software stack its times describe), else the installed torch; ``installed``: the
    installed torch."""
    from .plans import is_installed_torch, torch_release
    given = getattr(args, "torch_version", None)
    if given is not None:
        if not is_installed_torch(given):
            torch_release(given)      # one line for a value that is no release
        return given.strip()
    from ..hardware import load_hardware
    from ..kernel_table import load_kernel_table
    table = load_kernel_table(load_hardware(getattr(args, "gpu", None) or "h200").name)
    return (table.meta.get("torch") if table is not None else None) or "installed"


def cmd_predict(args):
    from .execute import predict_plan
    from .plans import PlanSpec
    from .zero import ZERO_POLICIES, predict_zero, torch_base_plan
    if args.policy in ZERO_POLICIES:
        if args.option or args.plain_trace:
            raise ConfigError(f"--policy {args.policy} takes no --option or --plain-trace")
        r, prog = predict_zero(args.model, args.batch, args.policy, optimizer=_setup(args),
                               gpu=args.gpu, input_shape=_input_shape(args),
                               budget_bytes=_budget(args), host_gauge_s=_host_gauge_s(args),
                               torch_version=_torch_modelled(args))
        plan = PlanSpec.parse(torch_base_plan(args.policy))
    else:
        plan = _plan(args)
        r, prog = predict_plan(args.model, args.batch, plan, optimizer=_setup(args),
                               gpu=args.gpu, input_shape=_input_shape(args),
                               budget_bytes=_budget(args), plain_trace=args.plain_trace,
                               host_gauge_s=_host_gauge_s(args),
                               torch_version=_torch_modelled(args))
    if args.out:
        from ..trace import write_trace
        output_path(args.out, "--out")
        write_trace(args.out, program=prog, provenance={
            "kind": "modeled", "tool": "snsim predict", "hardware": r["hardware"],
            "model": r["model"], "batch": args.batch, **_setup(args).to_dict(),
            "plan": plan.to_dict(), "torch": r["torch_version"]})
    if r.get("value_branches"):   # the values were computed: none is unknown
        print("snsim: warning: the model branches on tensor values; each branch went the way "
              "snsim's own inputs, the model's buffers (a registered mask) and tensors made "
              "from constants (an all-ones attention mask) send it, computed on the CPU", file=sys.stderr)
    for op in () if r.get("value_branches") else r["data_dependent_ops"]:
        if op.endswith(" in optimizer.step"):
            continue    # Adam's step counter read (``_get_value``): no size depends on it
        print(f"snsim: warning: data-dependent op {op}: its value is unknown on a CPU; sizes "
              f"that depend on it are taken at their upper bound", file=sys.stderr)
    from .record import CPU_ONLY_OPS
    for op in r.get("cpu_only_ops", ()):
        print(f"snsim: warning: {op} is the CPU's kernel: {CPU_ONLY_OPS[op.split(' in ')[0]]}; "
              f"its memory and time here are the CPU kernel's (measure the model with snsim "
              f"capture on a GPU)", file=sys.stderr)
    # a result at torch's default matmul precision (fp32 parameters) has no matmul_precision
    # (param_dtype): TrainSetup.to_dict leaves the defaults out
    defaults = {"matmul_precision": "highest", "param_dtype": "fp32"}
    row = {k: r.get(k, defaults[k]) if k in defaults else r[k] for k in PREDICT_KEYS}
    # a ZeRO plan's own figures: the CPU optimizer step, the bytes moved, the host's share
    row.update({k: r[k] for k in ZERO_PREDICT_KEYS if k in r})
    # fp16: the optimizer steps GradScaler skips first, and whether given or estimated
    row.update({k: r[k] for k in ("skipped_steps", "skipped_steps_source") if k in r})
    if r.get("cpu_only_ops"):
        row["cpu_only_ops"] = r["cpu_only_ops"]
    if args.format == "table":
        print(predict_verdict(r))
        row["cuda_modelled"] = "; ".join(f"{k}: {v}" for k, v in row["cuda_modelled"].items())
        row["workspace_sources"] = ", ".join(f"{k} {v}"
                                             for k, v in row["workspace_sources"].items())
        if row["step_time_host_range_s"]:
            row["step_time_host_range_s"] = " to ".join(
                f"{t:.6f}" for t in row["step_time_host_range_s"])
        _print_kv(row)
        note = guessed_workspaces_note(r["workspace_sources"], args.batch)
        if note:
            print(note)
        ts = r.get("time_sources") or {}
        if ts:
            print("step time from: " + ", ".join(
                f"{k[:-2]} {ts[k] * 1e3:.2f} ms" for k in ("table_s", "fitted_s", "proxy_s",
                                                           "roofline_s", "wait_s"))
                  + f" ({ts['kernel_table'] or 'no kernel table: roofline'})")
            note = host_bound_note(ts.get("wait_s", 0.0), r["step_time_s"],
                                   gauged=args.host_gauge_us is not None,
                                   range_s=r["step_time_host_range_s"])
            if note:
                print(note)
        if not r["feasible"] and args.policy not in ZERO_POLICIES:
            print(f"the largest batch that fits: {maxbatch_command(args)}")
    elif args.format == "csv":
        row["cuda_modelled"] = json.dumps(row["cuda_modelled"])
        row["workspace_sources"] = json.dumps(row["workspace_sources"])
        row["step_time_host_range_s"] = json.dumps(row["step_time_host_range_s"])
        emit([row], "csv")
    else:
        emit([row], "json")
    return 0 if r["feasible"] else 3   # as `snsim run`: 3 = it does not fit


def maxbatch_command(args):
    """The ``snsim maxbatch --model`` command that searches the batch of the predicted step's
    setup (model, training setup, input, plan, budget, GPU).

    >>> import argparse
    >>> maxbatch_command(argparse.Namespace(model="torchvision:vgg16", optimizer="adamw",
    ...     optimizer_impl="foreach", amp="bf16", input_shape=None, seq=None, policy="checkpoint",
    ...     option=["every=2"], budget="8GiB", gpu="h200"))
    'snsim maxbatch --model torchvision:vgg16 --optimizer adamw --amp bf16 --policy checkpoint --option every=2 --budget 8GiB'
    """
    import shlex
    parts = ["snsim", "maxbatch", "--model", args.model]
    for flag, value, default in (("--optimizer", args.optimizer, "sgd-momentum"),
                                 ("--optimizer-impl", args.optimizer_impl, "foreach"),
                                 ("--amp", args.amp, "none"),
                                 ("--param-dtype", getattr(args, "param_dtype", "fp32"), "fp32"),
                                 ("--input-shape", args.input_shape, None),
                                 ("--seq", args.seq, None)):
        if value is not None and value != default:
            parts += [flag, str(value)]
    parts += ["--policy", args.policy]
    for opt in args.option:
        parts += ["--option", opt]
    if args.budget:
        parts += ["--budget", args.budget]
    if args.gpu != "h200":
        parts += ["--gpu", args.gpu]
    return shlex.join(parts)


def guessed_workspaces_note(sources, batch):
    """The lines ``snsim predict`` adds when some of its workspaces were not measured at
    ``batch``: from probed neighbours or the first-principles model, which miss most
    (docs/DESIGN.md: RegNetX-8GF b64's 1x1 backward-filter passes, 132.7 MB each where the
    neighbours gave 79.9 MB, reserved +13 %), or the same call at other batches, interpolated
    between them, where cuDNN may take another engine and a few MB a call can move the reserved
    peak by a segment (ResNeXt-50 b36 bf16 on an H100: reserved +8.37 % read between batches 32
    and 40, +0.08 % once 36 was probed). A call read in another dtype (scaled by the element
    size) gets no line. None when every workspace was measured.

    >>> print(guessed_workspaces_note({"measured": 90, "other_batch": 0, "other_dtype": 4,
    ...                                "neighbours": 6, "modelled": 0}, 32)[:46])
    workspaces: 6 of 100 calls from probed neighbo
    >>> print(guessed_workspaces_note({"measured": 9, "other_batch": 3, "other_dtype": 0,
    ...                                "neighbours": 0, "modelled": 0}, 36)[:52])
    workspaces: 3 of 12 calls read at batches other than
    >>> guessed_workspaces_note({"measured": 9, "other_batch": 0, "other_dtype": 1,
    ...                          "neighbours": 0, "modelled": 0}, 32) is None
    True
    """
    total = sum(sources.values())
    lines = []
    guessed = sources.get("neighbours", 0) + sources.get("modelled", 0)
    if guessed:
        lines.append(f"workspaces: {guessed} of {total} calls from probed neighbours or the "
                     f"first-principles model, not measured: the reserved peak is surest when "
                     f"the network's own layers are probed (scripts/conv_workspace_probe.py "
                     f"--nets, scripts/conv_workspace_coverage.py)")
    other = sources.get("other_batch", 0)
    if other:
        lines.append(f"workspaces: {other} of {total} calls read at batches other than {batch} "
                     f"(interpolated between the nearest, or scaled): cuDNN may take another "
                     f"engine at this batch, and a few MB a call can move the reserved peak by "
                     f"a segment (ResNeXt-50 b36 bf16: +8.4 % until 36 was probed); "
                     f"scripts/conv_workspace_probe.py --net-batches {batch} on the GPU "
                     f"measures it")
    return "\n".join(lines) or None


def host_bound_note(wait_s, step_s, *, gauged, range_s=None):
    """The line ``snsim predict`` adds when much of its step is the GPU waiting for the
    launching thread at the kernel table's CPU pace (no ``--host-gauge-us``): that share moves
    with the machine's CPU and the process (docs/VALIDATION.md: the H200's leases stepped the
    same host-bound plans 1.4-1.7x apart). ``range_s``: the step at the preset's fast and slow
    groups' paces (``step_time_host_range_s``). None when under a third, or ``gauged`` (the
    user gave the machine's pace, whatever it reads).

    >>> host_bound_note(0.006, 0.010, gauged=False)[:31]
    'host-bound: 60% of the step is '
    >>> host_bound_note(0.006, 0.010, gauged=False, range_s=[0.009, 0.0125])[-89:-48]
    'the step takes 9.0 to 12.5 ms): gauge tha'
    >>> host_bound_note(0.002, 0.010, gauged=False), host_bound_note(0.006, 0.01, gauged=True)
    (None, None)
    """
    if step_s <= 0 or wait_s < step_s / 3 or gauged:
        return None
    spread = ("" if not range_s else
              f" (at the paces of the fast and slow groups this GPU's processes gauged in, "
              f"the step takes {range_s[0] * 1e3:.1f} to {range_s[1] * 1e3:.1f} ms)")
    return (f"host-bound: {100 * wait_s / step_s:.0f}% of the step is the GPU waiting for the "
            f"launching thread, modelled at the kernel table's CPU pace; this share moves "
            f"with the CPU and process that run it{spread}: gauge that machine (snsim gauge) "
            f"and pass --host-gauge-us")


@command("predict")
def _add_predict(sub):
    p = sub.add_parser("predict", help="predict a PyTorch training step's peaks and time on a "
                       "CPU (FakeTensorMode, no GPU), optionally under a memory plan")
    _model_args(p)
    from .zero import ZERO_POLICIES
    _plan_args(p, extra=ZERO_POLICIES)
    p.add_argument("--gpu", default="h200", help="hardware preset (default h200)")
    p.add_argument("--host-gauge-us", type=float, default=None, metavar="US",
                   help="the launching thread's pace on the machine that will run the step "
                        "(`snsim gauge` there): the modelled host time is scaled by US over "
                        "the kernel table's own (default: the table's pace)")
    p.add_argument("--torch-version", default=None, metavar="VERSION",
                   help="the torch release that will run the step (e.g. 2.11), for its "
                        "runtime behaviour: save_on_cpu's pinned pack waits for its copy "
                        "before 2.12; 'installed': this machine's torch (default: the torch "
                        "the GPU preset's kernel table was measured with)")
    p.add_argument("--out", default=None, help="also write the predicted program as a trace "
                   "(under a ZeRO policy: the program of the torch plan beneath it)")
    p.add_argument("--format", default="table", choices=("table", "json", "csv"))
    p.set_defaults(func=cmd_predict)


# -- gauge -----------------------------------------------------------------------------------
def cmd_gauge(args):
    from .capture import require_cuda
    from .hostpace import gauge_add_s
    if args.device == "cuda":
        require_cuda()
    else:
        from .models import _torch
        _torch()     # one line where torch is not installed
    g = gauge_add_s(args.device)
    row = {"device": args.device, "host_gauge_add_us": round(g * 1e6, 3)}
    if args.device == "cuda":
        from ..kernel_table import load_kernel_table
        from .hostpace import pace_factor
        table = load_kernel_table(args.gpu)
        if table is not None and table.aten_host.get("add"):
            row[f"pace_vs_{args.gpu}_table"] = round(pace_factor(g, table), 3)
    if args.format == "json":
        emit([row], "json")
    else:
        _print_kv(row)
        print(f"pass --host-gauge-us {row['host_gauge_add_us']} to snsim predict to model this "
              "machine's host" + ("" if args.device == "cuda" else
                                  " (a CPU gauge is not a launch cost: dry runs only)"))
    return 0


@command("gauge")
def _add_gauge(sub):
    p = sub.add_parser("gauge", help="time this machine's kernel launches (a small torch.add "
                       "in a tight loop) for snsim predict --host-gauge-us")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="where the adds run (default cuda; cpu: a dry run, not a launch cost)")
    p.add_argument("--gpu", default="h200", help="the preset whose kernel table the gauge is "
                   "compared with (default h200)")
    p.add_argument("--format", default="table", choices=("table", "json"),
                   help="output format (default table)")
    p.set_defaults(func=cmd_gauge)


# -- validate --------------------------------------------------------------------------------
_COLUMNS = ("trace", "policy", "pred_allocated_bytes", "meas_allocated_bytes",
            "err_allocated_pct", "pred_reserved_bytes", "meas_reserved_bytes",
            "err_reserved_pct", "pred_step_time_s", "meas_step_time_s", "err_step_time_pct")


def cmd_validate(args):
    from .validate import summarize, validate
    rows = validate(args.traces)
    if args.csv:
        import pandas as pd
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    if args.format == "table":
        pretty = []
        for r in rows:
            pretty.append({
                "trace": r["trace"], "policy": r["policy"],
                "alloc replay GiB": round(r["pred_allocated_bytes"] / 2**30, 3),
                "alloc meas GiB": round(r["meas_allocated_bytes"] / 2**30, 3),
                "alloc err %": round(r["err_allocated_pct"], 2),
                "resv replay GiB": round(r["pred_reserved_bytes"] / 2**30, 3),
                "resv meas GiB": round(r["meas_reserved_bytes"] / 2**30, 3),
                "resv err %": round(r["err_reserved_pct"], 2),
                "step replay ms": round(r["pred_step_time_s"] * 1e3, 2),
                "step meas ms": round(r["meas_step_time_s"] * 1e3, 2),
                "step err %": round(r["err_step_time_pct"], 2)})
        print("replays of each capture's own alloc/free order and step times through the "
              "engine: they check the engine, they are not predictions (docs/VALIDATION.md)")
        emit(pretty, "table")
        summary = summarize(rows)
        for q, s in summary.items():
            bound = f"mean <= {s['mean_gate_pct']}%" + (
                f", max <= {s['max_gate_pct']}%" if s["max_gate_pct"] else "")
            print(f"{q:<15} mean |err| {s['mean_abs_pct']:.2f}%  max |err| "
                  f"{s['max_abs_pct']:.2f}%  replay bound {bound}: {'ok' if s['ok'] else 'FAIL'}")
    else:
        emit([{k: r[k] for k in _COLUMNS} for r in rows], args.format, title="list")
    if args.check and not all(s["ok"] for s in summarize(rows).values()):
        print("snsim: error: a replay bound fails (docs/VALIDATION.md, section 5)", file=sys.stderr)
        return 1
    return 0


@command("validate")
def _add_validate(sub):
    p = sub.add_parser("validate", help="replay captured traces and compare predicted with "
                       "measured peaks and step time")
    p.add_argument("traces", nargs="+", help="trace files, directories or globs")
    p.add_argument("--csv", default=None, help="also write every column to this CSV file")
    p.add_argument("--format", default="table", choices=("table", "json", "csv"))
    p.add_argument("--check", action="store_true",
                   help="exit with status 1 when a replay bound fails (docs/VALIDATION.md)")
    p.set_defaults(func=cmd_validate)


# -- execute ---------------------------------------------------------------------------------
def cmd_execute(args):
    from .capture import require_cuda, write_capture
    from .execute import RunDoesNotFit, execute, execute_preset, measure, predict_plan
    from .models import resolve_model
    from .zero import ZERO_POLICIES
    gpu = execute_preset(require_cuda())
    if args.policy in ZERO_POLICIES:
        return _execute_zero(args, gpu)
    plan = _plan(args)
    budget = _budget(args)
    shape = _input_shape(args)
    spec = resolve_model(args.model, input_shape=shape)
    pred, _ = predict_plan(spec, args.batch, plan, optimizer=_setup(args), gpu=gpu,
                           budget_bytes=budget, plain_trace=args.plain_trace)
    out = args.out or _default_out(spec.name, args.batch, _setup(args), plan.slug)

    def measured_doc(meas, tool):
        from .capture import provenance
        import torch
        return {"provenance": provenance(torch, tool=tool, model=spec.text, batch=args.batch,
                                         **_setup(args).to_dict(),
                                         input_shape=list(spec.input_shape),
                                         plan=plan.to_dict()),
                "measured": meas, "predictions": {"snsim_predict_plan": pred}}
    try:
        if args.fast:
            doc = measured_doc(measure(spec, args.batch, plan, optimizer=_setup(args),
                                       warmup_iters=args.warmup_iters, iters=args.plain_iters,
                                       budget_bytes=budget), "snsim execute --fast")
            _write_json(doc, out)
        else:
            doc = execute(spec.text, args.batch, plan, optimizer=_setup(args),
                          budget_bytes=budget, input_shape=shape,
                          timing_iters=args.timing_iters, plain_iters=args.plain_iters,
                          prediction=pred)
            write_capture(doc, out)
    except RunDoesNotFit as e:
        # out of memory is a measurement: feasible false, beside the prediction
        print(f"snsim execute: {e}", file=sys.stderr)
        doc = measured_doc({"feasible": False, "failure": str(e)}, "snsim execute")
        _write_json(doc, out)
    m = doc["measured"]
    m.setdefault("feasible", True)   # it ran: no out-of-memory error
    _emit_comparison(args, f"{spec.name} batch {args.batch} under {plan.label}: trace {out}",
                     out, plan.label, pred, m,
                     ("peak_allocated_bytes", "peak_reserved_bytes", "step_time_s",
                      "host_issue_s", "feasible"), doc["provenance"])
    return 0


#: the run's provenance keys ``snsim execute --format json`` prints beside its rows
RUN_VERSION_KEYS = ("gpu", "torch", "cuda", "cudnn", "driver", "libraries")


def _emit_comparison(args, head, out, label, pred, meas, quantities, provenance):
    """``snsim execute``'s output: per quantity the prediction, the measurement and the error
    % (none for ``feasible`` or where either is missing), as JSON (with the run's versions,
    :data:`RUN_VERSION_KEYS`) or as ``head`` and a table."""
    rows = []
    for q in quantities:
        p, m = pred.get(q), meas.get(q)
        err = (round(100.0 * (p - m) / m, 2)
               if q != "feasible" and p is not None and m else None)
        rows.append({"quantity": q, "predicted": p, "measured": m, "error_pct": err})
    if args.format == "json":
        versions = {k: provenance[k] for k in RUN_VERSION_KEYS if k in provenance}
        emit([{"trace": str(out), "plan": label, "versions": versions, "rows": rows}], "json")
    else:
        print(head)
        emit(rows, "table")


def _execute_zero(args, gpu):
    """``--policy zero_offload`` / ``superneurons+zero_offload``: the ZeRO-style step of
    :mod:`snsim.torchsim.zero`, predicted (:func:`~snsim.torchsim.zero.predict_zero`, on this
    CPU) and then measured (no capture), the two side by side as for the other plans."""
    import torch
    from .capture import provenance
    from .models import resolve_model
    from .zero import measure_zero, predict_zero
    if args.option or args.budget or args.plain_trace:
        raise ConfigError(f"--policy {args.policy} takes no --option, --budget or --plain-trace")
    setup, shape = _setup(args), _input_shape(args)
    spec = resolve_model(args.model, input_shape=shape)
    pred, _ = predict_zero(spec, args.batch, args.policy, optimizer=setup, input_shape=shape,
                           gpu=gpu)
    meas = measure_zero(spec, args.batch, args.policy, optimizer=setup,
                        warmup_iters=args.warmup_iters, iters=args.plain_iters)
    doc = {"provenance": provenance(torch, tool="snsim execute", model=spec.text,
                                    batch=args.batch, optimizer=args.optimizer,
                                    input_shape=list(spec.input_shape), policy=args.policy),
           "measured": meas, "predictions": {"snsim_predict_zero": pred}}
    slug = args.policy.replace("+", "-")
    out = args.out or _default_out(spec.name, args.batch, args.optimizer, slug)
    _write_json(doc, out)
    _emit_comparison(args, f"{spec.name} batch {args.batch} under {args.policy}: {out}", out,
                     args.policy, pred, meas,
                     ("peak_allocated_bytes", "peak_reserved_bytes", "step_time_s", "cpu_step_s",
                      "h2d_bytes", "d2h_bytes", "host_pinned_bytes", "gpu_s", "cpu_step_faults"),
                     doc["provenance"])
    return 0


def _write_json(doc, path):
    from pathlib import Path

    from ..trace import open_text
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_text(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"), default=str)
    return path


@command("execute")
def _add_execute(sub):
    p = sub.add_parser("execute", help="run a memory plan in PyTorch on the GPU and compare "
                       "with the prediction made before the run")
    _model_args(p, gpu=True)
    from .zero import ZERO_POLICIES
    _plan_args(p, required=True, extra=ZERO_POLICIES)
    p.add_argument("--fast", action="store_true",
                   help="measure only (no capture hooks, no program): peaks and the median "
                        "step time of --plain-iters iterations after --warmup-iters")
    p.add_argument("--warmup-iters", type=int, default=2, help="with --fast (default 2)")
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.add_argument("--out", default=None, help="trace path of the executed run")
    p.set_defaults(func=cmd_execute)


if __name__ == "__main__":  # pragma: no cover
    from ..cli import main
    sys.exit(main())
