#!/usr/bin/env bash
# Guards: `emmyc fmt -i` under a full disk (`ulimit -f 4`) truncated a 12 KB file to 4,096 bytes and exited 0.
# expect-exit: 2
# expect-output: cannot write 'big\.emmy': File too large
# expect-output: the file is left as it was
# reject-output: internal error|Aborted|Segmentation|core dumped
set -u
# 12 KB of ops that need formatting (doubled spaces), so fmt -i must rewrite the file.
python3 - > big.emmy <<'PY'
import sys
i = 0
out = []
while sum(len(l) for l in out) < 12120:
    out.append(f"op  f{i}(x:  f32[N])  ->  (y:  f32[N])  {{  y[n]  =  x[n]  *  2;  }}\n")
    i += 1
sys.stdout.write("".join(out))
PY
cp big.emmy original.emmy
( ulimit -f 4; exec "$EMMYC" fmt -i big.emmy )
status=$?
cmp -s big.emmy original.emmy || { echo "FAIL: big.emmy changed ($(wc -c < big.emmy) bytes)"; exit 3; }
leftovers=$(ls -A | grep -v -x -e big.emmy -e original.emmy -e cache || true)
[ -z "$leftovers" ] || { echo "FAIL: files left behind: $leftovers"; exit 4; }
exit $status
