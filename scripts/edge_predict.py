"""Predict the out-of-memory edges that ``scripts/oom_edge.py`` measured on the H200 (CPU).

For every measured (model, cap) of ``traces/h200/edge/oom_edge.json``: ``snsim predict
--budget CAP`` at the largest batch that ran and at the first that failed (the verdicts), and
``snsim maxbatch --model MODEL --budget CAP --policy plain`` (the predicted edge; where it
misses, the prediction at every batch between the two edges), with the same training setup (fp32, SGD momentum, foreach). The measured edges come from one process
that had run other batches first, so its CUDA modules were loaded: the predictions model no
lazy-loading address window (``CUDA_MODULE_LOADING=EAGER``, set here).

    PYTHONPATH=. python scripts/edge_predict.py --out traces/h200/edge/verdicts.json

Before a device measures new edges (a held-out set), ``--models M,... --caps C,...`` writes
only the predicted largest batches (``snsim maxbatch --model``), to be committed before
``scripts/oom_edge.py --models M,... --caps C,...`` runs:

    PYTHONPATH=. python scripts/edge_predict.py --models torchvision:resnet101,... \
        --caps 12GiB --out traces/h200/edge_heldout1/predicted_before_run.json
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
    ap.add_argument("--models", default="", help="predict these models' edges only (no "
                    "measured edges yet), comma-separated")
    ap.add_argument("--caps", default="", help="with --models: the caps, e.g. 12GiB")
    ap.add_argument("--optimizer", default="sgd-momentum", help="with --models")
    args = ap.parse_args(argv)
    if args.models:
        return predict_before_run(args)
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


def predict_before_run(args):
    """The largest batch ``snsim maxbatch --model`` predicts for each (model, cap), written
    before the edges are measured."""
    from snsim.experiments.model_search import max_batch_model
    from snsim.torchsim.amp import TrainSetup
    from snsim.units import parse_bytes
    setup = TrainSetup(args.optimizer)
    rows, prov = [], {}
    for model in args.models.split(","):
        for cap in args.caps.split(","):
            cap_bytes = parse_bytes(cap, field="--caps")
            t0 = time.perf_counter()
            rep = max_batch_model(model, gpu="h200", policies="plain", optimizer=setup,
                                  budget_bytes=cap_bytes, torch_version="2.11")
            row = rep.rows[0]
            prov = prov or rep.provenance
            rows.append({"model": model, "cap_bytes": cap_bytes, "pred_max_batch": row.max_batch,
                         "probes": row.probes, "wall_s": round(time.perf_counter() - t0, 1),
                         "probed": [(p["batch"], p["feasible"]) for p in rep.probes]})
            print(f"{model:<34} cap {cap_bytes / 2**30:5.1f} GiB  maxbatch {row.max_batch}  "
                  f"({row.probes} predictions, {rows[-1]['wall_s']} s)", file=sys.stderr)
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = {"provenance": {"tool": "scripts/edge_predict.py --models", "kind": "predicted",
                          "commit": commit, "torch": prov.get("torch_version"),
                          "torch_modelled": prov.get("torch_modelled"),
                          "module_loading": "eager", "optimizer": args.optimizer},
           "maxbatch": rows}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
