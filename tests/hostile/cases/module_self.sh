# expect-exit: 0
# reject-output: E011|defined twice|internal error|Aborted
# Guards against a file importing itself being loaded twice (E011 with both carets on one line).
printf 'import self;\nop f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n' > self.emmy
exec "$EMMYC" check self.emmy
