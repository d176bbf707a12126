#!/usr/bin/env python
"""Strip outputs, execution counts and run metadata from notebooks before committing them.

    python scripts/strip_notebooks.py                # strip notebooks/*.ipynb in place
    python scripts/strip_notebooks.py --check        # exit 1 and name any that is not stripped
    python scripts/strip_notebooks.py a.ipynb b.ipynb
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
RUN_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")


def is_stripped(nb):
    """True when no code cell has outputs, an execution count or run metadata."""
    return all(not c.get("outputs") and c.get("execution_count") is None
               and not any(k in c.get("metadata", {}) for k in RUN_METADATA)
               for c in nb.cells if c.cell_type == "code")


def strip(nb):
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
        for k in RUN_METADATA:
            c.metadata.pop(k, None)
    nb.metadata.pop("widgets", None)
    return nb


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true", help="only report; exit 1 if any has outputs")
    args = ap.parse_args(argv)
    paths = args.paths or sorted((ROOT / "notebooks").glob("*.ipynb"))
    dirty = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if is_stripped(nb):
            continue
        dirty.append(path)
        if not args.check:
            nbformat.write(strip(nb), path)
    for path in dirty:
        print(f"{path}: {'has outputs' if args.check else 'stripped'}")
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())
