#!/usr/bin/env bash
# Run 8: CLUSTER=m2 with CTA-scope peer arrivals (run 7's binaries): compute-sanitizer at a ragged
# shape, then the harness's matmul and GEMM + bias + GELU rows with and without it.
source tests/bench/gpu_env.sh
base="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
P="$base,STAGE=d3/tma/ring,RASTER=gm8,PERSIST=1"
g="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1"
sanitize "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=530,K=333 --knobs $P,CLUSTER=m2" \
  "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=129,N=1000,K=200 --knobs TILE=a:wgmma_m64n128k16_f16/w8x1/k8,STAGE=d3/tma/ring,CLUSTER=n2"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/results --only '^(matmul M=(4096|8192)|gemm_bias_gelu)' \
  --blocks sm_90a --knobs "matmul@sm_90a=$P,CLUSTER=m2" --knobs "matmul@sm_90a=$P,CLUSTER=m2,RASTER=gm4" \
  --knobs "matmul_bias_gelu@sm_90a=$g,STAGE=d3/tma/ring,PERSIST=1,RASTER=gm8,CLUSTER=m2" \
  --knobs "matmul_bias_gelu@sm_90a=PLACE=fuse,$P,CLUSTER=m2" 2>&1 | grep -E "^\[" | cut -c1-230
