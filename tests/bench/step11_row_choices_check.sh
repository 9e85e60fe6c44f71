#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine, one call: the auto-scheduler's row choices after r<R> went up
# to eight chunks and ties went to the least compute — their kernels against the reference at
# ragged shapes (emmyc run, NaN-filled outputs), two under compute-sanitizer (memcheck, racecheck,
# synccheck), then the auto-schedule against Inductor and the copy ceiling at the three row shapes,
# f16 and f32 (the rows harness, no knob rows). Writes $OUT/check.txt, $OUT/san.txt, $OUT/f16.txt,
# $OUT/f32.txt and their raw folders.
source "$(dirname "$0")/gpu_env.sh"
check_runs "stdlib/nn.emmy --op softmax --shape N=100,C=8191 --knobs COOP=t128/v8/r8,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op layernorm --shape N=33,C=8193 --knobs COOP=t128/v8/r8,PLACE=cut" \
  "stdlib/nn.emmy --op rmsnorm --shape N=65,C=8192 --knobs COOP=t128/v8/r8,PLACE=fuse" \
  "stdlib/nn.emmy --op rmsnorm --shape N=65,C=1001 --knobs COOP=t32/v4/r8,PLACE=fuse --dtype f32" \
  "stdlib/nn.emmy --op softmax --shape N=31,C=8190 --knobs COOP=t256/v4/r8,PLACE=cut,FAST_EXP=1 --dtype f32" \
  "stdlib/nn.emmy --op layernorm --shape N=17,C=999 --knobs COOP=t32/v4/r8,PLACE=cut --dtype f32" \
  "stdlib/nn.emmy --op softmax --shape N=4097,C=1000 --schedule auto --dtype f32" \
  "stdlib/nn.emmy --op rmsnorm --shape N=3,C=8192 --schedule auto --dtype f32" > "$OUT/check.txt"
cat "$OUT/check.txt"
sanitize "stdlib/nn.emmy --op softmax --shape N=5,C=8191 --knobs COOP=t128/v8/r8,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op rmsnorm --shape N=9,C=1001 --knobs COOP=t32/v4/r8,PLACE=fuse --dtype f32" > "$OUT/san.txt"
cat "$OUT/san.txt"
for dt in ${DTYPES-f16 f32}; do
  sfx=$([ $dt = f32 ] && echo ,f32)
  timeout ${SECONDS_A_DTYPE:-150} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/$dt" \
    --only 'softmax|layernorm|rmsnorm' --blocks '\[auto(, f32)?\]' --inductor \
    --rows 4097,1000$sfx --rows 32768,8192$sfx --rows 8192,50257$sfx --deadline $(( ${SECONDS_A_DTYPE:-150} - 20 )) \
    > "$OUT/$dt.txt" 2>&1
  grep -E "emmy|Inductor|copy" "$OUT/$dt.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-150
done
