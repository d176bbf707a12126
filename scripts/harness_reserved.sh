#!/usr/bin/env bash
# The same plan's reserved peak in the processes different harnesses start (issue 8).
#
# The lazy-loading window model (docs/DESIGN.md) predicts MViT-V2-S b8 bf16 AdamW checkpoint at
# 5,456,789,504 B reserved; the plan suite's fresh process (held-out set 11) measured
# 4,827,643,904 B, a host_va_probe process (session 36) 5,458,886,656 B. Each configuration is
# measured here, each time in a process of its own:
#   script   a plain `python3` process measuring at once (the suite's _execute_here, which
#            calls measure()), as a user's training script starts, twice
#   execute  `snsim execute --fast` (snsim predict's plan on the CPU first, then measure() in
#            the same process)
#   suite    `python -m snsim.torchsim.suite --only plans --match ...` (measure() in a child the
#            suite spawns through multiprocessing, as every held-out set since 2026-11-30)
# and prints one line per measurement: harness, run, allocated and reserved peaks (bytes).
#
#   OUT=dir bash scripts/harness_reserved.sh [NAME ...]     (one H200, about 2 minutes a run)
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:-$PWD}
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
# name | suite set | suite run name (prefix) | snsim execute arguments
RUNS=(
"mvit_v2_s_b8_ckpt|heldout11|mvit_v2_s_b8_adamw_bf16_checkpoint|--model torchvision:mvit_v2_s --batch 8 --optimizer adamw --amp bf16 --policy checkpoint --option modules=MultiscaleBlock"
"efficientnet_b2_b48_ckpt|heldout20|efficientnet_b2_b48_adamw_bf16_checkpoint|--model torchvision:efficientnet_b2 --batch 48 --optimizer adamw --amp bf16 --policy checkpoint --option modules=MBConv"
"swin_v2_t_b24_superneurons|heldout20|swin_v2_t_b24_bf16_superneurons|--model torchvision:swin_v2_t --batch 24 --amp bf16 --policy superneurons"
"gpt2_b2_s1024_ckpt|heldout31|gpt2_b2_checkpoint|--model hf:gpt2 --batch 2 --seq 1024 --policy checkpoint --option modules=GPT2Block"
"regnet_y_3_2gf_b64_superneurons|heldout3|regnet_y_3_2gf_b64_adamw_bf16_superneurons|--model torchvision:regnet_y_3_2gf --batch 64 --optimizer adamw --amp bf16 --policy superneurons"
)
for entry in "${RUNS[@]}"; do
    IFS='|' read -r name set suite_name args <<< "$entry"
    if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
    for i in 1 2; do
        python3 "$HERE/harness_reserved.py" script "$name" "$set" "$suite_name"
    done
    # shellcheck disable=SC2086
    python3 -m snsim.cli execute --fast --format json --out "$OUT/x.json.gz" $args \
        > "$OUT/x.txt" 2> "$OUT/x.err"
    python3 "$HERE/harness_reserved.py" execute "$name" "$OUT/x.txt" || tail -3 "$OUT/x.err"
    python3 -m snsim.torchsim.suite --only plans --set "$set" --match "$suite_name" \
        --out "$OUT/suite_$name" > "$OUT/suite.log" 2>&1
    python3 "$HERE/harness_reserved.py" suite "$name" "$OUT/suite_$name/summary.csv" \
        || tail -3 "$OUT/suite.log"
    rm -rf "$OUT/suite_$name" "$OUT"/x.* "$OUT/suite.log"
done
