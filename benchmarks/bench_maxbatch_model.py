"""Benchmark: ``snsim maxbatch --model`` (the largest batch per plan, by ``snsim predict``
probes) on ResNet-50 and VGG-16 at 20 GiB, plain and checkpoint.

No target: it prints what a search costs on this machine (predictions made, wall seconds, and
seconds per prediction, each a FakeTensor recording and the engine's replay), as markdown for
BENCHMARKS.md. One in-process search per model, after a warm-up prediction that fills the
user caches (``~/.cache/snsim``) and imports torch.

    python benchmarks/bench_maxbatch_model.py
"""
from __future__ import annotations

import sys
import time

CASES = [("torchvision:resnet50", "plain,checkpoint"), ("torchvision:vgg16", "plain,checkpoint")]
BUDGET_BYTES = 20 * 2**30


def main():
    from snsim.experiments.model_search import max_batch_model
    from snsim.torchsim.execute import predict_plan
    predict_plan("torchvision:resnet18", 8, "plain")          # imports and caches
    print(f"## maxbatch --model benchmark: budget {BUDGET_BYTES / 2**30:g} GiB, h200\n")
    print("| model | plan | largest batch | predictions | wall s | s per prediction |")
    print("|---|---|---|---|---|---|")
    for model, plans in CASES:
        for plan in plans.split(","):
            t = time.perf_counter()
            rep = max_batch_model(model, policies=plan, budget_bytes=BUDGET_BYTES)
            wall = time.perf_counter() - t
            row = rep.rows[0]
            print(f"| {model} | {row.plan} | {row.max_batch} | {row.probes} | {wall:.1f} | "
                  f"{wall / row.probes:.2f} |")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
