#!/usr/bin/env bash
# Guards: REPL `:save` over a read-only file replaced it (as root) or failed without saying why it cannot.
# expect-exit: 1
# expect-output: error: cannot write 'ro\.emmy': the file is read-only
# reject-output: internal error|Aborted|Segmentation|saved 1 definition
set -u
echo '// mine, keep it' > ro.emmy
chmod 0444 ro.emmy
printf 'op twice(x: f32[N]) -> (y: f32[N]) { y[n] = x[n] * 2; }\n:save ro.emmy\n' | "$EMMYC" repl
status=$?
[ "$(cat ro.emmy)" = "// mine, keep it" ] || { echo "FAIL: ro.emmy changed"; exit 3; }
exit $status
