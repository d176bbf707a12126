"""How well the probed-neighbour level predicts the cuDNN workspace of a dense convolution no
table holds (:func:`snsim.torchsim.hidden.probed_dense_workspaces`): every dense call of the
GPU's probed table (configs/kernels/<gpu>_conv_workspaces.json.gz) is predicted from the others
with every probed call of the same shape left out (any batch, any dtype: a network never
probed has neither), per pass. Prints, per dtype, pass and kernel class (1x1, k x k), the
number of passes, the byte-weighted |error| (sum |predicted - measured| / sum measured), and
the share of passes within 5% (or 64 KiB) of the measured bytes, zeros included.

    PYTHONPATH=. python scripts/dense_workspace_loo.py [--gpu h200] [--dtype float16]
"""
import argparse
import collections
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--dtype", default=None, help="only calls of this dtype")
    args = ap.parse_args(argv)
    import numpy as np
    from snsim.torchsim import hidden
    probe = hidden._probe_table(args.gpu)
    if probe is None:
        print(f"no probed table: {hidden.probe_path(args.gpu)}", file=sys.stderr)
        return 1
    calls = {sig: hidden.conv_call(sig) for sig in sorted(probe["exact"])}
    calls = {sig: c for sig, c in calls.items() if c is not None}
    index, sigs = hidden._dense_index(probe["exact"], calls, probe.get("slots"),
                                      with_sigs=True)

    def shape(sig):
        return hidden.undtyped(hidden.normalize(sig, calls[sig]["x"][0]))[0]
    shapes = {key: np.array([shape(s) for s in ss]) for key, ss in sigs.items()}
    tot = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])
    for sig, call in calls.items():
        if call["groups"] != 1 or min(call["x"]) <= 0:
            continue
        if args.dtype and call["dtype"] != args.dtype:
            continue
        measured = hidden.per_pass_sizes(call, probe["exact"][sig], probe["slots"].get(sig))
        if measured is None:
            continue
        if hidden.ELEMENT_BYTES[call["dtype"]] == 2 and call["x"][2] * call["x"][3] == 1:
            continue
        me = shape(sig)
        for p, ws in zip(hidden._passes(call), measured):
            key = hidden._dense_key(call, p)
            rows = index.get(key)
            if rows is None:
                continue
            keep = shapes[key] != me
            if not keep.any():
                continue
            pred = hidden.dense_pass_bytes(rows[keep], call, p)
            cls = "1x1" if call["w"][2:] == [1, 1] else "kxk"
            t = tot[(call["dtype"], p, cls)]
            t[0] += 1
            t[1] += abs(pred - ws)
            t[2] += ws
            t[3] += abs(pred - ws) <= max(0.05 * ws, 65536)
    print(f"{'dtype':9} {'pass':10} {'kernel':6} {'n':>5} {'byte |err|':>10} {'within 5%':>9}")
    for key in sorted(tot):
        n, err, meas, ok = tot[key]
        print(f"{key[0]:9} {key[1]:10} {key[2]:6} {n:5d} {100 * err / max(meas, 1):9.1f}% "
              f"{100 * ok / n:8.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
