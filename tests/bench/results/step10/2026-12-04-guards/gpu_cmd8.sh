#!/usr/bin/env bash
# Run 8 (binaries 170e76a): matmul tiles for the middle sizes, where neither the persistent 128 x 256
# default nor 128 x 128 reaches cuBLAS (run 1): 128 x 192 persistent and not, 128 x 128 persistent,
# 64 x 256 persistent, beside the default, cuBLAS in the same process.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
W="WSPEC=p1,OVERLAP=1"; P="RASTER=gm8,PERSIST=1"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/mid --only '^matmul' --blocks '\[default, sm_90a' \
  --matmul 1024,1024,1024 --matmul 1536,1536,1536 --matmul 2048,1024,4096 --matmul 3000,2000,1000 \
  --matmul 1024,4096,4096 --matmul 2048,2048,2048 --matmul 4096,4096,4096 \
  --knobs "matmul@sm_90a=TILE=a:wgmma_m64n192k16_f16/w8x1/k4,STAGE=d4/tma/ring,$W,$P" \
  --knobs "matmul@sm_90a=TILE=a:wgmma_m64n192k16_f16/w8x1/k4,STAGE=d4/tma/ring,$W" \
  --knobs "matmul@sm_90a=TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d5/tma/ring,$W,$P" \
  --knobs "matmul@sm_90a=TILE=a:wgmma_m64n256k16_f16/w4x1/k4,STAGE=d4/tma/ring,$W,$P" 2>&1 | grep -E "^\[" | sed -E 's/knobs TILE=a:wgmma_(m64n[0-9]+)k16_f16\/(w[0-9]x1)\/k4,STAGE=(d[0-9])[^ ]*(PERSIST=1)?[^ ]*/\1 \2 \3 \4/'
