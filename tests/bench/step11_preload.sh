#!/usr/bin/env bash
# Issue 26, item 5 (GPU machine, one call): the chunks a split reads once loaded before its copies
# under COOP=.../r<R> (layernorm's gamma and beta, rmsnorm's weight): the rows at (32768, 8192)
# with two more forms and the short rows under both flushes (step11_dram_rows.sh), then the
# preloading kernels against the float64 reference (NaN-filled outputs) at ragged shapes and
# under compute-sanitizer; PROBE=1 then times the emitted kernels edited by text beside Inductor
# (rows_weights_probe.py --rows: x's loads evict-first, y's stores streamed, the store's clobber
# dropped). $OUT/dram.txt, short-*.txt (step11_dram_rows.sh), checks.txt, probe.txt.
source "$(dirname "$0")/gpu_env.sh"
FORMS=${FORMS:-t256/v8/r4 t512/v4/r4} bash tests/bench/step11_dram_rows.sh
{
check_runs "stdlib/nn.emmy --op layernorm --shape N=4097,C=1000" "stdlib/nn.emmy --op layernorm --shape N=4097,C=1000 --dtype f32" \
  "stdlib/nn.emmy --op rmsnorm --shape N=4097,C=1000" "stdlib/nn.emmy --op rmsnorm --shape N=4097,C=1000 --dtype f32" \
  "stdlib/nn.emmy --op layernorm --shape N=9,C=776" "stdlib/nn.emmy --op layernorm --shape N=9,C=777" \
  "stdlib/nn.emmy --op layernorm --shape N=37,C=8192" "stdlib/nn.emmy --op rmsnorm --shape N=37,C=8192 --dtype f32" \
  "stdlib/nn.emmy --op layernorm --shape N=5,C=1000 --knobs COOP=t32/v4/r8,PLACE@mean=cut --dtype f32"
sanitize "stdlib/nn.emmy --op layernorm --shape N=9,C=1000 --target sm_90a" "stdlib/nn.emmy --op rmsnorm --shape N=5,C=1000 --target sm_90a"
} > "$OUT/checks.txt" 2>&1
cat "$OUT/checks.txt" | cut -c1-160
# LONG=1: layernorm and rmsnorm at (8192, 50256) and (8192, 50257) f16 (aligned rows against the
# peeled path), beside Inductor; its lines to stdout only (the device returns 8 files).
if [ "${LONG:-0}" = 1 ]; then
  (OUT=/tmp/rows-long-out && mkdir -p "$OUT" && rows_harness long "$B/libemmy.so" 150 --inductor --only 'layernorm|rmsnorm' \
    --rows 8192,50256 --rows 8192,50257)
fi
[ "${PROBE:-0}" = 1 ] && timeout 200 python3 tests/bench/rows_weights_probe.py --emmyc "$B/emmyc" --rows 4097,1000 \
  --rows 32768,8192 --reps 60 > "$OUT/probe.txt" 2>&1
grep -v "^$" "$OUT/probe.txt" 2>/dev/null | cut -c1-120
