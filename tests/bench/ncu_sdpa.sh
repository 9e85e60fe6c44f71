#!/usr/bin/env bash
# Nsight Compute on the GPU machine: Emmy's sdpa kernel (given knobs) and PyTorch's FA-2 kernel at
# one shape: instructions, issue rate, pipes and the stall reasons per issued instruction.
# Usage: [OP=sdpa_causal SHAPE=B=16,H=16,S=1024,D=128 TARGET=sm_90a NO_PEER=1] tests/bench/ncu_sdpa.sh [knobs]
# (NO_PEER: Emmy's kernel alone; NAME: a tag in the report's file name; FILE and KERNEL: another
# .emmy file and a regex of the kernel to profile, e.g. FILE=$OUT/bwd.emmy OP=sdpa_saved_auto_bwd
# KERNEL=dk_dv; BWD=1: the peer is FA-2's backward)
# (binaries from gpu-carry/, reports in $OUT; the defaults are sdpa at (1, 8, 4096, 64) on sm_90)
source "$(dirname "$0")/gpu_env.sh"
METRICS="smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_xu.sum,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread,gpu__time_duration.sum"
STALLS=$(for r in barrier branch_resolving dispatch_stall drain imc_miss lg_throttle long_scoreboard math_pipe_throttle \
  membar mio_throttle misc no_instruction not_selected selected short_scoreboard sleeping tex_throttle wait; do
  printf ',smsp__average_warps_issue_stalled_%s_per_issue_active.ratio' $r; done)
KNOBS=${1:-} OP=${OP:-sdpa} SHAPE=${SHAPE:-B=1,H=8,S=4096,D=64} TARGET=${TARGET:-sm_90}
ncu --clock-control none -k "regex:${KERNEL:-k_sdpa}" -c 1 --metrics "$METRICS$STALLS" \
  "$B/emmyc" run "${FILE:-stdlib/nn.emmy}" --op "$OP" --shape "$SHAPE" --target "$TARGET" ${KNOBS:+--knobs "$KNOBS"} ${RUN_ARGS:-} \
  > "$OUT/ncu_emmy${NAME:-}.txt" 2>&1
dims=$(echo "$SHAPE" | sed 's/[A-Z]=//g')
causal=$([[ $OP == *causal* ]] && echo True || echo False)
cat > /tmp/fa2.py <<'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import sys
dims, causal = [int(x) for x in sys.argv[1].split(",")], sys.argv[2] == "True"
q, k, v = (torch.randn(*dims, device="cuda", dtype=torch.float16) for _ in range(3))
bwd = len(sys.argv) > 3
if bwd:
    q, k, v = (t.requires_grad_() for t in (q, k, v))
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    for _ in range(3):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if bwd: o.backward(torch.randn_like(o))
torch.cuda.synchronize()
PY
[ -n "${NO_PEER:-}" ] || ncu --clock-control none -k "regex:$([ -n "${BWD:-}" ] && echo flash_bwd_dq_dk_dv || echo flash)" -c 1 --metrics "$METRICS$STALLS" \
  python3 /tmp/fa2.py "$dims" "$causal" ${BWD:+bwd} > "$OUT/ncu_fa2.txt" 2>&1
for f in "$OUT/ncu_emmy${NAME:-}.txt" $([ -n "${NO_PEER:-}" ] || echo "$OUT/ncu_fa2.txt"); do echo "== $f"; grep -E "^\s+(smsp|sm__|launch|gpu__)" "$f" | awk '$NF+0 > 0.05 || $1 !~ /stalled/' ; done
