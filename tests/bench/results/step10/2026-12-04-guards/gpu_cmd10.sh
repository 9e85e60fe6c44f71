#!/usr/bin/env bash
# Run 10: Python's bind() compiles the block its sizes take (emmy_op_prepare): second_block.py's
# first timed launch of the large shape should no longer hold NVRTC's time; then the Python GPU
# test (every element equal to emmyc's run), with defaults of guarded blocks at head dims 128 and
# 256 and matmul's 128 x 192.
source tests/bench/gpu_env.sh
EMMY_LIBRARY=$B/libemmy.so timeout 200 python3 tests/bench/results/step10/2026-12-04-guards/second_block.py 2>&1
EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=python timeout 300 python3 tests/python/test_emmy_gpu.py $B/emmyc 2>&1; echo "exit $?"
