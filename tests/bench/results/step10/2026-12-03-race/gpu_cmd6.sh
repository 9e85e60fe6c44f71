# Run 6: the staged stores unrolled without tests where the rows are inside: correctness, the tile
# cost, the ten anchors and matmul, racecheck on the crews.
source tests/bench/gpu_env.sh
W12="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w12x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
PP="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
H64="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
check_runs "stdlib/nn.emmy --op sdpa --schedule hd128-pingpong --shape B=1,H=3,S=1000,T=1111,D=128,E=100" \
  "stdlib/nn.emmy --op sdpa --schedule hd128-pingpong --shape B=2,H=3,S=1024,T=1000,D=128" \
  "stdlib/nn.emmy --op sdpa --knobs $PP,PERSIST=1 --shape B=2,H=3,S=777,T=500,D=120" \
  "stdlib/nn.emmy --op sdpa_causal --schedule hd64-w12 --shape B=2,H=3,S=1001,D=64" \
  "stdlib/nn.emmy --op sdpa --schedule hd64-w12 --shape B=1,H=5,S=960,D=64" \
  "stdlib/nn.emmy --op sdpa --knobs $H64,PERSIST=1 --shape B=1,H=5,S=999,D=64" \
  "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" \
  "stdlib/linalg.emmy --op matmul --shape M=1024,N=768,K=512" \
  "stdlib/linalg.emmy --op matmul_bias_gelu --shape M=1000,N=777,K=1023"
timeout 100 python3 tests/bench/tile_overhead.py --lib "$B/libemmy.so" --shape 16,16,1024,128 --keys 128,512,1024 \
  --knobs "$PP,PERSIST=1" 2>&1 | grep -v Warning | grep -v "op = emmy"
timeout 330 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 280 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|4 H=16 S=4096|2 H=16 S=8192|16 H=16 S=1024)|^matmul' --blocks 'sm_90a' \
  --knobs "sdpa@sm_90a=$PP,PERSIST=1" --knobs "sdpa@sm_90a=$H64,PERSIST=1" > "$OUT/harness.log" 2>&1
tail -1 "$OUT/harness.log"
for run in "stdlib/nn.emmy --op sdpa --target sm_90a --schedule hd128-pingpong --shape B=1,H=2,S=300,T=257,D=128,E=100" \
           "stdlib/nn.emmy --op sdpa_causal --target sm_90a --knobs $W12,PERSIST=1 --shape B=2,H=3,S=401,D=64"; do
  timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 "$B/emmyc" run $run --no-cache > "$OUT/san.log" 2>&1
  echo "racecheck exit $? :: ${run:0:90} :: $(grep -E 'RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
done
rm -rf "$OUT/kernel-cache"
