"""One steady iteration's allocation requests: an H200 allocator history against the
prediction of the same plan (issue 8: is a reserved-peak miss the placement of segments, or
the requests themselves?).

A history (scripts/plan_alloc_history.py) that replays exactly with the engine's "driver"
placement (scripts/lazy_window.py) leaves the requests: this prints the allocation count and
bytes of the history's last complete iteration and of the predicted program's iteration, and
the request sizes (rounded to 512 B as the allocator does) whose counts differ, largest
difference in bytes first.

Usage (no GPU; the prediction takes seconds to a minute):

    PYTHONPATH=$PWD python scripts/history_vs_prediction.py HISTORY MODEL BATCH POLICY \\
        [--option K=V ...] [--optimizer O] [--impl I] [--amp A] [--top N]

--align: also the two iterations' allocation sequences aligned (difflib), each stretch where
they differ with the predicted allocations' layer and phase and, for a workspace, the
convolution signature and the lookup level that gave it (:func:`snsim.torchsim.hidden.
lookup_slots`): which calls' workspaces are wrong, missing or placed elsewhere (``--min-bytes``
hides stretches of smaller requests).

HISTORY: a history file (``*.json.gz``), or a name under traces/h200/plans_history without
.json.gz, e.g.
``densenet121_b16_fp16_cpu_offload_lazy torchvision:densenet121 16 cpu_offload --option
pin_memory=true --amp fp16``.
"""
import argparse
import collections
import gzip
import json
import os
import sys

_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "traces", "h200", "plans_history")


def _rounded(nbytes):
    return 512 if nbytes <= 512 else (nbytes + 511) // 512 * 512


def history_requests(doc):
    """Request sizes of the history's last complete iteration, in order. The iteration marks
    are the allocator's cumulative counts; where they run past the history's own allocations
    (earlier runs of the same process counted, their events not recorded), the iteration is
    taken where the last three marks, shifted alike, cut three equal runs of requests (the
    steady iterations; which request comes first stays uncertain, the requests do not)."""
    starts = [m[0] for m in doc["iterations"]]
    sizes = [size for action, _addr, size, _stream in doc["events"] if action == "alloc"]
    shift = 0
    if starts[-1] > len(sizes):
        p = starts[-1] - starts[-2]
        last = starts[-3:]
        fits = [c for c in range(max(0, starts[-1] + p - len(sizes)), last[0] + 1)
                if len({tuple(sizes[m - c:m - c + p]) for m in last}) == 1]
        if not fits:
            raise SystemExit("history: its iteration marks count allocations before its first "
                             "event, and no shift of them cuts three equal iterations")
        shift = fits[len(fits) // 2]
        print(f"history: iteration marks shifted by {shift} allocations made before its "
              f"first event ({len(fits)} shifts cut equal iterations)")
    return sizes[starts[-2] - shift:starts[-1] - shift]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("history")
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("policy")
    ap.add_argument("--option", action="append", default=[])
    ap.add_argument("--optimizer", default="sgd-momentum")
    ap.add_argument("--impl", default="foreach")
    ap.add_argument("--amp", default=None)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--input-shape", default=None,
                    help="the input's shape after the batch, e.g. 256 (a token model's "
                         "sequence length) or 3x160x160")
    ap.add_argument("--align", action="store_true")
    ap.add_argument("--min-bytes", type=int, default=65536)
    args = ap.parse_args(argv)
    path = (args.history if args.history.endswith(".json.gz")
            else os.path.join(_DIR, f"{args.history}.json.gz"))
    if not os.path.exists(path):
        sys.exit(f"history_vs_prediction: no history {path}")
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    from snsim.torchsim import hidden
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import predict_plan
    looked_up = {}      # workspace bytes -> (signature, level) of the first call that took it
    levels = hidden._lookup_levels

    def recording(tables, sig, batch):
        out = levels(tables, sig, batch)
        for size in out[0]:
            looked_up.setdefault(size, (sig, out[1]))
        return out
    hidden._lookup_levels = recording
    shape = (tuple(int(v) for v in args.input_shape.split("x")) if args.input_shape
             else None)
    r, prog = predict_plan(args.model, args.batch, args.policy, options=args.option,
                           optimizer=TrainSetup.parse(args.optimizer, args.impl, args.amp),
                           input_shape=shape)
    tensors = prog["tensors"]
    pred = [tensors[e[2]][3] for e in prog["events"] if e[1] == "alloc"]
    hist = history_requests(doc)
    m = doc["measured"]
    print(f"peaks allocated / reserved B: measured {m['peak_allocated_bytes']} / "
          f"{m['peak_reserved_bytes']}, predicted {r['peak_allocated_bytes']} / "
          f"{r['peak_reserved_bytes']}")
    print(f"allocations per iteration: history {len(hist)} ({sum(map(_rounded, hist))} B), "
          f"predicted {len(pred)} ({sum(map(_rounded, pred))} B)")
    hc = collections.Counter(map(_rounded, hist))
    pc = collections.Counter(map(_rounded, pred))
    diff = [(s, hc[s], pc[s]) for s in set(hc) | set(pc) if hc[s] != pc[s]]
    diff.sort(key=lambda t: (-t[0] * abs(t[1] - t[2]), t[0]))
    print(f"{len(diff)} request sizes with other counts (size B: history, predicted):")
    for size, h, p in diff[:args.top]:
        print(f"  {size:>12d}: {h:5d} {p:5d}")
    if args.align:
        _print_alignment(hist, prog, looked_up, args.min_bytes)


def rotated_to(hist, pred, k=16):
    """``hist`` (one steady iteration whose first request may be uncertain:
    :func:`history_requests`) rotated to start where ``pred``'s first ``k`` requests come in
    the same order, so that an alignment starts in step; unchanged where they never do.

    >>> rotated_to([5, 6, 1, 2, 3, 4], [1, 2, 3, 9], k=3)
    [1, 2, 3, 4, 5, 6]
    >>> rotated_to([5, 6, 1, 2], [7, 8], k=2)
    [5, 6, 1, 2]
    """
    n = len(hist)
    if not n or len(pred) < k:
        return hist
    doubled = hist + hist
    head = pred[:k]
    return next((doubled[j:j + n] for j in range(n) if doubled[j:j + k] == head), hist)


def _print_alignment(hist, prog, looked_up, min_bytes):
    import difflib
    tensors, steps = prog["tensors"], prog["steps"]
    allocs = [(e[0], e[2]) for e in prog["events"] if e[1] == "alloc"]
    pred = [_rounded(tensors[t][3]) for _, t in allocs]
    hist = rotated_to([_rounded(s) for s in hist], pred)
    ops = difflib.SequenceMatcher(None, hist, pred, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" or max(hist[i1:i2] + pred[j1:j2]) < min_bytes:
            continue
        at = steps[allocs[min(j1, len(allocs) - 1)][0]]
        print(f"{tag} history[{i1}:{i2}] predicted[{j1}:{j2}] (at {at[1]} {at[3]})")
        for size in hist[i1:i2]:
            print(f"    history   {size:>12d}")
        for (step, t), size in zip(allocs[j1:j2], pred[j1:j2]):
            kind = tensors[t][2]
            sig, level = looked_up.get(tensors[t][3], ("", "")) if kind == "workspace" \
                else ("", "")
            print(f"    predicted {size:>12d} {kind} {steps[step][1]} {steps[step][3]} "
                  f"{level} {sig}")


if __name__ == "__main__":
    main()
