#!/usr/bin/env bash
# The wgmma (sm_90a) fold on the GPU machine in one device call: correctness of the stdlib's sm_90a
# schedules at ragged shapes (emmyc run against the float64 reference), compute-sanitizer on two of
# them, then the peer harness on the sdpa anchors with knob variants beside the schedules
# (HARNESS_ONLY=1: the harness alone).
# Usage: tests/bench/wgmma_probe.sh   (binaries from gpu-carry/, results in $OUT)
source "$(dirname "$0")/gpu_env.sh"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
if [ -z "${HARNESS_ONLY:-}" ]; then
step correctness
for run in "--op sdpa --shape B=1,H=2,S=200,T=77,D=64,E=64" "--op sdpa --shape B=2,H=3,S=333,T=1000,D=64,E=64" \
           "--op sdpa_causal --shape B=1,H=2,S=300,D=64,E=64" \
           "--op sdpa --schedule wgmma-hd128 --shape B=1,H=2,S=130,T=300,D=128,E=128" \
           "--op sdpa_causal --schedule wgmma-hd128 --shape B=2,H=2,S=257,D=128,E=128" \
           "--op sdpa --shape B=1,H=2,S=200,T=77,D=64,E=64 --dtype bf16"; do
  "$B/emmyc" run stdlib/nn.emmy --target sm_90a $run --no-cache 2>&1 | tail -1 | sed "s|^|$run :: |"
done
step compute-sanitizer
for tool in memcheck racecheck; do
  for run in "--op sdpa --shape B=1,H=2,S=200,T=77,D=64,E=64" "--op sdpa_causal --schedule wgmma-hd128 --shape B=1,H=2,S=130,D=128,E=128"; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run stdlib/nn.emmy --target sm_90a $run --no-cache > "$OUT/san.log" 2>&1
    echo "$tool exit $? :: $run :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
  done
done
fi
step harness
W="PLACE=fuse,TILE=a:wgmma_m64"
F="FAST_EXP=1"
args=()
for op in sdpa sdpa_causal; do
  for k in n64k16_f16/w4x1/k4,TILE@e=f64,STAGE=d2/cp/ring n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d2/cp/ring \
           n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/cp/ring n64k16_f16/w8x1/k8,TILE@e=f128,STAGE=d2/cp/ring \
           n64k16_f16/w4x1/k8,TILE@e=f128,STAGE=d2/cp/ring; do
    args+=(--knobs "$op@sm_90a=$W$k,$F")
  done
done
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline "${DEADLINE:-300}" \
  --emmy-launch-cap 0.5 --only "${ONLY:-^sdpa B=}" "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "torch FA-2|sm_90a|default\]" "$OUT/harness.log" | cut -c1-200 | head -150
rm -rf "$EMMY_CACHE_DIR"
