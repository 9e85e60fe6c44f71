#!/usr/bin/env bash
# Nsight Compute on the GPU machine: Emmy's sdpa kernel (given knobs) and PyTorch's FA-2 kernel at
# one shape, the sections that say where the time goes (stall reasons, issue, pipes, occupancy).
# Usage: tests/bench/ncu_sdpa.sh [knobs]   (binaries from gpu-carry/, reports in $OUT)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/emmy-out}; mkdir -p "$OUT"
export EMMY_STDLIB=$PWD/stdlib EMMY_CACHE_DIR=$OUT/kernel-cache
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis"
KNOBS=${1:-}
ncu --clock-control none -k regex:k_sdpa -c 1 $SECTIONS \
  gpu-carry/emmyc run stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64 ${KNOBS:+--knobs "$KNOBS"} \
  > "$OUT/ncu_emmy.txt" 2>&1
cat > /tmp/fa2.py <<'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(1, 8, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(3))
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    for _ in range(3): torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
ncu --clock-control none -k regex:flash -c 1 $SECTIONS python3 /tmp/fa2.py > "$OUT/ncu_fa2.txt" 2>&1
tail -5 "$OUT/ncu_emmy.txt" "$OUT/ncu_fa2.txt"
# the kernel's SASS, from the kernel cache's cubins
for f in $(find "$OUT/kernel-cache" -type f); do cuobjdump -sass "$f" 2>/dev/null; done > "$OUT/sass.txt"
wc -l "$OUT/sass.txt"
