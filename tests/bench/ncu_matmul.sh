#!/usr/bin/env bash
# Nsight Compute on the GPU machine: Emmy's matmul kernel under each given knob list at one shape
# (instructions, issue rate, tensor pipe, stall reasons per issued instruction).
# Usage: [SHAPE=M=4096,N=4096,K=4096 TARGET=sm_90] tests/bench/ncu_matmul.sh KNOBS...
# (binaries from gpu-carry/, reports in $OUT)
source "$(dirname "$0")/gpu_env.sh"
METRICS="smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,sm__cycles_elapsed.avg.per_second"
STALLS=$(for r in barrier branch_resolving dispatch_stall drain imc_miss lg_throttle long_scoreboard math_pipe_throttle \
  membar mio_throttle misc no_instruction not_selected selected short_scoreboard sleeping tex_throttle wait; do
  printf ',smsp__average_warps_issue_stalled_%s_per_issue_active.ratio' $r; done)
SHAPE=${SHAPE:-M=4096,N=4096,K=4096} TARGET=${TARGET:-sm_90}
i=0
for knobs in "$@"; do
  i=$((i + 1))
  ncu --clock-control none -k regex:k_matmul -c 1 --metrics "$METRICS$STALLS" \
    "$B/emmyc" run stdlib/linalg.emmy --op matmul --shape "$SHAPE" --target "$TARGET" --knobs "$knobs" --check none \
    > "$OUT/ncu_matmul_$i.txt" 2>&1
  echo "== $knobs"
  grep -E "^\s+(smsp|sm__|launch|gpu__|lts|dram)" "$OUT/ncu_matmul_$i.txt" | awk '$NF+0 > 0.05 || $1 !~ /stalled/' | sed 's/smsp__average_warps_issue_stalled_//;s/_per_issue_active.ratio//'
done
