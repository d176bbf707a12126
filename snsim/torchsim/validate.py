"""Replayed vs measured for captured traces (``snsim validate``); numpy and snsim only.

Every trace's program runs through the engine (:func:`snsim.captured.replay_capture`, the
``liveness`` plan, the ``pytorch`` allocator, the hardware preset the trace names): its peaks
come from the capture's own allocation order and its step time from the capture's own hooked
per-step times. This is a *replay* of a measured run — it checks the engine and the allocator
model, not a prediction; predictions (``snsim predict``, made before a run) are reported apart.
"""
from __future__ import annotations

import glob
import gzip
import json
import os

from ..errors import TraceError

# SPEC §12.4 gates on the captured set
GATES = {"peak_allocated": (2.0, 5.0), "peak_reserved": (5.0, None), "step_time": (10.0, None)}


def pct_error(predicted, measured):
    """Signed error of ``predicted`` relative to ``measured``, in percent."""
    if not measured:
        return float("nan")
    return 100.0 * (predicted - measured) / measured


def expand(paths):
    """Trace paths from files, directories and globs, sorted and de-duplicated."""
    out = []
    for p in paths:
        if os.path.isdir(p):   # a folder of captures: its *.json.gz traces
            out.extend(glob.glob(os.path.join(p, "*.json.gz")))
        elif any(c in p for c in "*?["):
            out.extend(glob.glob(p))
        else:
            out.append(p)
    return sorted(dict.fromkeys(out))


def validate_trace(path):
    """One row of predicted vs measured for trace ``path``.

    Raises
    ------
    TraceError
        A trace without a program or without measured ground truth.
    """
    from ..captured import replay_capture
    from ..hardware import load_hardware
    from ..trace import load_trace_doc, program_from_dict
    doc = load_trace_doc(path)
    prog = doc.get("program")
    measured = doc.get("measured")
    if not isinstance(prog, dict):
        raise TraceError(f"{path}: no captured program to replay")
    if not isinstance(measured, dict) or "peak_allocated_bytes" not in measured:
        raise TraceError(f"{path}: field measured.peak_allocated_bytes is missing (not a "
                         f"capture of a real run)")
    prov = doc.get("provenance", {})
    hw = load_hardware(prov.get("hardware") or prog.get("hardware") or "h200")
    program = program_from_dict(prog, source=str(path))
    res = replay_capture(program, hw, budget_bytes=hw.dram_bytes)
    if not res.feasible:
        raise TraceError(f"{path}: the replay does not fit in {hw.name}'s {hw.dram_bytes} B "
                         f"({res.failure})")
    m_alloc = int(measured["peak_allocated_bytes"])
    m_res = int(measured["peak_reserved_bytes"])
    m_time = float(measured["step_time_s"])
    return {
        "trace": os.path.basename(str(path)),
        "network": prog.get("name", ""), "batch": int(prog.get("batch", 0)),
        "policy": prov.get("policy", "default"),
        "optimizer": prog.get("optimizer", ""),
        "kind": "replay",
        "pred_allocated_bytes": res.peak_allocated_bytes, "meas_allocated_bytes": m_alloc,
        "err_allocated_pct": pct_error(res.peak_allocated_bytes, m_alloc),
        "pred_reserved_bytes": res.peak_reserved_bytes, "meas_reserved_bytes": m_res,
        "err_reserved_pct": pct_error(res.peak_reserved_bytes, m_res),
        "pred_step_time_s": res.step_time_s, "meas_step_time_s": m_time,
        "err_step_time_pct": pct_error(res.step_time_s, m_time),
        "pred_requested_bytes": res.peak_ideal_bytes,
        "meas_requested_bytes": int(measured.get("peak_requested_bytes", 0)),
        "steps": len(prog.get("steps", [])), "tensors": len(prog.get("tensors", [])),
        "hidden_allocations": int(prog.get("notes", {}).get("hidden_allocations", 0)),
        "hardware": hw.name, "gpu": prov.get("gpu", ""),
    }


def validate(paths):
    """Rows of :func:`validate_trace` for every trace in ``paths`` (files, dirs, globs)."""
    files = expand(paths)
    if not files:
        raise TraceError(f"no trace files match {' '.join(map(str, paths))}")
    return [validate_trace(p) for p in files]


