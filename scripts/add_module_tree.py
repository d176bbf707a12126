"""Add the module tree (``program.modules``: path -> class, and ``program.containers``) to
captures made before they were recorded (2026-11-29/30). The tree is the model's structure,
read from the model named in the capture's provenance built on the ``meta`` device; no
measured number changes.

    python scripts/add_module_tree.py traces/h200/*.json.gz traces/h200/cpu_bound/*.json.gz
"""
import gzip
import json
import sys

import torch

from snsim.torchsim.models import resolve_model
from snsim.torchsim.plans import container_paths


def module_tree(spec):
    with torch.device("meta"):
        model = resolve_model(spec).build()
    tree = {name: type(m).__name__ for name, m in model.named_modules() if name}
    return tree, container_paths(model)


def main(paths):
    for path in paths:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        prog = doc["program"]
        if prog.get("modules") and "containers" in prog:
            continue
        tree, containers = module_tree(doc["provenance"]["model"])
        if not prog.get("modules"):
            called = {s[1] for s in prog["steps"] if s[3] == "F"}
            # keep the modules the step ran (and their parents), as a capture records them
            keep = {p for p in tree if p in called or any(c.startswith(p + ".") for c in called)}
            prog["modules"] = {p: tree[p] for p in tree if p in keep}
        prog["containers"] = sorted(p for p in containers if p in prog["modules"])
        with gzip.open(path, "wt") as f:
            json.dump(doc, f, separators=(",", ":"))
        print(f"{path}: {len(prog['modules'])} modules, {len(prog['containers'])} containers")


if __name__ == "__main__":
    main(sys.argv[1:])
