"""Held-out set 35's ZeRO reserved peaks without the executor's discovery forward.

Set 35 ran ``ZeroOffload`` with a discovery forward (every parameter resident, the whole batch,
autograd on) before its first step, whose cached segments stayed reserved through the measured
steps; the executor now runs it on two samples and empties the cache after it. This replays
each ZeRO allocator history (``traces/h100/plans_history/*zero_offload.json.gz``) through the
engine's PyTorch allocator (``replay_history``: "driver" placement, no lazy-loading window: the
ZeRO step marks no iterations) as recorded, and again with the cache emptied
where the discovery's memory has been freed (live bytes back within 10 % of the discovery's
rise), against the before-run prediction: an estimate of the reserved error without that
forward, until the set runs again.

    PYTHONPATH=. python scripts/zero_history_replay.py
"""
import csv
import gzip
import json

from snsim.engine.allocators import replay_history


#: the histories recorded with the full-batch discovery forward (the same folder's later ones,
#: VGG-16's, ran the two-sample look and its cleanup)
OLD_EXECUTOR = ("Qwen2-0.5B_b2_zero_offload", "gpt2-medium_b4_adamw_zero_offload",
                "opt-350m_b4_adam_superneurons-zero_offload", "vit_b_16_b32_adamw_zero_offload")


def discovery_end(events):
    """The event after which the discovery forward's memory is freed: live bytes back within
    10 % of their early rise (the largest in the first quarter of the history)."""
    live, cur, trace = {}, 0, []
    for action, addr, size, _ in events:
        if action == "alloc":
            live[addr] = size
            cur += size
        elif action == "free_completed" and addr in live:
            cur -= live.pop(addr)
        trace.append(cur)
    top = max(range(len(trace) // 4), key=trace.__getitem__)
    return next(i for i in range(top, len(trace))
                if trace[i] < trace[0] + 0.1 * (trace[top] - trace[0]))


def main():
    pred = {r["run"]: r for r in csv.DictReader(
        open("traces/h200/plans_heldout35/predicted_before_run.csv"))}
    print(f"{'run':46s} {'measured':>12s} {'replayed':>12s} {'w/o disc.':>12s} "
          f"{'predicted':>12s} {'err %':>7s} {'err w/o %':>9s}")
    for name in OLD_EXECUTOR:
        path = f"traces/h100/plans_history/{name}.json.gz"
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        name = doc["config"]["name"]
        ev = doc["events"]
        meas = doc["measured"]["peak_reserved_bytes"]
        full = replay_history(doc, 0)
        without = replay_history(doc, 0, empty_cache_after=discovery_end(ev))
        p = int(pred[name]["peak_reserved_bytes"])
        print(f"{name:46s} {meas:12d} {full:12d} {without:12d} {p:12d} "
              f"{100 * (p / meas - 1):+7.2f} {100 * (p / without - 1):+9.2f}")


if __name__ == "__main__":
    main()
