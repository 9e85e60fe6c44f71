#!/usr/bin/env bash
# Run 6: CLUSTER=m2 (pairs of row tiles share B's tile by TMA multicast) on the GPU against the
# reference at ragged shapes (persistent and not), compute-sanitizer on one, then the harness's
# matmul and GEMM + bias + GELU rows with and without it; also run 5's checks of the new default.
source tests/bench/gpu_env.sh
base="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
P="$base,STAGE=d3/tma/ring,RASTER=gm8,PERSIST=1"
for shape in M=300,N=530,K=333 M=129,N=77,K=33 M=1000,N=777,K=1023 M=2000,N=1537,K=515 M=128,N=256,K=64; do
  for knobs in "$P,CLUSTER=m2" "$base,STAGE=d4/tma/ring,CLUSTER=m2"; do
    echo "$shape $knobs :: $(timeout 60 $B/emmyc run stdlib/linalg.emmy --op matmul --shape $shape --target sm_90a --no-cache --knobs "$knobs" 2>&1 | tail -1)"
  done
done
check_runs "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" "stdlib/linalg.emmy --op matmul --shape M=129,N=77,K=33" \
  "stdlib/linalg.emmy --op matmul --shape M=2000,N=1537,K=515"
sanitize "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=530,K=333" \
  "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=530,K=333 --knobs $P,CLUSTER=m2"
g="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/results --only '^(matmul M=(4096|8192|1000)|gemm_bias_gelu)' \
  --blocks sm_90a --knobs "matmul@sm_90a=$P,CLUSTER=m2" --knobs "matmul@sm_90a=$base,STAGE=d4/tma/ring,CLUSTER=m2" \
  --knobs "matmul@sm_90a=$base,STAGE=d4/tma/ring,RASTER=gm8,PERSIST=1,CLUSTER=m2" \
  --knobs "matmul_bias_gelu@sm_90a=$g,STAGE=d4/tma/ring,CLUSTER=m2" \
  --knobs "matmul_bias_gelu@sm_90a=$g,STAGE=d3/tma/ring,PERSIST=1,RASTER=gm8" 2>&1 | grep -E "^\[" | cut -c1-220
