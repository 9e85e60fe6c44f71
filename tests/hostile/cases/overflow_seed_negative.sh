# expect-exit: 2
# expect-output: --seed
# reject-output: Aborted|Segmentation|core dumped|internal error|on the SIMT interpreter
# Guards against: `--seed -1` read as 2^64-1 (it is refused).
printf 'op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] * 2.0; }\n' > f.emmy
exec "$EMMYC" run f.emmy --shape N=4 --interp --seed -1
