# expect-exit: 1
# expect-output: error\[E005\]: name 'f+\.\.\.' is 100000 characters long; names have at most 255
# reject-output: malloc|Aborted|Segmentation|core dumped|internal error
# Guards against: a 100,000-character op name reaching NVRTC as a kernel name (`malloc(): invalid size`, abort).
python3 -c "open('long.emmy', 'w').write('op ' + 'f' * 100000 + '(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\n')"
exec "$EMMYC" compile long.emmy --ir ptx