def summarize(rows):
    """Mean/max absolute error per quantity and whether SPEC §12.4's gates hold.

    Returns
    -------
    dict
        ``{quantity: {"mean_abs_pct", "max_abs_pct", "mean_gate_pct", "max_gate_pct", "ok"}}``.
    """
    import math
    out = {}
    for q, (mean_gate, max_gate) in GATES.items():
        errs = [abs(r[f"err_{q.split('_', 1)[1] if q.startswith('peak_') else q}_pct"])
                for r in rows]
        errs = [e for e in errs if not math.isnan(e)]
        mean = sum(errs) / len(errs) if errs else float("nan")
        mx = max(errs) if errs else float("nan")
        ok = bool(errs) and mean <= mean_gate and (max_gate is None or mx <= max_gate)
        out[q] = {"mean_abs_pct": mean, "max_abs_pct": mx, "mean_gate_pct": mean_gate,
                  "max_gate_pct": max_gate, "ok": ok}
    return out


def plain_captures(root="traces/h200"):
    """``{(model, batch, optimizer): path}`` of the captures of runs without a plan; of two
    captures of one configuration, one that recorded its first iteration
    (``warmup_iteration_starts``: where a run makes its optimizer state and cuBLAS its
    workspaces, which another plan's first iteration makes at the same points), and of those
    one that recorded its ops' reads (``read`` events: steps that follow the ops, gradient
    sums in place) — ``plain_history/`` holds such captures of configurations first captured
    without them."""
    from ..trace import load_trace_doc
    out, rank = {}, {}
    for f in sorted(glob.glob(f"{root}/*.json.gz") + glob.glob(f"{root}/cpu_bound/*.json.gz")
                    + glob.glob(f"{root}/plain_history/*.json.gz")):
        doc = load_trace_doc(f)
        prov = doc["provenance"]
        if prov.get("policy"):
            continue
        key = (prov["model"], int(prov["batch"]), prov.get("optimizer", "sgd-momentum"))
        prog = doc.get("program") or {}
        r = (bool(prog.get("warmup_iteration_starts")),
             any(e[1] == "read" for e in prog.get("events") or ()))
        if key not in out or r > rank[key]:
            out[key], rank[key] = f, r
    return out


def plan_runs(root="traces/h200", folder="plans"):
    """Every completed run of a plan-suite folder, with its stored before-run prediction.
    A document of the folder that is no suite bundle (a single run's capture, as
    ``plans_history`` keeps them) holds no runs."""
    runs = []
    for path in sorted(glob.glob(os.path.join(root, folder, "*.json.gz"))):
        with gzip.open(path, "rt") as f:
            runs += [r for r in json.load(f).get("runs", []) if r.get("status") == "ok"]
    return runs


# the standard plan suite and its re-runs after fixes to the harness, oldest first: each plan
# in a fresh process (an earlier plan's cached segments moved the later ones' reserved peaks),
# then the class count inferred on the CPU (a fake forward on the GPU ran
# nn.TransformerEncoderLayer's fast path for real and left cached blocks)
STANDARD_RUNS = ("plans", "plans_standard_fresh", "plans_standard_mem7", "plans_standard_final")


def latest_runs(root="traces/h200", folders=STANDARD_RUNS):
    """``{run name: (run, folder, first run)}``: the latest executed run of each plan of the
    standard suite across its re-runs (by provenance date), and its first run (``plans/``)."""
    out = {}
    for folder in folders:
        for run in plan_runs(root, folder):
            name = run["name"]
            date = run.get("provenance", {}).get("date", "")
            if name not in out:
                out[name] = (run, folder, run)
            elif date >= out[name][0].get("provenance", {}).get("date", ""):
                out[name] = (run, folder, out[name][2])
    return out


def whatif_rows(root="traces/h200", policies=("checkpoint", "cpu_offload", "superneurons")):
    """The engine's plans on plain captures against the same plans executed.

    Every executed run of the plan suite under one of ``policies`` whose network, batch and
    optimizer have a plain capture: that capture's program under the same policy and
    options, against the plan's latest run (:func:`latest_runs`); the error against its first
    run comes along (``first_err_*``).

    Returns
    -------
    (DataFrame, list of (str, str))
        One row per simulated run (predicted, measured and % error of the allocated and
        reserved peaks and the step time), and the runs the engine's policy cannot plan, with
        the reason.
    """
    import pandas as pd
    from ..captured import replay_capture
    from ..errors import ConfigError
    from ..trace import read_trace
    plain = plain_captures(root)
    programs = {}    # capture path -> its program, read once for all its plans
    out, skipped = [], []
    for run, folder, first in latest_runs(root).values():
        # the plan suite's runs record no optimizer: they ran the default, SGD with momentum
        opt = run.get("optimizer") or run["provenance"].get("optimizer") or "sgd-momentum"
        src = plain.get((run["model"], int(run["batch"]), opt))
        if run["policy"] not in policies or src is None:
            continue
        opts = dict(o.split("=", 1) for o in run["options"])
        try:
            if src not in programs:
                programs[src] = read_trace(src)
            r = replay_capture(programs[src], "h200", policy=run["policy"],
                               policy_options=opts)
        except ConfigError as e:   # e.g. VGG: no block class (the suite wrapped conv runs)
            skipped.append((run["name"], str(e)))
            continue
        m = run["measured"]
        row = {"run": run["name"], "plain_capture": os.path.relpath(src, root),
               "executed": folder, "policy": run["policy"], "options": ",".join(run["options"])}
        for q, pred, meas, was in (
                ("allocated", r.peak_allocated_bytes, m["peak_allocated_bytes"],
                 first["measured"]["peak_allocated_bytes"]),
                ("reserved", r.peak_reserved_bytes, m["peak_reserved_bytes"],
                 first["measured"]["peak_reserved_bytes"]),
                ("step_time", r.step_time_s, m["step_time_s"], first["measured"]["step_time_s"])):
            row[f"pred_{q}"], row[f"meas_{q}"] = pred, meas
            row[f"err_{q}_pct"] = round(100 * (pred / meas - 1), 3)
            row[f"first_err_{q}_pct"] = round(100 * (pred / was - 1), 3)
        out.append(row)
    return pd.DataFrame(out), skipped


