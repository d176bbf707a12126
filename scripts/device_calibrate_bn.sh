#!/usr/bin/env bash
# Re-measure batch norm (forward and backward over channels x H*W x batch, fp32 and bf16,
# timing the aten ops CUDA dispatches F.batch_norm to, the backward called directly) and the
# conv layers of torchvision CNNs (TF32, batches 32-256) on a CUDA machine, and merge the rows
# into the committed table (BN rows replaced, conv layer rows added). Writes $OUT/h200.csv.gz
# (the merged table) and $OUT/calibrate_bn.log. ONLY=bn re-measures batch norm alone.
# Usage (repo root, H200): OUT=dir bash scripts/device_calibrate_bn.sh; then copy
# $OUT/h200.csv.gz to configs/kernels/h200.csv.gz. At most 3 minutes (CAL_SECONDS=150).
# ONLY=grouped,bnfp16,matmul: grouped/depthwise convs over a grid of group counts and widths,
# fp16 batch norm (cuDNN's), every matmul row again with Linear token counts up to 2^18.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
BASE=${BASE:-configs/kernels/h200.csv.gz}
mkdir -p "$OUT"
LOG="$OUT/calibrate_bn.log"
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" 2>&1 | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv >> "$LOG" 2>&1
timeout "${CAL_TIMEOUT:-175}" python3 -m snsim calibrate --only "${ONLY:-bn,conv}" \
    --merge "$BASE" --out "$OUT/h200.csv.gz" --max-seconds "${CAL_SECONDS:-150}" "$@" 2>&1 \
    | tee -a "$LOG"
rc=$?
python3 - "$OUT/h200.csv.gz" <<'PY' 2>&1 | tee -a "$LOG"
import sys
from snsim.kernel_table import KernelTable
from snsim.torchsim.calibrate import read_table
rows, meta = read_table(sys.argv[1])
print({k: v for k, v in meta.items() if k.startswith("remeasured")})
bn = [r for r in rows if r["family"].startswith("native_batch_norm")]
print(len(rows), "rows;", len(bn), "BN rows; impl:", sorted({r["shape"].split()[-1] for r in bn}))
for r in bn:
    if r["cls"] in ("c64hw12544", "c256hw3136", "c2048hw49") and r["dtype"] == "float32":
        print(r["family"], r["shape"], "bytes", r["bytes"], "time_s", r["time_s"],
              "GB/s", round(float(r["bytes"]) / float(r["time_s"]) / 1e9))
print(sum(r["dtype"] == "float16" for r in bn), "fp16 BN rows;",
      sum(r["shape"].startswith("grouped ") for r in rows), "grouped/depthwise conv rows;",
      sum(r["family"] in ("mm", "addmm") and max(int(v[1:]) for v in r["shape"].split()[1:3]) > 32768
          for r in rows), "matmul rows with more than 32768 tokens")
net = [r for r in rows if r["shape"].startswith("net ")]
print(len(net), "conv layer rows; first:", [(r["family"], r["shape"], r["time_s"]) for r in net[:2]])
print("families:", len(KernelTable.read(sys.argv[1]).families()))
PY
ls -l "$OUT" | tee -a "$LOG"
exit $rc
