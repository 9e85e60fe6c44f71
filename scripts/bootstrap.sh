#!/usr/bin/env bash
# One command on a fresh Debian machine: install what is missing, build everything,
# and run the main example.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
emmy_install_deps
emmy_build
echo "== emmyc check examples/sdpa.emmy"
build/emmyc check examples/sdpa.emmy && echo "ok: no errors"
echo "== emmyc compile examples/sdpa.emmy --ir ast"
build/emmyc compile examples/sdpa.emmy --ir ast
