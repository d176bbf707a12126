#!/usr/bin/env bash
# Run a validation suite on a CUDA machine; everything it writes goes to $OUT (flat).
#
#   OUT=dir bash scripts/device_suite.sh plans [--match resnet50,gpt] [--iters 5]
#       issue 8: every network under plain / checkpoint / superneurons / cpu_offload, each
#       predicted on the CPU before it runs, then executed: $OUT/bundles.tar (one PLAN.json.gz
#       per plan kind: tar xf it into the set's folder), $OUT/summary.csv, $OUT/suite.log, the
#       machine ($OUT/machine.txt) and its GPU clocks while it ran ($OUT/gpu_clocks.csv)
#   OUT=dir bash scripts/device_suite.sh [--only capture|execute]
#       the captures of docs/VALIDATION.md: $OUT/traces.tar.gz
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.cuda.get_device_name())"
# the machine a run's step times came from: the CPU that issues the kernels (host-bound steps)
# and the GPU's clocks, power and throttle reasons every 0.5 s while the suite runs (GPU-bound
# steps move with the SM clock)
{ lscpu | grep -E "Model name|^CPU\(s\)|MHz"; nvidia-smi -q -d PERFORMANCE,CLOCK,POWER; } \
    > "$OUT/machine.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,\
clocks_throttle_reasons.active --format=csv -lms 500 > "$OUT/gpu_clocks.csv" 2>&1 &
MONITOR=$!
trap 'kill $MONITOR 2>/dev/null' EXIT
if [ "${1:-}" = plans ]; then
    shift
    # the suite skips runs that would end after --deadline-s; the timeout is the backstop.
    # A log file, not a pipe: nothing (a prediction worker) can keep the command waiting.
    timeout -k 10 "${SUITE_TIMEOUT:-530}" python3 -m snsim.torchsim.suite --only plans \
        --out "$OUT" --deadline-s "${SUITE_DEADLINE:-470}" "$@" > "$OUT/suite.log" 2>&1
    rc=$?
    # at most 8 files come back from a device call: the plan bundles (one per plan kind, up to
    # six) travel as one tar beside summary.csv, suite.log, machine.txt and gpu_clocks.csv
    (cd "$OUT" && ls *.json.gz >/dev/null 2>&1 && tar cf bundles.tar *.json.gz && rm -f *.json.gz)
    tail -c 11000 "$OUT/suite.log"
    echo "suite exit status $rc; files: $(cd "$OUT" && ls | tr '\n' ' ')"
    exit $rc
fi
mkdir -p "$OUT/traces"
timeout "${SUITE_TIMEOUT:-540}" python3 -m snsim.torchsim.suite --out "$OUT/traces" "$@"
rc=$?
(cd "$OUT" && tar czf traces.tar.gz traces && rm -rf traces)
exit $rc
