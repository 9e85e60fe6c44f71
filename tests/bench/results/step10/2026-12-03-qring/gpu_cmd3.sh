# Run 3: the tuner's hd64 winner (w16x1, 64-key blocks: m64n64k16, d4, OVERLAP + PINGPONG + WSPEC)
# at the four hd64 anchors, causal and not, beside cuDNN and the stdlib blocks; its correctness
# at ragged shapes on the GPU; compute-sanitizer on it.
source tests/bench/gpu_env.sh
W16="PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w16x1/k4,STAGE=d4/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
timeout 200 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 150 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|4 H=16 S=4096) D=64' --blocks 'sm_90a' \
  --knobs "sdpa@sm_90a=$W16" --knobs "sdpa_causal@sm_90a=$W16" --knobs "sdpa@sm_90a=$W16,PERSIST=1" \
  --knobs "sdpa_causal@sm_90a=${W16/d4/d3}" > "$OUT/harness.log" 2>&1
tail -1 "$OUT/harness.log"
check_runs "stdlib/nn.emmy --op sdpa --knobs $W16 --shape B=2,H=3,S=1001,T=777,D=64" \
  "stdlib/nn.emmy --op sdpa --knobs $W16 --shape B=1,H=2,S=300,T=1111,D=40,E=56" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $W16 --shape B=2,H=3,S=1001,D=64" \
  "stdlib/nn.emmy --op sdpa --knobs $W16,PERSIST=1 --shape B=2,H=5,S=900,T=513,D=64"
sanitize "stdlib/nn.emmy --op sdpa --target sm_90a --knobs $W16 --shape B=1,H=2,S=300,T=257,D=64" \
  "stdlib/nn.emmy --op sdpa_causal --target sm_90a --knobs $W16 --shape B=1,H=2,S=300,D=64"
rm -rf "$OUT/kernel-cache"
