# Run 2 (13:09 UTC): the ten sdpa anchors (run 1's --only had commas where the case names have
# spaces, so it ran only matmul and head dim 256), then racecheck, memcheck and synccheck on
# hd128-pingpong and three consumer warpgroups at hd64 with PERSIST. Run 3 (13:11) re-ran racecheck
# with --racecheck-report all on both, and on the w12 block without PERSIST and hd128-pingpong
# with PINGPONG=0 (racecheck-*.txt).
source tests/bench/gpu_env.sh
w() { echo "PLACE=fuse,TILE=a:wgmma_m64n$1k16_f16/w8x1/k$2,TILE@e=f$3,STAGE=$4,FAST_EXP=1$5"; }
OPP=",OVERLAP=1,PINGPONG=1,WSPEC=p1"
W12="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w12x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1$OPP"
timeout 330 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 280 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|4 H=16 S=4096|2 H=16 S=8192|16 H=16 S=1024)' --blocks 'sm_90a' \
  --knobs "sdpa@sm_90a=$(w 128 8 128 d3/tma/ring $OPP,PERSIST=1)" --knobs "sdpa_causal@sm_90a=$(w 128 8 128 d3/tma/ring $OPP,PERSIST=1)" \
  --knobs "sdpa@sm_90a=$W12" --knobs "sdpa_causal@sm_90a=$W12" > "$OUT/harness.log" 2>&1
for tool in racecheck memcheck synccheck; do
  for run in "stdlib/nn.emmy --op sdpa --target sm_90a --schedule hd128-pingpong --shape B=1,H=2,S=300,T=257,D=128,E=100" \
             "stdlib/nn.emmy --op sdpa_causal --target sm_90a --knobs $W12,PERSIST=1 --shape B=2,H=3,S=401,D=64"; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run $run --no-cache > "$OUT/san.log" 2>&1
    echo "$tool exit $? :: $run :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
  done
done
rm -rf "$OUT/kernel-cache"
