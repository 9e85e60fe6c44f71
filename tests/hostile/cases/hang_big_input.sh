# expect-exit: 1
# expect-output: big\.emmy:1:1: error\[E006\]: source file is larger than 16 MiB
# reject-output: internal error|Aborted|bad_alloc|Killed
# Guards against a huge input being parsed at ~30 bytes of memory per byte (200 MB took 6.1 GB):
# past 16 MiB it is a located error, in bounded memory (here under a 1 GiB address-space limit).
python3 - <<'PY'
line = "op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] + 1.0 + 2.0 + 3.0 + 4.0 + 5.0; }\n"
with open("big.emmy", "w") as f:
    f.write(line * (40 * 1024 * 1024 // len(line)))
PY
ulimit -v 1048576
exec "$EMMYC" check big.emmy
