"""The solver-based planners of issue 12: planning time and the step time they buy.

Prints markdown. Targets (exit status 1 when missed):

* ``checkmate`` solves VGG-16 batch 32 (K40c costs) to proven optimality (gap <= 1e-4) in at
  most 60 s at 0.7x of liveness' peak, with its convolution algorithms chosen in the MILP
  (``ws_policy=planned``, the default; the zero-workspace model, ``ws_policy=none``, is
  reported beside it);
* ``joint`` (heuristic) runs ResNet-2500 batch 1 on the K40c budget faster than
  ``superneurons`` (reported, with both step times).

Budgets are fractions of liveness' peak (the whole ideal peak, static included) and, where that
is below every step's own floor, of its managed part. Ideal allocator.
"""
import sys
import time

from snsim.engine.core import run_plan
from snsim.hardware import load_hardware
from snsim.policies import get_policy
from snsim.program import build_program
from snsim.zoo import build_network

HW = load_hardware("k40c")
COMPARED = [("liveness", {}), ("recompute", {}), ("chen_sqrt", {}), ("sac_knapsack", {}),
            ("superneurons", {}), ("vdnn", {}), ("joint", {"solver": "heuristic"}),
            ("checkmate", {}), ("checkmate", {"ws_policy": "none"})]


def row(program, name, options, budget):
    t0 = time.perf_counter()
    plan = get_policy(name, **options).plan(program, HW, budget)
    plan_s = time.perf_counter() - t0
    r = run_plan(program, plan, HW, budget_bytes=budget, record=False)
    label = name + "".join(f" {k}={v}" for k, v in options.items())
    step = f"{r.step_time_s:.4f}" if r.feasible else "does not fit"
    peak = f"{r.peak_ideal_bytes / 2**30:.2f}" if r.feasible else "—"
    return plan, r, f"| {label} | {step} | {peak} | {plan_s:.2f} |"


def main():
    ok = True
    print("## Solver-based planners (issue 12)\n")
    p = build_program(build_network("vgg16", batch=32), hardware=HW)
    live = run_plan(p, get_policy("liveness").plan(p, HW, 10**13), HW, budget_bytes=10**13)
    static = p.static_total_bytes
    managed = live.peak_ideal_bytes - static
    print(f"VGG-16 batch 32, K40c costs: liveness peak {live.peak_ideal_bytes / 2**30:.2f} GiB "
          f"(static {static / 2**30:.2f} GiB).\n")
    budgets = [("0.5x liveness peak", int(live.peak_ideal_bytes * 0.5)),
               ("0.7x liveness peak", int(live.peak_ideal_bytes * 0.7)),
               ("0.9x liveness peak", int(live.peak_ideal_bytes * 0.9)),
               ("static + 0.5x managed", static + int(managed * 0.5)),
               ("static + 0.3x managed", static + int(managed * 0.3))]
    for title, budget in budgets:
        print(f"### {title} ({budget / 2**30:.2f} GiB)\n")
        print("| policy | step time (s) | peak (GiB) | plan (s) |\n|---|---|---|---|")
        notes = []
        for name, options in COMPARED:
            plan, r, line = row(p, name, options, budget)
            print(line)
            if name == "checkmate":
                n = plan.notes
                solve_s = float(line.rsplit("|", 2)[-2])
                notes.append(f"checkmate ws_policy={n['ws_policy']}: status {n['status']}, "
                             f"plan {solve_s:.1f} s, gap {n.get('gap', 0):.2g}, "
                             f"{n.get('binaries', 0)} binaries, replay "
                             f"{n.get('replay_time_s', 0):.4f} s"
                             + (f", incumbent {n['incumbent']}" if "incumbent" in n else "")
                             + (f", {n['reason']}" if "reason" in n else ""))
                if title == "0.7x liveness peak" and not options:
                    ok &= n["status"] == "optimal" and n.get("gap", 1) <= 1e-4 \
                        and solve_s <= 60
        print("\n" + "\n\n".join(notes) + "\n")
    print("### ResNet-2500 batch 1, K40c budget\n")
    p = build_program(build_network("resnet2500", batch=1), hardware=HW)
    print("| policy | step time (s) | peak (GiB) | plan (s) |\n|---|---|---|---|")
    times = {}
    for name, options in [("superneurons", {}), ("joint", {"solver": "heuristic"})]:
        _, r, line = row(p, name, options, HW.budget_bytes)
        times[name] = r.step_time_s if r.feasible else float("inf")
        print(line)
    ok &= times["joint"] < times["superneurons"]
    print(f"\ntarget: joint faster than superneurons: "
          f"{'met' if times['joint'] < times['superneurons'] else 'MISSED'}; "
          f"VGG-16 optimal in <= 60 s at 0.7x: {'met' if ok else 'see above'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
