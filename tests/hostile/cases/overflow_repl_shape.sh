# expect-exit: 1
# expect-output: error: :shape: malformed value 'abc' for size N
# expect-output: error: :shape: size N must be positive, got -5
# expect-output: shape N=4
# reject-output: Aborted|Segmentation|core dumped|internal error
# Guards against: REPL `:shape N=abc` and `:shape N=-5` accepted (they are refused; the shape stays).
printf ':shape N=4\n:shape N=abc\n:shape N=-5\n:shape\n' | "$EMMYC" repl
