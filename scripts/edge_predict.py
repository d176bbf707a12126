"""Predict the out-of-memory edges that ``scripts/oom_edge.py`` measured on the H200 (CPU).

For every measured (model, cap) of ``traces/h200/edge/oom_edge.json``: ``snsim predict
--budget CAP`` at the largest batch that ran and at the first that failed (the verdicts), and
``snsim maxbatch --model MODEL --budget CAP --policy plain`` (the predicted edge; where it
misses, the prediction at every batch between the two edges), with the same training setup (fp32, SGD momentum, foreach). The measured edges come from one process
that had run other batches first, so its CUDA modules were loaded: the predictions model no
lazy-loading address window (``CUDA_MODULE_LOADING=EAGER``, set here).

    PYTHONPATH=. python scripts/edge_predict.py --out traces/h200/edge/verdicts.json
"""
import argparse
import json
import os
import sys
import time

os.environ["CUDA_MODULE_LOADING"] = "EAGER"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", default="traces/h200/edge/oom_edge.json")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    from snsim.captured import replay_capture
    from snsim.experiments.model_search import max_batch_model
    from snsim.hardware import load_hardware
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.execute import predict_plan
    with open(args.edges) as f:
        doc = json.load(f)
    setup = TrainSetup(doc["provenance"]["optimizer"])
    verdicts, searches = [], []
    for e in doc["edges"]:
        for batch, real in ((e["largest_fitting_batch"], True), (e["first_failing_batch"], False)):
            r, prog = predict_plan(e["model"], batch, "plain", optimizer=setup, gpu="h200",
                                   budget_bytes=e["cap_bytes"], torch_version="2.11")
            # the convolutions that ran without their workspace (it did not fit: 0 B taken)
            run = replay_capture(prog, load_hardware("h200"), budget_bytes=e["cap_bytes"])
            verdicts.append({"workspace_fallbacks": run.counters["workspace_fallbacks"],"model": e["model"], "cap_bytes": e["cap_bytes"], "batch": batch,
                             "real_fits": real, "pred_fits": bool(r["feasible"]),
                             "pred_allocated_bytes": r["peak_allocated_bytes"],
                             "pred_reserved_bytes": r["peak_reserved_bytes"]})
        t0 = time.perf_counter()
        rep = max_batch_model(e["model"], gpu="h200", policies="plain", optimizer=setup,
                              budget_bytes=e["cap_bytes"], torch_version="2.11")
        row = rep.rows[0]
        wall = round(time.perf_counter() - t0, 1)
        real = e["largest_fitting_batch"]
        scan = []          # a miss: the prediction at every batch between the two edges
        if row.max_batch != real:
            for n in range(min(real, row.max_batch) - 1, max(real, row.max_batch) + 2):
                r, _ = predict_plan(e["model"], n, "plain", optimizer=setup, gpu="h200",
                                    budget_bytes=e["cap_bytes"], torch_version="2.11")
                scan.append((n, bool(r["feasible"])))
        searches.append({"model": e["model"], "cap_bytes": e["cap_bytes"],
                         "real_max_batch": real, "pred_max_batch": row.max_batch,
                         "probes": row.probes,
                         "probed": [(p["batch"], p["feasible"]) for p in rep.probes],
                         "wall_s": wall, "scan": scan})
        print(f"{e['model']:<26} cap {e['cap_bytes'] / 2**30:5.1f} GiB  real {e['largest_fitting_batch']:>4}"
              f"  maxbatch {row.max_batch:>4}  ({row.probes} predictions, "
              f"{wall} s)", file=sys.stderr)
    out = {"provenance": {"tool": "scripts/edge_predict.py", "kind": "predicted",
                          "torch": rep.provenance.get("torch_version"),
                          "torch_modelled": rep.provenance.get("torch_modelled"),
                          "module_loading": "eager", "edges": args.edges},
           "verdicts": verdicts, "maxbatch": searches}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
