# expect-exit: 1
# expect-output: error: cannot read '.*': it is a directory
# expect-output: defined op f
# reject-output: terminate called|Aborted|Segmentation|core dumped|internal error
# Guards against: REPL `:load /tmp` (a directory) aborting the session (ios_base::failure from the read).
mkdir d.emmy
printf ':load %s\n:load d.emmy\nop f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\n' "$WORK" | "$EMMYC" repl
