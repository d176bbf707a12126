#!/usr/bin/env bash
# The launching thread's pace (snsim gauge's add issue cost, us) pinned to each CPU core in
# turn, then unpinned four times, and the machine's topology (GPU-CPU affinity, NUMA nodes):
# whether the process-to-process spread of the host pace follows the core a process runs on.
#   OUT=dir bash scripts/gauge_by_core.sh      # on the GPU machine, about 1-2 minutes
export PYTHONPATH=.
OUT=${OUT:-/tmp/snsim_out}
mkdir -p "$OUT"
{ nvidia-smi topo -m; lscpu; numactl -H; cat /proc/cmdline; } > "$OUT/topo.txt" 2>&1
for c in $(seq 0 $(( $(nproc) - 1 ))); do
  taskset -c "$c" python3 -c "from snsim.torchsim.hostpace import gauge_add_s; print('core $c', round(gauge_add_s() * 1e6, 3))"
done > "$OUT/gauge_by_core.txt" 2>&1
for i in 1 2 3 4; do
  python3 -c "from snsim.torchsim.hostpace import gauge_add_s; print('unpinned', round(gauge_add_s() * 1e6, 3))"
done >> "$OUT/gauge_by_core.txt" 2>&1
cat "$OUT/gauge_by_core.txt"
