#!/usr/bin/env bash
# Issue 23 (Step 8 part 2) on the GPU machine, in one device call: the GPU schedule matrix (every
# op, every schedule; ordinary inputs and every hostile kind: large, subnormal, NaN, -inf rows
# leading, trailing, over half of each row and whole), the masked-rows check against torch,
# Python against emmyc, and the harness (softmax, layernorm, sdpa, matmul against their peers in
# the same run: max.NaN and the exp-of-difference guard must cost nothing measurable). Binaries
# come from gpu-carry/ (scripts/gpu_stage.sh); logs go to $OUT.
source "$(dirname "$0")/gpu_env.sh"
export EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=$PWD/python
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
step device; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "build: ${EMMY_COMMIT:-?}"
step "masked rows vs torch"; timeout 240 python3 tests/python/test_masked_rows_gpu.py 2>&1 | tee "$OUT/masked_rows.txt" | grep -v "^ok" | tail -20
if [ -x "$B/emmy_gpu_tests" ]; then
  step "gpu tests"; timeout ${GPU_TESTS_TIMEOUT:-420} "$B/emmy_gpu_tests" 2>&1 | tee "$OUT/gpu_tests.txt" | tail -25
fi
step "python vs emmyc"; timeout 240 python3 tests/python/test_emmy_gpu.py "$B/emmyc" 2>&1 | tee "$OUT/python_vs_emmyc.txt" | tail -4
step "harness"; timeout ${HARNESS_TIMEOUT:-420} python3 tests/bench/harness.py --lib "$B/libemmy.so" ${HARNESS_ARGS:-} --out "$OUT/harness" 2>&1 | tail -40
step done
