#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine: the row cache in registers (COOP=.../r<R>) checked against
# the reference at ragged shapes (emmyc run, NaN-filled outputs) and under compute-sanitizer
# (memcheck, racecheck, synccheck): the vector body, the peeled body (rows at every offset), the
# streamed body (rows longer than the cache), f32, two rows a block. Writes $OUT/check.txt, $OUT/san.txt.
source "$(dirname "$0")/gpu_env.sh"
check_runs "stdlib/nn.emmy --op softmax --shape N=4097,C=1000 --knobs COOP=t32/v8/r4,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op softmax --shape N=33,C=1001 --knobs COOP=t32/v8/r4,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op softmax --shape N=9,C=1025 --knobs COOP=t32/v8/r4,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op layernorm --shape N=77,C=1003 --knobs COOP=t64/v8/r2,PLACE@mean=cut" \
  "stdlib/nn.emmy --op layernorm --shape N=31,C=8191 --knobs COOP=t256/v8/r4,PLACE@mean=cut --dtype f32" \
  "stdlib/nn.emmy --op rmsnorm --shape N=65,C=999 --knobs COOP=t128/v8/r1" \
  "stdlib/nn.emmy --op rmsnorm --shape N=17,C=50257 --knobs COOP=t512/v8/r13" \
  "stdlib/nn.emmy --op logsumexp --shape N=19,C=4099 --knobs COOP=t128/v8/r4,FAST_EXP=1" > "$OUT/check.txt"
cat "$OUT/check.txt"
sanitize "stdlib/nn.emmy --op softmax --shape N=33,C=1001 --knobs COOP=t32/v8/r4,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op layernorm --shape N=5,C=1003 --knobs COOP=t64/v8/r2,PLACE@mean=cut" \
  "stdlib/nn.emmy --op rmsnorm --shape N=9,C=8190 --knobs COOP=t256/v8/r4 --dtype f32" \
  "stdlib/nn.emmy --op softmax --shape N=7,C=1000 --knobs COOP=t32/v8/r4,PLACE=cut,FAST_EXP=1" > "$OUT/san.txt"
cat "$OUT/san.txt"
