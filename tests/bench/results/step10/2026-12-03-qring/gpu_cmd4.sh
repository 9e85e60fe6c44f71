# Run 4 (binaries with sdpa's new sm_90a default): the ten anchors with cuDNN, FA-2 and Triton in the
# same process, every stdlib sm_90a block, plus PERSIST on pp and on the new default.
source tests/bench/gpu_env.sh
W16="PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w16x1/k4,STAGE=d4/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
PP="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
timeout 280 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 240 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|4 H=16 S=4096|2 H=16 S=8192|16 H=16 S=1024)' --blocks 'sm_90a' \
  --knobs "sdpa@sm_90a=$PP,PERSIST=1" --knobs "sdpa@sm_90a=$W16,PERSIST=1" > "$OUT/harness.log" 2>&1
tail -1 "$OUT/harness.log"
rm -rf "$OUT/kernel-cache"
