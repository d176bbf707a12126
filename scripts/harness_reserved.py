"""One line per measurement for ``scripts/harness_reserved.sh``: harness, run, peaks (bytes).

    python3 scripts/harness_reserved.py script NAME SET RUN_PREFIX   measure() here, at once
    python3 scripts/harness_reserved.py execute NAME FILE            `snsim execute` JSON output
    python3 scripts/harness_reserved.py suite NAME SUMMARY_CSV       a suite's summary.csv
"""
import csv
import json
import sys


def main(argv):
    harness, name, *rest = argv
    if harness == "script":   # the suite's own measurement, here rather than in its child
        from snsim.torchsim.suite import PLAN_SETS, _execute_here, run_name
        set_name, prefix = rest
        run = next(r for r in PLAN_SETS[set_name] if run_name(r).startswith(prefix))
        m, _ = _execute_here(run, "measure", 2, 5, "cuda")
        print(f"script {name} {m['peak_allocated_bytes']} {m['peak_reserved_bytes']}")
    elif harness == "execute":
        text = open(rest[0]).read()   # `snsim execute --format json`: one object, its rows
        doc, _ = json.JSONDecoder().raw_decode(text[text.index("{"):])
        rows = {r["quantity"]: r for r in doc["rows"]}
        print(f"execute {name} {rows['peak_allocated_bytes']['measured']} "
              f"{rows['peak_reserved_bytes']['measured']} (predicted "
              f"{rows['peak_reserved_bytes']['predicted']})")
    elif harness == "suite":
        for r in csv.DictReader(open(rest[0])):
            print(f"suite {name} {r['meas_allocated_bytes']} {r['meas_reserved_bytes']} "
                  f"({r['name']})")
    else:
        sys.exit(f"harness_reserved: unknown harness {harness!r} (script, execute, suite)")


if __name__ == "__main__":
    main(sys.argv[1:])
