#!/usr/bin/env bash
# A plan's measured step (snsim.torchsim.execute.measure, as `snsim execute --fast` and the plan
# suite time it: 2 warm-up, 7 timed iterations) in fresh processes pinned to the H200 VM's fast
# or slow vCPUs (scripts/gauge_by_core.sh: on 2026-12-04 the gauge read 6.2-7.0 us on cores
# 2,3,7,8,11,13,15 and 8.9-9.9 us on the rest) and unpinned: whether a step's process-to-process
# spread follows the cores its threads run on. One line per run: label, cpus, step, gauge.
#   OUT=dir bash scripts/step_by_core.sh       # on the GPU machine, about 3 minutes
export PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
FAST=${FAST:-2,3,7,8,11,13,15}
SLOW=${SLOW:-0,1,4,5,6,9,10,12,14}
run() {   # label cpus model batch amp optimizer policy [input_shape]
  local pin=(); [ "$2" != all ] && pin=(taskset -c "$2")
  "${pin[@]}" python3 - "$@" <<'PY' 2>&1 | grep -v "^\[transformers"
import sys
from snsim.torchsim.amp import TrainSetup
from snsim.torchsim.execute import measure
from snsim.torchsim.models import resolve_model
from snsim.torchsim.plans import PlanSpec
label, cpus, model, batch, amp, opt, policy = sys.argv[1:8]
shape = tuple(int(v) for v in sys.argv[8].split(",")) if len(sys.argv) > 8 else None
m = measure(resolve_model(model, input_shape=shape), int(batch), PlanSpec.parse(policy, []),
            optimizer=TrainSetup.parse(opt, "foreach", None if amp == "none" else amp),
            warmup_iters=2, iters=7)
print(label, cpus, policy, "step_ms %.2f" % (1e3 * m["step_time_s"]),
      "steps_ms", [round(1e3 * t, 1) for t in m["step_times_s"]],
      "gauge_us %.2f" % (1e6 * m["host_gauge_add_s_after"]), flush=True)
PY
}
{
for cpus in "$FAST" "$SLOW"; do
  run dn121_b64_fp16 "$cpus" torchvision:densenet121 64 fp16 sgd-momentum plain
  run dn121_b64_fp16 "$cpus" torchvision:densenet121 64 fp16 sgd-momentum offload
  run rn152_b48_fp16 "$cpus" torchvision:resnet152 48 fp16 sgd-momentum offload
  run vitb16_b64_bf16 "$cpus" torchvision:vit_b_16 64 bf16 sgd-momentum recompute
  run gpt2_b8_bf16_adamw "$cpus" hf:gpt2 8 bf16 adamw recompute 512
  run smollm2_b8_bf16 "$cpus" hf:HuggingFaceTB/SmolLM2-135M 8 bf16 sgd-momentum superneurons 512
done
for i in 1 2 3; do
  run dn121_b64_fp16 all torchvision:densenet121 64 fp16 sgd-momentum offload
done
} > "$OUT/step_by_core.txt" 2>&1
cat "$OUT/step_by_core.txt"
