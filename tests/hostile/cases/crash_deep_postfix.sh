# expect-exit: 1
# expect-output: error\[E004\]
# reject-output: internal error|Segmentation|Aborted|core dumped
# Guards against: 100,000 postfix operators (x[n].f.f... and x[n][n]...) nesting the AST past the stack.
python3 - <<'PY'
open("field.emmy", "w").write("op g(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n]" + ".f" * 100000 + ";\n}\n")
open("index.emmy", "w").write("op g(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x" + "[n]" * 100000 + ";\n}\n")
PY
"$EMMYC" check field.emmy > field.txt 2>&1
field=$?
"$EMMYC" check index.emmy > index.txt 2>&1
index=$?
grep -o 'error\[E004\]: [a-z0-9 ]*' field.txt index.txt
[ "$field" = 1 ] && [ "$index" = 1 ] && exit 1
exit 3
