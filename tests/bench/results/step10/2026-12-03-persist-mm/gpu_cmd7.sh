#!/usr/bin/env bash
# Run 7: CLUSTER=m2 with the peer's free-mbarrier arrival at the default (CTA-scope) release, as
# CUTLASS arrives; 128 x 256 and 256 x 128 tiles; tile_overhead's fit (a, b) with and without.
source tests/bench/gpu_env.sh
base="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
P="$base,STAGE=d3/tma/ring,RASTER=gm8,PERSIST=1"
w16="TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1,STAGE=d4/tma/ring"
echo "check :: $(timeout 60 $B/emmyc run stdlib/linalg.emmy --op matmul --shape M=300,N=530,K=333 --target sm_90a --no-cache --knobs "$P,CLUSTER=m2" 2>&1 | tail -1)"
python3 tests/bench/tile_overhead.py --lib $B/libemmy.so --matmul 4096,4096 --rows 128 --cols 256 --block 64 \
  --keys 1024,2048,4096 --knobs "$P" --knobs "$P,CLUSTER=m2" --knobs "$base,STAGE=d4/tma/ring,CLUSTER=m2" 2>&1 | grep -v Warn
python3 tests/bench/tile_overhead.py --lib $B/libemmy.so --matmul 4096,4096 --rows 256 --cols 128 --block 64 \
  --keys 1024,2048,4096 --knobs "$w16" --knobs "$w16,CLUSTER=m2" --knobs "$w16,CLUSTER=n2" 2>&1 | grep -v Warn
# How many clusters the device holds at once, and what the profile says of the pair (ncu).
ncu --clock-control none -k regex:k_matmul -c 1 --section LaunchStats --section Occupancy \
  --metrics gpu__time_duration.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  $B/emmyc run stdlib/linalg.emmy --op matmul --shape M=4096,N=4096,K=4096 --target sm_90a --knobs "$P,CLUSTER=m2" --check none 2>&1 \
  | grep -iE "cluster|time_duration|lts__|sm__throughput|Grid Size|Waves|Registers|Achieved"
