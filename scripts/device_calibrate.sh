#!/usr/bin/env bash
# snsim calibrate on a CUDA machine: the kernel table (h200.csv.gz) and its log to $OUT (flat).
# Usage: OUT=dir bash scripts/device_calibrate.sh [calibrate args]; copy $OUT/h200.csv.gz to
# configs/kernels/h200.csv.gz. The table is rewritten after every op family, so a run cut short
# still leaves the families it finished.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.cuda.get_device_name())" 2>&1 | tee "$OUT/calibrate.log"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv >> "$OUT/calibrate.log" 2>&1
timeout "${CAL_TIMEOUT:-420}" python3 -m snsim calibrate --out "$OUT/h200.csv.gz" \
    --max-seconds "${CAL_SECONDS:-300}" "$@" 2>&1 | tee -a "$OUT/calibrate.log"
rc=$?
python3 -c "
from snsim.kernel_table import KernelTable
t = KernelTable.read('$OUT/h200.csv.gz')
print('families:', ' '.join(t.families()))
print('host issue per small call (us):', {k: round(v * 1e6, 1) for k, v in sorted(t.aten_host.items())[:8]}, '...')
print('copies:', {k: round(v['bytes_per_s'] / 1e9, 1) for k, v in t.copy_model().items()}, 'GB/s')
" 2>&1 | tee -a "$OUT/calibrate.log"
ls -l "$OUT" | tee -a "$OUT/calibrate.log"
exit $rc
