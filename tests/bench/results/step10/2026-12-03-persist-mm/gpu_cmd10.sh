#!/usr/bin/env bash
# Run 10 (the device tool's command line, kept here): GEMM + bias + GELU, the block against the
# 256 x 128 tile persistent with four buffers (its epilogue in two column passes), twice.
source tests/bench/gpu_env.sh; G4="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1,STAGE=d4/tma/ring,RASTER=gm8,PERSIST=1"; for rep in 1 2; do python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/results$rep --only '^gemm_bias_gelu' --blocks sm_90a --knobs "matmul_bias_gelu@sm_90a=$G4" 2>&1 | grep -E "^\[" | sed -E 's/knobs [^ ]+,/knobs ...,/' | cut -c1-170; done