#: captures of networks section 3 never used, each with the module-boundary plans executed
#: right after it on the same lease (scripts/plans_on_fresh_captures.sh)
FRESH_CAPTURES = "plans_on_fresh_captures"


def streamed_plain_rows(paths):
    """The plain step of each capture that recorded its kernels, streamed by the engine (each
    step's kernel time, launched as the in-network host model issues it: docs/DESIGN.md, "The
    host as a stream on a capture") against the step the capture measured without hooks: a
    model of the plain step from measured kernels, not a replay. Captures without kernel
    times are left out.

    Returns
    -------
    DataFrame
        ``capture``, ``gpu_s`` (the kernels' sum), ``host_s`` (the modelled issue time),
        ``pred_step_s``, ``meas_step_s``, ``err_pct``.
    """
    import pandas as pd
    from ..captured import replay_capture
    from ..trace import read_trace
    out = []
    for path in paths:
        program = read_trace(path)
        if not program.steps or program.steps[0].gpu_s is None:
            continue
        measured = (program.extra.get("measured") or {}).get("step_time_s")
        if not measured:
            continue
        r = replay_capture(program, "h200")
        out.append({"capture": os.path.relpath(path, os.path.join("traces", "h200")),
                    "gpu_s": sum(s.gpu_s for s in program.steps),
                    "host_s": sum(s.host_s for s in program.steps),
                    "pred_step_s": r.step_time_s, "meas_step_s": measured,
                    "err_pct": round(pct_error(r.step_time_s, measured), 3)})
    return pd.DataFrame(out)


def fresh_capture_rows(root=os.path.join("traces", "h200", FRESH_CAPTURES)):
    """The engine's plans on fresh plain captures against the same plans executed.

    For every ``NAME.json.gz`` capture in ``root`` and every ``NAME_POLICY.json`` that
    ``snsim execute --format json`` wrote for it, the capture's program under ``POLICY``
    (SuperNeurons' plans placed on module boundaries) against the executed run, and beside
    it the error of ``snsim predict --policy``'s prediction that ``snsim execute`` made on the
    device's CPU before the run.

    Returns
    -------
    DataFrame
        One row per run: ``run``, ``policy``, then per quantity (``allocated``,
        ``reserved``, ``step_time``) ``pred_*``, ``meas_*``, ``err_*_pct`` (the engine on the
        capture) and ``predict_err_*_pct``.
    """
    import pandas as pd
    from ..captured import replay_capture
    from ..trace import read_trace
    keys = {"allocated": "peak_allocated_bytes", "reserved": "peak_reserved_bytes",
            "step_time": "step_time_s"}
    out = []
    for cap in sorted(glob.glob(os.path.join(root, "*.json.gz"))):
        name = os.path.basename(cap)[:-len(".json.gz")]
        program = None
        for run in sorted(glob.glob(os.path.join(root, f"{name}_*.json"))):
            policy = os.path.basename(run)[len(name) + 1:-len(".json")]
            with open(run) as fh:
                measured = {r["quantity"]: r for r in json.load(fh)["rows"]}
            if program is None:
                program = read_trace(cap)
            r = replay_capture(program, "h200", policy=policy)
            row = {"run": f"{name}_{policy}", "policy": policy}
            for q, key in keys.items():
                pred, meas = getattr(r, key), measured[key]["measured"]
                row[f"pred_{q}"], row[f"meas_{q}"] = pred, meas
                row[f"err_{q}_pct"] = round(pct_error(pred, meas), 3)
                row[f"predict_err_{q}_pct"] = measured[key]["error_pct"]
            out.append(row)
    return pd.DataFrame(out)
