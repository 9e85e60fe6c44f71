#!/usr/bin/env bash
# Nsight Compute on the GPU machine: DRAM throughput, occupancy and stall reasons of the split-KV
# decode partial kernel (decode-tc-splitkv at B=8, H=32, S=1, T=16384, D=128).
source "$(dirname "$0")/gpu_env.sh"
M="dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum.per_second,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,launch__occupancy_limit_shared_mem,launch__registers_per_thread"
timeout 120 ncu --clock-control none -k regex:k_sdpa_partial -c 1 --metrics "$M" "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=8,H=32,S=1,T=16384,D=128,E=128 --schedule decode-tc-splitkv --check none 2>&1 | grep -E "^\s+(dram|gpu__|sm__|smsp|l1tex|launch)" 
