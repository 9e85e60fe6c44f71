# expect-exit: 1
# expect-output: error\[E001\]: unexpected character '\u2400' \(U\+0000\)
# reject-output: internal error|Aborted
# Guards against a NUL byte in the source being printed raw in the diagnostic and its caret line.
printf 'op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] \000+ 1.0;\n}\n' > nul.emmy
"$EMMYC" check nul.emmy > out.txt 2>&1
status=$?
cat out.txt
if python3 -c 'import sys; sys.exit(0 if b"\0" in open("out.txt","rb").read() else 1)'; then echo "a raw NUL was printed"; exit 3; fi
exit $status
