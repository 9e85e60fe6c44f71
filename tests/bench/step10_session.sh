#!/usr/bin/env bash
# Step 10 on the GPU machine in one device call: the GPU test matrix for the ops whose CUDA changed
# (GPU_OPS), compute-sanitizer (memcheck, racecheck, synccheck) on the overlapped stdlib blocks,
# then the peer harness (HARNESS_ONLY: the harness alone) on the attention anchors, decode and
# matmul, with the knob variants of $VARIANTS ("op@target=knobs" entries, one a word); SANITIZE
# adds `emmyc run` argument lists (';'-separated) to the sanitizer's.
# Usage: tests/bench/step10_session.sh   (binaries from gpu-carry/, results in $OUT)
source "$(dirname "$0")/gpu_env.sh"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
if [ -z "${HARNESS_ONLY:-}" ]; then
  step "gpu tests: ${GPU_OPS:=sdpa,sdpa_causal}"
  timeout "${GPU_TESTS_TIMEOUT:-240}" "$B/emmy_gpu_tests" --ops="$GPU_OPS" > "$OUT/gpu_tests.txt" 2>&1
  echo "exit $?"; tail -6 "$OUT/gpu_tests.txt"
  step compute-sanitizer
  runs=("stdlib/nn.emmy --target sm_90a --op sdpa --schedule wgmma-hd128 --shape B=1,H=2,S=200,T=300,D=128,E=128"
        "stdlib/nn.emmy --target sm_90a --op sdpa_causal --shape B=1,H=2,S=300,D=64,E=64"
        "stdlib/nn.emmy --target sm_90a --op sdpa_causal --schedule wgmma-hd128 --shape B=1,H=2,S=257,D=96,E=96")
  # SANITIZE: more `emmyc run` argument lists, separated by ';' (knob variants under test).
  IFS=';' read -r -a more <<< "${SANITIZE:-}"
  sanitize "${runs[@]}" "${more[@]}"
fi
step harness
args=()
for v in ${VARIANTS:-}; do args+=(--knobs "$v"); done
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline "${DEADLINE:-420}" \
  --emmy-launch-cap 0.5 --only "${ONLY:-^(sdpa B=|decode|matmul)}" "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"
rm -rf "$EMMY_CACHE_DIR"
