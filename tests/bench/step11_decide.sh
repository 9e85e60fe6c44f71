#!/usr/bin/env bash
# Step 11 on the GPU machine (device tool): how long the auto-scheduler takes to decide, for every
# op of stdlib/ and examples/ (nominal sizes) and for attention, products and rows at anchor sizes
# (median of 5 `emmyc compile --schedule auto --explain-schedule` runs each, the "in N ms" the
# explanation prints); then the auto-schedule against the blocks and the peers at a few anchors.
# Writes $OUT/decide.txt and (unless HARNESS=0) $OUT/harness/.
source "$(dirname "$0")/gpu_env.sh"
median_ms() {  # emmyc compile arguments
  for _ in 1 2 3 4 5; do
    "$B/emmyc" compile "$@" --target sm_90a --schedule auto --ir plan --explain-schedule 2>&1 >/dev/null |
      grep -o 'in [0-9]* ms)' | grep -o '[0-9]*'
  done | sort -n | sed -n 3p
}
{
  echo "# decision times (ms, median of 5), $(nproc) cores, $(date -u +%FT%TZ), commit ${EMMY_COMMIT:-?}"
  for s in B=1,H=8,S=4096,D=64 B=4,H=16,S=4096,D=32 B=4,H=16,S=4096,D=64 B=4,H=16,S=4096,D=96 \
           B=4,H=16,S=4096,D=128 B=16,H=16,S=1024,D=128 B=2,H=16,S=2048,D=256; do
    for op in sdpa sdpa_causal; do echo "$(median_ms stdlib/nn.emmy --op $op --shape $s) $op $s"; done
  done
  for s in M=1000,N=777,K=1023 M=4096,N=4096,K=4096; do
    echo "$(median_ms stdlib/linalg.emmy --op matmul --shape $s) matmul $s"
  done
  for s in N=4097,C=1000 N=32768,C=8192 N=8192,C=50257; do
    for op in softmax layernorm rmsnorm; do echo "$(median_ms stdlib/nn.emmy --op $op --shape $s) $op $s"; done
  done
  # The derived attention backwards (grad of std.nn's ops) at (1, 16, 4096, 128).
  printf 'import std.nn;\nop sdpa_bwd = grad(sdpa, q, k, v);\nop sdpa_causal_bwd = grad(sdpa_causal, q, k, v);\nop sdpa_saved_bwd = grad(sdpa) saving o, m, l;\nop gqa_bwd = grad(sdpa_gqa, q, k, v);\n' > "$OUT/derived.emmy"
  for op in sdpa_bwd sdpa_causal_bwd sdpa_saved_bwd gqa_bwd; do
    shape=B=1,H=16,S=4096,D=128,E=128
    [ $op != sdpa_causal_bwd ] && shape=$shape,T=4096
    [ $op = gqa_bwd ] && shape=$shape,KH=4
    echo "$(median_ms "$OUT/derived.emmy" --op $op --shape $shape) $op (1,16,4096,128)"
  done
  for f in stdlib/*.emmy examples/*.emmy; do
    for op in $("$B/emmyc" compile "$f" --ir ast 2>/dev/null | awk '/^op /{sub(/\(.*/, "", $2); print $2}'); do
      echo "$(median_ms "$f" --op "$op") $f:$op (nominal sizes)"
    done
  done
} > "$OUT/decide.txt" 2>&1
sort -n "$OUT/decide.txt" | tail -5
[ "${HARNESS:-1}" = 0 ] && exit 0  # HARNESS=0: the decision times only
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/harness" --only 'sdpa|matmul' \
  --blocks '\[(default|auto)(, sm_90a)?\]' --sdpa 4,16,4096,128 --sdpa 2,16,2048,256 --matmul 1000,777,1023 \
  > "$OUT/harness.log" 2>&1
tail -30 "$OUT/harness.log"
