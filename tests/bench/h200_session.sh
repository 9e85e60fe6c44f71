#!/usr/bin/env bash
# The Step-4 checks on the GPU machine, in one device call: emmyc run --bench on sdpa (the
# acceptance shape, every scalar schedule), the kernel cache, Python vs emmyc, compute-sanitizer
# memcheck and racecheck on the sdpa kernels, the driver unit tests and the gpu ctest binary.
# Binaries come from gpu-carry/ (scripts/gpu_stage.sh); logs go to $OUT.
source "$(dirname "$0")/gpu_env.sh"
export EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=$PWD/python
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
step device; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; git log -1 --format=%H 2>/dev/null
step "emmyc run --bench, sdpa (1,8,4096,64)"
for s in fa1-scalar scalar-baseline ""; do
  "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64 ${s:+--schedule $s} --bench 2>&1
done | tee "$OUT/bench_sdpa.txt"
step "the kernel cache: the same run again"
"$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64 --schedule fa1-scalar --check none 2>&1 | grep compiled
ls "$EMMY_CACHE_DIR" | head
step "emmyc run --json (ragged)"; "$B/emmyc" run stdlib/nn.emmy --op softmax --shape N=4097,C=1000 --bench --json > "$OUT/softmax.json"; head -c 600 "$OUT/softmax.json"
step "python vs emmyc"; python3 tests/python/test_emmy_gpu.py "$B/emmyc" 2>&1 | tee "$OUT/python_vs_emmyc.txt"
for tool in memcheck racecheck; do
  for s in fa1-scalar scalar-baseline; do
    step "compute-sanitizer $tool sdpa $s"
    compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run stdlib/nn.emmy --op sdpa \
      --shape B=1,H=2,S=200,T=77,D=64,E=64 --schedule $s --no-cache > "$OUT/sanitizer_${tool}_$s.log" 2>&1
    echo "exit $?"; tail -3 "$OUT/sanitizer_${tool}_$s.log"
  done
done 2>&1 | tee "$OUT/sanitizer.txt"
step "unit tests: driver"; "$B/emmy_unit_tests" -tc='driver*' 2>&1 | tail -4
if [ -x "$B/emmy_gpu_tests" ]; then
  step "gpu tests"; timeout ${GPU_TESTS_TIMEOUT:-240} "$B/emmy_gpu_tests" 2>&1 | tee "$OUT/gpu_tests.txt" | tail -15
fi
