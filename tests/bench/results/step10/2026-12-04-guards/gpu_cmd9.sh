#!/usr/bin/env bash
# Run 9: stdlib matmul's new tile-128x192 block (guarded by waves) under compute-sanitizer at ragged
# shapes, then matmul's default at the sizes of run 8 and the anchors, cuBLAS in the same process.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
sanitize "stdlib/linalg.emmy --op matmul --target sm_90a --schedule tile-128x192 --shape M=300,N=530,K=333" \
  "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=1500,N=1537,K=100"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/mm --only '^matmul' --blocks '\[default, sm_90a' \
  --matmul 1000,777,1023 --matmul 1536,1536,1536 --matmul 3000,2000,1000 --matmul 2048,2048,2048 \
  --matmul 4096,4096,4096 --matmul 8192,8192,8192 2>&1 | grep -E "^\[" | sed -E 's/ +\(host [0-9]+\)//'
