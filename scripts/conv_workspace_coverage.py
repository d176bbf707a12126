"""How much of a network's convolution workspaces the committed probe table measured.

For each torchvision model named, the signatures its square 2-D convolution layers
(:func:`conv_workspace_probe._net_layers`) record at each batch and dtype asked for -- forward
and backward, built by the probe's own dispatch mode and :func:`snsim.torchsim.record.signature`
on the meta device (no GPU, no memory) -- and the share of them that
``configs/kernels/h200_conv_workspaces.json.gz`` holds exactly. A signature the table lacks
takes its workspace from the same call at other batches (interpolated) or from probed
neighbours (:mod:`snsim.torchsim.hidden`), which miss more often: RegNetX-8GF b64 fp32's 1x1
backward passes took cuDNN's per-sample weight-gradient engine (132,710,400 B) where their
probed neighbours' engines gave 79,859,200 B (traces/h200/plans_history/
regnet_x_8gf_b64_sgd_plain_lazy). Use it to choose the networks
``scripts/conv_workspace_probe.py --nets`` should measure next.

    PYTHONPATH=$PWD python scripts/conv_workspace_coverage.py [--models all|m1,m2]
        [--batches 32,64,128] [--dtypes float32,bfloat16,float16] [--below 100]

One line per model, lowest coverage first; ``--below P`` prints only models under P %.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def model_signatures(name, batches, dtypes):
    """The convolution signatures (forward and backward) of torchvision model ``name``'s
    square conv layers at each of ``batches`` x ``dtypes``, and how many layers that is."""
    import torch
    import torch.nn.functional as F
    import conv_workspace_probe as probe_mod
    layers = probe_mod._net_layers((name,))
    sigs = set()
    for n in batches:
        for dt in dtypes:
            probe = probe_mod._Probe(torch, device="meta")
            for c, h, co, k, s, pad, g, bias, d in layers:
                probe_mod.run_one(torch, F, probe, n, c, h, co, k, s, pad, g, bias, dt,
                                  device="meta", dilation=d)
            sigs.update(sig for sig, _ in probe.calls)
    return sigs, len(layers)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="all",
                    help="comma-separated torchvision classification models, or 'all'")
    ap.add_argument("--batches", default="32,64,128")
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    ap.add_argument("--below", type=float, default=101.0,
                    help="print only the models whose coverage %% is under this")
    args = ap.parse_args(argv)
    import torchvision.models as tvm
    from conv_workspace_probe import _positive_ints
    from snsim.torchsim import hidden
    batches = _positive_ints("--batches", args.batches)
    dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in ("float32", "bfloat16", "float16")]
    if bad or not dtypes:
        sys.exit(f"conv_workspace_coverage: --dtypes (={args.dtypes!r}) must name float32, "
                 f"bfloat16 or float16")
    known = sorted(tvm.list_models(module=tvm))
    models = known if args.models == "all" else [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in known]
    if unknown:
        sys.exit(f"conv_workspace_coverage: --models: {', '.join(unknown)} is not a "
                 f"torchvision classification model")
    probe = hidden._probe_table("h200")
    if probe is None:
        sys.exit(f"conv_workspace_coverage: no probed workspace table "
                 f"({hidden.probe_path('h200')})")
    table = probe["exact"]
    rows = []
    for m in models:
        sigs, n_layers = model_signatures(m, batches, dtypes)
        held = sum(1 for s in sigs if s in table)
        rows.append((100.0 * held / len(sigs) if sigs else 100.0, m, n_layers, len(sigs)))
    print(f"{probe['file']}: {len(table):,} signatures; batches {args.batches}, dtypes "
          f"{','.join(dtypes)}")
    for pct, m, n_layers, n_sigs in sorted(rows):
        if pct < args.below:
            print(f"{m:24s} {n_layers:4d} layers {n_sigs:6d} signatures  {pct:5.1f} % in the "
                  f"table")


if __name__ == "__main__":
    main()
