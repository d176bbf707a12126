"""The host's cost of each aten call inside a real training step, against the same call in a
tight loop, and what the step adds around its aten calls (issue 10 item 3).

The kernel table's ``host_s`` times one call repeated (:mod:`snsim.torchsim.calibrate`): its
code and data stay hot in the CPU's caches. A step runs hundreds of different calls in turn.
For each configuration (a small batch, so the GPU keeps up with the host and the launch queue
never fills) this script

1. times real steps (:func:`snsim.torchsim.record.train_step`): the launching thread's wall per
   phase (F forward and loss, B ``backward()``, U optimizer step and ``zero_grad``), and counts
   the module calls (a global forward pre-hook), the autograd nodes (the loss's graph) and the
   parameters;
2. captures the aten calls of one step below autograd and autocast (a ``TorchDispatchMode``:
   the calls a step issues, casts included), each with its phase;
3. replays that sequence alone, in order, timing each call (``perf_counter_ns``; median of
   ``--repeats``): the in-sequence cost of the aten calls, no Python modules, no autograd;
4. times each call in a tight loop (10 calls after one warm call), as calibrate does.

``host_innet_calls.csv``: per configuration and call, the phase, op, family
(:func:`snsim.kernel_table.family_of`), ``seq_s`` (in sequence) and ``tight_s``.
``host_innet_steps.csv``: per configuration, the phase walls of the real step, the sums of
``seq_s`` and ``tight_s`` per phase, the call, module, node and parameter counts, and
``lag_s`` (the time left to the GPU after the replay's last call: near 0 when the GPU kept up)
and ``gauge_add_s`` (a small ``torch.add`` in a tight loop: the CPU's speed then).

    # on the GPU (about 3 minutes):
    OUT=dir PYTHONPATH=. python3 scripts/host_innet_probe.py --out "$OUT"
    # a dry run on the CPU:
    PYTHONPATH=. python scripts/host_innet_probe.py --out /tmp/innet --device cpu \\
        --configs torchvision:resnet18:2:adamw:foreach:none --repeats 1
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

# calibration networks: none is a configuration the profiles (traces/h200/profile*/) test
DEFAULT_CONFIGS = ",".join(
    f"torchvision:{m}:4:{opt}:foreach:{amp}"
    for m in ("resnet18", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "swin_t",
              "vit_b_32", "googlenet")
    for opt, amp in (("sgd-momentum", "none"), ("adamw", "bf16")))
SKIP = ("_local_scalar_dense", "item", "nonzero", "is_nonzero", "equal", "_assert_async")


class _Clock:
    """An instrument for ``train_step``: the launching thread's wall per phase."""

    def __init__(self, state=None):
        self.at = {}
        self.state = state

    def mark(self, label, phase, kind=""):
        if label in ("<input>", "optimizer.step", "<end>"):
            self.at[label] = time.perf_counter()
            if self.state is not None:
                self.state["phase"] = "U" if label == "optimizer.step" else "F"

    def before_backward(self, loss):
        self.at["backward"] = time.perf_counter()
        if self.state is not None:
            self.state["phase"] = "B"

    def walls(self):
        a = self.at
        return {"F": a["backward"] - a["<input>"], "B": a["optimizer.step"] - a["backward"],
                "U": a["<end>"] - a["optimizer.step"]}


def _graph_nodes(loss):
    seen, todo = set(), [loss.grad_fn]
    while todo:
        n = todo.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        todo.extend(f for f, _ in n.next_functions)
    return len(seen)


