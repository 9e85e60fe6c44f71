#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: hand-written forms of the short and
# mid rows (row_variants_probe.cu: the row in registers, exps kept, 32-1024 threads a row) beside
# Emmy's emitted kernels and Inductor (row_variants_probe.py), then the rows harness on layernorm
# knobs (the row cache in registers, COOP=.../r<R>) at the three row shapes. Writes $OUT/probe.txt, $OUT/ln.txt.
source "$(dirname "$0")/gpu_env.sh"
timeout ${PROBE_SECONDS:-300} python3 tests/bench/row_variants_probe.py --emmyc "$B/emmyc" > "$OUT/probe.txt" 2>&1
cat "$OUT/probe.txt" | grep -v Warning
V=()
for c in t32/v8/r4 t64/v8/r2 t128/v8/r1 t256/v8/r4 t512/v8/r2 t512/v8/r13 t1024/v8/r7; do V+=(--knobs "layernorm=COOP=$c,PLACE@mean=cut"); done
timeout ${LN_SECONDS:-150} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/ln" --only 'layernorm' \
  --blocks '\[auto\]' --rows 4097,1000 --rows 32768,8192 --rows 8192,50257 --deadline $(( ${LN_SECONDS:-150} - 30 )) "${V[@]}" > "$OUT/ln.txt" 2>&1
grep -E "emmy|Inductor|copy" "$OUT/ln.txt" | cut -c1-160
