# Run 2: the reproducer with bar.sync in place of bar.arrive; the tile's fixed cost at S = 1024
# (tile_overhead.py); Nsight Compute's stall samples a SASS instruction on hd128-pingpong there.
source tests/bench/gpu_env.sh
nvcc -gencode arch=compute_90a,code=sm_90a -o $OUT/repro tests/bench/results/step10/2026-12-03-rowslab/racecheck_repro/repro.cu
for v in "2 0" "1 0"; do
  compute-sanitizer --tool racecheck $OUT/repro $v > $OUT/repro-$(echo $v | tr ' ' _).txt 2>&1
  echo "repro $v :: $(grep -E 'RACECHECK SUMMARY' $OUT/repro-$(echo $v | tr ' ' _).txt | tail -1)"
done
PP="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
timeout 240 python3 tests/bench/tile_overhead.py --lib "$B/libemmy.so" --shape 16,16,1024,128 --out $OUT/overhead.json \
  --schedule hd128-pingpong --schedule wgmma-hd128 --knobs "$PP,PERSIST=1" --knobs "${PP/OVERLAP=1,/}" 2>&1 | grep -v Warning
timeout 200 ncu --section SourceCounters --section WarpStateStats --clock-control none -k regex:k_sdpa -c 1 \
  --page source --csv --print-source sass "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=16,H=16,S=1024,D=128 \
  --target sm_90a --schedule hd128-pingpong --check none > $OUT/ncu-source-pp.csv 2> $OUT/ncu.err
echo "ncu exit $? lines $(wc -l < $OUT/ncu-source-pp.csv)"; tail -3 $OUT/ncu.err
rm -rf "$OUT/kernel-cache"
