# expect-exit: 0
# expect-output: ok: 2000 ops
# reject-output: internal error|Aborted|timed out
# Guards against the REPL re-checking every earlier definition at each new one (2,000 pasted
# definitions took 60 s): each definition is checked beside the few it depends on.
python3 - <<'PY'
with open("script.txt", "w") as f:
    f.write("import std.monoids;\n")
    for k in range(2000):
        callee = f"  t[i] = d{k - 1}(x)[i];\n  y[i] = t[i] + 1.0;\n" if k % 5 else "  y[i] = x[i] * 2.0;\n"
        f.write(f"op d{k}(x: f32[N]) -> (y: f32[N]) {{\n{callee}}}\n")
    f.write(":check\n")
PY
start=$(date +%s%N)
"$EMMYC" repl < script.txt > out.txt 2>&1
status=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
tail -n 3 out.txt
echo "2000 definitions in ${ms} ms"
[ "$ms" -lt 5000 ] || { echo "timed out: ${ms} ms"; exit 3; }
exit $status
