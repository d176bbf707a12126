"""The host model's in-network costs from ``scripts/host_innet_probe.py``'s measurements
(issue 10 item 3): ``configs/kernels/<preset>_host_innet.csv``, read by
:func:`snsim.kernel_table.load_host_costs`.

Rows (``kind,name,phase,value,n,source``):

* ``ratio,<family>``: the family's aten calls' host cost in a step's sequence of calls (the
  probe's ``seq_s``) over the kernel table's tight-loop issue cost of the same calls (each
  probed configuration recorded on the CPU as ``snsim predict`` records it, its calls looked
  up in the table: :meth:`snsim.kernel_table.KernelTable.issue_s`), summed over every probed
  configuration. It holds what a real step's mix of calls adds (each call fetches its own code
  and data again: the probe's in-sequence calls cost 1.2-1.5x the same calls in a tight loop,
  alike in every family) and the difference between the CPU of calibrate's lease of the
  machine and the probe's (the same calls in a tight loop: 1.1-1.7x). ``ratio,*``: all calls
  with a kernel, for families probed fewer than ``--min-calls`` times or recorded with another
  call count.
* ``overhead,per_module,F`` and ``overhead,per_call,F``: what the real forward adds to its aten
  calls with a kernel in sequence (the launching thread's wall less their sum), split by
  non-negative least squares over the configurations into a cost per module call (Python
  ``nn.Module.__call__`` and its ``forward``) and per call with a kernel (the views and
  metadata calls around it -- a CPU recording under FakeTensorMode makes more of them than a
  CUDA step, ``detach`` and ``device`` above all, so they are not charged one by one -- the
  Python call into torch, autograd recording its node, autocast's dispatch); ``per_node,B``
  and ``per_call,B``: the backward's (the autograd engine per node, per call);
  ``per_param,U``: the optimizer step's and ``zero_grad``'s per parameter (the Python loops
  over parameters and their state; with ``--phase-walls``, refitted from profiled steps of
  larger networks: :func:`per_param_from_walls`) and ``per_read,U`` per read of a host
  tensor (a foreach Adam's ``.item()`` of each step counter).
* ``overhead,per_param_scaler,U`` (with ``--optstep``): GradScaler's per parameter
  (:func:`scaler_row`), from ``scripts/optstep_host_probe.py``'s fp16 configurations, each
  against its bf16 twin timed in the same process.
* ``overhead,per_accumulate,B`` and ``overhead,per_cat_input,B`` (``--engine``): the autograd
  engine's own calls, which no Python line issues -- a sum of two gradients
  (``InputBuffer::accumulate``'s ``add_``) and ``CatBackward0``'s handing on of each input's
  gradient -- from ``scripts/engine_host_probe.py`` (:func:`read_engine`). The probe replays
  every call from Python, so its backward ``add`` calls are left out of the ratios and priced
  by these before the backward's per-node and per-call costs are fitted.

Seconds are the kernel table's lease's (:func:`lease_factor`): the machine's CPU speed differs
from one lease to the next (docs/VALIDATION.md, the lease table), and calibrate is the model's
measure of the machine. Best: run the probe in calibrate's lease.

    PYTHONPATH=. python scripts/host_innet_fit.py traces/h200/profile_host/innet --gpu h200 \\
        --cache /tmp/records --optstep traces/h100/optstep_scaler/optstep_host.csv \\
        --optstep-configs "$(cat traces/h100/optstep_scaler/configs.txt)" --optstep-gauge-us 9.887 \\
        --engine traces/h200/profile_host/engine/engine_p*.csv \\
        --phase-walls docs/data/phase_host_h200.csv
"""
from __future__ import annotations

