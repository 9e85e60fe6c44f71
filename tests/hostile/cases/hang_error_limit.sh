# expect-exit: 1
# expect-output: too many errors emitted, stopping now: 29980 more not shown
# reject-output: internal error|Aborted
# Guards against 30,000 duplicate lets printing 30,000 errors (and 200,000 lines): 20 are shown, then one line.
python3 - <<'PY'
with open("dups.emmy", "w") as f:
    f.write("op f(x: f32[N]) -> (y: f32[N]) {\n")
    f.write("  let s = 1.0;\n" * 30001)
    f.write("  y[i] = x[i] * s;\n}\n")
PY
"$EMMYC" check dups.emmy > out.txt 2>&1
status=$?
tail -n 4 out.txt
n=$(grep -c 'error\[E015\]' out.txt)
[ "$n" = 20 ] || { echo "expected 20 errors shown, got $n"; exit 3; }
# --error-limit 0 shows every one; --error-limit 3 three.
n=$("$EMMYC" --error-limit 3 check dups.emmy 2>&1 | grep -c 'error\[E015\]')
[ "$n" = 3 ] || { echo "--error-limit 3 showed $n"; exit 3; }
exit $status
