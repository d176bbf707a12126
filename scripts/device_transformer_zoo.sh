#!/usr/bin/env bash
# Real H200 captures of the transformer zoo's torch twins (issue 13 item 1): what
# tests/test_zoo_transformers.py::test_zoo_twin_captures checks the zoo's PyTorch-semantics
# peaks against. Everything goes to $OUT, flat, one trace per configuration (5 files, ~1 min).
#
#   OUT=dir bash scripts/device_transformer_zoo.sh          # on the GPU machine, repo root
#   DRY=1 OUT=dir bash scripts/device_transformer_zoo.sh    # CPU dry run, tiny sizes
#
# Commit the outputs as traces/h200/zoo_*.json.gz (the names are kept).
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
# name | model spec | batch | sequence (0: an image model) | optimizer
RUNS=(
  "zoo_gpt2_b8_s1024_adamw|zoo:gpt2|8|1024|adamw"
  "zoo_gpt2eager_b8_s1024_sgdm|zoo:gpt:attention=eager|8|1024|sgd-momentum"
  "zoo_gpt2eager_b16_s512_adamw|zoo:gpt:attention=eager|16|512|adamw"
  "zoo_gpt2medium_b4_s1024_adamw|zoo:gpt2-medium|4|1024|adamw"
  "zoo_vitb16_b64_adamw|zoo:vit-b16|64|0|adamw"
)
if [ -n "${DRY:-}" ]; then
  RUNS=(
    "zoo_gpt2_b8_s1024_adamw|zoo:gpt:layers=1,width=64,heads=2,vocab=100|2|32|adamw"
    "zoo_gpt2eager_b8_s1024_sgdm|zoo:gpt:layers=1,width=64,heads=2,vocab=100,attention=eager|2|32|sgd-momentum"
    "zoo_vitb16_b64_adamw|zoo:vit:layers=1,width=64,heads=2,image=32,patch=8|2|0|adamw"
  )
fi
rc=0
for run in "${RUNS[@]}"; do
  IFS='|' read -r name spec batch seq opt <<< "$run"
  "$PY" - "$name" "$spec" "$batch" "$seq" "$opt" "$OUT" <<'PYEOF' || rc=1
import os, sys, time
from snsim.torchsim.capture import capture
from snsim.torchsim.capture import write_capture
name, spec, batch, seq, opt, out = sys.argv[1:]
t0 = time.time()
kw = {"input_shape": (int(seq),)} if int(seq) else {}
device = "cpu" if os.environ.get("DRY") else "cuda"
doc = capture(spec, int(batch), optimizer=opt, device=device, **kw)
write_capture(doc, os.path.join(out, name + ".json.gz"))
m = doc["measured"]
print(f"{name}: {spec} b{batch} seq {seq} {opt}: allocated {m['peak_allocated_bytes']:,} B, "
      f"reserved {m['peak_reserved_bytes']:,} B ({time.time() - t0:.0f} s)")
PYEOF
done
ls "$OUT"
exit $rc
