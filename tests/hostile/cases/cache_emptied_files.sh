#!/usr/bin/env bash
# Guards: an emptied .cubin/.ptx/.log in the kernel cache was a hit (an empty CUBIN loaded, a report of 0 registers).
# The cache is reached through `emmyc tune --dry-run`, which builds every candidate with NVRTC (no GPU needed, NVRTC required,
# as for tests/lit/tune/dry_run.emmy).
# expect-exit: 0
# expect-output: every entry recompiled
# reject-output: FAIL|internal error|Aborted|Segmentation
set -u
printf 'op twice(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n] * 2;\n}\n' > twice.emmy
tune() { "$EMMYC" tune twice.emmy --op twice --shape N=64 --target sm_90 --dry-run --threads 2 2>&1 | grep -v '^twice on\|^NVRTC:'; }
tune > first.txt
entries=$(ls cache/*.cubin 2>/dev/null | wc -l)
[ "$entries" -gt 0 ] || { echo "FAIL: no cache entries in \$EMMY_CACHE_DIR"; exit 3; }
for f in cache/*.cubin cache/*.ptx cache/*.log; do : > "$f"; done
tune > second.txt
# The same candidates with the same registers: the emptied report was not believed.
diff first.txt second.txt || { echo "FAIL: the dry run differs after the entries were emptied"; exit 4; }
for f in cache/*.cubin; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || { echo "FAIL: $f is not a CUBIN ($(wc -c < "$f") bytes)"; exit 5; }
done
for f in cache/*.ptx cache/*.log; do [ -s "$f" ] || { echo "FAIL: $f is still empty"; exit 6; }; done
echo "every entry recompiled ($entries)"
