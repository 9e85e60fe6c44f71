#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the rows harness at the three row
# shapes in f16 and f32 (step11_rowcache.sh, with Inductor) now that a row cache copies an input's
# rows whole before the first pass, then compute-sanitizer on kernels that do (peeled rows, f32,
# gathered rows, two rows a block). Writes $OUT/f16.txt, $OUT/f32.txt, $OUT/f16/, $OUT/f32/, $OUT/san.txt.
source "$(dirname "$0")/gpu_env.sh"
DTYPES="f16 f32" SECONDS_A_DTYPE=${SECONDS_A_DTYPE:-150} bash tests/bench/step11_rowcache.sh --inductor
sanitize "stdlib/nn.emmy --op softmax --shape N=9,C=50257 --knobs COOP=t512/v8/c13,PLACE@m=cut,FAST_EXP=1" \
  "stdlib/nn.emmy --op layernorm --shape N=5,C=1001 --knobs COOP=t64/v8/c2,PLACE@mean=cut" \
  "stdlib/nn.emmy --op rmsnorm --shape N=7,C=4099 --knobs COOP=t128/v8/c8 --dtype f32" \
  "examples/rmsnorm.emmy --op embed_rmsnorm --shape V=100,N=9,C=1003 --knobs COOP=t128/v8/c1" \
  "stdlib/nn.emmy --op softmax --shape N=33,C=77 --knobs COOP=t32/v4/c1,PLACE@m=cut" > "$OUT/san.txt"
cat "$OUT/san.txt"
