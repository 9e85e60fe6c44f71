# Run 2 (binaries with the lazy API proofs and PERSIST in the tuner's space): issue 28's cold start
# again; the tuner (--blocks reference) at the two shapes furthest behind cuDNN, 4 and 3 minutes.
source tests/bench/gpu_env.sh
echo "== cold start"; timeout 100 python3 tests/bench/cold_start.py --lib "$B/libemmy.so" --runs 3 2>&1 | grep -v Warning
TARGET=sm_90a BUDGET=4m timeout 290 bash tests/bench/tune_session.sh sdpa128s
TARGET=sm_90a BUDGET=3m timeout 230 bash tests/bench/tune_session.sh sdpa64b1
