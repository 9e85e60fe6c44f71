# expect-exit: 1
# expect-output: error\[E049\]: 'x' of shape \[4294967296, 4294967296\] has more than 2\^60 elements
# reject-output: Aborted|Segmentation|core dumped|internal error
# Guards against: literal dims 2^32 x 2^32 passing check (the kernel guard 2^32 * 2^32 wraps to 0: the kernel does nothing).
printf 'op g(x: f32[4294967296, 4294967296]) -> (y: f32[4294967296, 4294967296]) { y[n, c] = x[n, c] * 2.0; }\n' > g.emmy
exec "$EMMYC" compile g.emmy --ir cuda
