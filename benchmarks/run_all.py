"""Regenerate BENCHMARKS.md: `python benchmarks/run_all.py > BENCHMARKS.md`.

Runs every benchmark script in this folder in a fresh interpreter and concatenates the markdown
each prints, under a header that says when and where the figures were taken. The document is
assembled first and printed in one piece, so a missed target (a script exiting 1) or a script
that crashes still gives a complete file: the section says what happened. The exit status is 1
if any target was missed or any script failed.

To compare with an earlier tree under the same machine load, point ``SNSIM_BENCH_BASELINE`` at
a copy of it (``git archive COMMIT | tar -x -C DIR``) and name it in
``SNSIM_BENCH_BASELINE_LABEL``: bench_maxdepth.py then runs both CLIs interleaved.
"""
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = ["bench_core.py", "bench_maxdepth.py", "bench_planners.py", "bench_predict.py",
           "bench_maxbatch_model.py"]


def run_script(name):
    """``(markdown, ok)`` of one benchmark script; never raises."""
    proc = subprocess.run([sys.executable, str(HERE / name)], capture_output=True, text=True)
    out = proc.stdout.rstrip()
    if proc.returncode == 0:
        return out + "\n", True
    crashed = "Traceback (most recent call last)" in proc.stderr
    if proc.returncode == 1 and out and not crashed:
        return out + f"\n\n**{name}: a target above was missed** (exit status 1).\n", False
    err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return ((out + "\n\n" if out else f"## {name}\n\n")
            + f"**{name} failed** (exit status {proc.returncode}): `{err}`\n"), False


def main():
    load = os.getloadavg()[0]
    sections, ok = [], True
    for name in SCRIPTS:
        text, good = run_script(name)
        sections.append(text)
        ok = ok and good
    header = (f"# snsim benchmarks\n\nGenerated {datetime.date.today().isoformat()} by `python "
              f"benchmarks/run_all.py > BENCHMARKS.md` on {platform.machine()} "
              f"({os.cpu_count()} cores), Python {platform.python_version()}. Wall-clock figures "
              f"are medians: rerun to compare on your machine; CPU figures of a command add its "
              f"worker processes' (`maxdepth --jobs`). Load average at the start: "
              f"{load:.1f} (above {os.cpu_count()}, other work shares the CPUs and wall "
              f"times stretch).\n")
    sys.stdout.write("\n".join([header, *sections]))
    sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
