#!/usr/bin/env bash
# Run the validation suite on a CUDA machine: python -m snsim.torchsim.suite, traces to $OUT.
# Usage: OUT=dir bash scripts/device_suite.sh [suite args, e.g. --only capture]
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT/traces"
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.cuda.get_device_name())"
timeout "${SUITE_TIMEOUT:-540}" python3 -m snsim.torchsim.suite --out "$OUT/traces" "$@"
rc=$?
(cd "$OUT" && tar czf traces.tar.gz traces && rm -rf traces)
exit $rc
