# expect-exit: 0
# reject-output: error|internal error|Segmentation|Aborted
# Guards against: lowering quadratic in expression depth: ten fused statements of 1,000 terms (one 10,000-deep expression; was over 6 minutes and 24 GB) and the longest legal chain, in seconds.
python3 - <<'PY'
lines = ["op f(x: f32[N]) -> (y: f32[N]) {", "  t0[i] = x[i];"]
for k in range(1, 11):
    lines.append(f"  t{k}[i] = t{k - 1}[i] + " + " + ".join(["x[i]"] * 998) + ";")
lines += ["  y[i] = t10[i];", "}"]
open("fused.emmy", "w").write("\n".join(lines) + "\n")
open("long.emmy", "w").write("op f(x: f32[N], w: f32[N]) -> (y: f32[N]) {\n  y[i] = "
                             + " + ".join(["x[i] * w[i]"] * 999) + ";\n}\n")
PY
set -e
"$EMMYC" compile fused.emmy --ir cuda > fused.cu
grep -q 'extern "C" __global__' fused.cu
"$EMMYC" compile long.emmy --ir cuda > long.cu
"$EMMYC" run long.emmy --shape N=64 --interp > run.txt
grep -q ' ok$' run.txt
