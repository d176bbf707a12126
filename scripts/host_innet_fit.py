"""The host model's in-network costs from ``scripts/host_innet_probe.py``'s measurements
(issue 10 item 3): ``configs/kernels/<preset>_host_innet.csv``, read by
:func:`snsim.kernel_table.load_host_costs`.

Rows (``kind,name,phase,value,n,source``):

* ``ratio,<family>``: an aten call's host cost in a step's sequence of calls over the same call
  repeated in a tight loop (calibrate's way), summed over the family's calls in every probed
  configuration: what a real step's mix of calls (each fetching its own code and data again)
  adds to the kernel table's tight-loop ``host_s``. ``ratio,*``: all calls with a kernel, for
  families probed fewer than ``--min-calls`` times.
* ``view,<family>``: seconds of a call that launches no kernel (a view, ``detach``), median in
  sequence; ``view,*`` over all of them.
* ``overhead,per_module,F`` and ``overhead,per_call,F``: what the real forward adds to its aten
  calls in sequence (the launching thread's wall less their sum), split by non-negative least
  squares over the configurations into a cost per module call (Python ``nn.Module.__call__``
  and its ``forward``) and per aten call (the Python call into torch, autograd recording its
  node, autocast's dispatch); ``per_node,B`` and ``per_call,B``: the backward's (the autograd
  engine per node, per call); ``per_param,U``: the optimizer step's and ``zero_grad``'s per
  parameter (the Python loops over parameters and their state, the step counters' reads).

Seconds are converted to the kernel table's lease (:func:`lease_factor`).

    PYTHONPATH=. python scripts/host_innet_fit.py traces/h200/profile_host/innet --gpu h200
"""
from __future__ import annotations

import argparse
import collections
import csv
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fit(calls, steps, min_calls=20, lease=1.0):
    """Rows of ``<preset>_host_innet.csv`` from the probe's call and step rows; seconds
    (views, overheads) times ``lease`` (:func:`lease_factor`)."""
    import numpy as np
    from scipy.optimize import nnls

    from snsim.kernel_table import NO_KERNEL_OPS
    configs = sorted({r["config"] for r in steps})
    src = f"host_innet_probe over {len(configs)} configurations"
    seq, tight, n, views = (collections.Counter(), collections.Counter(),
                            collections.Counter(), collections.defaultdict(list))
    for r in calls:
        fam = r["family"]
        if fam in NO_KERNEL_OPS:
            views[fam].append(float(r["seq_s"]) * lease)
        elif float(r["tight_s"]) > 0:
            seq[fam] += float(r["seq_s"])
            tight[fam] += float(r["tight_s"])
            n[fam] += 1
    out = [{"kind": "ratio", "name": "*", "phase": "",
            "value": sum(seq.values()) / sum(tight.values()), "n": sum(n.values()),
            "source": src}]
    for fam in sorted(n):
        if n[fam] >= min_calls:
            out.append({"kind": "ratio", "name": fam, "phase": "",
                        "value": seq[fam] / tight[fam], "n": n[fam], "source": src})
    every = [v for vs in views.values() for v in vs]
    if every:
        out.append({"kind": "view", "name": "*", "phase": "",
                    "value": statistics.median(every), "n": len(every), "source": src})
    for fam in sorted(views):
        if len(views[fam]) >= min_calls:
            out.append({"kind": "view", "name": fam, "phase": "",
                        "value": statistics.median(views[fam]), "n": len(views[fam]),
                        "source": src})
    for phase, cols in (("F", ("module_calls", "calls_F")), ("B", ("autograd_nodes", "calls_B")),
                        ("U", ("params",))):
        A = np.array([[float(s[c]) for c in cols] for s in steps])
        y = np.array([float(s[f"wall_{phase}_s"]) - float(s[f"seq_{phase}_s"]) for s in steps])
        coef, _ = nnls(A, np.maximum(y, 0.0))
        names = {"module_calls": "per_module", "autograd_nodes": "per_node",
                 "params": "per_param"}
        for c, v in zip(cols, coef):
            out.append({"kind": "overhead", "name": names.get(c, "per_call"), "phase": phase,
                        "value": float(v) * lease, "n": len(steps), "source": src})
    return out


def lease_factor(steps, table):
    """The kernel table's lease's CPU speed over the probe's: calibrate's smallest ``add``
    issue cost (``KernelTable.aten_host``) over the median of the probe's ``gauge_add_s`` (a
    small ``torch.add`` in a tight loop); 1 where either is missing. The machine's CPU speed
    differs from one lease to the next (docs/VALIDATION.md, the lease table), and the table's
    tight-loop costs, which the ratios multiply, are the table's lease's."""
    g = [float(s["gauge_add_s"]) for s in steps if s.get("gauge_add_s")]
    if not g or table is None or "add" not in table.aten_host:
        return 1.0
    return table.aten_host["add"] / statistics.median(g)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="the probe's output (host_innet_calls.csv, _steps.csv)")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--min-calls", type=int, default=20)
    ap.add_argument("--no-lease", action="store_true",
                    help="keep the probe's seconds (no lease factor)")
    ap.add_argument("--out", default=None, help="default configs/kernels/<gpu>_host_innet.csv")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    folder = Path(args.folder)
    with open(folder / "host_innet_calls.csv", newline="") as f:
        calls = list(csv.DictReader(f))
    with open(folder / "host_innet_steps.csv", newline="") as f:
        steps = list(csv.DictReader(f))
    from snsim.kernel_table import load_kernel_table
    lease = 1.0 if args.no_lease else lease_factor(steps, load_kernel_table(args.gpu))
    print(f"lease factor (table's add / probe's gauge): {lease:.3f}")
    rows = fit(calls, steps, args.min_calls, lease)
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
