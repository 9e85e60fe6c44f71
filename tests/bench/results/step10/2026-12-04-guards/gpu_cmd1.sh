#!/usr/bin/env bash
# Run 1 (binaries 2f0fbe1): where 128 x 128 tiles beat the persistent 128 x 256 default (the guard
# of the stdlib's tile-128x128 block); CLUSTER m2 / n2 with producers that keep 56 registers (no
# spills) at 4096^3 and 8192^3; the tuner on causal hd64 at (4,16,4096,64).
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
P="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1,STAGE=d3/tma/ring,RASTER=gm8,PERSIST=1"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/small --only '^matmul' --blocks 'sm_90a' \
  --matmul 1000,777,1023 --matmul 1024,1024,1024 --matmul 1536,1536,1536 --matmul 2048,1024,4096 \
  --matmul 2048,2048,2048 --matmul 1024,4096,4096 --matmul 3000,2000,1000 2>&1 | grep -E "^\[" | sed -E 's/knobs [^ ]+,/knobs ...,/'
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/cluster --only '^matmul M=(4096|8192)' --blocks 'sm_90a$' \
  --knobs "matmul@sm_90a=$P,CLUSTER=m2" --knobs "matmul@sm_90a=$P,CLUSTER=n2" 2>&1 | grep -E "^\[" | sed -E 's/knobs [^ ]+,/knobs ...,/'
TARGET=sm_90a BUDGET=3m timeout 330 bash tests/bench/tune_session.sh causal64 2>&1 | tail -30
