#!/usr/bin/env bash
# Guards: REPL `:save` through a symlink under a file-size limit destroyed the old file (and the link).
# expect-exit: 1
# expect-output: error: cannot write 'link\.emmy': File too large
# expect-output: the file is left as it was
# reject-output: internal error|Aborted|Segmentation|core dumped
set -u
mkdir real
python3 -c "print('// the old file, 12 KB\n' + 'op keep(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n];\n}\n' * 200, end='')" > real/saved.emmy
cp real/saved.emmy original.emmy
ln -s real/saved.emmy link.emmy
# A session whose formatted text is over 4 KiB, then :save over the old file.
python3 - > script.repl <<'PY'
for i in range(120):
    print(f"op f{i}(x: f32[N]) -> (y: f32[N]) {{ y[n] = x[n] * {i + 2}; }}")
print(":save link.emmy")
PY
( ulimit -f 4; exec "$EMMYC" repl < script.repl > out.txt 2>&1 )
status=$?
grep -v '^defined ' out.txt
[ -L link.emmy ] || { echo "FAIL: link.emmy is no longer a symlink"; exit 3; }
cmp -s real/saved.emmy original.emmy || { echo "FAIL: the old file changed ($(wc -c < real/saved.emmy) bytes)"; exit 4; }
[ -z "$(ls -A real | grep -v -x saved.emmy)" ] || { echo "FAIL: files left in real/: $(ls -A real)"; exit 5; }
exit $status
