#!/usr/bin/env bash
# Run 6: decision times after the merged search rounds and the lowering speed-ups (this machine's
# cores), and sdpa at head dims 32 and 96 under the default block and the auto-schedule.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
echo "== decision times ($(nproc) cores)"
for a in "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" \
         "stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64" \
         "stdlib/nn.emmy --op sdpa --shape B=4,H=16,S=4096,D=128" \
         "stdlib/nn.emmy --op sdpa_causal --shape B=4,H=16,S=4096,D=128" \
         "stdlib/nn.emmy --op sdpa --shape B=2,H=16,S=2048,D=256" \
         "stdlib/nn.emmy --op softmax --shape N=32768,C=8192" \
         "stdlib/nn.emmy --op layernorm --shape N=32768,C=8192"; do
  for i in 1 2 3; do
    "$B/emmyc" compile $a --target sm_90a --schedule auto --explain-schedule --ir plan 2>&1 | grep "^auto-schedule" | grep -o "in [0-9]* ms"
  done | tr '\n' ' '; echo " <- $a"
done
echo "== sdpa at head dims 32 and 96, sm_90a: the default block, then the auto-schedule"
for s in B=4,H=16,S=4096,D=32 B=4,H=16,S=4096,D=96; do
  for sch in "" "--schedule auto"; do
    echo "-- $s $sch"
    timeout 60 "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape $s --target sm_90a $sch --bench 2>&1 | tail -8
  done
done