import argparse
import collections
import csv
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def table_issue_by_family(steps, table, cache=None):
    """``({family: seconds}, {family: calls}, {config: host reads}, {config: (gradient sums,
    CatBackward0 inputs)})``: the kernel table's tight-loop issue cost
    (:meth:`snsim.kernel_table.KernelTable.issue_s`) summed over the calls with a kernel of
    the steady iteration of every probed configuration, recorded on the CPU as ``snsim
    predict`` records it (FakeTensorMode; ``cache``: a folder for the recordings), and each
    configuration's reads of host tensors in its optimizer step (``.item()`` of a foreach
    Adam's step counters), and its backward's gradient sums by autograd's engine and the
    inputs of its ``CatBackward0`` nodes (priced by
    :func:`snsim.kernel_table.accumulate_call_s` and ``per_cat_input_s``, left out of the
    families' sums)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from host_by_family import recording

    from snsim.kernel_table import HOST_READ_OPS, NO_KERNEL_OPS, family_of
    from snsim.torchsim.opcost import CAT_GRAD_VIEWS, _issue_s
    out, count = collections.Counter(), collections.Counter()
    memo = {}
    reads, engine = {}, {}
    for s in steps:
        ops, marks, _, _, acc = recording(s, cache)
        last = max(m[3] for m in marks)
        reads[s["config"]] = sum(1 for op in ops if op[0] >= 0 and marks[op[0]][3] == last
                                 and op[1] in HOST_READ_OPS and marks[op[0]][1] == "U")
        steady = [i for i, op in enumerate(ops) if op[0] >= 0 and marks[op[0]][3] == last]
        sums = {i for i in steady if i in acc and ops[i][1] not in NO_KERNEL_OPS}
        engine[s["config"]] = (
            len(sums),
            sum(1 for i in steady if ops[i][1] in CAT_GRAD_VIEWS and marks[ops[i][0]][1] == "B"
                and str(marks[ops[i][0]][2]).startswith("CatBackward")))
        for i in steady:
            op = ops[i]
            if op[1] not in NO_KERNEL_OPS and i not in sums:
                out[family_of(op[1])] += _issue_s(table, op, memo)
                count[family_of(op[1])] += 1
    return out, count, reads, engine


def fit(calls, steps, table_s, table_n, reads, engine_n, engine_s, min_calls=20, lease=1.0):
    """Rows of ``<preset>_host_innet.csv`` from the probe's call and step rows and the kernel
    table's issue cost of the same calls (:func:`table_issue_by_family`). A family whose
    recorded call count differs from the probe's by more than a tenth (the recording and the
    real dispatch name its calls differently) takes ``ratio,*``. The probe's seconds are
    multiplied by ``lease`` (:func:`lease_factor`). The backward's gradient sums (the probe's
    ``add``/``add_`` calls in B: autograd's engine issues them, no node's formula does in
    these networks) and ``CatBackward0``'s inputs (``engine_n``: per configuration, from its
    recording) cost ``engine_s`` (:func:`read_engine`), taken off the backward's wall before
    its per-node and per-call costs are fitted."""
    import numpy as np
    from scipy.optimize import nnls

    from snsim.kernel_table import NO_KERNEL_OPS
    configs = sorted({r["config"] for r in steps})
    src = f"host_innet_probe over {len(configs)} configurations"
    sums = collections.Counter(r["config"] for r in calls if r["phase"] == "B"
                               and r["family"] in ("add", "add_"))
    for c in configs:
        if abs(sums[c] - engine_n[c][0]) > 0.1 * max(sums[c], 1):
            print(f"{c}: the probe's backward adds ({sums[c]}) are not the recording's "
                  f"gradient sums ({engine_n[c][0]})", file=sys.stderr)
    calls = [r for r in calls if not (r["phase"] == "B" and r["family"] in ("add", "add_"))]
    seq, n = collections.Counter(), collections.Counter()
    for r in calls:
        if r["family"] not in NO_KERNEL_OPS:
            seq[r["family"]] += float(r["seq_s"]) * lease
            n[r["family"]] += 1
    both = [f for f in seq if table_s.get(f, 0) > 0 and abs(table_n[f] - n[f]) <= 0.1 * n[f]]
    out = [{"kind": "ratio", "name": "*", "phase": "",
            "value": sum(seq[f] for f in both) / sum(table_s[f] for f in both),
            "n": sum(n[f] for f in both), "source": src}]
    for fam in sorted(both):
        if n[fam] >= min_calls:
            out.append({"kind": "ratio", "name": fam, "phase": "",
                        "value": seq[fam] / table_s[fam], "n": n[fam], "source": src})
    # per phase and configuration: the calls with a kernel, their in-sequence seconds
    kern = collections.Counter()
    kern_s = collections.Counter()
    for r in calls:
        if r["family"] not in NO_KERNEL_OPS:
            kern[(r["config"], r["phase"])] += 1
            kern_s[(r["config"], r["phase"])] += float(r["seq_s"]) * lease
    names = {"module_calls": "per_module", "autograd_nodes": "per_node", "params": "per_param",
             "kernel_calls": "per_call", "reads": "per_read"}
    for phase, cols in (("F", ("module_calls", "kernel_calls")),
                        ("B", ("autograd_nodes", "kernel_calls")), ("U", ("params", "reads"))):
        A = np.array([[float(kern[(s["config"], phase)]) if c == "kernel_calls"
                       else float(reads.get(s["config"], 0)) if c == "reads"
                       else float(s[c]) for c in cols] for s in steps])
        y = np.array([float(s[f"wall_{phase}_s"]) * lease - kern_s[(s["config"], phase)]
                      - (engine_n[s["config"]][0] * engine_s["accumulate_s"]
                         + engine_n[s["config"]][1] * engine_s["cat_input_s"]
                         if phase == "B" else 0.0) for s in steps])
        coef, _ = nnls(A, np.maximum(y, 0.0))
        for c, v in zip(cols, coef):
            out.append({"kind": "overhead", "name": names[c], "phase": phase,
                        "value": float(v), "n": len(steps), "source": src})
    for name, key in (("per_accumulate", "accumulate_s"), ("per_cat_input", "cat_input_s")):
        out.append({"kind": "overhead", "name": name, "phase": "B", "value": engine_s[key],
                    "n": engine_s["n"], "source": engine_s["source"]})
    return out


def read_engine(paths, table):
    """``{"accumulate_s", "cat_input_s", "n", "source"}``: the autograd engine's host seconds
    per gradient sum and per ``CatBackward0`` input from ``scripts/engine_host_probe.py``'s
    CSVs (one per fresh process), in the kernel table's lease (the table's smallest ``add``
    over the median of the processes' ``gauge_add``, as :func:`lease_factor`), each the median
    over processes and tensor sizes.

    A gradient sum is one ``add_`` the engine issues from C++ between nodes: priced as what a
    kernel adds to a node in the engine, a chain of ``MulBackward0`` nodes (one kernel each)
    less a chain of ``ViewBackward0`` nodes (none), per node. A ``CatBackward0`` input costs
    the probe's per-input slope less one node without a kernel (``view_node``): each input
    of the probe's cat is a leaf that ``autograd.grad`` captures, its ``AccumulateGrad``
    node evaluated for it, where in a network the gradient goes on to a node that runs
    anyway. The probe's direct difference, ``k`` consumers of one leaf against ``k`` leaves,
    agrees: on the H200 it came out 0-7 us below zero per consumer, a sum less one such
    node (``view_node``, 5-7 us), i.e. a sum of 0-5 us, against 4-8 us by the chains."""
    got = collections.defaultdict(list)
    gauges = []
    for path in paths:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
        v = {(r["part"], r["numel"]): float(r["value_s"]) for r in rows}
        gauges += [x for (part, _), x in v.items() if part == "gauge_add"]
        for (part, numel), x in v.items():
            if part in ("mul_chain", "cat_input") and ("view_node", numel) in v:
                got["accumulate" if part == "mul_chain" else part].append(
                    x - v[("view_node", numel)])
    missing = [p for p in ("accumulate", "cat_input") if not got[p]]
    if missing or not gauges:
        raise SystemExit(f"host_innet_fit: --engine files lack {', '.join(missing or ['gauge_add'])}"
                         " rows (scripts/engine_host_probe.py)")
    factor = table.aten_host["add"] / statistics.median(gauges) if "add" in table.aten_host \
        else 1.0
    return {"accumulate_s": max(0.0, statistics.median(got["accumulate"]) * factor),
            "cat_input_s": max(0.0, statistics.median(got["cat_input"]) * factor),
            "n": len(got["accumulate"]),
            "source": f"engine_host_probe over {len(paths)} processes"}


def scaler_row(rows, optstep_csv, configs, table, cache=None, gauge_add_s=None):
    """The ``overhead,per_param_scaler,U`` row: GradScaler's host seconds per parameter, from
    ``scripts/optstep_host_probe.py``'s ``optstep_host.csv``. Each fp16 configuration of
    ``configs`` (the probe's ``--configs`` list) is paired with its bf16 twin (same network,
    batch and optimizer, timed in the same process): the measured ``opt_step`` + ``zero_grad``
    of the fp16 one less the bf16 one's is what GradScaler adds to the step; less what the
    model already charges for it (its unscale and update kernels' issue and the ``.item()``:
    the fp16 recording's modelled optimizer phase without this row less the bf16 one's), per
    parameter, at the table's pace (times ``table add / gauge_add_s``, the probe's host gauge;
    1 without one); the median over the pairs. None without a pair."""
    import tempfile

    from snsim.kernel_table import HOST_READ_OPS, read_host_innet
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.opcost import host_issue_s, parameters_per_iteration
    from snsim.torchsim.predict import cached_recording

    from op_breakdown import host_by_phase_s
    meas = collections.defaultdict(dict)
    with open(optstep_csv, newline="") as f:
        for r in csv.DictReader(f):
            meas[r["config"]][r["variant"]] = float(r["host_s"])
    lease = lease_factor([{"gauge_add_s": gauge_add_s}], table)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "innet.csv"
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["kind", "name", "phase", "value", "n", "source"])
            w.writeheader()
            w.writerows(rows)
        innet = read_host_innet(path)

    def phase(text, batch, optimizer, impl, amp):
        """(probe config name, measured opt_step + zero_grad or None, modelled optimizer
        phase without GradScaler's per-parameter row, parameters) of one configuration."""
        name, (ops, marks, host_sids, _, acc) = cached_recording(
            text, int(batch), TrainSetup.from_precision_field(optimizer, impl, amp), cache)
        got = meas.get(name, {})
        syncs = [i for i, op in enumerate(ops)
                 if op[1] in HOST_READ_OPS and any(s not in host_sids for s in op[2])]
        host = host_issue_s(ops, marks, table, {"innet": innet}, syncs, accumulations=acc)
        u = host_by_phase_s(ops, marks, host)["U"]
        params = parameters_per_iteration(marks)[max(m[3] for m in marks)]
        m = (got["opt_step"] + got["zero_grad"]
             if "opt_step" in got and "zero_grad" in got else None)
        return name, m, u, params

    per = []
    listed = [c.rsplit(":", 4) for c in configs.split(",")]
    for text, batch, optimizer, impl, amp in listed:
        if amp != "fp16" or [text, batch, optimizer, impl, "bf16"] not in listed:
            continue
        name, m16, u16, params = phase(text, batch, optimizer, impl, "fp16")
        twin, mbf, ubf, _ = phase(text, batch, optimizer, impl, "bf16")
        if m16 is None or mbf is None:
            continue
        per.append(((m16 - mbf) * lease - (u16 - ubf)) / params)
        print(f"{name}: probe {1e3 * m16:.3f} ms, {twin} {1e3 * mbf:.3f} ms (x{lease:.3f} to "
              f"the table's pace); modelled without GradScaler's row {1e3 * u16:.3f} and "
              f"{1e3 * ubf:.3f} ms; {params} parameters: {per[-1] * 1e6:.2f} us each")
    if not per:
        return None
    return {"kind": "overhead", "name": "per_param_scaler", "phase": "U",
            "value": max(0.0, statistics.median(per)), "n": len(per),
            "source": f"optstep_host_probe over {len(per)} fp16/bf16 pairs"}


def per_param_from_walls(path, busy_below=0.9):
    """``(per_param_s, n)`` refitted from profiled steps of larger networks
    (``scripts/phase_host_table.py``'s CSV): the probe's networks (batch 4, 62-213 parameter
    tensors) set ``per_param`` too low for networks of 150-600 tensors, whose optimizer phase
    took 1.3x the model relative to their own forward and backward in the H200 profiles. For
    each host-bound configuration (GPU busy under ``busy_below`` of the step) of a torchvision
    network (token models were recorded at another sequence length than profiled: their
    forward and backward are not comparable) without GradScaler (its ``.item()`` waits for
    the GPU), the optimizer phase's wall is divided by the forward and backward's wall over
    their model (the lease's pace, and the model's error there) and what exceeds the model
    is spread over the parameter tensors, on top of the ``per_param`` the model charged; the
    median over configurations."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    per = []
    for r in rows:
        if not r["model"].startswith("torchvision:") or r["amp"] == "fp16" or \
                float(r["gpu_busy_s"]) >= busy_below * float(r["step_s"]):
            continue
        pace = ((float(r["F_wall_ms"]) + float(r["B_wall_ms"]))
                / (float(r["F_modelled_ms"]) + float(r["B_modelled_ms"])))
        extra_ms = float(r["U_wall_ms"]) / pace - float(r["U_modelled_ms"])
        per.append(extra_ms * 1e-3 / int(r["param_tensors"]) + float(r["per_param_us"]) * 1e-6)
    if not per:
        raise ValueError(f"{path}: no host-bound torchvision configuration without GradScaler")
    return statistics.median(per), len(per)


def lease_factor(steps, table):
    """The probe's lease of the machine to the kernel table's: calibrate's smallest ``add``
    issue cost (``KernelTable.aten_host``) over the median of the probe's ``gauge_add_s`` (a
    small ``torch.add`` in a tight loop); 1 where either is missing. On the H200 1.28, and the
    same calls timed in a tight loop by calibrate and by the probe differ by 1.1-1.7x, 1.3
    typically (each probed configuration recorded and looked up in the table)."""
    g = [float(s["gauge_add_s"]) for s in steps if s.get("gauge_add_s")]
    if not g or table is None or "add" not in table.aten_host:
        return 1.0
    return table.aten_host["add"] / statistics.median(g)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="the probe's output (host_innet_calls.csv, _steps.csv)")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--min-calls", type=int, default=20)
    ap.add_argument("--cache", default=None, help="folder for the recordings (pickled)")
    ap.add_argument("--engine", nargs="+", required=True,
                    help="scripts/engine_host_probe.py's CSVs (one per fresh process)")
    ap.add_argument("--out", default=None, help="default configs/kernels/<gpu>_host_innet.csv")
    ap.add_argument("--optstep", default=None,
                    help="optstep_host.csv of scripts/optstep_host_probe.py: GradScaler's "
                         "per-parameter cost from its fp16 configurations")
    ap.add_argument("--optstep-configs", default=None,
                    help="the probe's --configs (default: its DEFAULT_CONFIGS)")
    ap.add_argument("--optstep-gauge-us", type=float, default=None,
                    help="the host gauge (snsim gauge) of the probe's machine, us per add: "
                         "its seconds are scaled to the table's pace")
    ap.add_argument("--phase-walls", default=None,
                    help="scripts/phase_host_table.py's CSV of profiled steps: per_param,U "
                         "refitted from their optimizer phases (per_param_from_walls)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from snsim.trace import open_text
    folder = Path(args.folder)
    with open_text(folder / "host_innet_calls.csv", newline="") as f:
        calls = list(csv.DictReader(f))
    with open_text(folder / "host_innet_steps.csv", newline="") as f:
        steps = list(csv.DictReader(f))
    from snsim.kernel_table import load_kernel_table
    table = load_kernel_table(args.gpu)
    table_s, table_n, reads, engine_n = table_issue_by_family(steps, table, args.cache)
    lease = lease_factor(steps, table)
    print(f"lease factor (the table's add over the probe's gauge): {lease:.3f}")
    engine_s = read_engine(args.engine, table)
    rows = fit(calls, steps, table_s, table_n, reads, engine_n, engine_s, args.min_calls, lease)
    if args.optstep:
        sys.path.insert(0, str(ROOT / "scripts"))
        from optstep_host_probe import DEFAULT_CONFIGS
        row = scaler_row(rows, args.optstep, args.optstep_configs or DEFAULT_CONFIGS, table,
                         args.cache, args.optstep_gauge_us and args.optstep_gauge_us * 1e-6)
        if row is not None:
            rows.append(row)
    if args.phase_walls:
        value, n = per_param_from_walls(args.phase_walls)
        for r in rows:
            if (r["kind"], r["name"], r["phase"]) == ("overhead", "per_param", "U"):
                r.update(value=value, n=n, source=f"phase walls of {n} profiled "
                         f"configurations ({Path(args.phase_walls).name})")
    out = Path(args.out) if args.out else ROOT / "configs" / "kernels" / \
        f"{args.gpu}_host_innet.csv"
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["kind", "name", "phase", "value", "n", "source"])
        w.writeheader()
        for r in rows:
            w.writerow(dict(r, value=f"{r['value']:.6g}"))
    for r in rows:
        unit = "" if r["kind"] == "ratio" else " us"
        v = r["value"] if r["kind"] == "ratio" else r["value"] * 1e6
        print(f"{r['kind']:<9} {r['name']:<36} {r['phase']:<2} {v:10.3f}{unit}  (n {r['n']})")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
