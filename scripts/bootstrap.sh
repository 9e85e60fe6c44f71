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
echo "== emmyc compile examples/sdpa.emmy --op attention --target sm_90a --ir plan (what the default schedule decided)"
build/emmyc compile examples/sdpa.emmy --op attention --target sm_90a --shape B=1,H=8,S=4096,D=64 --ir plan
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== emmyc run examples/sdpa.emmy --op attention --bench (on the GPU, vs the naive two-kernel schedule)"
  build/emmyc run examples/sdpa.emmy --op attention --shape B=1,H=8,S=4096,D=64 --bench
else
  echo "== emmyc run examples/sdpa.emmy --op attention --target sm_90a (no GPU: the SIMT interpreter, vs the float64 reference)"
  build/emmyc run examples/sdpa.emmy --op attention --target sm_90a --shape B=1,H=4,S=300,T=257,D=64,E=64 --interp
fi
