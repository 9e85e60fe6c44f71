# Issue 25's other rows (bf16 head dims 96 and 256, causal GQA, decode, GEMM + bias + GELU) with the
# stdlib's (and examples/attention_variants.emmy's) sm_90a blocks.
source tests/bench/gpu_env.sh
echo "=== harness $(date -u +%T)"
timeout 150 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 110 \
  --emmy-launch-cap 0.5 --only '^(sdpa_bf16|gqa|decode|gemm_bias_gelu)' --blocks 'sm_90a' \
  > "$OUT/harness.log" 2>&1
echo "exit $?"
rm -rf "$OUT/kernel-cache"
