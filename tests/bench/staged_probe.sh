#!/usr/bin/env bash
# Staged TMA maps (rows not 16-byte multiples copied at a 16-byte pitch before the launch) and
# RASTER on the tensor-core contraction, on the GPU machine in one device call, each step under
# its own timeout: ragged shapes against the float64 reference (emmyc run), compute-sanitizer
# memcheck on a staged matmul, the GPU test matrix for matmul/bmm/sdpa (GPU_OPS), then the peer
# harness on matmul (ONLY: the cases) with the variants of MM_VARIANTS (knob lists, one a word)
# and VARIANTS ("op@target=knobs" entries, one a word); NCU_KNOBS
# (';'-separated knob lists) adds Nsight Compute on sdpa at NCU_SHAPE for each.
# Usage: tests/bench/staged_probe.sh   (binaries from gpu-carry/, results in $OUT)
source "$(dirname "$0")/gpu_env.sh"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
step correctness
check_runs "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" \
           "stdlib/linalg.emmy --op matmul --shape M=129,N=77,K=33" \
           "stdlib/linalg.emmy --op matmul --knobs TILE=a:wgmma_m64n128k16_f16/w16x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8 --shape M=2000,N=1537,K=515" \
           "stdlib/linalg.emmy --op matmul --knobs TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8 --shape M=1000,N=777,K=1023" \
           "stdlib/linalg.emmy --op matmul --knobs TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d3/tma/ring,WSPEC=p1,OVERLAP=1 --shape M=512,N=1024,K=2048" \
           "stdlib/linalg.emmy --op bmm --shape Z=3,M=300,N=201,K=77" \
           "stdlib/nn.emmy --op sdpa --shape B=2,H=3,S=300,T=333,D=36,E=36" \
           "stdlib/nn.emmy --op sdpa_causal --schedule wgmma-hd128 --shape B=1,H=2,S=333,D=100,E=100"
step compute-sanitizer
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run stdlib/linalg.emmy --op matmul \
    --target sm_90a --shape M=300,N=257,K=333 --no-cache > "$OUT/san.log" 2>&1
  echo "$tool exit $? :: staged matmul :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
done
if [ -n "${GPU_OPS:-}" ]; then
  step "gpu tests: $GPU_OPS"
  timeout "${GPU_TESTS_TIMEOUT:-150}" "$B/emmy_gpu_tests" --ops="$GPU_OPS" > "$OUT/gpu_tests.txt" 2>&1
  echo "exit $?"; tail -4 "$OUT/gpu_tests.txt"
fi
step harness
args=()
for k in ${MM_VARIANTS:-}; do args+=(--knobs "matmul@sm_90a=$k"); done
for v in ${VARIANTS:-}; do args+=(--knobs "$v"); done  # "op@target=knobs" entries
timeout "${HARNESS_TIMEOUT:-300}" python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" \
  --deadline "${DEADLINE:-280}" --emmy-launch-cap 0.5 --only "${ONLY:-^matmul}" ${BLOCKS:+--blocks "$BLOCKS"} \
  "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuBLAS|cuDNN|sm_90a" "$OUT/harness.log" | cut -c1-200 | head -150
IFS=';' read -r -a ncu_runs <<< "${NCU_KNOBS:-}"
for i in "${!ncu_runs[@]}"; do
  step "ncu $i: ${ncu_runs[$i]}"
  OP=${NCU_OP:-sdpa} SHAPE=${NCU_SHAPE:-B=4,H=16,S=4096,T=4096,D=128,E=128} TARGET=sm_90a NO_PEER=1 NAME=_$i RUN_ARGS="--check none" \
    timeout 90 bash tests/bench/ncu_sdpa.sh "${ncu_runs[$i]}"
done
rm -rf "$EMMY_CACHE_DIR"
