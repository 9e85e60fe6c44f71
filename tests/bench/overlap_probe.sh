#!/usr/bin/env bash
# OVERLAP (issue 25, item 3) on the GPU machine in one device call: the overlapped sm_90a folds
# against the float64 reference at ragged and hostile shapes (emmyc run), compute-sanitizer
# (memcheck, racecheck, synccheck) on two of them, then the peer harness on the sdpa anchors with
# the overlapped variants beside the stdlib's schedules (HARNESS_ONLY=1: the harness alone).
# Usage: tests/bench/overlap_probe.sh   (binaries from gpu-carry/, results in $OUT)
source "$(dirname "$0")/gpu_env.sh"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
O64="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1"
O128="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1"
if [ -z "${HARNESS_ONLY:-}" ]; then
step correctness
for run in "--op sdpa --knobs $O64 --shape B=1,H=2,S=200,T=77,D=64,E=64" \
           "--op sdpa --knobs $O64 --shape B=2,H=3,S=333,T=1000,D=64,E=64" \
           "--op sdpa --knobs $O64 --shape B=1,H=2,S=300,T=1000,D=36,E=40" \
           "--op sdpa_causal --knobs $O64 --shape B=1,H=2,S=300,D=64,E=64" \
           "--op sdpa --knobs $O128 --shape B=1,H=2,S=130,T=300,D=128,E=128" \
           "--op sdpa_causal --knobs $O128 --shape B=2,H=2,S=1025,D=128,E=128" \
           "--op sdpa --knobs $O128 --shape B=1,H=2,S=200,T=777,D=128,E=128 --dtype bf16"; do
  "$B/emmyc" run stdlib/nn.emmy --target sm_90a $run --no-cache 2>&1 | tail -1 | sed "s|^|$run :: |"
done
step compute-sanitizer
sanitize "stdlib/nn.emmy --target sm_90a --op sdpa --knobs $O64 --shape B=1,H=2,S=200,T=300,D=64,E=64" \
         "stdlib/nn.emmy --target sm_90a --op sdpa_causal --knobs $O128 --shape B=1,H=2,S=300,D=128,E=128"
fi
step harness
args=()
for op in sdpa sdpa_causal; do
  for k in "$O64" "$O128" ${EXTRA:-}; do args+=(--knobs "$op@sm_90a=$k"); done
done
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline "${DEADLINE:-360}" \
  --emmy-launch-cap 0.5 --only "${ONLY:-^sdpa B=}" "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuDNN|torch FA-2|sm_90a|default\]" "$OUT/harness.log" | cut -c1-200 | head -150
rm -rf "$EMMY_CACHE_DIR"
