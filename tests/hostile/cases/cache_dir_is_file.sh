#!/usr/bin/env bash
# Guards: EMMY_CACHE_DIR naming a regular file was ignored silently; now one warning says the cache is off, and the build still runs.
# The cache is reached through `emmyc tune --dry-run`, which builds every candidate with NVRTC (no GPU needed, NVRTC required,
# as for tests/lit/tune/dry_run.emmy).
# expect-exit: 0
# expect-output: emmyc: warning\[W070\]: the kernel cache is off: '.*/not-a-dir' is not a directory; compiling without it
# expect-output: NVRTC: [1-9][0-9]* candidates build
# reject-output: FAIL|internal error|Aborted|Segmentation
set -u
printf 'op twice(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n] * 2;\n}\n' > twice.emmy
echo 'a file, not a directory' > not-a-dir
EMMY_CACHE_DIR=$WORK/not-a-dir "$EMMYC" tune twice.emmy --op twice --shape N=64 --target sm_90 --dry-run --threads 2 > out.txt 2>&1
status=$?
cat out.txt
[ "$(grep -c 'kernel cache is off' out.txt)" = 1 ] || { echo "FAIL: not exactly one warning"; exit 4; }
[ "$(cat not-a-dir)" = 'a file, not a directory' ] || { echo "FAIL: not-a-dir changed"; exit 5; }
exit $status
