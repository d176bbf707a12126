"""A convolution's workspace at a batch the probe did not run: interpolated between the probed
batches on either side, or scaled from the nearest by the batch ratio? (issue 8)

Leaves each probed batch of each call (``configs/kernels/<gpu>_conv_workspaces.json.gz``,
normalised signatures with distinct batches) that has a probed batch on both sides out in
turn, and predicts its workspaces (8 MiB or more in all) both ways from the rest: the nearest
batch's sizes times the batch ratio (the lookup before session 32), and
:func:`snsim.torchsim.hidden._at_nearest_batch` (the linear interpolation between the nearest
batches below and above where both took as many workspaces; else the ratio). Prints the relative
error (summed over the call's workspaces) of each: mean, median, 90th percentile, max, and the
share within 1 %.

    PYTHONPATH=. python scripts/workspace_batch_loo.py [--gpu h200]
"""
from __future__ import annotations

import argparse
import statistics


def evaluate(index, min_bytes=8 << 20):
    """``(ratio errors %, interpolation errors %)`` over the left-out probed batches; the
    interpolation is :func:`snsim.torchsim.hidden._at_nearest_batch` on the rest."""
    from snsim.torchsim.hidden import _at_nearest_batch
    by_ratio, by_line = [], []
    for norm, cands in index.items():
        rows = sorted(cands, key=lambda c: c[0])
        batches = [c[0] for c in rows]
        if len(set(batches)) != len(batches):
            continue
        for i in range(1, len(rows) - 1):
            batch, sizes = rows[i][0], rows[i][1]
            if not sizes or sum(sizes) < min_bytes:
                continue
            rest = rows[:i] + rows[i + 1:]
            near = min(rest, key=lambda c: abs(c[0] - batch))
            if len(near[1]) != len(sizes):
                continue
            ratio = [v * batch / near[0] for v in near[1]]
            line = _at_nearest_batch({norm: rest}, [norm], batch)
            if len(line) != len(sizes):
                continue
            total = sum(sizes)
            by_ratio.append(100 * sum(abs(p - s) for p, s in zip(ratio, sizes)) / total)
            by_line.append(100 * sum(abs(p - s) for p, s in zip(line, sizes)) / total)
    return by_ratio, by_line


def evaluate_edges(index, min_bytes=8 << 20):
    """``(ratio errors %, line errors %)`` over the smallest and the largest probed batch of
    each call with two more on the other side, left out in turn: the nearest batch's ratio,
    and :func:`snsim.torchsim.hidden._at_nearest_batch` on the rest (the line through the two
    nearest, :func:`snsim.torchsim.hidden._extrapolated`, where it applies)."""
    from snsim.torchsim.hidden import _at_nearest_batch
    by_ratio, by_line = [], []
    for norm, cands in index.items():
        rows = sorted(cands, key=lambda c: c[0])
        if len({c[0] for c in rows}) != len(rows) or len(rows) < 3:
            continue
        for i in (0, len(rows) - 1):
            batch, sizes = rows[i][0], rows[i][1]
            if not sizes or sum(sizes) < min_bytes:
                continue
            rest = rows[:i] + rows[i + 1:]
            near = min(rest, key=lambda c: abs(c[0] - batch))
            line = _at_nearest_batch({norm: rest}, [norm], batch)
            if len(near[1]) != len(sizes) or len(line) != len(sizes):
                continue
            total = sum(sizes)
            ratio = [v * batch / near[0] for v in near[1]]
            by_ratio.append(100 * sum(abs(p - s) for p, s in zip(ratio, sizes)) / total)
            by_line.append(100 * sum(abs(p - s) for p, s in zip(line, sizes)) / total)
    return by_ratio, by_line


def summary(errors):
    e = sorted(errors)
    return (f"mean {statistics.mean(e):.2f} %, median {statistics.median(e):.3f} %, "
            f"p90 {e[int(0.9 * (len(e) - 1))]:.2f} %, max {e[-1]:.1f} %, "
            f"within 1 %: {100 * sum(x <= 1 for x in e) / len(e):.1f} %")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h200")
    args = ap.parse_args(argv)
    from snsim.torchsim.hidden import _probe_table
    probe = _probe_table(args.gpu)
    if probe is None:
        raise SystemExit(f"workspace_batch_loo: no probed workspace table for {args.gpu}")
    by_ratio, by_line = evaluate(probe["scaled"])
    print(f"{len(by_ratio)} left-out calls (8 MiB or more)")
    print(f"nearest batch's ratio:      {summary(by_ratio)}")
    print(f"interpolated between sides: {summary(by_line)}")
    by_ratio, by_line = evaluate_edges(probe["scaled"])
    print(f"{len(by_ratio)} left-out smallest or largest batches (8 MiB or more)")
    print(f"nearest batch's ratio:      {summary(by_ratio)}")
    print(f"on the two nearest's line:  {summary(by_line)}")


if __name__ == "__main__":
    main()
