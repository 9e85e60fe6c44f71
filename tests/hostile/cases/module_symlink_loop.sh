# expect-exit: 1
# expect-output: main\.emmy:1:8: error\[E010\]: cannot read module 'loop'
# expect-output: symbolic links
# reject-output: internal error|Aborted|terminate|filesystem_error
# Guards against an import of a symlink loop being an uncaught exception (exit 134), not a located error.
ln -s loop.emmy loop_b.emmy
rm -f loop.emmy; ln -s loop_b.emmy loop.emmy
printf 'import loop;\nop f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n' > main.emmy
exec "$EMMYC" check main.emmy
