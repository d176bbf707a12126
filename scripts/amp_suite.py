"""Mixed-precision and optimizer validation: captures on a GPU, predictions on the CPU.

    # on the GPU (scripts/device_amp.sh runs this): one capture per configuration
    PYTHONPATH=. python3 scripts/amp_suite.py capture --out DIR [--deadline-s 270]
    # here, after the captures are unpacked: snsim predict of the same configurations
    PYTHONPATH=. python scripts/amp_suite.py compare traces/h200/amp [--csv amp_errors.csv]

The configurations (:data:`CONFIGS`) cover CNNs and transformers at two batch sizes, bf16 and
fp16 autocast, SGD with momentum and AdamW in foreach and fused kernels, and fp32 AdamW. They
run round-robin over the networks, so a run cut short by its deadline still covers every
network. ``compare`` prints, per capture, the predicted and measured peak allocated and
reserved bytes and step time with the error in percent, and the median and max |error|.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

# (model, [batch A, batch B], input shape or None)
NETWORKS = [("torchvision:resnet50", [64, 128], None),
            ("snsim:gpt", [4, 8], None),
            ("torchvision:vit_b_16", [32, 64], None),
            ("torchvision:mobilenet_v2", [64, 128], None),
            ("snsim:transformer_encoder", [16, 32], None),
            ("torchvision:vgg16", [32, 64], None),
            ("torchvision:densenet121", [32, 64], None)]
# (batch index, optimizer, implementation, amp)
SETUPS = [(0, "sgd-momentum", "foreach", "bf16"), (1, "adamw", "foreach", "bf16"),
          (0, "adamw", "fused", "fp16"), (1, "sgd-momentum", "foreach", "fp16"),
          (0, "adamw", "foreach", None), (1, "adamw", "fused", "bf16")]
CONFIGS = [(model, batches[i], shape, opt, impl, amp)
           for i, opt, impl, amp in SETUPS for model, batches, shape in NETWORKS]


def cmd_capture(args):
    import torch
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.capture import capture, write_capture
    out = Path(args.out)
    traces = out / "amp"
    traces.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = []
    durations = []
    configs = CONFIGS
    if args.models:   # a dry run on the CPU: the same setups on the given models, batch 2
        configs = [(m, 2, None, opt, impl, amp) for _, opt, impl, amp in SETUPS
                   for m in args.models.split(",")]
    for model, batch, shape, opt, impl, amp in configs:
        setup = TrainSetup(opt, impl, amp)
        name = model.split(":")[1].split(".")[-1]
        path = traces / f"{name}_b{batch}{setup.slug}.json.gz"
        left = args.deadline_s - (time.perf_counter() - t0)
        guess = max(durations) if durations else 0.0
        if left < guess:
            print(f"skip {path.name}: {left:.0f} s left, a capture took up to {guess:.0f} s",
                  flush=True)
            continue
        s0 = time.perf_counter()
        row = {"model": model, "batch": batch, **setup.to_dict(), "trace": path.name}
        try:
            doc = capture(model, batch, optimizer=setup, input_shape=shape,
                          timing_iters=args.timing_iters, plain_iters=args.plain_iters,
                          device=args.device)
            write_capture(doc, path)
            m = doc["measured"]
            row.update({k: m.get(k) for k in ("peak_allocated_bytes", "peak_reserved_bytes",
                                               "step_time_s", "hooked_step_time_s",
                                               "grad_scale")},
                       error="")
        except Exception as e:   # one configuration's failure is a row, not the end of the run
            row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
            traceback.print_exc()
            torch.cuda.empty_cache()
        row["wall_s"] = round(time.perf_counter() - s0, 1)
        durations.append(row["wall_s"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    keys = ["model", "batch", "optimizer", "optimizer_impl", "amp", "peak_allocated_bytes",
            "peak_reserved_bytes", "step_time_s", "hooked_step_time_s", "grad_scale", "wall_s",
            "error",
            "trace"]
    with open(out / "amp_summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in keys})
    print(f"{len(rows)} of {len(configs)} configurations in {time.perf_counter() - t0:.0f} s")
    return 0


def _pct(pred, meas):
    return round(100.0 * (pred - meas) / meas, 2) if meas else None


def cmd_compare(args):
    from snsim.torchsim.amp import TrainSetup
    from snsim.torchsim.predict import predict
    rows = []
    for path in sorted(Path(args.folder).glob("*.json.gz")):
        doc = json.load(gzip.open(path))
        prov, meas = doc["provenance"], doc["measured"]
        setup = TrainSetup.parse(prov.get("optimizer", "sgd-momentum"),
                                 prov.get("optimizer_impl", "foreach"), prov.get("amp"))
        t = time.perf_counter()
        r = predict(prov["model"], prov["batch"], optimizer=setup,
                    input_shape=tuple(prov["input_shape"]),
                    hidden_exclude=(path.name,))   # leave-one-out if it is in traces/h200
        row = {"trace": path.name, "amp": setup.amp or "none", "optimizer": setup.optimizer,
               "impl": setup.optimizer_impl, "predict_wall_s": round(time.perf_counter() - t, 1)}
        for q in ("peak_allocated_bytes", "peak_reserved_bytes", "step_time_s"):
            row[f"{q}_pred"] = r[q]
            row[f"{q}_meas"] = meas[q]
            row[f"{q}_err_pct"] = _pct(r[q], meas[q])
        rows.append(row)
        print(f"{path.name:<48} alloc {row['peak_allocated_bytes_err_pct']:+7.2f}%  reserved "
              f"{row['peak_reserved_bytes_err_pct']:+7.2f}%  step "
              f"{row['step_time_s_err_pct']:+7.2f}% ({r['step_time_s'] * 1e3:.1f} vs "
              f"{meas['step_time_s'] * 1e3:.1f} ms)", flush=True)
    if not rows:
        print(f"{args.folder}: no captures (*.json.gz)", file=sys.stderr)
        return 1
    for q in ("peak_allocated_bytes", "peak_reserved_bytes", "step_time_s"):
        errs = [abs(r[f"{q}_err_pct"]) for r in rows if r[f"{q}_err_pct"] is not None]
        print(f"{q}: median |err| {statistics.median(errs):.2f}%, max {max(errs):.2f}% "
              f"over {len(errs)} captures")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture", help="capture every configuration (CUDA)")
    c.add_argument("--out", required=True)
    c.add_argument("--deadline-s", type=float, default=270.0,
                   help="start no capture that would end after this (default 270)")
    c.add_argument("--timing-iters", type=int, default=3)
    c.add_argument("--plain-iters", type=int, default=8)
    c.add_argument("--device", default="cuda", help="cpu: a dry run of the script")
    c.add_argument("--models", default=None,
                   help="comma list of models instead of NETWORKS (a CPU dry run)")
    c.set_defaults(func=cmd_capture)
    q = sub.add_parser("compare", help="snsim predict against the captures (CPU)")
    q.add_argument("folder")
    q.add_argument("--csv", default=None)
    q.set_defaults(func=cmd_compare)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
