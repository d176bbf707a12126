"""Every zoo network under every semantics, precision and policy through ``simulate()``: a
robustness check, not a test. Each run ends ``ok`` (a Result with a positive step time),
``refused`` (one :class:`snsim.errors.SnsimError` line) or ``TRACEBACK`` (anything else: a
bug); a Result whose step time is not positive is ``BAD``. Prints every run that is not ok,
then the counts; exit status 1 when any run is a traceback or bad. Torch-free; about two
and a half minutes on two cores.

    PYTHONPATH=. python scripts/zoo_sweep.py

Run at 8548554 (2026-12-07, 2 min 19 s): 1,235 runs, 1,086 ok, 149 refused (autocast on
Llama and BERT, whose rules the zoo did not have; ``checkpoint`` on AlexNet, VGG-16 and LeNet,
which have no repeated block class), no traceback, none bad. At 23b256b (2026-12-08, Llama and
BERT under autocast; 3 min 37 s beside a CI run): 1,216 ok, 19 refused (the 15 ``checkpoint``
ones; ``chen_sqrt`` on the small ViT in four setups, a PlanError line: the EMBED step's ``cat``
had no producing step), no traceback, none bad. At 2e006e7 (that step fixed): 1,220 ok, the 15
``checkpoint`` refusals, no traceback, none bad.
"""
import collections
import sys

from snsim.api import simulate
from snsim.errors import SnsimError

NETWORKS = ("alexnet", "bert-base", "cifar_resnet32", "densenet121", "gpt2", "inception_v4",
            "lenet", "llama2-7b", "mobilenet_v2", "resnet18", "resnet50", "vgg16", "vit-b16",
            "tinyllama-1.1b", "resnet:1,1,1,1", "gpt:layers=2,width=128,heads=4",
            "llama:layers=2,width=128,heads=4,kv_heads=2",
            "bert:layers=2,width=128,heads=4", "vit:layers=2,width=128,heads=4")
#: (semantics, --amp, --param-dtype)
SETUPS = (("superneurons", None, "fp32"), ("pytorch", None, "fp32"), ("pytorch", "bf16", "fp32"),
          ("pytorch", "fp16", "fp32"), ("pytorch", None, "bf16"))
POLICIES = ("liveness", "recompute", "offload", "superneurons", "vdnn", "chen_sqrt",
            "workspace", "checkpoint", "cpu_offload", "keep_all", "capuchin", "dtr",
            "sac_knapsack")
TOKEN_KINDS = ("gpt", "llama", "bert")


def run(network, framework, amp, param_dtype, policy):
    """``(status, text)`` of one simulation on the H200 preset at batch 2."""
    seq = 64 if any(k in network for k in TOKEN_KINDS) else None
    try:
        r = simulate(network, batch=2, hardware="h200", policy=policy, framework=framework,
                     amp=amp, param_dtype=param_dtype, allocator="pytorch", record=False,
                     input_size=seq)
    except SnsimError as e:
        return "refused", str(e).splitlines()[0]
    except Exception as e:      # a bug: say what, go on
        return "TRACEBACK", f"{type(e).__name__}: {e}"
    if not r.step_time_s > 0:
        return "BAD", f"step_time_s {r.step_time_s!r}"
    return "ok", ""


def main():
    counts = collections.Counter()
    for network in NETWORKS:
        for framework, amp, param_dtype in SETUPS:
            for policy in POLICIES:
                status, text = run(network, framework, amp, param_dtype, policy)
                counts[status] += 1
                if status != "ok":
                    print(f"{status:<9} {network:<44} {framework:<12} amp={amp} "
                          f"param={param_dtype} {policy:<12} {text[:160]}", flush=True)
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts["TRACEBACK"] or counts["BAD"] else 0


if __name__ == "__main__":
    sys.exit(main())
