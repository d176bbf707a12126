"""Regenerate BENCHMARKS.md: `python benchmarks/run_all.py > BENCHMARKS.md`.

Runs every benchmark script in this folder in a fresh interpreter and concatenates the markdown
each prints, under a header that says when and where the figures were taken.
"""
import datetime
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = ["bench_core.py", "bench_maxdepth.py"]


def main():
    print("# snsim benchmarks\n")
    print(f"Generated {datetime.date.today().isoformat()} by `python benchmarks/run_all.py > "
          f"BENCHMARKS.md` on {platform.machine()} ({subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores), "
          f"Python {platform.python_version()}. Wall-clock figures: rerun to compare on your "
          f"machine.\n")
    for name in SCRIPTS:
        out = subprocess.run([sys.executable, str(HERE / name)], capture_output=True, text=True,
                             check=True).stdout
        print(out.rstrip() + "\n")


if __name__ == "__main__":
    main()
