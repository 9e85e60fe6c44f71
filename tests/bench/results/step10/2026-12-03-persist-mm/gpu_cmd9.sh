#!/usr/bin/env bash
# Run 9: a persistent contraction's epilogue buffer in column passes (a quarter or a half of the
# tile where the whole does not fit beside the ring): PERSIST with four buffers for matmul and
# GEMM + bias + GELU; on the GPU against the reference, compute-sanitizer, tile_overhead, harness.
source tests/bench/gpu_env.sh
base="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
P4="$base,STAGE=d4/tma/ring,RASTER=gm8,PERSIST=1"
G4="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1,STAGE=d4/tma/ring,RASTER=gm8,PERSIST=1"
for s in M=300,N=530,K=333 M=1000,N=777,K=1023 M=2000,N=1537,K=515; do
  echo "$s :: $(timeout 60 $B/emmyc run stdlib/linalg.emmy --op matmul --shape $s --target sm_90a --no-cache --knobs "$P4" 2>&1 | tail -1)"
done
echo "gelu :: $(timeout 60 $B/emmyc run stdlib/linalg.emmy --op matmul_bias_gelu --shape M=1000,N=777,K=1023 --target sm_90a --no-cache --knobs "$G4" 2>&1 | tail -1)"
sanitize "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=530,K=333 --knobs $P4"
python3 tests/bench/tile_overhead.py --lib $B/libemmy.so --matmul 4096,4096 --rows 128 --cols 256 --block 64 \
  --keys 1024,2048,4096 --knobs "$base,STAGE=d3/tma/ring,RASTER=gm8,PERSIST=1" --knobs "$P4" 2>&1 | grep -v Warn
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/results --only '^(matmul M=(4096|8192)|gemm_bias_gelu)' \
  --blocks sm_90a --knobs "matmul@sm_90a=$P4" --knobs "matmul_bias_gelu@sm_90a=$G4" 2>&1 | grep -E "^\[" | cut -c1-200
