"""Generate docs/POLICIES.md: ``python -m snsim.experiments.policies_doc > docs/POLICIES.md``.

For every registered policy: what it does (its module's docstring), where it comes from and
what planning costs (``Policy.reference`` and ``Policy.planning_cost``, else a "Planning cost"
paragraph of the docstring), its options, and the planning time measured here; then the
memory–time frontier of every policy (:func:`snsim.experiments.frontier.frontier`) on each
network of :data:`NETWORKS` at :data:`FRACTIONS` of liveness' peak, with the gap to
``checkmate`` where that policy is registered. A policy added to the registry, or a network
added to the zoo and to :data:`NETWORKS`, appears on the next run. Takes a few minutes on a
two-core machine.
"""
from __future__ import annotations

import argparse
import datetime
import inspect
import platform
import re
import statistics
import sys

#: (zoo name, batch) of the frontier tables: append to extend. A name the zoo does not know is
#: listed as missing, so the list may name networks another branch adds.
NETWORKS = (("alexnet", 512), ("vgg16", 32), ("resnet50", 32), ("densenet121", 32),
            ("mobilenet_v2", 64), ("gpt2", 4), ("bert-base", 8), ("vit-b16", 32))
#: budgets of the tables, as fractions of liveness' peak
FRACTIONS = (0.3, 0.5, 0.7, 1.0)
HARDWARE = "k40c"
FRAMEWORK = "superneurons"
ALLOCATOR = "pool"          # the allocator of SuperNeurons' framework (the CLI's default)
#: a policy with a ``time_limit_s`` option (a solver) gets this limit, to keep the run short
SOLVER_TIME_LIMIT_S = 10


