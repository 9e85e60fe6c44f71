#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: why the long rows with weights
# (layernorm, rmsnorm at (8192, 50257)) trail softmax at the same shape. The three row ops at
# C = 50257 (rows start at every alignment: the peeled path, weights realigned a chunk at a time)
# beside C = 50256 (a multiple of 8: rows and weights aligned), auto-schedule, f16 and f32, with
# Inductor and the copy ceiling; then Nsight Compute's per-instruction stall samples of layernorm's
# kernel at C = 50257 (ncu_source.sh). Writes $OUT/long.txt, $OUT/long/, $OUT/ncu_src_*.csv, $OUT/sass_*.txt.
source "$(dirname "$0")/gpu_env.sh"
timeout ${SECONDS_ROWS:-200} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/long" \
  --only 'softmax|layernorm|rmsnorm' --blocks '\[auto(, f32)?\]' --inductor \
  --rows 8192,50256 --rows 8192,50257 --rows 8192,50256,f32 --rows 8192,50257,f32 \
  --deadline $(( ${SECONDS_ROWS:-200} - 20 )) > "$OUT/long.txt" 2>&1
grep -E "emmy|Inductor|copy" "$OUT/long.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-150
[ "${NCU:-1}" = 1 ] && TARGET=sm_90a timeout ${NCU_SECONDS:-150} bash tests/bench/ncu_source.sh ln50257 stdlib/nn.emmy layernorm N=8192,C=50257
