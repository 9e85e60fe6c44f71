#!/usr/bin/env bash
# Run 4 (binaries 13cc56f): second_block.py.
source tests/bench/gpu_env.sh
EMMY_LIBRARY=$B/libemmy.so timeout 300 python3 tests/bench/results/step10/2026-12-04-guards/second_block.py 2>&1
