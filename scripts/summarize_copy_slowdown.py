"""Reduce the probe's copy/compute grid to the engine's per-(direction, pinned) summary.

    PYTHONPATH=. python scripts/summarize_copy_slowdown.py configs/kernels/probe/copy_slowdown.csv \\
        configs/kernels/h200_copy_slowdown.csv
"""
import csv
import sys

from snsim.engine.contention import summarize


def main(argv=None):
    grid, out = (argv or sys.argv[1:])[:2]
    with open(grid, newline="") as f:
        rows = summarize(list(csv.DictReader(f)))
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
