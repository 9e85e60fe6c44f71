# Run 5: Nsight Compute's stall samples a SASS instruction on pingpong + PERSIST at
# (16,16,1024,128) with one key block a tile (T=128: the tile's fixed cost alone) and T=1024; a few
# ring depths with PERSIST.
source tests/bench/gpu_env.sh
PP="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
H64="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
for t in 128 1024; do
  timeout 150 ncu --section SourceCounters --section WarpStateStats --clock-control none -k regex:k_sdpa -c 1 \
    --page source --csv --print-source sass "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=16,H=16,S=1024,T=$t,D=128 \
    --target sm_90a --knobs "$PP,PERSIST=1" --check none > $OUT/ncu-pp-persist-T$t.csv 2> $OUT/ncu.err
  echo "ncu T=$t exit $? lines $(wc -l < $OUT/ncu-pp-persist-T$t.csv)"
done
timeout 200 python3 tests/bench/tile_overhead.py --lib "$B/libemmy.so" --shape 16,16,1024,128 --keys 128,512,1024 \
  --knobs "$PP,PERSIST=1" --knobs "${PP/d3/d2},PERSIST=1" --knobs "${PP/d3/d4},PERSIST=1" 2>&1 | grep -v Warning | grep -v "op = emmy"
timeout 100 python3 tests/bench/tile_overhead.py --lib "$B/libemmy.so" --shape 1,8,4096,64 --keys 4096 \
  --knobs "$H64,PERSIST=1" --knobs "${H64/d3/d2},PERSIST=1" --knobs "${H64/d3/d4},PERSIST=1" --knobs "${H64/d3/d4}" 2>&1 | grep -v Warning | grep -v "op = emmy"
rm -rf "$OUT/kernel-cache"
