#!/usr/bin/env bash
# Run 5 (the stdlib's new sm_90a matmul block: n256, three buffers, WSPEC, OVERLAP, RASTER=gm8,
# PERSIST): on the GPU against the reference at ragged shapes, compute-sanitizer on two of them,
# then the harness's matmul and GEMM + bias + GELU rows (cuBLAS, cuBLASLt in the same run) with
# the tuner's 4096^3 winner (n128 d3, no WSPEC) beside the blocks.
source tests/bench/gpu_env.sh
check_runs "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" "stdlib/linalg.emmy --op matmul --shape M=129,N=77,K=33" \
  "stdlib/linalg.emmy --op matmul --shape M=2000,N=1537,K=515" "stdlib/linalg.emmy --op matmul --shape M=300,N=530,K=333" \
  "stdlib/linalg.emmy --op matmul --shape M=4100,N=3000,K=4096 --check gpu"
sanitize "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=530,K=333" \
  "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=129,N=1000,K=200"
for rep in 1 2; do
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/results$rep --only '^(matmul M=(4096|8192|1000)|gemm_bias_gelu)' \
  --blocks sm_90a --knobs "matmul@sm_90a=TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d3/tma/ring" 2>&1 | grep -E "^\[" | cut -c1-200
done
