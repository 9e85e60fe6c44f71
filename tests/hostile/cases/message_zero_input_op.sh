# expect-exit: 0
# reject-output: E016|is an input|internal error|Aborted
# Guards against the output of an op without inputs being read as its input (E016 "is an input").
printf 'op ramp() -> (y: f32[8]) {\n  y[i] = f32(i) * 0.5;\n}\n' > ramp.emmy
"$EMMYC" check ramp.emmy || exit 1
"$EMMYC" compile ramp.emmy --ir ast | grep -q 'out y: f32\[8\]' || { echo "y is not the output"; exit 1; }
exec "$EMMYC" run ramp.emmy --shape '' --interp
