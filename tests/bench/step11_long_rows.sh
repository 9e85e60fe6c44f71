#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the long rows with weights
# (layernorm, rmsnorm at (8192, 50257)), whose rows start at every offset mod 8, so a peeled chunk
# reads gamma[c] realigned. The row ops at C = 50257 with an earlier build's libemmy.so
# (OLD_LIB, e.g. gpu-carry/old/libemmy.so: the earlier realignment) and with this build's, then
# C = 50256 (a multiple of 8: everything aligned), auto-schedule, f16 and f32, with Inductor and
# the copy ceiling; then Nsight Compute's per-instruction stall samples of layernorm's kernel at
# C = 50257 (ncu_source.sh). Writes $OUT/long-*.txt, $OUT/long-*/, $OUT/ncu_src_*.csv, $OUT/sass_*.txt.
source "$(dirname "$0")/gpu_env.sh"
rows() {  # tag lib extra-args...
  local tag=$1 lib=$2; shift 2
  timeout ${SECONDS_ROWS:-150} python3 tests/bench/harness.py --lib "$lib" --out "$OUT/long-$tag" \
    --only 'softmax|layernorm|rmsnorm' --blocks '\[auto(, f32)?\]' "$@" \
    --deadline $(( ${SECONDS_ROWS:-150} - 20 )) > "$OUT/long-$tag.txt" 2>&1
  echo "== $tag ($lib)"
  grep -E "emmy|Inductor|copy" "$OUT/long-$tag.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-150
}
[ -n "${OLD_LIB:-}" ] && rows old "$OLD_LIB" --rows 8192,50257 --rows 8192,50257,f32
rows new "$B/libemmy.so" --inductor --rows 8192,50257 --rows 8192,50257,f32 --rows 8192,50256 --rows 8192,50256,f32
[ "${NCU:-1}" = 1 ] && TARGET=sm_90a timeout ${NCU_SECONDS:-150} bash tests/bench/ncu_source.sh ln50257 stdlib/nn.emmy layernorm N=8192,C=50257
