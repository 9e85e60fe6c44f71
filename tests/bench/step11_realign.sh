#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one short call: layernorm at the three row
# shapes, f16 and f32, with Inductor and the copy ceiling (it measured 9808730, whose realigned
# gamma/beta read both aligned vectors at the top of each chunk: slower, reverted); then softmax, layernorm and
# rmsnorm at (4097, 1000) under a few COOP shapes beside the auto-schedule (which to try next for
# short rows), and compute-sanitizer on realigned layernorm rows.
# QUICK=1: the long rows (8192, 50257) only, and no short-row variants.
# Writes $OUT/ln-f16.txt, $OUT/ln-f32.txt, $OUT/short.txt, $OUT/san.txt.
source "$(dirname "$0")/gpu_env.sh"
for dt in f16 f32; do
  sfx=$([ $dt = f32 ] && echo ,f32)
  shapes=(--rows 8192,50257$sfx)
  [ "${QUICK:-0}" = 1 ] || shapes+=(--rows 4097,1000$sfx --rows 32768,8192$sfx)
  timeout 100 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/ln-$dt" --only 'layernorm' \
    --blocks '\[auto(, f32)?\]' "${shapes[@]}" --inductor --deadline 80 > "$OUT/ln-$dt.txt" 2>&1
done
V=()
for c in t32/v8 t32/v8/c4 t64/v8/c2 t32/v4/c8 t16/v8/c8; do
  V+=(--knobs "softmax=COOP=$c,PLACE@m=cut,FAST_EXP=1" --knobs "layernorm=COOP=$c,PLACE@mean=cut" --knobs "rmsnorm=COOP=$c")
done
[ "${QUICK:-0}" = 1 ] ||
  timeout 100 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/short" --only 'softmax|layernorm|rmsnorm' \
    --blocks '\[auto\]' --rows 4097,1000 --inductor --deadline 80 "${V[@]}" > "$OUT/short.txt" 2>&1
sanitize "stdlib/nn.emmy --op layernorm --shape N=7,C=50257 --knobs COOP=t512/v8/c13,PLACE@mean=cut" \
  "stdlib/nn.emmy --op layernorm --shape N=5,C=1001 --knobs COOP=t64/v8/c2,PLACE@mean=cut --dtype f32" > "$OUT/san.txt"
grep -hE "Inductor|copy ceiling|emmy" "$OUT"/ln-f16.txt "$OUT"/ln-f32.txt "$OUT"/short.txt 2>/dev/null | sed 's/check pass.*//' | cut -c1-140
cat "$OUT/san.txt"
