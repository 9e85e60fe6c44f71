# expect-exit: 0
# expect-output: check exited [12]
# expect-output: loop/a
# reject-output: terminate called|Aborted|Segmentation|core dumped|internal error
# Guards against: `import loop.a;` of a symlink loop aborting emmyc check (an uncaught filesystem_error, exit 134).
mkdir loop
ln -s b.emmy loop/a.emmy
ln -s a.emmy loop/b.emmy
printf 'import loop.a;\nop f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\n' > main.emmy
"$EMMYC" check main.emmy
status=$?
echo "check exited $status"
[ "$status" = 1 ] || [ "$status" = 2 ]
