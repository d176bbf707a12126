"""A plan step's GPU timeline, stream by stream: for the backward (or any phase) of one profiled
step, how long the compute stream ran kernels, waited for a side-stream copy, or idled waiting
for the launching thread, and when each side copy was issued, started and ended.

One configuration, built and trained as ``scripts/plan_gpu_busy.py`` does (warm-up steps, then
one step under ``torch.profiler`` whose phases are ``record_function`` ranges ending in a
synchronise). From the profiler's Chrome trace: per phase, every GPU event's stream, start and
duration; the compute stream is the one that ran the most kernels. Each gap between two
compute-stream kernels is charged to a copy when a side-stream copy ended within
``--slack-us`` before the next kernel started (the node waited for it), else to the host.
Prints per phase: the wall, kernel busy, copy busy per stream, their union, the compute
stream's gaps by cause, and per side copy the lag between its issue (``cudaMemcpyAsync``) and
its start (the stream's queue and its ``wait_stream`` gate).

    # on the GPU (about 30 s):
    PYTHONPATH=. python3 scripts/plan_timeline_probe.py torchvision:resnet152 48 offload \\
        --amp fp16 > timeline.txt
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("policy")
    ap.add_argument("--optimizer", default="sgd-momentum")
    ap.add_argument("--amp", default="none")
    ap.add_argument("--slack-us", type=float, default=5.0)
    args = ap.parse_args(argv)
    from torch.profiler import ProfilerActivity, profile

    from plan_gpu_busy import plan_step
    step, sync = plan_step(args.model, args.batch, args.policy, "", args.optimizer, args.amp,
                           "cuda")
    for _ in range(4):
        step()
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step(marked=True)
    from idle_gaps import profile_events
    evs = profile_events(prof)
    ranges = [(e["ts"], e["ts"] + e["dur"], e["name"][6:]) for e in evs
              if e.get("ph") == "X" and e.get("cat") == "user_annotation"
              and str(e.get("name", "")).startswith("phase_")]
    gpu = [e for e in evs if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy",
                                                                      "gpu_memset")]
    issue = {e["args"].get("correlation"): e["ts"] for e in evs
             if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"
             and e.get("name") == "cudaMemcpyAsync"}
    compute = collections.Counter(e["tid"] for e in gpu if e["cat"] == "kernel").most_common(1)
    compute = compute[0][0] if compute else None
    print(f"{args.model} b{args.batch} {args.policy} {args.amp}: compute stream {compute}")
    for t0, t1, name in sorted(ranges):
        inside = sorted((e for e in gpu if t0 <= e["ts"] <= t1), key=lambda e: e["ts"])
        kern = [(e["ts"], e["ts"] + e["dur"]) for e in inside if e["tid"] == compute]
        side = collections.defaultdict(list)
        for e in inside:
            if e["tid"] != compute:
                side[e["tid"]].append(e)

        def busy(spans):
            tot, end = 0.0, None
            for a, b in sorted(spans):
                if end is None or a > end:
                    tot, end = tot + b - a, b
                elif b > end:
                    tot, end = tot + b - end, b
            return tot
        copies = [(e["ts"], e["ts"] + e["dur"]) for es in side.values() for e in es]
        ends = sorted(b for _, b in copies)
        gap_copy = gap_host = 0.0
        n_copy = n_host = 0
        import bisect
        for (a0, a1), (b0, _) in zip(kern, kern[1:]):
            g = b0 - a1
            if g <= 0:
                continue
            k = bisect.bisect_right(ends, b0)
            if k and b0 - ends[k - 1] <= args.slack_us and ends[k - 1] > a1:
                gap_copy, n_copy = gap_copy + g, n_copy + 1
            else:
                gap_host, n_host = gap_host + g, n_host + 1
        print(f"  {name}: wall {(t1 - t0) / 1e3:8.2f} ms  compute kernels "
              f"{busy(kern) / 1e3:8.2f} ms  span {(kern[-1][1] - kern[0][0]) / 1e3 if kern else 0:8.2f} ms  "
              f"gaps waiting for a copy {gap_copy / 1e3:7.2f} ms ({n_copy})  other gaps "
              f"{gap_host / 1e3:7.2f} ms ({n_host})  union with copies "
              f"{busy(kern + copies) / 1e3:8.2f} ms")
        for tid, es in sorted(side.items(), key=lambda kv: str(kv[0])):
            lags = [e["ts"] - issue[e["args"].get("correlation")] for e in es
                    if e["args"].get("correlation") in issue]
            print(f"    stream {tid}: {len(es)} events, busy {busy([(e['ts'], e['ts'] + e['dur']) for e in es]) / 1e3:7.2f} ms, "
                  f"first at {(es[0]['ts'] - t0) / 1e3:7.2f} ms, last ends "
                  f"{(max(e['ts'] + e['dur'] for e in es) - t0) / 1e3:7.2f} ms; issue-to-start "
                  f"median {statistics.median(lags) / 1e3 if lags else 0:.3f} ms, max "
                  f"{max(lags) / 1e3 if lags else 0:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
