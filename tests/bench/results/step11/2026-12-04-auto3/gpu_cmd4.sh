#!/usr/bin/env bash
# Run 7: sdpa at head dims 32 and 96 (sm_90a), default block then auto-schedule, after the
# whole-slab covers and wgmma's minimum chunk.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
for s in B=4,H=16,S=4096,D=32 B=4,H=16,S=4096,D=96; do
  for sch in "" "--schedule auto"; do
    echo "-- $s $sch"
    timeout 60 "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape $s --target sm_90a $sch --bench 2>&1 | grep -E "^Emmy|^k_sdpa|result|  ok"
  done
done
