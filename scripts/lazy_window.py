"""The address window CUDA's lazy module loading leaves for the first training step (issue 8).

Reads fresh-process allocator histories (scripts/plan_alloc_history.py,
traces/h200/plans_history/) and prints, per history, where the segments made after the
first training step's first allocation went: the ones placed above every large segment made
before the step, from the lowest of them (the window's bottom) to the lowest segment made
before the step above it (its top). With the default lazy loading the window is the same
size in every history (the H200 preset's ``lazy_loading_window_bytes``); with
``CUDA_MODULE_LOADING=EAGER`` no segment of the step goes above the earlier ones.

Then it replays each history through the engine's pytorch allocator with the "driver"
placement, with and without the window, against the measured reserved peak.

Usage (no GPU):

    PYTHONPATH=$PWD python scripts/lazy_window.py [NAME ...]

NAME: a history under traces/h200/plans_history without .json.gz; default: the fresh-process
ones (*_fresh*, *_harness_cpu, *_lazy, *_eager).
"""
import glob
import gzip
import json
import os
import sys

_MIB = 1 << 20
_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "traces", "h200", "plans_history")
_SMALL_SEGMENT_BYTES = 2 * _MIB


def segments(doc):
    """``[(allocations before it, address, bytes), ...]`` in creation order."""
    out, n = [], 0
    for action, addr, size, _stream in doc["events"]:
        if action == "alloc":
            n += 1
        elif action == "segment_alloc":
            out.append((n, addr, size))
    return out


def window(doc):
    """``(bottom, top, [segment indices in it])``: the large segments made after the first
    step's first allocation that lie above the last large one made before it (which the
    top-down order would have put them below), from the lowest of them (bottom) to the lowest
    segment made before the step above that (top; None if there is none); or None."""
    first = doc["iterations"][0][0]
    segs = segments(doc)
    before = [s for s in segs if s[0] <= first]
    cursor = [a for _, a, sz in before if sz != _SMALL_SEGMENT_BYTES][-1]
    inside = [k for k, (n, a, sz) in enumerate(segs)
              if n > first and a > cursor and sz != _SMALL_SEGMENT_BYTES]
    if not inside:
        return None
    bottom = min(segs[k][1] for k in inside)
    above = [a for _, a, _ in before if a > bottom]
    return bottom, (min(above) if above else None), inside


# allocations before the first cuBLAS GEMM's output, where the history has one early: the
# transformer_encoder b32 runs' first in_proj output (cpu_offload's first offload allocates
# before it); cuBLAS maps its memory into the window there (the hole before the 32 MiB
# workspace request that follows)
FIRST_GEMM_ALLOCATION = {"transformer_encoder_b32_plain": 79,
                         "transformer_encoder_b32_checkpoint": 79,
                         "transformer_encoder_b32_cpu_offload": 80}


def first_gemm(name):
    return next((v for k, v in FIRST_GEMM_ALLOCATION.items() if name.startswith(k + "_")), None)


def main(argv=None):
    names = (argv if argv is not None else sys.argv[1:]) or sorted(
        os.path.basename(p)[:-len(".json.gz")] for pat in ("*_fresh*", "*_harness_cpu", "*_lazy", "*_eager")
        for p in glob.glob(os.path.join(_DIR, pat + ".json.gz")))
    from snsim.engine.allocators import replay_history
    from snsim.hardware.spec import load_hardware
    h200 = load_hardware("h200")
    w, c = h200.lazy_loading_window_bytes, h200.lazy_loading_cublas_bytes
    print(f"{'history':50s} {'loading':7s} {'window MiB':>10s} {'in it':>5s} "
          f"{'measured B':>12s} {'model':>7s} {'other':>7s}")
    for name in names:
        path = os.path.join(_DIR, f"{name}.json.gz")
        if not os.path.exists(path):
            sys.exit(f"lazy_window: no history {path}")
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        eager = doc["config"].get("tag") == "eager"
        win = window(doc)
        size = "-" if win is None else ("no top" if win[1] is None
                                        else f"{(win[1] - win[0]) / _MIB:.0f}")
        meas = doc["measured"]["peak_reserved_bytes"]

        def err(v):
            return "exact" if v == meas else f"{(v - meas) / meas * 100:+.2f}%"
        g = first_gemm(name)
        lazy, eager_ = replay_history(doc, w, g, c), replay_history(doc, 0)
        model, other = (eager_, lazy) if eager else (lazy, eager_)
        print(f"{name:50s} {'eager' if eager else 'lazy':7s} {size:>10s} "
              f"{0 if win is None else len(win[2]):5d} {meas:12d} {err(model):>7s} "
              f"{err(other):>7s}")
    print(f"model: the driver placement with the window of the loading mode ({w} B lazy, "
          f"with cuBLAS's {c} B where the first GEMM is known; 0 eager); other: with the other "
          f"mode's")


if __name__ == "__main__":
    main()
