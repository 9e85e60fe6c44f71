#!/usr/bin/env bash
# Run 5: the row ops after the combine's weighted work (Welford), [auto] beside [default].
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 200 python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/auto5 \
  --only '^(softmax|layernorm|rmsnorm)' --blocks '\[(default|auto)\]' 2>&1 \
  | grep -E "^\[" | sed -E 's/ +\(host [0-9]+\)//'
