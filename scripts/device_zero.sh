#!/usr/bin/env bash
# Hugging Face captures and ZeRO-Offload executions on one H200 (issue 13 items 2-3; SPEC §16).
# Usage (repo root, H200, no network): OUT=dir bash scripts/device_zero.sh   (about 3-4 minutes)
# Writes into $OUT (5 files):
#   gpt2_b4_s1024.json.gz        snsim capture --model hf:gpt2 --batch 4 --seq 1024 (sgd-momentum)
#   gpt2_b4_s512_adam.json.gz    snsim capture --model hf:gpt2 --batch 4 --seq 512 --optimizer adam
#   gpt_b8_adam.json.gz          snsim capture --model snsim:gpt --batch 8 --optimizer adam
#   zero_runs.json               every snsim execute --policy zero_offload / superneurons+zero_offload
#                                run ({"runs": [...], "host": host copy and CPU Adam/SGD figures})
#   zero.log                     versions, GPU, CPU, every command's output
# Commit the captures to traces/h200/ and zero_runs.json to traces/h200/zero/; then compare with
#   PYTHONPATH=. python3 scripts/compare_zero.py traces/h200/zero/zero_runs.json
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=. HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
OUT=${OUT:-/tmp/snsim_out}
RUNS=/tmp/snsim_zero_runs
mkdir -p "$OUT" "$RUNS"
LOG="$OUT/zero.log"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" 2>&1 | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv >> "$LOG" 2>&1
(lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket|MHz|L3'; free -g | head -2) >> "$LOG" 2>&1

run() {   # run TIMEOUT_S CMD...: log the command and its output, never stop the script
    local t=$1; shift
    echo "+ $*" | tee -a "$LOG"
    timeout "$t" "$@" 2>&1 | grep -v "loss_type=None" | tee -a "$LOG"
    echo "rc=$?" | tee -a "$LOG"
}

# captures: the hf:gpt2 peak check (predict within 2%) and the plain programs the engine's
# zero_offload policy is simulated on (resnet50 b128 is traces/h200/resnet50_b128.json.gz)
run 90 python3 -m snsim capture --model hf:gpt2 --batch 4 --seq 1024 --out "$OUT/gpt2_b4_s1024.json.gz"
run 60 python3 -m snsim capture --model hf:gpt2 --batch 4 --seq 512 --optimizer adam --out "$OUT/gpt2_b4_s512_adam.json.gz"
run 60 python3 -m snsim capture --model snsim:gpt --batch 8 --optimizer adam --out "$OUT/gpt_b8_adam.json.gz"

# the ZeRO-style step for real: 2 warm-up + 5 measured iterations each
for pol in zero_offload superneurons+zero_offload; do
    slug=${pol/+/-}
    run 45 python3 -m snsim execute --model torchvision:resnet50 --batch 128 --policy "$pol" \
        --plain-iters 5 --out "$RUNS/resnet50_b128_$slug.json"
    run 45 python3 -m snsim execute --model hf:gpt2 --batch 4 --seq 512 --optimizer adam \
        --policy "$pol" --plain-iters 5 --out "$RUNS/gpt2_b4_s512_adam_$slug.json"
    run 45 python3 -m snsim execute --model snsim:gpt --batch 8 --optimizer adam --policy "$pol" \
        --plain-iters 5 --out "$RUNS/gpt_b8_adam_$slug.json"
done

# host figures of this machine: pinned copy bandwidth both ways, and CPU optimizer throughput
timeout 60 python3 - "$RUNS" "$OUT/zero_runs.json" <<'PY' 2>&1 | tee -a "$LOG"
import glob, json, os, sys, time
import torch
runs = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    with open(path) as f:
        d = json.load(f)
    runs.append({"file": os.path.basename(path), **d["measured"],
                 "provenance": d["provenance"]})
def write(out):
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, default=str)
host = {"cpu_threads": torch.get_num_threads()}
write({"runs": runs, "host": host})      # the runs, even if a host figure fails below
for r in runs:
    print(r["file"], "peak_alloc", r.get("peak_allocated_bytes"), "step_s",
          round(r["step_time_s"], 4), "gpu_s", round(r["gpu_s"], 4), "cpu_s",
          round(r["cpu_step_s"], 4))
n = 256 << 20                     # 1 GiB of fp32
h = torch.empty(n, pin_memory=True)
g = torch.empty(n, device="cuda")
for name, (dst, src) in {"h2d": (g, h), "d2h": (h, g)}.items():
    dst.copy_(src, non_blocking=True); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    host[f"{name}_pinned_bytes_per_s"] = 3 * 4 * n / (time.perf_counter() - t0)
del g
for opt in ("adam", "sgd-momentum"):
    p = torch.zeros(64 << 20, requires_grad=True)      # 64 Mi fp32 parameters
    p.grad = torch.ones_like(p)
    o = (torch.optim.Adam([p], lr=1e-3) if opt == "adam"
         else torch.optim.SGD([p], lr=0.01, momentum=0.9, weight_decay=1e-4))
    o.step()
    t0 = time.perf_counter()
    for _ in range(3):
        o.step()
    host[f"cpu_{opt}_params_per_s"] = 3 * p.numel() / (time.perf_counter() - t0)
write({"runs": runs, "host": host})
print(host)
PY
ls -l "$OUT" | tee -a "$LOG"
