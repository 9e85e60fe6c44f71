#!/usr/bin/env bash
# Run 7 (binaries a29b9c2): sdpa's default at head dim 256 in f16 (the hd256 block its guard picks)
# in the harness (own loop, L2 flushed), cuDNN and FA-2 in the same process.
source tests/bench/gpu_env.sh
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/hd256 --sdpa 2,16,2048,256 --sdpa 1,16,4096,256 \
  --only '^sdpa B=' --blocks '\[default, sm_90a' 2>&1 | grep -E "^\[" | grep -v "mem-efficient"
