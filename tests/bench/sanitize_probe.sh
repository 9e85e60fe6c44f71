#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) on `emmyc run` argument lists (RUNS,
# ';'-separated), each run under its own timeout, after each list once against the float64
# reference: a line per run and tool with the exit status and the tool's summary.
# Usage: RUNS='stdlib/linalg.emmy --op matmul --shape M=300,N=257,K=333;...' tests/bench/sanitize_probe.sh
source "$(dirname "$0")/gpu_env.sh"
IFS=';' read -r -a runs <<< "${RUNS:?RUNS: emmyc run argument lists, ';'-separated}"
check_runs "${runs[@]}"
for tool in memcheck racecheck synccheck; do
  for run in "${runs[@]}"; do
    timeout "${SANITIZER_TIMEOUT:-90}" compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run $run \
      --target sm_90a --no-cache > "$OUT/san.log" 2>&1
    echo "$tool exit $? :: $run :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
  done
done
rm -rf "$EMMY_CACHE_DIR"
