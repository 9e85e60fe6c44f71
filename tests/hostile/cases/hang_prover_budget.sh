# expect-exit: 0
# expect-output: monoid m: associative (proved|unproved)
# reject-output: refuted|internal error|Aborted|timed out
# Guards against the law prover running unbounded on a large combine (300 terms took 25 s): every
# search has a work budget, and running out is "undecided (budget)", never a wrong verdict.
python3 - <<'PY'
terms = " + ".join(["a.x", "b.x"] + ["0.0 * a.x"] * 300)
open("big.emmy", "w").write(
    "monoid m(x: f32) {\n  identity = 0;\n  combine(a, b) {\n    yield " + terms + ";\n  }\n}\n"
    "op f(v: f32[N]) -> (y: f32) {\n  y = m(i: v[i]).x;\n}\n")
PY
source "$EMMY_SRC/tests/hostile/cpu_ms.sh"
cpu_ms "$EMMYC" check --explain big.emmy > out.txt 2>&1
status=$?
ms=$CPU_MS
grep -E "^monoid m:|undecided|W001" out.txt | cut -c1-300
echo "checked in ${ms} ms of CPU"
[ "$ms" -lt 2000 ] || { echo "timed out: ${ms} ms of CPU"; exit 3; }
exit $status
