# expect-exit: 0
# expect-output: y .* ok
# reject-output: internal error|Aborted|Segmentation|timed out
# Guards against lowering nested op calls by copying: each op calls the previous twice, once on the
# other's result, so copied expressions grew doubly exponentially (5 levels: over 60 s and 1.6 GB).
python3 - <<'PY'
lines = ["op f0(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] * 0.25;\n}\n"]
for k in range(1, 10):
    lines.append(f"op f{k}(x: f32[N]) -> (y: f32[N]) {{\n  a[i] = f{k-1}(x)[i];\n  y[i] = f{k-1}(a)[i] + a[i];\n}}\n")
open("nested.emmy", "w").write("".join(lines))
PY
source "$EMMY_SRC/tests/hostile/cpu_ms.sh"
cpu_ms "$EMMYC" compile nested.emmy --op f9 --ir cuda > out.cu || exit 1
ms=$CPU_MS
echo "9 levels lowered to CUDA in ${ms} ms of CPU ($(grep -c __global__ out.cu) kernels)"
[ "$ms" -lt 2000 ] || { echo "timed out: ${ms} ms of CPU"; exit 3; }
exec "$EMMYC" run nested.emmy --op f9 --shape N=64 --interp
