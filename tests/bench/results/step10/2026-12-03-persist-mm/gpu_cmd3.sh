#!/usr/bin/env bash
# Run 3: matmul and GEMM + bias + GELU at the acceptance shapes (harness, cuBLAS/cuBLASLt in the
# same run): the stdlib blocks (a boxes-only ring now waits for no cp.async group and fences no
# proxy), PERSIST with three buffers (the epilogue's own buffer), RASTER under PERSIST.
source tests/bench/gpu_env.sh
n256="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
n128="TILE=a:wgmma_m64n128k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
g="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/results --only '^(matmul M=(4096|8192|1000)|gemm_bias_gelu)' \
  --blocks sm_90a \
  --knobs "matmul@sm_90a=$n256,STAGE=d3/tma/ring,PERSIST=1" \
  --knobs "matmul@sm_90a=$n256,STAGE=d3/tma/ring,PERSIST=1,RASTER=gm8" \
  --knobs "matmul@sm_90a=$n128,STAGE=d4/tma/ring,PERSIST=1" \
  --knobs "matmul_bias_gelu@sm_90a=$g,STAGE=d3/tma/ring,PERSIST=1" \
  --knobs "matmul_bias_gelu@sm_90a=$g,STAGE=d4/tma/ring,PERSIST=1" \
  --knobs "matmul_bias_gelu@sm_90a=PLACE=fuse,$n256,STAGE=d3/tma/ring,PERSIST=1" 2>&1 | grep -v Warning | tail -40
