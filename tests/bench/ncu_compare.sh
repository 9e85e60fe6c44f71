#!/usr/bin/env bash
# Nsight Compute on the GPU machine, Emmy's fold kernel beside cuDNN's at the same shape: the
# sections that say which pipe or stall limits each (SOL, compute workload with every pipe's
# utilization, warp states, scheduler, instruction mix), one report a kernel in $OUT.
# Usage: OP=sdpa SHAPE=4,16,4096,128 KNOBS='...' [NAME=tag] tests/bench/ncu_compare.sh
source "$(dirname "$0")/gpu_env.sh"
OP=${OP:-sdpa} SHAPE=${SHAPE:-4,16,4096,128} NAME=${NAME:-$OP-${SHAPE//,/x}}
IFS=, read -r b h s d <<< "$SHAPE"
ARGS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats
  --section InstructionStats --metrics 'regex:^sm__(inst_executed_pipe|pipe)_.*pct_of_peak_sustained_active$'
  --print-details all --clock-control none -c 1)
ncu "${ARGS[@]}" -k regex:k_sdpa "$B/emmyc" run stdlib/nn.emmy --op "$OP" --shape "B=$b,H=$h,S=$s,D=$d" \
  --target sm_90a ${KNOBS:+--knobs "$KNOBS"} --check none > "$OUT/ncu-emmy-$NAME.txt" 2>&1
cat > /tmp/cudnn.py <<'PY'
import sys, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
b, h, s, d = (int(x) for x in sys.argv[1].split(","))
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=sys.argv[2] == "1")
torch.cuda.synchronize()
PY
ncu "${ARGS[@]}" -k regex:'sdpa|fprop|flash|attn' python3 /tmp/cudnn.py "$SHAPE" "$([[ $OP == *causal* ]] && echo 1 || echo 0)" \
  > "$OUT/ncu-cudnn-$NAME.txt" 2>&1
for f in "$OUT/ncu-emmy-$NAME.txt" "$OUT/ncu-cudnn-$NAME.txt"; do
  echo "== $f"
  grep -E "Duration|Registers Per|Issue Slots Busy|Executed Ipc A|No Eligible|Warp Cycles Per Issued|Compute \(SM\) Th|Memory Th|pct_of_peak_sustained_active" "$f" | awk '$NF+0 > 0.5' | head -60
done
