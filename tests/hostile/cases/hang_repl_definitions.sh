# expect-exit: 0
# expect-output: ok: 1000 ops
# reject-output: internal error|Aborted|timed out
# Guards against the REPL re-checking every earlier definition at each new one (2,000 pasted
# definitions took 60 s, so about 15 s for 1,000): each definition is checked beside the few it depends
# on (1,000: about 2.5 s of CPU; 2,000: 5 s, tests/bench/RESULTS.md).
python3 - <<'PY'
with open("script.txt", "w") as f:
    f.write("import std.monoids;\n")
    for k in range(1000):
        callee = f"  t[i] = d{k - 1}(x)[i];\n  y[i] = t[i] + 1.0;\n" if k % 5 else "  y[i] = x[i] * 2.0;\n"
        f.write(f"op d{k}(x: f32[N]) -> (y: f32[N]) {{\n{callee}}}\n")
    f.write(":check\n")
PY
source "$EMMY_SRC/tests/hostile/cpu_ms.sh"
cpu_ms "$EMMYC" repl < script.txt > out.txt 2>&1
status=$?
ms=$CPU_MS
tail -n 3 out.txt
echo "1000 definitions in ${ms} ms of CPU"
[ "$ms" -lt 6000 ] || { echo "timed out: ${ms} ms"; exit 3; }
exit $status
