# The scores' first wgmma without C (scale-d false: no 64 accumulators zeroed a block), the wgmma
# descriptors by constant offsets, and PERSIST (a CTA an SM walking the tiles), on the ten sdpa
# anchors, the ragged rows and matmul: GPU correctness at ragged shapes, the harness with the
# stdlib's sm_90a blocks and these variants, then Nsight Compute and the SASS of the hd64 kernel.
source tests/bench/gpu_env.sh
w() { echo "PLACE=fuse,TILE=a:wgmma_m64n$1k16_f16/w8x1/k$2,TILE@e=f$3,STAGE=$4,FAST_EXP=1$5"; }
OPP=",OVERLAP=1,PINGPONG=1,WSPEC=p1"
echo "=== correctness $(date -u +%T)"
check_runs "stdlib/nn.emmy --op sdpa --knobs $(w 192 4 64 d3/tma/ring $OPP) --shape B=2,H=3,S=1000,T=1111,D=61,E=61" \
  "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=3,S=1001,D=64" \
  "stdlib/nn.emmy --op sdpa --schedule wgmma-hd128 --shape B=1,H=2,S=777,T=1000,D=128,E=100" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $(w 176 8 128 d2/tma/ring ,WSPEC=p1) --shape B=1,H=2,S=1000,D=120" \
  "stdlib/nn.emmy --op sdpa --knobs $(w 128 8 128 d3/tma/ring $OPP,PERSIST=1) --shape B=3,H=5,S=1000,T=1111,D=128,E=100" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $(w 128 4 64 d3/tma/ring $OPP,PERSIST=1) --shape B=2,H=9,S=1001,D=64" \
  "stdlib/linalg.emmy --op matmul --knobs TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1 --shape M=1000,N=777,K=1023"
args=(--knobs "sdpa@sm_90a=$(w 192 4 64 d3/tma/ring $OPP)"
      --knobs "sdpa@sm_90a=$(w 128 4 64 d3/tma/ring $OPP,PERSIST=1)" --knobs "sdpa_causal@sm_90a=$(w 128 4 64 d3/tma/ring $OPP,PERSIST=1)"
      --knobs "sdpa@sm_90a=$(w 128 8 128 d3/tma/ring $OPP)" --knobs "sdpa_causal@sm_90a=$(w 128 8 128 d3/tma/ring $OPP)"
      --knobs "sdpa@sm_90a=$(w 128 8 128 d3/tma/ring $OPP,PERSIST=1)" --knobs "sdpa_causal@sm_90a=$(w 128 8 128 d3/tma/ring $OPP,PERSIST=1)"
      --knobs "matmul@sm_90a=TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1"
      --knobs "matmul@sm_90a=TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d5/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1")
echo "=== harness $(date -u +%T)"
timeout 300 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 230 \
  --emmy-launch-cap 0.5 --only '^(sdpa B=|matmul)' --blocks 'sm_90a' "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuDNN|sm_90a|FA-2|SDPA" "$OUT/harness.log" | cut -c1-60,100-175 | head -150
echo "=== sanitizers $(date -u +%T)"
sanitize "stdlib/nn.emmy --op sdpa --target sm_90a --knobs $(w 128 4 64 d3/tma/ring $OPP,PERSIST=1) --shape B=2,H=3,S=300,T=257,D=64,E=64" \
  "stdlib/linalg.emmy --op matmul --target sm_90a --knobs TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1 --shape M=700,N=530,K=333"
rm -rf "$OUT/kernel-cache"
