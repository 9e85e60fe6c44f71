#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the rows harness at the three row
# shapes in f16 and f32 (step11_rowcache.sh, with Inductor) after the scalar tier's fewer
# instructions an element (a row's divisor inverted once under FAST_EXP, exp below the row's own
# maximum without a test an element, max and min of 16-bit floats carried in f32, no has-flags
# where the identity changes no share; gamma[c] of a peeled row as realigned vectors), Nsight Compute on softmax (4097, 1000) and layernorm
# (8192, 50257) beside Inductor, then compute-sanitizer on kernels that take the new forms.
# Writes $OUT/f16.txt, $OUT/f32.txt, $OUT/f16/, $OUT/f32/, $OUT/ncu-*.txt, $OUT/san.txt.
source "$(dirname "$0")/gpu_env.sh"
DTYPES="f16 f32" SECONDS_A_DTYPE=${SECONDS_A_DTYPE:-150} bash tests/bench/step11_rowcache.sh --inductor
timeout 150 bash tests/bench/ncu_rows.sh 'softmax 4097,1000 PLACE=cut,COOP=t32/v8/c4,FAST_EXP=1' \
  'layernorm 8192,50257 PLACE=cut,COOP=t512/v8/c13' > "$OUT/ncu.log" 2>&1
grep -E "^==|Duration|DRAM Throughput|L1/TEX Cache|Compute \(SM\)|Executed Ipc|Issued Warp|Registers Per" \
  "$OUT/ncu-rows.txt" 2>/dev/null | head -60
sanitize "stdlib/nn.emmy --op softmax --shape N=33,C=1000 --knobs COOP=t32/v8/c4,PLACE=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op softmax --shape N=9,C=50257 --knobs COOP=t512/v8/c13,PLACE@m=cut,FAST_EXP=1 --dtype f32" \
  "stdlib/nn.emmy --op layernorm --shape N=5,C=1001 --knobs COOP=t64/v8/c2,PLACE@mean=cut" \
  "stdlib/nn.emmy --op layernorm --shape N=7,C=50257 --knobs COOP=t512/v8/c13,PLACE@mean=cut" \
  "stdlib/nn.emmy --op rmsnorm --shape N=9,C=4099 --knobs COOP=t128/v8 --dtype f32" \
  "stdlib/nn.emmy --op logsumexp --shape N=7,C=4099 --knobs COOP=t128/v8,FAST_EXP=1" > "$OUT/san.txt"
cat "$OUT/san.txt"
