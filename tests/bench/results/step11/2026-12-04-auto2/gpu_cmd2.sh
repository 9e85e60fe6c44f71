#!/usr/bin/env bash
# Run 3: after run 2, with the cost model's CTA overhead at 4 us, producers counted only for
# wgmma, causal folds' busiest SM and no persistent causal folds: sdpa and sdpa_causal's sm_90a
# auto-schedules beside their default blocks and the peers.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 300 python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/auto3 \
  --only '^sdpa B' --blocks '\[(default|auto), sm_90a\]' \
  --sdpa 1,8,4096,64 --sdpa 4,16,4096,64 --sdpa 4,16,4096,128 --sdpa 16,16,1024,128 --sdpa 2,16,2048,256 2>&1 \
  | grep -E "^\[" | grep -E "emmy (sdpa|sdpa_causal) |cuDNN" | sed -E 's/ +\(host [0-9]+\)//'
