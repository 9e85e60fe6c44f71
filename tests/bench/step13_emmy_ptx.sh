#!/usr/bin/env bash
# Issue 28 (GPU machine, one call): Emmy's own PTX printer (`--emmy-ptx`: the driver's JIT runs
# ptxas on it; no NVRTC) against the reference at ragged shapes, beside the NVRTC build of the
# same kernels; then both builds timed (`--bench`) on the row ops, and compute-sanitizer on a few.
# $OUT/checks.txt, bench.txt, sanitize.txt.
source "$(dirname "$0")/gpu_env.sh"
runs=(
  "stdlib/nn.emmy --op softmax --shape N=37,C=1000"
  "stdlib/nn.emmy --op softmax --shape N=9,C=777 --dtype f32"
  "stdlib/nn.emmy --op softmax --shape N=5,C=50257"
  "stdlib/nn.emmy --op layernorm --shape N=37,C=1000"
  "stdlib/nn.emmy --op layernorm --shape N=7,C=8191 --dtype f32"
  "stdlib/nn.emmy --op layernorm --shape N=3,C=50257"
  "stdlib/nn.emmy --op rmsnorm --shape N=41,C=777"
  "stdlib/nn.emmy --op rmsnorm --shape N=3,C=50257 --dtype f32"
  "stdlib/nn.emmy --op logsumexp --shape N=37,C=1001"
  "stdlib/nn.emmy --op cross_entropy_mean --shape N=37,C=1001"
  "examples/argmax.emmy --op greedy_masked --shape N=37,V=1001"
  "examples/argmax.emmy --op check_predictions --shape N=37,V=1001"
  "examples/argmax.emmy --op nearest --shape N=37,D=64,K=101"
  "examples/first_max.emmy --op first_max --shape N=37,C=1001"
  "examples/mean_pool.emmy --op masked_mean_pool --shape B=3,T=77,E=96"
  "examples/welford_variance.emmy --op layernorm_welford --shape N=37,C=1001"
  "examples/welford_variance.emmy --op column_variance --shape N=1001,C=37"
  "examples/layernorm.emmy --op add_layernorm --shape N=37,C=1001"
  "examples/rmsnorm.emmy --op rmsnorm_linear --shape N=37,C=257,F=129"
  "examples/softmax.emmy --op softmax_lse --shape N=37,C=1001"
  "examples/sdpa_monoid.emmy --op attention_monoid --shape B=1,H=2,S=77,T=93,D=64"
  "examples/gradients.emmy --op attention_bwd --shape B=1,H=2,S=77,D=64"
  "examples/matmul_epilogue.emmy --op linear_residual_relu --shape M=100,C=129"
  "examples/sdpa.emmy --op attention --shape B=1,H=2,S=77,T=93,D=64 --target sm_80"
  "examples/causal_attention.emmy --op causal_self_attention --shape B=1,H=2,S=93,D=64 --target sm_80"
)
{
  for run in "${runs[@]}"; do
    for build in "--emmy-ptx" ""; do
      timeout 90 "$B/emmyc" run $run --no-cache $build > "$OUT/run.log" 2>&1
      echo "${build:---nvrtc} $run :: exit $? :: $(grep -E 'note: Emmy|error' "$OUT/run.log" | head -2 | tr '\n' ' ')$(tail -1 "$OUT/run.log")"
    done
  done
} > "$OUT/checks.txt" 2>&1
cat "$OUT/checks.txt" | cut -c1-220
{
  for op in softmax layernorm rmsnorm; do
    for shape in N=4097,C=1000 N=8192,C=8192 N=2048,C=50257; do
      for build in "--emmy-ptx" ""; do
        timeout 120 "$B/emmyc" run stdlib/nn.emmy --op $op --shape $shape --bench --check none $build > "$OUT/run.log" 2>&1
        echo "${build:---nvrtc} $op $shape :: $(grep -E '^Emmy  |compiled in' "$OUT/run.log" | tr '\n' ' ')"
      done
    done
  done
} > "$OUT/bench.txt" 2>&1
cat "$OUT/bench.txt" | cut -c1-200
sanitize "stdlib/nn.emmy --op softmax --shape N=9,C=777 --emmy-ptx" "stdlib/nn.emmy --op layernorm --shape N=5,C=1001 --emmy-ptx" \
  "examples/sdpa.emmy --op attention --shape B=1,H=2,S=77,T=93,D=64 --target sm_80 --emmy-ptx" > "$OUT/sanitize.txt" 2>&1
cat "$OUT/sanitize.txt"
