#!/usr/bin/env bash
# Guards: `emmyc run --save` over a file-size limit died of SIGXFSZ or left truncated .npy files.
# expect-exit: 1
# expect-output: emmyc: error: cannot write 'saved/x\.npy': File too large
# reject-output: internal error|Aborted|Segmentation|core dumped
set -u
printf 'op twice(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n] * 2;\n}\n' > twice.emmy
( ulimit -f 4; exec "$EMMYC" run twice.emmy --op twice --shape N=4096 --interp --save saved )
status=$?
ls -A saved
[ ! -e saved/x.npy ] || { echo "FAIL: a partial saved/x.npy was left ($(wc -c < saved/x.npy) bytes)"; exit 3; }
[ -z "$(ls -A saved)" ] || { echo "FAIL: files left in saved/"; exit 4; }
exit $status
