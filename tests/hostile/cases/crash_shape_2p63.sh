# expect-exit: 2
# expect-output: emmyc: error: --shape: tensor x of op g would hold N=9223372036854775807 x C=2 elements, more than 2\^60
# reject-output: terminate called|Aborted|Segmentation|core dumped|internal error
# Guards against: `--shape N=9223372036854775807,C=2` (2^64 elements) aborting emmyc run (length_error, exit 134).
printf 'op g(x: f32[N, C]) -> (y: f32[N, C]) { y[n, c] = x[n, c] * 2.0; }\n' > g.emmy
exec "$EMMYC" run g.emmy --shape N=9223372036854775807,C=2 --interp
