#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs ctest (unit tests, lit
# tests, stdlib/examples checks, a short fuzz run). .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
emmy_install_deps
emmy_build
ctest --test-dir build --output-on-failure "$@"
