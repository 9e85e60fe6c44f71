# expect-exit: 0
# reject-output: E011|defined twice|internal error|Aborted
# Guards against an import cycle back to the main file (main -> a -> main) loading main twice.
printf 'import a;\nop from_main(x: f32[N]) -> (y: f32[N]) {\n  y[i] = from_a(x)[i];\n}\n' > main.emmy
printf 'import main;\nop from_a(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] + 1.0;\n}\n' > a.emmy
"$EMMYC" check main.emmy || exit 1
"$EMMYC" check a.emmy || exit 1
exec "$EMMYC" run main.emmy --op from_main --shape N=8 --interp
