# expect-exit: 0
# reject-output: error|internal error|Segmentation|Aborted
# Guards against: compile time quadratic in expression length: the longest legal chain (1,000 terms) through every IR level in seconds.
python3 - <<'PY'
open("long.emmy", "w").write("op f(x: f32[N], w: f32[N]) -> (y: f32[N]) {\n  y[i] = "
                             + " + ".join(["x[i] * w[i]"] * 500) + ";\n}\n")
PY
set -e
"$EMMYC" check long.emmy
"$EMMYC" compile long.emmy --ir cuda > long.cu
"$EMMYC" run long.emmy --shape N=64 --interp > run.txt
grep -q ' ok$' run.txt
