# Run 8 (binaries b0f1ee7, the session's last): the ten anchors and matmul, then memcheck, racecheck
# and synccheck on the stdlib's pingpong blocks and w12 + PERSIST.
source tests/bench/gpu_env.sh
W12="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w12x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
PP="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
H64="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
timeout 200 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 150 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|4 H=16 S=4096|2 H=16 S=8192|16 H=16 S=1024)|^matmul' --blocks 'sm_90a' \
  --knobs "sdpa@sm_90a=$PP,PERSIST=1" --knobs "sdpa@sm_90a=$H64,PERSIST=1" > "$OUT/harness.log" 2>&1
tail -1 "$OUT/harness.log"
sanitize "stdlib/nn.emmy --op sdpa_causal --target sm_90a --schedule hd128-pingpong --shape B=1,H=2,S=300,D=128" \
  "stdlib/nn.emmy --op sdpa --target sm_90a --knobs $W12,PERSIST=1 --shape B=2,H=3,S=401,T=333,D=64"
rm -rf "$OUT/kernel-cache"
