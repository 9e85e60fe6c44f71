#!/usr/bin/env bash
# The short rows (4097, 1000) beside Inductor on the GPU machine (issue 26, item 5): the probe's
# edited forms of Emmy's emitted kernels timed twice (probe-short-{1,2}.txt), then every form and
# Inductor's kernel under Nsight Compute, each after three warm launches (ncu-short.txt, the key
# lines in ncu-short-key.txt), and the SASS size of Inductor's kernels (sass-inductor.txt).
# Usage: bash tests/bench/step11_short_rows.sh   (with gpu-carry; see tests/bench/README.md)
source "$(dirname "$0")/gpu_env.sh"
P=tests/bench/rows_weights_probe.py
for i in 1 2; do
  python3 $P --emmyc "$B/emmyc" --short --reps 100 > "$OUT/probe-short-$i.txt" 2>&1
done
ncu --profile-from-start off --clock-control none --section SpeedOfLight --section WarpStateStats \
  --section InstructionStats --section LaunchStats --section Occupancy \
  python3 $P --emmyc "$B/emmyc" --short --profile --dtypes f16 > "$OUT/ncu-short.txt" 2>&1
grep -E "profiled:|^  [a-zA-Z_].*\(|Duration|Executed Instructions  |Registers Per|Stall No Instruction|Stall Long|Warp Cycles Per Issued|Achieved Occupancy|DRAM Throughput" \
  "$OUT/ncu-short.txt" > "$OUT/ncu-short-key.txt"
for f in $(find /tmp/torchinductor_* -name '*.cubin' 2>/dev/null); do
  echo "$f $(cuobjdump -sass "$f" | grep -cE '^\s+/\*[0-9a-f]{4}\*/')"
done > "$OUT/sass-inductor.txt"
cat "$OUT/probe-short-1.txt" "$OUT/ncu-short-key.txt" | head -150
