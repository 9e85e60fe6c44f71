#!/usr/bin/env bash
# The Step-5 measurement on the GPU machine, in one device call: the peer harness (every anchor,
# causal and not, decode, matmul, row ops; every named schedule, sm_90a's too), compute-sanitizer
# on the default tensor-core schedules and the wgmma ones (matmul at K = 333: cp.async, and
# K = 392: TMA boxes), and the whole GPU test matrix.
# Binaries from gpu-carry/ (scripts/gpu_stage.sh); results in $OUT. HARNESS_EXTRA: more harness
# arguments (e.g. --knobs OP=KNOBS).
source "$(dirname "$0")/gpu_env.sh"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
step device; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
step harness
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline ${DEADLINE:-300} \
  --emmy-launch-cap 0.5 ${HARNESS_EXTRA:-} > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "torch FA-2|Emmy: sdpa \[default\]|tc-hd128|cuBLAS|matmul \[default\]|decode|torch SDPA|F.layer|F.rms|torch.softmax|(softmax|layernorm|rmsnorm) \[default\]" "$OUT/harness.log" | cut -c1-170 | head -80
step compute-sanitizer
sanitize "stdlib/nn.emmy --op sdpa --target sm_90 --shape B=1,H=2,S=200,T=77,D=64,E=64" \
         "stdlib/nn.emmy --op sdpa_causal --target sm_90 --shape B=1,H=2,S=300,D=64,E=64" \
         "stdlib/nn.emmy --op sdpa --target sm_90 --shape B=1,H=2,S=130,T=300,D=128,E=128 --schedule tc-hd128" \
         "stdlib/nn.emmy --op sdpa --target sm_90 --shape B=2,H=2,S=1,T=700,D=128,E=128 --schedule decode-tc-splitkv" \
         "stdlib/linalg.emmy --op matmul --target sm_90 --shape M=300,N=200,K=333" \
         "stdlib/linalg.emmy --op matmul --target sm_90 --shape M=300,N=200,K=392" \
         "stdlib/nn.emmy --op sdpa --target sm_90a --shape B=1,H=2,S=200,T=77,D=64,E=64" \
         "stdlib/nn.emmy --op sdpa_causal --target sm_90a --schedule wgmma-hd128 --shape B=1,H=2,S=130,D=128,E=128" \
         "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=200,K=333"
step "gpu tests"; timeout ${GPU_TESTS_TIMEOUT:-190} "$B/emmy_gpu_tests" 2>&1 | tee "$OUT/gpu_tests.txt" | grep -E "FAIL|emmy_gpu_tests:|test cases" | tail -12
rm -rf "$EMMY_CACHE_DIR"
