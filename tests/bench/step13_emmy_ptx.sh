#!/usr/bin/env bash
# Issue 28 (GPU machine, one call): Emmy's own PTX printer (`--emmy-ptx`: the driver's JIT runs
# ptxas on it; no NVRTC) against the reference at ragged shapes, beside the NVRTC build of the
# same kernels; then both builds timed (`--bench`) on the row ops, and compute-sanitizer on a few.
# $OUT/checks.txt, attention.txt, bench.txt, sanitize.txt. CHECKS=0 or ROWS=0 leave those parts out;
# CHECK_NVRTC=0 checks the --emmy-ptx builds alone.
ls /usr/local/cuda/lib64/libnvJitLink.so* 2>&1 | head -2
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
  "examples/sdpa.emmy --op attention --shape B=1,H=2,S=77,T=93,D=64 --target sm_90"
  "examples/causal_attention.emmy --op causal_self_attention --shape B=1,H=2,S=93,D=64 --target sm_90"
  "stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=77,T=93,D=64"
  "stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=300,T=257,D=128"
  "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=2,S=300,D=64"
  "stdlib/nn.emmy --op sdpa_gqa --shape B=1,H=4,KH=2,S=77,T=93,D=64,E=64"
  "stdlib/nn.emmy --op sdpa_explicit --shape B=1,H=2,S=77,T=93,D=64"
  "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023"
  "stdlib/linalg.emmy --op matmul_bias_relu --shape M=300,N=257,K=129"
  "examples/attention_variants.emmy --op sdpa_causal_bf16 --shape B=1,H=2,S=93,D=64"
  "examples/gqa_attention.emmy --op gqa_decode --shape B=2,H=8,KH=2,T=1001,D=128,E=128"
  "stdlib/nn.emmy --op gelu --shape N=37,C=1001"
  "stdlib/nn.emmy --op gelu --shape N=37,C=1001 --dtype f32"
  "stdlib/linalg.emmy --op matmul_bias_gelu --shape M=300,N=257,K=129"
  "examples/gradients.emmy --op mlp_bwd --shape N=37,C=129,F=77"
)
check_builds=("--emmy-ptx")
[ "${CHECK_NVRTC:-1}" = 1 ] && check_builds+=("")
[ "${CHECKS:-1}" = 1 ] && {
  for run in "${runs[@]}"; do
    for build in "${check_builds[@]}"; do
      timeout 90 "$B/emmyc" run $run --no-cache $build > "$OUT/run.log" 2>&1
      echo "${build:---nvrtc} $run :: exit $? :: $(grep -E 'note: Emmy|error' "$OUT/run.log" | head -2 | tr '\n' ' ')$(tail -1 "$OUT/run.log")"
    done
  done
} > "$OUT/checks.txt" 2>&1
cut -c1-220 "$OUT/checks.txt"
# The attention and matmul kernels timed, and the whole process of one run without any cache (the
# kernel cache off, the driver's JIT cache off): NVRTC's compile against the driver's JIT of Emmy's PTX.
{
  for run in "stdlib/nn.emmy --op sdpa --shape B=4,H=16,S=4096,D=64" "stdlib/nn.emmy --op sdpa --shape B=4,H=16,S=4096,D=128" \
    "stdlib/nn.emmy --op sdpa_causal --shape B=4,H=16,S=4096,D=128" "stdlib/linalg.emmy --op matmul --shape M=4096,N=4096,K=4096"; do
    for build in "--emmy-ptx" ""; do
      timeout 120 "$B/emmyc" run $run --bench --check none --no-cache $build > "$OUT/run.log" 2>&1
      echo "${build:---nvrtc} $run :: $(grep -E '^Emmy  |note: Emmy' "$OUT/run.log" | tr '\n' ' ')"
    done
  done
  for run in "stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=1024,D=64" "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=8,S=1024,D=64" \
    "stdlib/nn.emmy --op softmax --shape N=4097,C=1000" "stdlib/linalg.emmy --op matmul --shape M=4096,N=4096,K=4096"; do
    for build in "--emmy-ptx" ""; do
      for rep in 1 2 3; do
        CUDA_CACHE_DISABLE=1 /usr/bin/time -f "%e" -o "$OUT/time.txt" "$B/emmyc" run $run --check none --no-cache $build > /dev/null 2>&1
        echo "${build:---nvrtc} whole run $run :: $(cat "$OUT/time.txt") s"
      done
    done
  done
} > "$OUT/attention.txt" 2>&1
cut -c1-200 "$OUT/attention.txt"
[ "${ROWS:-1}" = 1 ] && {
  for op in softmax layernorm rmsnorm; do
    for shape in N=4097,C=1000 N=8192,C=8192 N=2048,C=50257; do
      for build in "--emmy-ptx" ""; do
        timeout 120 "$B/emmyc" run stdlib/nn.emmy --op $op --shape $shape --bench --check none $build > "$OUT/run.log" 2>&1
        echo "${build:---nvrtc} $op $shape :: $(grep -E '^Emmy  |compiled in' "$OUT/run.log" | tr '\n' ' ')"
      done
    done
  done
} > "$OUT/bench.txt" 2>&1
cut -c1-200 "$OUT/bench.txt"
sanitize "stdlib/nn.emmy --op softmax --shape N=9,C=777 --emmy-ptx" "stdlib/nn.emmy --op layernorm --shape N=5,C=1001 --emmy-ptx" \
  "stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=77,T=93,D=64 --emmy-ptx" "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=2,S=130,D=64 --emmy-ptx" \
  "examples/sdpa.emmy --op attention --shape B=1,H=2,S=77,T=93,D=64 --target sm_90 --emmy-ptx" > "$OUT/sanitize.txt" 2>&1
cat "$OUT/sanitize.txt"
