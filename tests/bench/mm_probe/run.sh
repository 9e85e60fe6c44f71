#!/usr/bin/env bash
# GPU machine: builds the probe driver, times the given cubins (specs as driver.cu's usage) against
# cuBLAS at SHAPE (default 4096^3), and dumps each cubin's SASS into $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/emmy-out}
mkdir -p "$OUT"
nvcc -O2 -arch=sm_90 driver.cu -lcuda -lcublas -o "$OUT/mm_probe" 2>&1 | grep -v "^$" | tail -5
for s in "$@"; do c=${s%%:*}; cuobjdump -sass "$c" > "$OUT/$(basename "${c%.cubin}").sass" 2>&1; done
"$OUT/mm_probe" ${SHAPE:-4096 4096 4096} "$@"
