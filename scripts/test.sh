#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs ctest (unit tests, lit
# tests, stdlib/examples checks, a short fuzz run). .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
emmy_install_deps
emmy_build
# Where the CUDA toolkit is installed, the NVRTC tests must run, not skip.
if [ -e "${CUDA_HOME:-/usr/local/cuda}/lib64/libnvrtc.so" ]; then export EMMY_REQUIRE_NVRTC=1; fi
# Two tests at a time on two cores (the unit tests are three single-threaded parts: unit, unit_matrices,
# unit_tensor_cores).
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
