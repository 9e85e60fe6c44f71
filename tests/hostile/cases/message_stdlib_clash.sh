# expect-exit: 1
# expect-output: clash\.emmy:2:4: error\[E011\]: op 'softmax' is already defined by std\.nn
# reject-output: E058|nn\.emmy:[0-9]+:[0-9]+: error|internal error|Aborted
# Guards against a clash with a stdlib op being reported inside stdlib/nn.emmy with cascaded E058s.
printf 'import std.nn;\nop softmax(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n' > clash.emmy
"$EMMYC" check clash.emmy > out.txt 2>&1
status=$?
cat out.txt
[ "$(grep -c 'error\[' out.txt)" = 1 ] || { echo "expected exactly one error"; exit 3; }
exit $status
