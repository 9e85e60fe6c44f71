# expect-exit: 1
# expect-output: error\[E063\]: integer constant arithmetic overflows i64: 9223372036854775807 \* 9223372036854775807
# reject-output: Aborted|Segmentation|core dumped|internal error
# Guards against: the i64 constant MAX*MAX emitted as signed-overflowing CUDA (undefined behaviour).
printf 'op f(x: i64[N]) -> (y: i64[N]) { y[i] = x[i] + 9223372036854775807 * 9223372036854775807; }\n' > f.emmy
exec "$EMMYC" compile f.emmy --ir cuda
