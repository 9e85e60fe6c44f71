#!/usr/bin/env bash
# Is the matmul ratio to cuBLAS a function of the GPU's state? The matmul rows of the harness
# cold, then after the attention rows (about two minutes of load), with the GPU's clock,
# temperature, power and throttle reasons before and after each. Results in $OUT.
source "$(dirname "$0")/gpu_env.sh"
smi() { echo "$1: $(nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader)"; }
mm() {
  python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/$1" --deadline 100 --emmy-launch-cap 0.5 \
    --only "matmul M=4096|matmul M=8192" > "$OUT/$1.log" 2>&1
  grep -E "cuBLAS|matmul \[(default|k4-d3)\]" "$OUT/$1.log" | cut -c20-125
}
smi start; mm cold; smi "after cold"
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/load" --deadline 120 --emmy-launch-cap 0.5 --only "sdpa" > "$OUT/load.log" 2>&1
smi "after attention load"; mm hot; smi "after hot"
