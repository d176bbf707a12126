"""Mutation spot-check: do the tests notice a small bug in the engine, allocators or scheduler?

Applies one simple mutation at a time to a copy of the source tree -- a swapped arithmetic or
comparison operator, ``and``/``or``, ``max``/``min``, an integer constant off by one, a flipped
boolean -- runs a focused test subset against the copy, and reports each mutant as killed (a
test failed), survived, or timed out (counted as killed: an endless loop is noticed). The tree
under test is never modified.

    python scripts/mutate.py                      # every mutant of the three modules
    python scripts/mutate.py --sample 60 --seed 1 # a seeded random sample per module
    python scripts/mutate.py --list               # the mutants, without running anything

Needs only the standard library and pytest.
"""
from __future__ import annotations

import argparse
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {
    "snsim/engine/core.py": ["tests/golden", "tests/test_engine.py", "tests/test_schedule.py",
                             "tests/test_random_graphs.py"],
    "snsim/engine/allocators.py": ["tests/test_allocators.py", "tests/golden",
                                   "tests/test_engine.py"],
    "snsim/policies/_schedule.py": ["tests/test_schedule.py", "tests/golden",
                                    "tests/test_engine.py", "tests/test_random_graphs.py"],
}
# slow tests that add nothing the rest of the subset does not check
DESELECT = ["tests/test_engine.py::test_resnet2500_on_k40c",
            "tests/test_schedule.py::test_thousands_of_recomputable_layers_in_a_row"]

BINOP_SWAP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"),
              ast.Div: ("/", "*"), ast.FloorDiv: ("//", "*"), ast.Mod: ("%", "//")}
CMP_SWAP = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="),
            ast.GtE: (">=", ">"), ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="),
            ast.In: (" in ", " not in "), ast.NotIn: (" not in ", " in "),
            ast.Is: (" is ", " is not "), ast.IsNot: (" is not ", " is ")}


class Mutant:
    def __init__(self, path, line, col_start, col_end, old, new, what):
        self.path, self.line, self.col_start, self.col_end = path, line, col_start, col_end
        self.old, self.new, self.what = old, new, what

    def apply(self, text):
        lines = text.splitlines(keepends=True)
        ln = lines[self.line - 1]
        seg = ln[self.col_start:self.col_end]
        assert seg == self.old, (self, seg)
        lines[self.line - 1] = ln[:self.col_start] + self.new + ln[self.col_end:]
        return "".join(lines)

    def __str__(self):
        return f"{self.path}:{self.line}:{self.col_start}: {self.what}"


def _op_between(lines, a, b, token):
    """Locate ``token`` between node end ``a`` and node start ``b`` on one line, if it is."""
    (la, ca), (lb, cb) = a, b
    if la != lb:
        return None
    seg = lines[la - 1][ca:cb]
    i = seg.find(token)
    if i < 0 or seg.count(token.strip()) != 1:
        return None
    return la, ca + i, ca + i + len(token)


def _docstring_lines(tree):
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                skip.update(range(body[0].lineno, body[0].end_lineno + 1))
    return skip


