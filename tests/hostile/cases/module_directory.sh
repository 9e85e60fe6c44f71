# expect-exit: 1
# expect-output: main\.emmy:1:8: error\[E010\]: cannot read module 'sub'.*directory
# reject-output: internal error|Aborted|terminate
# Guards against an import naming a directory (sub.emmy/) being taken for a missing or readable file.
mkdir sub.emmy
printf 'import sub;\nop f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n' > main.emmy
exec "$EMMYC" check main.emmy
