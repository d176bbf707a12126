#!/usr/bin/env bash
# Issue 10 items 3-4 on a CUDA machine (about 3 minutes on one H200); everything to $OUT (flat,
# 5 files):
#   copy_slowdown.csv  compute kernels alone and under H2D/D2H copies, pinned and pageable, by size
#   copy_bandwidth.csv copy bandwidth by size (1 KiB..1 GiB), pinned and pageable
#   checkpoint_costs.csv  host cost per block of torch.utils.checkpoint / saved_tensors_hooks /
#                      selective checkpointing / the SuperNeurons offloader's hooks (commit under
#                      configs/kernels/probe/ with a new name, then
#                      scripts/merge_checkpoint_costs.py adds it to h200_checkpoint_costs.csv)
#   cpu_bound_new.tar.gz  captures at CPU-bound batches of networks not in traces/h200/cpu_bound/
#                      (held out: they informed nothing); unpack into traces/h200/cpu_bound/
#   h200_copy_slowdown.csv  the grid's summary the engine reads (snsim.engine.contention):
#                      commit as configs/kernels/h200_copy_slowdown.csv
#   steptime.log       everything printed
# Usage: OUT=dir bash scripts/device_steptime.sh
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT/cpu_bound_new"
LOG="$OUT/steptime.log"
{
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.cuda.get_device_name())"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv
lscpu | grep -E "Model name|^CPU\(s\)|MHz" || true
t0=$SECONDS
timeout 45 python3 scripts/steptime_probe.py bw --out "$OUT" 2>&1 | grep -v USDT
timeout 50 python3 scripts/steptime_probe.py copy --out "$OUT" 2>&1 | grep -v USDT
timeout 100 python3 scripts/steptime_probe.py ckpt --out "$OUT" 2>&1 | grep -v USDT
python3 scripts/summarize_copy_slowdown.py "$OUT/copy_slowdown.csv" "$OUT/h200_copy_slowdown.csv" || echo "copy summary failed"
echo "probes: $((SECONDS - t0)) s"
# held-out CPU-bound captures (small batches; none of these networks/batches is in
# traces/h200/cpu_bound/; none was a calibration network of the host model when captured)
for mb in torchvision:shufflenet_v2_x1_0:64 torchvision:resnet34:32 torchvision:convnext_tiny:16 \
          torchvision:densenet169:32 torchvision:vgg11:16 torchvision:vit_b_16:8; do
    model=${mb%:*}; batch=${mb##*:}; name=${model#torchvision:}
    [ $((SECONDS - t0)) -gt 200 ] && { echo "skip $name b$batch: time"; continue; }
    timeout 40 python3 -m snsim capture --model "$model" --batch "$batch" \
        --out "$OUT/cpu_bound_new/${name}_b${batch}.json.gz" 2>&1 | grep -E "step_time_s|peak_alloc|rror"
done
echo "total: $((SECONDS - t0)) s"
} > "$LOG" 2>&1
(cd "$OUT" && tar czf cpu_bound_new.tar.gz cpu_bound_new && rm -rf cpu_bound_new)
tail -c 6000 "$LOG"
ls -l "$OUT"
