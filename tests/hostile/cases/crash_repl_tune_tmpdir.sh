# expect-exit: 1
# expect-output: error: :tune writes the session to a temporary file and cannot
# expect-output: TMPDIR is
# expect-output: shape N=8
# reject-output: terminate called|Aborted|Segmentation|core dumped|internal error
# Guards against: REPL `:tune` with TMPDIR a file (not a directory) aborting the session (filesystem_error).
touch not_a_dir
printf 'op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] * 2.0; }\n:shape N=8\n:tune f --dry-run\n:shape\n' |
  TMPDIR="$WORK/not_a_dir" "$EMMYC" repl
