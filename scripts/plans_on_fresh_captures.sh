#!/usr/bin/env bash
# Plain captures and executed module-boundary plans of networks section 3 never used, on the
# GPU (device tool): for each MODEL:BATCH, `snsim capture` of the plain run, then `snsim
# execute --fast` of each plan, every result under OUT. The engine's plans on those captures
# are then checked against the executed runs on any machine:
#   PYTHONPATH=. python scripts/engine_on_fresh_captures.py OUT
# usage: scripts/plans_on_fresh_captures.sh OUT "POLICY ..." MODEL:BATCH ...
set -u
out=$1; policies=$2; shift 2
mkdir -p "$out"
python -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name())" > "$out/versions.txt"
nvidia-smi --query-gpu=driver_version --format=csv,noheader >> "$out/versions.txt" 2>/dev/null
for mb in "$@"; do
  model=${mb%:*}; batch=${mb##*:}; name=${model##*:}_b$batch
  t0=$(date +%s)
  PYTHONPATH=. python -m snsim capture --model "$model" --batch "$batch" \
      --out "$out/${name}.json.gz" > "$out/${name}.capture.log" 2>&1 || echo "capture failed: $name"
  for p in $policies; do
    PYTHONPATH=. python -m snsim execute --model "$model" --batch "$batch" --policy "$p" --fast \
        --format json > "$out/${name}_$p.json" 2> "$out/${name}_$p.log" || echo "execute failed: $name $p"
  done
  echo "$name done in $(( $(date +%s) - t0 )) s"
done
