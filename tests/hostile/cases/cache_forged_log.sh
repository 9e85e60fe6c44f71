#!/usr/bin/env bash
# Guards: a cache entry's .log forged to claim 4,096 spill bytes was believed: the tuner pruned every candidate.
# The cache is reached through `emmyc tune --dry-run`, which builds every candidate with NVRTC (no GPU needed, NVRTC required,
# as for tests/lit/tune/dry_run.emmy).
# expect-exit: 0
# expect-output: NVRTC: [1-9][0-9]* candidates build, spilling at most 64 bytes \([0-9.]+ s\); pruned: none
# reject-output: spills|internal error|Aborted|Segmentation
set -u
printf 'op twice(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n] * 2;\n}\n' > twice.emmy
tune() { "$EMMYC" tune twice.emmy --op twice --shape N=64 --target sm_90 --dry-run --threads 2; }
tune > first.txt 2>&1 || { cat first.txt; exit 3; }
logs=$(ls cache/*.log 2>/dev/null | wc -l)
[ "$logs" -gt 0 ] || { echo "FAIL: no cache entries in \$EMMY_CACHE_DIR"; exit 4; }
sed -i 's/ 0 bytes spill stores/ 4096 bytes spill stores/; s/ 0 bytes spill loads/ 4096 bytes spill loads/' cache/*.log
[ "$(grep -l '4096 bytes spill stores' cache/*.log | wc -l)" = "$logs" ] || { echo "FAIL: the forgery did not apply"; exit 5; }
tune > second.txt 2>&1
status=$?
cat second.txt
# The entries were recompiled and rewritten: no forged .log is left.
! grep -q '4096 bytes spill' cache/*.log || { echo "FAIL: a forged .log is still in the cache"; exit 6; }
exit $status
