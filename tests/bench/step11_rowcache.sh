#!/usr/bin/env bash
# Issue 26, item 5: the row cache (COOP=.../c<R>) against the stdlib's default row blocks, torch
# eager and the copy ceiling at the three row shapes, f16 and f32, in one device call (about 9
# minutes). Run on the GPU machine after scripts/gpu_stage.sh: `bash tests/bench/step11_rowcache.sh`;
# raw tables under $OUT/f16 and $OUT/f32 (add --inductor for torch.compile, minutes more).
source "$(dirname "$0")/gpu_env.sh"
V=()
for op in softmax layernorm rmsnorm; do
  case $op in softmax) P=',PLACE@m=cut,FAST_EXP=1' ;; layernorm) P=',PLACE@mean=cut' ;; *) P='' ;; esac
  for c in t128/v8/c1 t256/v8/c4 t128/v8/c8 t512/v8/c13 t1024/v8/c7; do V+=(--knobs "$op=COOP=$c$P"); done
done
V+=(--knobs "softmax=COOP=t256/v8/c4,FAST_EXP=1" --knobs "softmax=COOP=t512/v8/c13,FAST_EXP=1")
for dt in f16 f32; do
  sfx=$([ $dt = f32 ] && echo ,f32)
  timeout 290 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/$dt" --only 'softmax|layernorm|rmsnorm' \
    --blocks '\[default(, sm_90)?\]' --rows 4097,1000$sfx --rows 32768,8192$sfx --rows 8192,50257$sfx --deadline 250 \
    "${V[@]}" > "$OUT/$dt.txt" 2>&1
  tail -5 "$OUT/$dt.txt"
done
