# expect-exit: 1
# expect-output: error\[E049\]
# reject-output: terminate called|Aborted|Segmentation|core dumped|internal error
# Guards against: one literal dim of 2^62 checking clean and then aborting emmyc run (length_error).
printf 'op g(x: f32[4611686018427387904]) -> (y: f32[4611686018427387904]) { y[n] = x[n] * 2.0; }\n' > g.emmy
exec "$EMMYC" run g.emmy --shape '' --interp
