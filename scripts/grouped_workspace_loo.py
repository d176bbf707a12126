"""How well each model predicts the cuDNN workspace of a grouped convolution no table holds:
every grouped call of the GPU's probed table (configs/kernels/<gpu>_conv_workspaces.json.gz,
scripts/conv_workspace_probe.py) is left out in turn and predicted from the rest, by the
nearest probed call of its kernel family (:func:`snsim.torchsim.hidden.probed_grouped_workspaces`)
and by the first-principles model (:func:`snsim.torchsim.hidden.modelled_conv_workspaces`).
Prints, per pass, the number of workspaces of at least --min-mib, the mean / median / 90th
percentile |error| and the share within 5%.

    PYTHONPATH=. python scripts/grouped_workspace_loo.py [--gpu h200] [--min-mib 8]
"""
import argparse
import math
import statistics
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--min-mib", type=float, default=8.0)
    args = ap.parse_args(argv)
    from snsim.torchsim import hidden
    probe = hidden._probe_table(args.gpu)
    if probe is None:
        print(f"no probed table: {hidden.probe_path(args.gpu)}", file=sys.stderr)
        return 1
    errs = {}
    index = probe["grouped"]
    for sig, sizes in sorted(probe["exact"].items()):
        call = hidden.conv_call(sig)
        if call is None or not 1 < call["groups"] < call["x"][1]:
            continue
        passes = hidden._passes(call)
        if sizes and len(sizes) < len(passes):
            continue
        n, _, h, w = call["x"]
        me = (math.log(call["groups"]), math.log(n * h * w), hidden._transposed_bytes(call))
        near = hidden.nearest_grouped(index, call, skip=me)
        modelled = hidden.modelled_conv_workspaces(sig)
        for j, p in enumerate(passes):
            real = sizes[j] if j < len(sizes) else 0
            if real < args.min_mib * 2**20:
                continue
            for name, pred in (("probe_near", near), ("modelled", modelled)):
                if pred is not None:
                    errs.setdefault((p, name), []).append(abs(pred[j] / real - 1))
    for (p, name), e in sorted(errs.items()):
        e.sort()
        print(f"{p:<11} {name:<11} n={len(e):<5} mean {100 * statistics.mean(e):6.1f}%  "
              f"median {100 * statistics.median(e):6.1f}%  p90 {100 * e[int(0.9 * len(e))]:6.1f}%  "
              f"within 5% {100 * sum(x < 0.05 for x in e) / len(e):5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
