#!/usr/bin/env bash
# Mixed-precision / optimizer validation captures on one H200 (issue 10 item 5), <= 5 minutes.
#
#   OUT=dir bash scripts/device_amp.sh
#
# Writes to $OUT (flat, 3 files): amp_traces.tar.gz (folder amp/: one snsim capture per
# configuration of scripts/amp_suite.py CONFIGS), amp_summary.csv (measured peaks and step
# times, one row per configuration, errors included) and amp.log.
# Afterwards, here: tar xzf amp_traces.tar.gz -C traces/h200 &&
#   PYTHONPATH=. python scripts/amp_suite.py compare traces/h200/amp --csv amp_errors.csv
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
{
python3 -c "import torch, torchvision; print(torch.__version__, torch.version.cuda, torchvision.__version__, torch.cuda.get_device_name())"
timeout -k 10 "${AMP_TIMEOUT:-290}" python3 scripts/amp_suite.py capture --out "$OUT" \
    --deadline-s "${AMP_DEADLINE:-250}" "$@"
echo "amp suite exit status $?"
} > "$OUT/amp.log" 2>&1
rc=$?
(cd "$OUT" && tar czf amp_traces.tar.gz amp && rm -rf amp)
tail -c 6000 "$OUT/amp.log"
ls -l "$OUT"
exit $rc
