#!/usr/bin/env bash
# Issue 26, item 5: the row cache (COOP=.../c<R>) and the auto-schedule against the stdlib's default
# row blocks, torch eager, the copy ceiling (and Inductor with --inductor) at the three row shapes.
# Run on the GPU machine after scripts/gpu_stage.sh:
#   DTYPES='f16' bash tests/bench/step11_rowcache.sh --inductor    # one dtype a device call
# raw tables under $OUT/<dtype>; extra arguments go to the harness.
source "$(dirname "$0")/gpu_env.sh"
V=()
for op in softmax layernorm rmsnorm; do
  case $op in softmax) P=',PLACE@m=cut,FAST_EXP=1' ;; layernorm) P=',PLACE@mean=cut' ;; *) P='' ;; esac
  for c in t256/v8/c4 t128/v8/c8 t512/v8/c13 t1024/v8/c7; do V+=(--knobs "$op=COOP=$c$P"); done
done
for dt in ${DTYPES:-f16 f32}; do
  sfx=$([ $dt = f32 ] && echo ,f32)
  timeout ${SECONDS_A_DTYPE:-290} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/$dt" \
    --only 'softmax|layernorm|rmsnorm' --blocks '\[(default|auto)(, sm_90a?)?(, f32)?\]' \
    --rows 4097,1000$sfx --rows 32768,8192$sfx --rows 8192,50257$sfx --deadline $(( ${SECONDS_A_DTYPE:-290} - 40 )) \
    "${V[@]}" "$@" > "$OUT/$dt.txt" 2>&1
  tail -5 "$OUT/$dt.txt"
done
