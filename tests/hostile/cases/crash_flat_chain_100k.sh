# expect-exit: 1
# expect-output: error\[E004\]
# expect-output: split
# reject-output: internal error|Segmentation|Aborted|core dumped
# Guards against: a flat 100,000-term '+' chain overflowing the stack (the parser loops; the AST is refused with E004) (it is refused with E004).
python3 - <<'PY'
n = 100000
body = " + ".join(["x[i]"] * n)
open("chain.emmy", "w").write("op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + body + ";\n}\n")
PY
exec "$EMMYC" check chain.emmy
