#!/usr/bin/env bash
# The CPU optimizer step of executed ZeRO runs, with the minor page faults it takes
# (measure_zero's cpu_step_faults, ru_minflt), each run in a fresh process; one JSON line per run
# to $OUT/zero_faults.jsonl. Held-out set 35 (traces/h100/plans_heldout35) ran these steps
# 1.3-3.4x faster than the host-step model, which the isolated optimizer probe
# (scripts/zero_host_rates.py) matches: are the temporaries' pages faulted in the executor's
# process?      OUT=dir bash scripts/zero_faults_probe.sh   (a CUDA machine, about 1 minute)
export PYTHONPATH=. OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
for c in "torchvision:vit_b_16 32 adamw" "torchvision:convnext_tiny 48 adamw" \
         "torchvision:vgg16 32 nesterov" "torchvision:resnet101 64 sgd-momentum" \
         "hf:gpt2-medium 4 adamw 512"; do
    set -- $c
    python3 -c "
import json
from snsim.torchsim.zero import measure_zero
m = measure_zero('$1', $2, 'zero_offload', optimizer='$3',
                 input_shape=tuple(int(v) for v in '${4:-}'.split()) or None)
print(json.dumps({'model': '$1', 'batch': $2, 'optimizer': '$3', **{k: m[k] for k in (
    'cpu_step_s', 'cpu_step_faults', 'gpu_s', 'step_time_s', 'peak_allocated_bytes',
    'peak_reserved_bytes')}}))
" 2>&1 | grep -v loss_type | tail -1 | tee -a "$OUT/zero_faults.jsonl"
done
