# Run 7: A/B of the unrolled staged stores: libemmy.so of 188689f (gpu-carry-base, the checked loop)
# against 9ed4060's (gpu-carry), alternating processes, the same schedules and shapes.
source tests/bench/gpu_env.sh
W12="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w12x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
for round in 1 2; do
  for lib in gpu-carry-base gpu-carry; do
    echo "== round $round $lib"
    EMMY_CACHE_DIR=$OUT/cache-$lib python3 tests/bench/tile_overhead.py --lib $lib/libemmy.so --shape 2,16,8192,128 --keys 8192 --schedule hd128-pingpong 2>&1 | grep -v Warn | grep -v "op = emmy"
    EMMY_CACHE_DIR=$OUT/cache-$lib python3 tests/bench/tile_overhead.py --lib $lib/libemmy.so --shape 4,16,4096,64 --keys 4096 --schedule hd64-w12 2>&1 | grep -v Warn | grep -v "op = emmy" | grep -v cuDNN
    EMMY_CACHE_DIR=$OUT/cache-$lib python3 tests/bench/tile_overhead.py --lib $lib/libemmy.so --shape 16,16,1024,128 --keys 1024 --schedule hd128-pingpong --knobs "PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1,PERSIST=1" 2>&1 | grep -v Warn | grep -v "op = emmy" | grep -v cuDNN
  done
done
rm -rf "$OUT/kernel-cache" "$OUT"/cache-*
