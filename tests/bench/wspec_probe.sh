#!/usr/bin/env bash
# WSPEC and PINGPONG (issue 25, items 1, 2 and 6) on the GPU machine in one device call, each step
# under its own timeout so that a hang costs one step, not the call: the new kernels against the
# float64 reference at ragged and hostile shapes (emmyc run), compute-sanitizer (memcheck,
# racecheck, synccheck) on two of them, then the peer harness on the attention anchors and matmul
# with the variants beside the stdlib's schedules (HARNESS_ONLY=1: the harness alone).
# Usage: tests/bench/wspec_probe.sh   (binaries from gpu-carry/, results in $OUT)
source "$(dirname "$0")/gpu_env.sh"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
# Head dim 128: two consumer warpgroups overlapped, taking turns, with and without producers.
PP128="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1"
# Head dim 64: FA-3's three consumer warpgroups (192 rows), 64-key blocks, a producer warpgroup.
W12="PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w12x1/k4,TILE@e=f64,STAGE=d4/tma/ring,FAST_EXP=1,WSPEC=p1"
W12O="$W12,OVERLAP=1"
W12P="$W12,OVERLAP=1,PINGPONG=1"
# Matmul: one consumer warpgroup (no registers to move since the setmaxnreg fix), 64 x 128 tiles.
MM4="TILE=a:wgmma_m64n128k16_f16/w4x1/k4,STAGE=d6/tma/ring,WSPEC=p1,OVERLAP=1"
if [ -z "${HARNESS_ONLY:-}" ]; then
  step correctness
  check_runs "stdlib/nn.emmy --op sdpa --knobs $PP128 --shape B=1,H=2,S=130,T=300,D=128,E=256" \
             "stdlib/nn.emmy --op sdpa_causal --knobs $PP128,WSPEC=p1 --shape B=2,H=2,S=1025,D=128,E=128" \
             "stdlib/nn.emmy --op sdpa --knobs $W12O --shape B=2,H=3,S=333,T=1000,D=64,E=64" \
             "stdlib/nn.emmy --op sdpa_causal --knobs $W12P --shape B=1,H=2,S=700,D=40,E=72" \
             "stdlib/linalg.emmy --op matmul --knobs $MM4 --shape M=1000,N=777,K=1023"
  step compute-sanitizer
  [ -n "${NO_SANITIZER:-}" ] || for tool in memcheck racecheck synccheck; do
    for run in "stdlib/nn.emmy --target sm_90a --op sdpa --knobs $PP128,WSPEC=p1 --shape B=1,H=1,S=130,T=300,D=128,E=128" \
               "stdlib/nn.emmy --target sm_90a --op sdpa_causal --knobs $W12P --shape B=1,H=1,S=300,D=64,E=64"; do
      timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run $run --no-cache > "$OUT/san.log" 2>&1
      echo "$tool exit $? :: ${run:0:60} :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
    done
  done
fi
step harness
args=()
for k in "$PP128" "$PP128,WSPEC=p1" "$W12" "$W12O" "$W12P"; do
  for op in sdpa sdpa_causal; do args+=(--knobs "$op@sm_90a=$k"); done
done
args+=(--knobs "matmul@sm_90a=$MM4")
# The ragged matmul (1000,777,1023): its row strides rule out TMA; smaller tiles, cp.async rings.
for k in ${MM_EXTRA:-}; do args+=(--knobs "matmul@sm_90a=$k"); done
timeout "${HARNESS_TIMEOUT:-330}" python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" \
  --deadline "${DEADLINE:-300}" --emmy-launch-cap 0.5 --only "${ONLY:-^(sdpa B=|matmul)}" "${args[@]}" \
  > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuDNN|cuBLAS|sm_90a" "$OUT/harness.log" | cut -c1-200 | head -150
rm -rf "$EMMY_CACHE_DIR"
