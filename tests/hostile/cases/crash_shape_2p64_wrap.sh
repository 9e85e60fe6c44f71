# expect-exit: 2
# expect-output: more than 2\^60
# reject-output: Aborted|Segmentation|core dumped|internal error
# Guards against: `--shape N=4294967296,C=4294967296`, whose element count wraps to 0 in 64 bits (a segfault).
printf 'op g(x: f32[N, C]) -> (y: f32[N, C]) { y[n, c] = x[n, c] * 2.0; }\n' > g.emmy
exec "$EMMYC" run g.emmy --shape N=4294967296,C=4294967296 --interp