def probe(text, batch, optimizer, impl, amp, *, device, repeats):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from snsim.kernel_table import family_of
    from snsim.torchsim.record import train_step, warm_training
    from snsim.torchsim.hostpace import gauge_add_s

    w = warm_training(text, batch, optimizer, impl, amp, device)
    text, spec, setup, net, opt, x, y, kw, sync = (w.text, w.spec, w.setup, w.net, w.opt, w.x,
                                                    w.y, w.kw, w.sync)
    del w
    walls = {"F": [], "B": [], "U": []}
    for _ in range(7):
        clock = _Clock()
        train_step(net, opt, x, y, inst=clock, **kw)
        sync()
        for ph, v in clock.walls().items():
            walls[ph].append(v)
    # counts: module calls of one step, autograd nodes of its graph, parameters
    calls = [0]
    h = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda m, a: calls.__setitem__(0, calls[0] + 1))
    nodes = [0]

    class _Count:
        def mark(self, *a):
            pass

        def before_backward(self, loss):
            nodes[0] = _graph_nodes(loss)
    try:
        train_step(net, opt, x, y, inst=_Count(), **kw)
    finally:
        h.remove()
    sync()
    n_params = sum(1 for p in net.parameters() if p.requires_grad)

    state = {"phase": "F"}
    seq = []

    class Capture(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func._overloadpacket.__name__ not in SKIP:
                seq.append((state["phase"], func, args, dict(kwargs or {})))
            return out

    with Capture():
        train_step(net, opt, x, y, inst=_Clock(state), **kw)
    sync()
    ns = time.perf_counter_ns
    per = [[] for _ in seq]
    # the calls alone: no autograd recording (calibrate's tensors need no gradient), and the
    # optimizer's in-place updates of leaves allowed
    grad = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    lag = []
    for _ in range(repeats):          # the sequence alone, in order
        sync()
        for i, (_, func, args, kwargs) in enumerate(seq):
            t0 = ns()
            func(*args, **kwargs)
            per[i].append(ns() - t0)
        t0 = time.perf_counter()
        sync()
        lag.append(time.perf_counter() - t0)
    tight = []
    for _, func, args, kwargs in seq:   # each call alone, repeated
        func(*args, **kwargs)
        t0 = ns()
        for _ in range(10):
            func(*args, **kwargs)
        tight.append((ns() - t0) / 10)
        sync()
    torch.set_grad_enabled(grad)
    name = f"{spec.name}_b{batch}{setup.slug}"
    gauge = gauge_add_s(device)
    rows = [{"config": name, "index": i, "phase": ph, "op": func._overloadpacket.__name__,
             "family": family_of(func._overloadpacket.__name__),
             "seq_s": statistics.median(per[i]) * 1e-9, "tight_s": tight[i] * 1e-9}
            for i, (ph, func, _, _) in enumerate(seq)]
    summary = {"config": name, "model": text, "batch": batch, "optimizer": optimizer,
               "impl": impl, "amp": amp,
               **{f"wall_{ph}_s": statistics.median(walls[ph]) for ph in "FBU"},
               **{f"seq_{ph}_s": sum(r["seq_s"] for r in rows if r["phase"] == ph)
                  for ph in "FBU"},
               **{f"tight_{ph}_s": sum(r["tight_s"] for r in rows if r["phase"] == ph)
                  for ph in "FBU"},
               **{f"calls_{ph}": sum(1 for r in rows if r["phase"] == ph) for ph in "FBU"},
               "module_calls": calls[0], "autograd_nodes": nodes[0], "params": n_params,
               "lag_s": statistics.median(lag), "gauge_add_s": gauge,
               "torch": torch.__version__}
    seq.clear()
    del net, opt, x, y
    if device == "cuda":
        torch.cuda.empty_cache()
    return summary, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="comma list of model:batch:optimizer:impl:amp (amp none|bf16|fp16)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--deadline-s", type=float, default=200.0,
                    help="start no configuration after this long")
    args = ap.parse_args(argv)
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("host_innet_probe: no CUDA device (--device cpu: a dry run)", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summaries, first = [], True
    for cfg in args.configs.split(","):
        parts = cfg.rsplit(":", 4)
        if len(parts) != 5:
            print(f"host_innet_probe: --configs entry {cfg!r}: needs "
                  f"model:batch:optimizer:impl:amp", file=sys.stderr)
            return 2
        if time.perf_counter() - t0 > args.deadline_s:
            print(f"host_innet_probe: out of time before {cfg}", file=sys.stderr)
            break
        text, batch, opt, impl, amp = parts
        try:
            s, rows = probe(text, int(batch), opt, impl, amp, device=args.device,
                            repeats=args.repeats)
        except Exception as e:      # one configuration failing leaves the others
            print(f"host_innet_probe: {cfg}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        summaries.append(s)
        with open(out / "host_innet_calls.csv", "a" if not first else "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if first:
                w.writeheader()
            w.writerows(rows)
        first = False
        with open(out / "host_innet_steps.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(summaries[0]))
            w.writeheader()
            w.writerows(summaries)
        print(f"{s['config']}: walls F/B/U {s['wall_F_s'] * 1e3:.2f}/{s['wall_B_s'] * 1e3:.2f}/"
              f"{s['wall_U_s'] * 1e3:.2f} ms, in sequence {s['seq_F_s'] * 1e3:.2f}/"
              f"{s['seq_B_s'] * 1e3:.2f}/{s['seq_U_s'] * 1e3:.2f}, tight "
              f"{s['tight_F_s'] * 1e3:.2f}/{s['tight_B_s'] * 1e3:.2f}/"
              f"{s['tight_U_s'] * 1e3:.2f}, lag {s['lag_s'] * 1e3:.2f} ms "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
