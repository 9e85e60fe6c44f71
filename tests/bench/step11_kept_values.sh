#!/usr/bin/env bash
# Issue 26, item 5 (GPU machine, one call): the rows table beside Inductor and the copy
# (step11_long_rows.sh, the auto-schedules as emitted since a4f3e44: lanes in either order where
# the combine is symmetric, softmax's exps kept in registers under r<R>), then the kept-value
# kernels against the reference and under compute-sanitizer; PROBE=1 first runs the short rows'
# probe (rows_weights_probe.py --short). $OUT/rows.txt, checks.txt (probe-short-kept.txt).
source "$(dirname "$0")/gpu_env.sh"
[ "${PROBE:-0}" = 1 ] && python3 tests/bench/rows_weights_probe.py --emmyc "$B/emmyc" --short --reps 100 \
  > "$OUT/probe-short-kept.txt" 2>&1
GENERIC_SECONDS=0 NCU=0 NEW_SECONDS=${NEW_SECONDS:-220} ALIGNED= bash tests/bench/step11_long_rows.sh > "$OUT/rows.txt" 2>&1
{
check_runs "stdlib/nn.emmy --op softmax --shape N=37,C=1000" "stdlib/nn.emmy --op softmax --shape N=9,C=777" \
  "stdlib/nn.emmy --op softmax --shape N=5,C=2000 --dtype f32" "stdlib/nn.emmy --op softmax --shape N=4097,C=1000" \
  "tests/lit/lower/row_cache.emmy --op masked_norm --shape N=7,C=203 --knobs COOP=t32/v4/r2" \
  "tests/lit/lower/row_cache.emmy --op renamed --shape N=7,C=203 --knobs COOP=t32/v4/r2"
sanitize "stdlib/nn.emmy --op softmax --shape N=9,C=777 --target sm_90a" "stdlib/nn.emmy --op softmax --shape N=5,C=1000 --target sm_90a"
} > "$OUT/checks.txt" 2>&1
cat "$OUT"/probe-short-kept.txt "$OUT/rows.txt" "$OUT/checks.txt" 2>/dev/null | cut -c1-150
