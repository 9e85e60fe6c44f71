# expect-exit: 0
# expect-output: y .* ok
# reject-output: internal error|Aborted|Segmentation|timed out
# Guards against lets substituted by copying: each let uses the previous one three times, so 18
# lets were 3^18 nodes (over 60 s and 22 GB); a large let is now computed once.
python3 - <<'PY'
body = ["  let a0 = s * 0.5;\n"]
for k in range(1, 40):
    body.append(f"  let a{k} = a{k-1} * a{k-1} * 0.5 + a{k-1};\n")
open("lets.emmy", "w").write("op f(x: f32[N], s: f32) -> (y: f32[N]) {\n" + "".join(body) + "  y[i] = x[i] * a39;\n}\n")
PY
source "$EMMY_SRC/tests/hostile/cpu_ms.sh"
cpu_ms "$EMMYC" compile lets.emmy --ir cuda > out.cu || exit 1
ms=$CPU_MS
echo "40 lets lowered to CUDA in ${ms} ms of CPU"
[ "$ms" -lt 2000 ] || { echo "timed out: ${ms} ms of CPU"; exit 3; }
exec "$EMMYC" run lets.emmy --shape N=16 --set s=0.01 --interp
