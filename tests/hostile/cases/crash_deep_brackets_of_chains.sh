# expect-exit: 1
# expect-output: error\[E004\]: expression nested more than
# reject-output: internal error|Segmentation|Aborted|core dumped
# Guards against: 150 bracket levels (under the 200-bracket limit) of 100-term chains, 15,000 levels of AST.
python3 - <<'PY'
e = "x[i]"
for _ in range(150):
    e = "(" + " + ".join([e] + ["x[i]"] * 99) + ")"
open("deep.emmy", "w").write("op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + e + ";\n}\n")
PY
exec "$EMMYC" check deep.emmy
