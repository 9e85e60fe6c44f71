#!/usr/bin/env bash
# Run 3 (binaries 13cc56f; run 5: the same after the harness compiles a block its case takes before timing): each op's default (the guarded stdlib blocks choosing per shape) on the
# attention, matmul and GEMM + bias + GELU anchors, cuDNN / cuBLAS / cuBLASLt in the same process.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/defaults \
  --only '^(sdpa B=(1 H=8 S=4096|4 H=16 S=4096|2 H=16 S=8192|16 H=16 S=1024) |matmul M=|gemm_bias_gelu)' \
  --blocks '\[default' 2>&1 | grep -E "^\[" | grep -v "mem-efficient" | sed -E 's/knobs [^ ]+,/knobs ...,/'