def _markdown(text):
    """A docstring as markdown: reST literals as code, internal spec citations dropped."""
    text = inspect.cleandoc(text or "")
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    text = re.sub(r":(?:func|class|mod|data|meth):`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"\s*\((?:see )?SPEC §\d+(?:\.\d+)*\)", "", text)
    text = re.sub(r"SPEC §\d+(?:\.\d+)*'s\s+", "", text)
    text = re.sub(r"SPEC §\d+(?:\.\d+)*", "the design notes (docs/DESIGN.md)", text)
    return text


def _cell_text(text):
    """Text that stays inside one cell of a markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _planning_paragraph(doc):
    """The docstring's paragraph that starts with "Planning cost", or ""."""
    for para in re.split(r"\n\s*\n", doc or ""):
        if para.strip().lower().startswith("planning cost"):
            return " ".join(para.split()).split(":", 1)[-1].strip()
    return ""


def policy_facts(name):
    """What the docs say about policy ``name``: a dict of markdown strings."""
    from ..policies import POLICIES
    cls = POLICIES[name]
    module = sys.modules[cls.__module__]
    doc = module.__doc__ or cls.__doc__ or ""
    first = _markdown(doc).split("\n", 1)[0]
    return {
        "name": name, "description": cls.description, "in_all": cls.in_all,
        "doc": _markdown(doc), "reference": cls.reference or first,
        "planning_cost": cls.planning_cost or _markdown(_planning_paragraph(doc)) or "—",
        "options": [(k, o.default, o.rule) for k, o in sorted(cls.OPTIONS.items())],
    }


def measure(networks=NETWORKS, fractions=FRACTIONS, *, progress=None):
    """Run the frontier on every network the zoo has.

    Returns ``(frames, plan_s, missing)``: ``{(network, batch): DataFrame}``,
    ``{policy: [planning seconds of every run]}`` and the networks the zoo lacks.
    """
    from ..errors import UnknownNameError
    from ..policies import POLICIES
    from .frontier import frontier
    options = {n: {"time_limit_s": SOLVER_TIME_LIMIT_S} for n, cls in POLICIES.items()
               if "time_limit_s" in cls.OPTIONS}
    frames, plan_s, missing = {}, {}, []

    def on_run(policy, budget, seconds, result):
        plan_s.setdefault(policy, []).append(seconds)
        if progress is not None:
            progress(policy, budget)
    for net, batch in networks:
        try:
            df = frontier(net, batch=batch, hardware=HARDWARE, policies="all",
                          budgets=[f"{f}x" for f in fractions], allocator=ALLOCATOR,
                          framework=FRAMEWORK, policy_options=options, on_run=on_run)
        except UnknownNameError:
            missing.append(net)
            continue
        frames[(net, batch)] = df
    return frames, plan_s, missing


def _cell(r, optimum):
    if not r["feasible"]:
        return "—"
    cell = f"{r['step_time_s'] * 1e3:,.1f}"
    import pandas as pd
    if pd.notna(r["gap"]) and r["policy"] != optimum:
        cell += f" ({r['gap']:+.1%})"
    return f"**{cell}**" if r["pareto_all"] else cell


def frontier_markdown(df):
    """One network's frontier as a markdown table: a row per policy, a column per budget."""
    from ..units import format_bytes
    optimum = df.attrs.get("optimum")
    fraction = dict(zip(df["budget_bytes"], df["budget_fraction"]))
    budgets = sorted(fraction)
    head = ["policy"] + [f"{format_bytes(b)} ({fraction[b]:.1f}x)" for b in budgets]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for policy, g in df.groupby("policy", sort=True):
        by = {r["budget_bytes"]: r for _, r in g.iterrows()}
        lines.append("| " + " | ".join([policy] + [_cell(by[b], optimum) for b in budgets]) + " |")
    return "\n".join(lines)


def render(frames, plan_s, missing, *, names=None):
    """The whole document as markdown text."""
    from ..policies import list_policies
    from ..units import format_bytes
    from .frontier import OPTIMUM
    names = names or list_policies()
    facts = [policy_facts(n) for n in names]
    out = [
        "# Memory policies",
        "",
        f"Generated {datetime.date.today().isoformat()} by `python -m "
        "snsim.experiments.policies_doc > docs/POLICIES.md` (do not edit by hand: edit the "
        "policies' docstrings and `reference` / `planning_cost` attributes, or "
        "`snsim/experiments/policies_doc.py`). Every policy plans the same program and is "
        "replayed by the same engine, on the same hardware, PCIe link and allocator.",
        "",
        "| policy | in `all` | what it does | where it comes from | planning cost | "
        "plan time (median, max) |",
        "|---|---|---|---|---|---|",
    ]
    for f in facts:
        times = plan_s.get(f["name"], [])
        t = (f"{statistics.median(times) * 1e3:,.1f} ms, {max(times) * 1e3:,.1f} ms"
             if times else "—")
        out.append(f"| `{f['name']}` | {'yes' if f['in_all'] else 'no (name it)'} | "
                   + " | ".join(_cell_text(f[k]) for k in ("description", "reference",
                                                          "planning_cost")) + f" | {t} |")
    out += ["", "Plan times: wall-clock time of `plan()` on this machine "
            f"({platform.machine()}, Python {platform.python_version()}), over every run of "
            "the frontier tables below.", ""]
    out += ["## Frontiers", "",
            f"Step time in ms (modelled) of one training iteration on the {HARDWARE} preset, "
            f"{FRAMEWORK} semantics, `{ALLOCATOR}` allocator, at budgets that are fractions of "
            "*liveness' peak* (the reserved peak of `liveness` with no memory limit); — the run "
            "does not fit the budget. **Bold**: on the memory–time Pareto front of all "
            "policies together (no other run needs less memory and less time). "
            + (f"In parentheses: the gap to `{OPTIMUM}`'s plan at the same budget "
               "(`step / optimum - 1`; its status column says where the solver proved "
               "optimality). The optimum is over recomputation and the convolutions' "
               "algorithms: no policy that only drops, replays and frees can beat a proven "
               "one; policies that also move tensors over PCIe (superneurons, vdnn, offload, "
               "capuchin, cpu_offload, zero_offload, joint) can."
               if any(df.attrs.get("optimum") for df in frames.values()) else
               f"No policy named `{OPTIMUM}` is registered in this build, so no optimality "
               f"gaps are shown."), ""]
    solvers = [f["name"] for f in facts if any(k == "time_limit_s" for k, _, _ in f["options"])]
    if solvers:
        out += [f"Solvers ({', '.join(solvers)}) ran with `time_limit_s={SOLVER_TIME_LIMIT_S}` "
                "to keep this document a few minutes' work.", ""]
    for (net, batch), df in frames.items():
        out += [f"### {net}, batch {batch}", "",
                f"Liveness' peak {format_bytes(df.attrs['liveness_peak_bytes'])}, its step "
                f"{df.attrs['liveness_step_time_s'] * 1e3:,.1f} ms; device budget "
                f"{format_bytes(df.attrs['device_budget_bytes'])}.", "",
                frontier_markdown(df), ""]
        if df.attrs.get("optimum"):
            st = df[df["policy"] == df.attrs["optimum"]][["budget_bytes", "optimum_status"]]
            out += [f"`{df.attrs['optimum']}` status per budget: " + ", ".join(
                f"{format_bytes(b)}: {s}" for b, s in zip(st["budget_bytes"],
                                                          st["optimum_status"])), ""]
    if missing:
        out += [f"Not in this build's zoo (listed in `NETWORKS`): {', '.join(missing)}.", ""]
    out += ["## The policies", ""]
    for f in facts:
        out += [f"### `{f['name']}`", "", f"*{f['description']}*", "", f["doc"], "",
                f"- where it comes from: {f['reference']}",
                f"- planning cost: {f['planning_cost']}",
                f"- in `--policy all`: {'yes' if f['in_all'] else 'no; name it to run it'}"]
        if f["options"]:
            out.append("- options (`--option KEY=VALUE`): " + "; ".join(
                f"`{k}` (default `{d}`): {rule}" for k, d, rule in f["options"]))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=None,
                    help="comma-separated NAME:BATCH pairs instead of the default list")
    args = ap.parse_args(argv)
    networks = NETWORKS
    if args.networks:
        networks = []
        for item in args.networks.split(","):
            m = re.fullmatch(r"\s*([\w.:-]+?):(\d+)\s*", item)
            if not m or int(m.group(2)) < 1:
                ap.error(f"--networks entry {item!r} must be NAME:BATCH with BATCH >= 1")
            networks.append((m.group(1), int(m.group(2))))
    from ..gcpause import without_gc
    frames, plan_s, missing = without_gc(measure)(networks)
    sys.stdout.write(render(frames, plan_s, missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
