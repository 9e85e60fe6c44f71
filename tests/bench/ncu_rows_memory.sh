#!/usr/bin/env bash
# Nsight Compute on the GPU machine: the memory traffic of the row ops' default kernels (the
# auto-schedule on sm_90a since 2026-12-07; before, the hand-written sm_90 blocks) at one shape, each
# kernel of the op: DRAM bytes, L2 bytes and throughput, L1 hit rate, instructions, global load
# requests, shared-memory wavefronts, long-scoreboard and barrier stalls. For the long rows, run it at
# C = 50256 and 50257: aligned rows against the peeled path (RESULTS.md, 2026-12-07).
# Usage: tests/bench/ncu_rows_memory.sh SHAPE [DTYPE] (binaries from gpu-carry/; raw CSVs in /tmp/ncu-mem, the summary on stdout)
source "$(dirname "$0")/gpu_env.sh"
shape=${1:-N=8192,C=50257} dtype=${2:-f16}
mkdir -p /tmp/ncu-mem
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio
for op in softmax rmsnorm layernorm; do
  EMMY_CACHE_DIR=/tmp/emmy-kc-mem-$op ncu --clock-control none -k "regex:k_${op}_" -c 3 --metrics "$m" --csv \
    "$B/emmyc" run stdlib/nn.emmy --op "$op" --shape "$shape" --target sm_90a --dtype "$dtype" --check none \
    > "/tmp/ncu-mem/$op.csv" 2> "/tmp/ncu-mem/$op.err"
  echo "== $op $shape $dtype"
  grep -E '"(gpu__time|dram__bytes|lts__t_bytes|lts__t_sectors|lts__throughput|dram__throughput|l1tex__t_sector_hit|l1tex__throughput|sm__throughput|smsp__inst|l1tex__t_requests|l1tex__data_pipe|smsp__average)' "/tmp/ncu-mem/$op.csv" \
    | awk -F'","' '{printf "  %-14s %-60s %s %s\n", substr($5,1,14), $(NF-2), $(NF-1), $NF}' | tr -d '"'
done
