# expect-exit: 0
# reject-output: E011|defined twice|internal error|Aborted
# Guards against a diamond import (main -> a, b; a, b -> common) loading common.emmy twice (E011).
mkdir -p lib
cat > lib/common.emmy <<'X'
op twice(x: f32[N]) -> (y: f32[N]) {
  y[i] = x[i] * 2.0;
}
X
printf 'import common;\nop fa(x: f32[N]) -> (y: f32[N]) {\n  y[i] = twice(x)[i];\n}\n' > lib/a.emmy
printf 'import common;\nop fb(x: f32[N]) -> (y: f32[N]) {\n  y[i] = twice(x)[i] + 1.0;\n}\n' > lib/b.emmy
printf 'import a;\nimport b;\nop main_op(x: f32[N]) -> (y: f32[N]) {\n  y[i] = fa(x)[i] + fb(x)[i];\n}\n' > lib/main.emmy
# `import lib.common` from outside reaches the same file under another name.
printf 'import lib.main;\nimport lib.common;\nop top(x: f32[N]) -> (y: f32[N]) {\n  y[i] = twice(x)[i];\n}\n' > top.emmy
"$EMMYC" check lib/main.emmy || exit 1
exec "$EMMYC" check top.emmy
