# expect-exit: 0
# expect-output: y\s+\S+\s+\S+\s+\S+\s+0\s+ok
# reject-output: error|internal error|Segmentation|Aborted
# Guards against: each binary '-' of a chain counted as a nesting level (300 terms: a spurious E004).
python3 - <<'PY'
open("sub.emmy", "w").write("op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + " - ".join(["x[i]"] * 300) + ";\n}\n")
PY
exec "$EMMYC" run sub.emmy --shape N=8 --interp
