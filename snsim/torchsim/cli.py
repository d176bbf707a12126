"""``snsim capture | predict | validate | execute`` (registered as a :mod:`snsim.cli` plugin).

torch is imported only when a command that needs it runs, so ``snsim validate`` works where
torch is not installed.
"""
from __future__ import annotations

import sys

from ..cli import command, emit
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


def _model_args(p, *, gpu=False):
    p.add_argument("--model", required=True,
                   help="torchvision:NAME, torchvision:resnet:3,4,36,3 or package.module:callable")
    p.add_argument("--batch", type=int, required=True, help="mini-batch size")
    p.add_argument("--optimizer", default="sgd-momentum",
                   help="sgd | sgd-momentum | nesterov | adam | adamw (default sgd-momentum)")
    p.add_argument("--input-shape", default=None,
                   help="one sample's shape, e.g. 3,224,224 (default per model)")
    if gpu:
        p.add_argument("--timing-iters", type=int, default=5,
                       help="iterations timed with a CUDA event per step (default 5)")
        p.add_argument("--plain-iters", type=int, default=10,
                       help="iterations without hooks: the ground truth (default 10)")


def _default_out(name, batch, optimizer, policy=None):
    suffix = "" if optimizer == "sgd-momentum" else f"_{optimizer}"
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
    spec = resolve_model(args.model, input_shape=_shape(args.input_shape))
    doc = capture(args.model, args.batch, optimizer=args.optimizer,
                  input_shape=_shape(args.input_shape), timing_iters=args.timing_iters,
                  plain_iters=args.plain_iters)
    out = args.out or _default_out(spec.name, args.batch, args.optimizer)
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
def cmd_predict(args):
    from .predict import predict
    r = predict(args.model, args.batch, optimizer=args.optimizer, gpu=args.gpu,
                input_shape=_shape(args.input_shape))
    if args.out:
        from ..trace import write_trace
        write_trace(args.out, program=r["program"], provenance=r["provenance"])
    row = {k: r[k] for k in ("network", "batch", "optimizer", "hardware", "peak_allocated_bytes",
                             "peak_reserved_bytes", "peak_requested_bytes", "static_bytes",
                             "step_time_s")}
    if args.format == "table":
        _print_kv(row)
        ts = r["time_sources"]
        print("step time from: " + ", ".join(
            f"{k[:-2]} {ts[k] * 1e3:.2f} ms" for k in ("table_s", "fitted_s", "proxy_s",
                                                       "roofline_s", "wait_s"))
              + f" ({ts['kernel_table'] or 'no kernel table: roofline'})")
    else:
        emit([row], args.format)
    return 0


@command("predict")
def _add_predict(sub):
    p = sub.add_parser("predict", help="predict a PyTorch training step's peaks and time on a "
                       "CPU (FakeTensorMode, no GPU)")
    _model_args(p)
    p.add_argument("--gpu", default="h200", help="hardware preset (default h200)")
    p.add_argument("--out", default=None, help="also write the predicted program as a trace")
    p.add_argument("--format", default="table", choices=("table", "json", "csv"))
    p.set_defaults(func=cmd_predict)


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
                "alloc pred GiB": round(r["pred_allocated_bytes"] / 2**30, 3),
                "alloc meas GiB": round(r["meas_allocated_bytes"] / 2**30, 3),
                "alloc err %": round(r["err_allocated_pct"], 2),
                "resv pred GiB": round(r["pred_reserved_bytes"] / 2**30, 3),
                "resv meas GiB": round(r["meas_reserved_bytes"] / 2**30, 3),
                "resv err %": round(r["err_reserved_pct"], 2),
                "step pred ms": round(r["pred_step_time_s"] * 1e3, 2),
                "step meas ms": round(r["meas_step_time_s"] * 1e3, 2),
                "step err %": round(r["err_step_time_pct"], 2)})
        emit(pretty, "table")
        summary = summarize(rows)
        for q, s in summary.items():
            gate = f"mean <= {s['mean_gate_pct']}%" + (
                f", max <= {s['max_gate_pct']}%" if s["max_gate_pct"] else "")
            print(f"{q:<15} mean |err| {s['mean_abs_pct']:.2f}%  max |err| "
                  f"{s['max_abs_pct']:.2f}%  gate {gate}: {'ok' if s['ok'] else 'FAIL'}")
    else:
        emit([{k: r[k] for k in _COLUMNS} for r in rows], args.format, title="list")
    if args.check and not all(s["ok"] for s in summarize(rows).values()):
        print("snsim: error: a validation gate fails (SPEC §12.4)", file=sys.stderr)
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
                   help="exit with status 1 when a SPEC §12.4 gate fails")
    p.set_defaults(func=cmd_validate)


# -- execute ---------------------------------------------------------------------------------
def cmd_execute(args):
    from .capture import write_capture
    from .execute import execute
    from .models import resolve_model
    budget = parse_bytes(args.budget, field="--budget") if args.budget else None
    spec = resolve_model(args.model, input_shape=_shape(args.input_shape))
    doc = execute(args.model, args.batch, args.policy, optimizer=args.optimizer,
                  budget_bytes=budget, input_shape=_shape(args.input_shape),
                  plain_trace=args.plain_trace, timing_iters=args.timing_iters,
                  plain_iters=args.plain_iters)
    out = args.out or _default_out(spec.name, args.batch, args.optimizer, args.policy)
    write_capture(doc, out)
    m, p = doc["measured"], doc["predictions"]["snsim_predict_plan"]
    rows = []
    for q in ("peak_allocated_bytes", "peak_reserved_bytes", "step_time_s"):
        err = 100.0 * (p[q] - m[q]) / m[q] if m[q] else float("nan")
        rows.append({"quantity": q, "predicted": p[q], "measured": m[q],
                     "error_pct": round(err, 2)})
    print(f"{spec.name} batch {args.batch} under {args.policy}: trace {out}")
    emit(rows, "table")
    return 0


@command("execute")
def _add_execute(sub):
    p = sub.add_parser("execute", help="run a recompute/offload plan in PyTorch on the GPU and "
                       "compare with the simulator's prediction")
    _model_args(p, gpu=True)
    p.add_argument("--policy", required=True, choices=("recompute", "offload", "superneurons"))
    p.add_argument("--budget", default=None, help="cap the GPU memory, e.g. 4GiB")
    p.add_argument("--plain-trace", default=None,
                   help="capture of the same model without a plan (its step times predict the "
                        "plan's; default traces/h200/NAME_bBATCH.json.gz if present)")
    p.add_argument("--out", default=None, help="trace path of the executed run")
    p.set_defaults(func=cmd_execute)


if __name__ == "__main__":  # pragma: no cover
    from ..cli import main
    sys.exit(main())
