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
echo "== emmyc compile examples/sdpa.emmy --op attention --ir cuda (the FA-1 kernel: one fused pass, 64 channels in registers)"
build/emmyc compile examples/sdpa.emmy --op attention --schedule fa1-scalar --ir cuda
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== emmyc run examples/sdpa.emmy --op attention --bench (on the GPU, vs the two-kernel Move 0)"
  build/emmyc run examples/sdpa.emmy --op attention --schedule fa1-scalar --shape B=1,H=8,S=4096,D=64 --bench
else
  echo "== emmyc run examples/sdpa.emmy --op attention (no GPU: the SIMT interpreter, vs the float64 reference)"
  build/emmyc run examples/sdpa.emmy --op attention --schedule fa1-scalar --shape B=1,H=4,S=128,T=128,D=64,E=64
fi
