#!/usr/bin/env bash
# Nsight Compute on the GPU machine: a row op's Emmy kernel beside Inductor's at the same shape
# (speed of light, memory workload, occupancy, launch, warp states), key lines of each in
# $OUT/ncu-rows.txt, whole reports in $OUT/ncu-*.txt.
# Usage: tests/bench/ncu_rows.sh 'layernorm 8192,50257 PLACE=cut,COOP=t512/v8/c13' 'softmax 4097,1000 ...'
source "$(dirname "$0")/gpu_env.sh"
ARGS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
  --section WarpStateStats --print-details all --clock-control none -c 1)
cat > /tmp/inductor_row.py <<'PY'
import sys, torch
import torch.nn.functional as F
op, (n, c) = sys.argv[1], (int(v) for v in sys.argv[2].split(","))
x = torch.randn(n, c, device="cuda", dtype=torch.float16)
w, b = torch.randn(c, device="cuda", dtype=torch.float16), torch.randn(c, device="cuda", dtype=torch.float16)
fns = {"softmax": lambda: torch.softmax(x, -1), "layernorm": lambda: F.layer_norm(x, (c,), w, b),
       "rmsnorm": lambda: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).half()}
f = torch.compile(fns[op])
f(); torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart(); f(); torch.cuda.synchronize(); torch.cuda.cudart().cudaProfilerStop()
PY
for spec in "$@"; do
  read -r op shape knobs <<< "$spec"
  IFS=, read -r n c <<< "$shape"
  tag="$op-${n}x$c"
  ncu "${ARGS[@]}" -k regex:k_ "$B/emmyc" run stdlib/nn.emmy --op "$op" --shape "N=$n,C=$c" --target sm_90a \
    --knobs "$knobs" --check none > "$OUT/ncu-emmy-$tag.txt" 2>&1
  ncu "${ARGS[@]}" --profile-from-start off -k regex:triton python3 /tmp/inductor_row.py "$op" "$shape" \
    > "$OUT/ncu-inductor-$tag.txt" 2>&1
  for f in "$OUT/ncu-emmy-$tag.txt" "$OUT/ncu-inductor-$tag.txt"; do
    echo "== $(basename "$f") ($knobs)"
    grep -E "^  [a-z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Dynamic Shared|Block Limit|Warp Cycles Per Issued|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" "$f" | head -40
  done
done > "$OUT/ncu-rows.txt" 2>&1
cat "$OUT/ncu-rows.txt"
