# Key blocks other than 64 and 128 (wgmma N = 144, 176, 192) on the attention anchors: GPU
# correctness at ragged shapes, then the harness with the stdlib's blocks and these variants.
source tests/bench/gpu_env.sh
w() { echo "PLACE=fuse,TILE=a:wgmma_m64n$1k16_f16/w8x1/k$2,TILE@e=f$3,STAGE=$4,FAST_EXP=1$5"; }
OPP=",OVERLAP=1,PINGPONG=1,WSPEC=p1"
echo "=== correctness $(date -u +%T)"
check_runs "stdlib/nn.emmy --op sdpa --knobs $(w 192 4 64 d3/tma/ring $OPP) --shape B=2,H=3,S=1000,T=1111,D=61,E=61" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $(w 192 4 64 d3/tma/ring $OPP) --shape B=1,H=3,S=1001,D=64" \
  "stdlib/nn.emmy --op sdpa --knobs $(w 176 8 128 d2/tma/ring ,WSPEC=p1) --shape B=1,H=2,S=777,T=1000,D=128,E=100" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $(w 176 8 128 d2/tma/ring ,WSPEC=p1) --shape B=1,H=2,S=1000,D=120" \
  "stdlib/nn.emmy --op sdpa --knobs $(w 144 4 64 d3/tma/ring $OPP) --shape B=1,H=2,S=999,D=64"
args=()
for n in 144 176 192; do args+=(--knobs "sdpa@sm_90a=$(w $n 4 64 d3/tma/ring $OPP)" --knobs "sdpa_causal@sm_90a=$(w $n 4 64 d3/tma/ring $OPP)"); done
for n in 128 144 176 192; do args+=(--knobs "sdpa@sm_90a=$(w $n 8 128 d2/tma/ring ,WSPEC=p1)"); done
args+=(--knobs "sdpa_causal@sm_90a=$(w 176 8 128 d2/tma/ring ,WSPEC=p1)")
echo "=== harness $(date -u +%T)"
timeout 500 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 450 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|4 H=16|2 H=16|16 H=16)' --blocks sm_90a "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuDNN|sm_90a" "$OUT/harness.log" | cut -c1-200 | head -150
