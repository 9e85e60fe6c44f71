# expect-exit: 1
# expect-output: loop
# expect-output: ok: 1 op
# reject-output: terminate called|Aborted|Segmentation|core dumped|internal error
# Guards against: REPL `:load` of a file importing a symlink loop aborting the session.
mkdir loop
ln -s b.emmy loop/a.emmy
ln -s a.emmy loop/b.emmy
printf 'import loop.a;\nop f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\n' > main.emmy
printf ':load main.emmy\nop g(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\n:check\n' | "$EMMYC" repl
