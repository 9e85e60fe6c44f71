#!/usr/bin/env bash
# Step 8's checks on the GPU machine, in one device call: the GPU schedule matrix (every op, every
# schedule, ordinary and hostile inputs, every element against the reference, outputs NaN-filled),
# the Python API against emmyc, emmyc run on hostile and masked shapes, the harness's quick run
# (NaN-filled outputs, elementwise checks), and --set on the GPU path. Binaries come from
# gpu-carry/ (scripts/gpu_stage.sh); logs go to $OUT.
source "$(dirname "$0")/gpu_env.sh"
export EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=$PWD/python
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
step device; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; echo "build: ${EMMY_COMMIT:-?}"
if [ -x "$B/emmy_gpu_tests" ]; then
  step "gpu tests"; timeout ${GPU_TESTS_TIMEOUT:-300} "$B/emmy_gpu_tests" 2>&1 | tee "$OUT/gpu_tests.txt" | tail -25
fi
step "emmyc run on the GPU: masked rows, --set, a ragged sdpa"
"$B/emmyc" run tests/lit/run/masked_rows.emmy --op strict_causal --shape B=2,H=3,S=200,D=64,E=64 --json 2>&1 | grep -E '"(ok|elements_off|reference_nan|reason)"'
"$B/emmyc" run examples/sliding_window.emmy --shape B=1,H=2,S=300,D=64 --set w=16 2>&1 | tail -3
"$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=333,T=517,D=64,E=64 2>&1 | tail -3
step "python vs emmyc"; timeout 240 python3 tests/python/test_emmy_gpu.py "$B/emmyc" 2>&1 | tee "$OUT/python_vs_emmyc.txt" | tail -8
step "harness --quick"; timeout 240 python3 tests/bench/harness.py --lib "$B/libemmy.so" --quick --out "$OUT/harness" 2>&1 | tail -30
