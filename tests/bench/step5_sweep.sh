#!/usr/bin/env bash
# Step 5 knob sweep on the GPU machine, through the harness (same timer, peers in the same run):
# decode split-KV geometries, 64-row CTAs for short sequences, hdim-128 geometries without spills.
# Usage: tests/bench/step5_sweep.sh   (binaries from gpu-carry/, results in $OUT/sweep)
source "$(dirname "$0")/gpu_env.sh"
A="PLACE=fuse,TILE=a:mma_m16n8k16_f16"
F="FAST_EXP=1"
args=()
for k in w1x1/f1x8/k8,STAGE=d2/cp/ring,REDUCE=g8k w1x1/f1x8/k8,STAGE=d3/cp/ring,REDUCE=g8k \
         w1x1/f1x4/k8,STAGE=d4/cp/ring,REDUCE=g8k w1x1/f1x4/k8,STAGE=d4/cp/ring,REDUCE=g16k; do
  args+=(--knobs "sdpa=$A/$k,TILE@e=f128,$F")
done
for op in sdpa sdpa_causal; do
  args+=(--knobs "$op=$A/w4x1/f1x8/k4,STAGE=d3/cp/ring,$F")
  for t in w8x1/f1x8/k8 w4x1/f1x8/k8 w8x1/f1x4/k8; do args+=(--knobs "$op=$A/$t,TILE@e=f128,STAGE=d3/cp/ring,$F"); done
done
python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/sweep" --deadline "${DEADLINE:-240}" \
  --emmy-launch-cap 0.5 --only "${ONLY:-decode|S=1000 D=64|S=1024 D=128|B=4 H=16 S=4096 D=128}" "${args[@]}" 2>&1 |
  grep -vE "^\s*$" | tail -n 150
