# Folds with producer warps staging their results through the row slab (not element by element),
# TMA kernels without their cp.async fallback (PERSIST hd128 spills 16 bytes, was 84; three
# consumer warpgroups at hd64 now fit 160 registers), PERSIST's snake walk: GPU correctness at
# ragged shapes, the ten sdpa anchors with the stdlib's sm_90a blocks and variants, head dim 256 in
# FA-3's 128 x 80 tile, matmul (PERSIST with its own epilogue buffer), and the hd64 causal A/B against efdb216's library (gpu-carry/pre).
source tests/bench/gpu_env.sh
w() { echo "PLACE=fuse,TILE=a:wgmma_m64n$1k16_f16/w8x1/k$2,TILE@e=f$3,STAGE=$4,FAST_EXP=1$5"; }
OPP=",OVERLAP=1,PINGPONG=1,WSPEC=p1"
W12="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w12x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1$OPP"
echo "=== correctness $(date -u +%T)"
check_runs "stdlib/nn.emmy --op sdpa --schedule hd128-pingpong --shape B=2,H=3,S=1000,T=1111,D=128,E=100" \
  "stdlib/nn.emmy --op sdpa --knobs $(w 128 8 128 d3/tma/ring $OPP,PERSIST=1) --shape B=3,H=5,S=1000,T=1111,D=120,E=100" \
  "stdlib/nn.emmy --op sdpa_causal --shape B=2,H=3,S=1001,D=64" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $(w 128 8 128 d3/tma/ring $OPP,PERSIST=1) --shape B=2,H=9,S=1001,D=128" \
  "stdlib/nn.emmy --op sdpa --knobs $W12 --shape B=2,H=3,S=1000,T=1111,D=61,E=64" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $W12 --shape B=2,H=3,S=1001,D=64" \
  "examples/attention_variants.emmy --op sdpa_bf16 --schedule hd256-128x80 --shape B=1,H=3,S=700,T=900,D=256,E=256" \
  "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023"
echo "=== harness $(date -u +%T)"
args=(--knobs "sdpa@sm_90a=$(w 128 8 128 d3/tma/ring $OPP,PERSIST=1)" --knobs "sdpa_causal@sm_90a=$(w 128 8 128 d3/tma/ring $OPP,PERSIST=1)"
      --knobs "sdpa@sm_90a=$(w 128 8 128 d3/tma/ring ,OVERLAP=1,PERSIST=1)"
      --knobs "sdpa@sm_90a=$W12" --knobs "sdpa_causal@sm_90a=$W12"
      --knobs "matmul@sm_90a=TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d3/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1")
timeout 250 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 200 \
  --emmy-launch-cap 0.5 --only '^(sdpa B=(1,H=8,S=4096|4,H=16,S=4096|2,H=16,S=8192|16,H=16,S=1024)|sdpa_bf16 B=2 H=16 S=2048 D=256|matmul)' \
  --blocks 'sm_90a' "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuDNN|sm_90a|cuBLAS " "$OUT/harness.log" | cut -c1-60,100-180 | head -150
echo "=== A/B hd64 causal: efdb216 then HEAD $(date -u +%T)"
for lib in pre/libemmy.so libemmy.so; do
  LD_LIBRARY_PATH=$B timeout 50 python3 tests/bench/harness.py --lib "$B/$lib" --out "$OUT/ab-${lib%%/*}" --deadline 30 \
    --emmy-launch-cap 0.5 --only '^sdpa B=4 H=16 S=4096 D=64 causal' --blocks 'default, sm_90a' 2>&1 | grep -E "cuDNN|default, sm_90a" | cut -c1-60,100-150
done
echo "=== done $(date -u +%T)"
rm -rf "$OUT/kernel-cache"
