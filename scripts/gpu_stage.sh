#!/usr/bin/env bash
# Copies what the GPU machine needs from a build folder into gpu-carry/ (ignored by git): emmyc,
# libemmy.so with the ANTLR runtime beside it, and the test binaries. Pass gpu-carry to the
# device tool's `carry`; on the GPU machine run scripts/gpu_session.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rm -rf gpu-carry && mkdir -p gpu-carry
cp "$build/emmyc" "$build/tests/emmy_unit_tests" gpu-carry/
[ -x "$build/tests/emmy_gpu_tests" ] && cp "$build/tests/emmy_gpu_tests" gpu-carry/
cp -L "$build/libemmy.so" gpu-carry/libemmy.so
cp -L "$build/libemmy.so" gpu-carry/libemmy.so.0
cp -L "$build"/libantlr4-runtime.so.* gpu-carry/
# The commit the build is of (the GPU machine's copy of .git can be stale): gpu_env.sh exports it.
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include stdlib tests python 2>/dev/null || echo ' (with uncommitted changes)')" > gpu-carry/COMMIT
du -sh gpu-carry
