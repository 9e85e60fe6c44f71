#!/usr/bin/env bash
# Run 2: as run 1's harness, with the API deciding the auto-schedule once a set of sizes (run 1's
# [auto] rows paid a large-stack thread a launch: void) and the sm_90a auto-schedule (wgmma)
# beside sm_90a's default blocks.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 200 python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/auto \
  --only '^(sdpa B|softmax|layernorm|rmsnorm|matmul)' \
  --blocks '\[(default|auto), sm_90a\]|(softmax|layernorm|rmsnorm) \[(default|auto)\]' \
  --sdpa 1,8,4096,64 --sdpa 4,16,4096,128 --matmul 1000,777,1023 --matmul 4096,4096,4096 2>&1 \
  | grep -E "^\[" | sed -E 's/ +\(host [0-9]+\)//'
