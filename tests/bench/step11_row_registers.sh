#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the row cache in registers
# (COOP=.../r<R>) against the one in shared memory (c<R>), the auto-schedule (which now offers both),
# Inductor and the copy ceiling at the three row shapes, f16 and f32 (the rows harness); first the
# hand-written forms of row_variants_probe (rows in registers, exps kept) beside Emmy's at the
# short rows. Writes $OUT/probe.txt, $OUT/f16.txt, $OUT/f32.txt and their raw folders.
source "$(dirname "$0")/gpu_env.sh"
timeout ${PROBE_SECONDS:-170} python3 tests/bench/row_variants_probe.py --emmyc "$B/emmyc" --cases ${PROBE_CASES:-0,1,2,5} \
  > "$OUT/probe.txt" 2>&1
grep -v Warning "$OUT/probe.txt" | cut -c1-130
V=()
for op in softmax layernorm rmsnorm; do
  case $op in softmax) P=',PLACE@m=cut,FAST_EXP=1' ;; layernorm) P=',PLACE@mean=cut' ;; *) P='' ;; esac
  for c in t32/v8/c4 t32/v8/r4 t128/v8/r1 t128/v8/c8 t256/v8/r4 t512/v8/c13 t512/v8/r13; do V+=(--knobs "$op=COOP=$c$P"); done
done
for dt in ${DTYPES:-f16 f32}; do
  sfx=$([ $dt = f32 ] && echo ,f32)
  timeout ${SECONDS_A_DTYPE:-170} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/$dt" \
    --only 'softmax|layernorm|rmsnorm' --blocks '\[auto(, f32)?\]' --inductor \
    --rows 4097,1000$sfx --rows 32768,8192$sfx --rows 8192,50257$sfx --deadline $(( ${SECONDS_A_DTYPE:-170} - 30 )) \
    "${V[@]}" > "$OUT/$dt.txt" 2>&1
  grep -E "emmy|Inductor|copy" "$OUT/$dt.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-150
done