def mutants_of(path):
    text = (ROOT / path).read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    skip = _docstring_lines(tree)
    out = []

    def add(line, c0, c1, old, new, what):
        if line not in skip:
            out.append(Mutant(path, line, c0, c1, old, new, what))

    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAP:
            old, new = BINOP_SWAP[type(node.op)]
            loc = _op_between(lines, (node.left.end_lineno, node.left.end_col_offset),
                              (node.right.lineno, node.right.col_offset), old)
            if loc:
                add(*loc, old, new, f"{old.strip()} -> {new.strip()}")
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMP_SWAP:
            old, new = CMP_SWAP[type(node.ops[0])]
            loc = _op_between(lines, (node.left.end_lineno, node.left.end_col_offset),
                              (node.comparators[0].lineno, node.comparators[0].col_offset), old)
            if loc:
                add(*loc, old, new, f"{old.strip()} -> {new.strip()}")
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = (" and ", " or ") if isinstance(node.op, ast.And) else (" or ", " and ")
            loc = _op_between(lines, (node.values[0].end_lineno, node.values[0].end_col_offset),
                              (node.values[1].lineno, node.values[1].col_offset), old)
            if loc:
                add(*loc, old, new, f"{old.strip()} -> {new.strip()}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("max", "min"):
            f = node.func
            new = "min" if f.id == "max" else "max"
            add(f.lineno, f.col_offset, f.end_col_offset, f.id, new, f"{f.id}() -> {new}()")
        elif isinstance(node, ast.Constant) and node.lineno == node.end_lineno:
            seg = lines[node.lineno - 1][node.col_offset:node.end_col_offset]
            v = node.value
            if isinstance(v, bool):
                add(node.lineno, node.col_offset, node.end_col_offset, seg, str(not v),
                    f"{seg} -> {not v}")
            elif isinstance(v, int) and seg.isdigit():
                add(node.lineno, node.col_offset, node.end_col_offset, seg, str(v + 1),
                    f"{seg} -> {v + 1}")
            elif isinstance(v, float) and seg in ("0.0", "1.0"):
                new = "1.0" if seg == "0.0" else "0.0"
                add(node.lineno, node.col_offset, node.end_col_offset, seg, new, f"{seg} -> {new}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            line = lines[node.lineno - 1]
            if line[node.col_offset:node.col_offset + 4] == "not ":
                add(node.lineno, node.col_offset, node.col_offset + 4, "not ", "",
                    "drop `not`")
    out.sort(key=lambda m: (m.line, m.col_start, m.new))
    return out


def run_mutant(m, workdir, timeout_s):
    src = workdir / m.path
    original = src.read_text()
    src.write_text(m.apply(original))
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-o", "addopts=", "--hypothesis-profile=quick", *TARGETS[m.path]]
    for d in DESELECT:
        cmd += ["--deselect", d]
    env = dict(os.environ, PYTHONPATH=str(workdir), PYTHONDONTWRITEBYTECODE="1")
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=timeout_s).returncode
        verdict = "survived" if rc == 0 else "killed"
    except subprocess.TimeoutExpired:
        verdict = "timeout"
    finally:
        src.write_text(original)
    return verdict, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=None, help="mutants per module (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--only", action="append", default=[], metavar="REGEX",
                    help="run only mutants whose description matches (repeatable), e.g. "
                    "'core.py:252: max'")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    chosen = []
    for path in TARGETS:
        ms = mutants_of(path)
        total = len(ms)
        if args.sample is not None and args.sample < total:
            ms = sorted(rng.sample(ms, args.sample), key=lambda m: (m.line, m.col_start))
        print(f"{path}: {total} mutants, running {len(ms)}", flush=True)
        chosen += ms
    if args.only:
        chosen = [m for m in chosen if any(re.search(rx, str(m)) for rx in args.only)]
    if args.list:
        print("\n".join(map(str, chosen)))
        return 0
    with tempfile.TemporaryDirectory(prefix="snsim-mutate-") as tmp:
        work = Path(tmp)
        for name in ("snsim", "tests", "configs", "pyproject.toml", "traces"):
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy2(src, work / name)
        counts = {"killed": 0, "survived": 0, "timeout": 0}
        survivors = []
        for i, m in enumerate(chosen, 1):
            verdict, secs = run_mutant(m, work, args.timeout)
            counts[verdict] += 1
            if verdict == "survived":
                survivors.append(m)
            print(f"[{i}/{len(chosen)}] {verdict:8s} {secs:6.1f}s  {m}", flush=True)
    n = len(chosen)
    killed = counts["killed"] + counts["timeout"]
    print(f"\nscore: {killed}/{n} killed ({100 * killed / max(1, n):.1f}%), "
          f"{counts['timeout']} of them by timeout; {counts['survived']} survived")
    for m in survivors:
        print(f"SURVIVED {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
