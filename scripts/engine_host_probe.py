"""Host seconds of the autograd engine's own work in a backward, each part alone (issue 10 item
3): what ``snsim predict``'s host model charges a backward op that no Python line issues.

In a real backward every aten call comes from C++ (a node's ``apply``, the engine), while
``snsim calibrate`` and ``scripts/host_innet_probe.py`` time calls issued from Python. Parts,
each timed as the difference of two graphs that differ only in it, the graph run many times
with ``retain_graph`` through ``torch.autograd.grad`` (its graph task's fixed cost cancels):

* ``accumulate``: the engine's sum of two gradients that reach one tensor
  (``InputBuffer::accumulate``, an in-place ``add_`` when the buffer holds the last reference):
  ``k`` consumers ``h * 2.0`` of one leaf against ``k`` consumers of ``k`` leaves, per extra
  consumer. DenseNets sum ~L^2/2 of them per dense block.
* ``cat_input``: ``CatBackward0`` per input (a ``narrow`` view of the gradient, handed on):
  the backward of ``torch.cat`` of ``m`` leaves, slope over ``m``.
* ``view_node``: a backward node without a kernel (``ViewBackward0``), per node: a chain of
  ``n`` ``view`` calls, slope over ``n``.
* ``mul_node``: a node with one kernel (``MulBackward0`` by a Python scalar), per node.
* Python-issued references at the same shapes: ``py_add`` (``torch.add(a, b)``),
  ``py_add_`` (``a.add_(b)``), ``py_mul`` (``a * 2.0``), and ``gauge_add`` (the
  ``host_innet_probe`` gauge: a 1024-element ``torch.add``, best of 3) for the lease.

Tensors are small (``--numel``) so that every kernel is shorter than its issue: the walls are
host time. Each figure is the median of ``--reps`` groups of ``--n`` runs after a warm-up.

    # on the GPU, three fresh processes (about 10 s each):
    for p in 1 2 3; do PYTHONPATH=. python3 scripts/engine_host_probe.py --out $OUT/engine_p$p.csv; done
    # a dry run on the CPU:
    PYTHONPATH=. python scripts/engine_host_probe.py --device cpu --out /tmp/engine.csv --n 20
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time


def _wall_s(torch, dev, fn, n, reps):
    """Median over ``reps`` groups of the wall per run of ``fn`` (``n`` runs, then a
    synchronise: the GPU's tail behind a host-bound loop is a few kernels)."""
    fn()
    out = []
    for _ in range(reps):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / n)
    return statistics.median(out)


def _grad_runner(torch, outs, ins):
    grads = [torch.ones_like(o) for o in outs]
    return lambda: torch.autograd.grad(outs, ins, grads, retain_graph=True)


def accumulate_s(torch, dev, numel, k, n, reps):
    """(fan, distinct) walls of a backward of ``k`` ``h * 2.0`` consumers of one leaf / of
    ``k`` leaves: the fan's sums ``k - 1`` gradients more, the nodes are the same."""
    h = torch.ones(numel, device=dev, requires_grad=True)
    fan = _grad_runner(torch, [h * 2.0 for _ in range(k)], [h])
    hs = [torch.ones(numel, device=dev, requires_grad=True) for _ in range(k)]
    distinct = _grad_runner(torch, [x * 2.0 for x in hs], hs)
    return _wall_s(torch, dev, fan, n, reps), _wall_s(torch, dev, distinct, n, reps)


def cat_s(torch, dev, numel, m, n, reps):
    """Wall of the backward of ``torch.cat`` of ``m`` leaves (one ``CatBackward0``)."""
    xs = [torch.ones(numel, device=dev, requires_grad=True) for _ in range(m)]
    return _wall_s(torch, dev, _grad_runner(torch, [torch.cat(xs)], xs), n, reps)


def chain_s(torch, dev, numel, length, n, reps, kind):
    """Wall of the backward of a chain of ``length`` nodes: ``view`` (no kernel) or
    ``mul`` by 2.0 (one kernel each)."""
    x = torch.ones(numel, device=dev, requires_grad=True)
    y = x
    for _ in range(length):
        y = y.view(numel) if kind == "view" else y * 2.0
    return _wall_s(torch, dev, _grad_runner(torch, [y], [x]), n, reps)


def slope(xs, ys):
    """Least-squares slope of ``ys`` over ``xs``."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="CSV of the parts (part,numel,value_s,note)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--numel", default="1024,65536",
                    help="comma list of tensor sizes (fp32 elements)")
    ap.add_argument("--n", type=int, default=200, help="runs per timed group")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    import torch
    dev = torch.device(args.device)
    rows = []

    def put(part, numel, value, note=""):
        rows.append({"part": part, "numel": numel, "value_s": f"{value:.6e}", "note": note})
        print(f"{part:<12} numel {numel:>7} {value * 1e6:9.3f} us  {note}", flush=True)

    a0 = torch.ones(1024, device=dev)
    best = min(_wall_s(torch, dev, lambda: torch.add(a0, a0), 2000, 1) for _ in range(3))
    put("gauge_add", 1024, best, "host_innet_probe's gauge: torch.add, best of 3")
    for numel in (int(s) for s in args.numel.split(",")):
        a = torch.ones(numel, device=dev)
        b = torch.ones(numel, device=dev)
        put("py_add", numel, _wall_s(torch, dev, lambda: torch.add(a, b), 10 * args.n,
                                     args.reps), "torch.add(a, b) from Python")
        put("py_add_", numel, _wall_s(torch, dev, lambda: a.add_(b), 10 * args.n,
                                      args.reps), "a.add_(b) from Python")
        put("py_mul", numel, _wall_s(torch, dev, lambda: a * 2.0, 10 * args.n, args.reps),
            "a * 2.0 from Python")
        ks = (8, 32, 64)
        fans, dists = zip(*(accumulate_s(torch, dev, numel, k, args.n, args.reps) for k in ks))
        for k, f, d in zip(ks, fans, dists):
            put("acc_graph", numel, (f - d) / (k - 1), f"k {k}: fan {f * 1e6:.1f} us, "
                f"distinct {d * 1e6:.1f} us")
        put("accumulate", numel, slope(ks, fans) - slope(ks, dists),
            "per extra consumer: fan slope less distinct slope over k 8, 32, 64")
        put("mul_node", numel, slope(ks, dists), "per MulBackward0 node and leaf captured "
            "(distinct graph's slope over k)")
        ms = (4, 16, 64)
        put("cat_input", numel, slope(ms, [cat_s(torch, dev, numel, m, args.n, args.reps)
                                           for m in ms]),
            "CatBackward0 per input (narrow, handed on, captured), slope over m 4, 16, 64")
        ls = (8, 32, 64)
        put("view_node", numel, slope(ls, [chain_s(torch, dev, numel, n_, args.n, args.reps,
                                                   "view") for n_ in ls]),
            "ViewBackward0 per node (no kernel), slope over chain 8, 32, 64")
        put("mul_chain", numel, slope(ls, [chain_s(torch, dev, numel, n_, args.n, args.reps,
                                                   "mul") for n_ in ls]),
            "MulBackward0 per node in a chain, slope over 8, 32, 64")
    info = {"torch": torch.__version__, "device": (torch.cuda.get_device_name()
                                                   if dev.type == "cuda" else "cpu")}
    with open(args.out, "w", newline="") as f:
        f.write("".join(f"# {k}={v}\n" for k, v in info.items()))
        w = csv.DictWriter(f, fieldnames=["part", "numel", "value_s", "note"])
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
