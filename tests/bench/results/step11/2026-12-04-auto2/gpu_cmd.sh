#!/usr/bin/env bash
# Run 2 of the auto-scheduler (issue 26): after the cost model's partial-wave, value-column and
# register fixes and the staged candidate search. Decision times on this machine's cores, the
# sanitizer on auto-schedules at ragged shapes, then sm_90 and sm_90a auto-schedules ([auto],
# [auto, sm_90a]) beside the default blocks and the peers, in one harness run.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
echo "== decision times ($(nproc) cores)"
for a in "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" \
         "stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64" \
         "stdlib/nn.emmy --op sdpa --shape B=4,H=16,S=4096,D=128" \
         "stdlib/nn.emmy --op sdpa --shape B=2,H=16,S=2048,D=256" \
         "stdlib/nn.emmy --op softmax --shape N=4097,C=1000"; do
  "$B/emmyc" compile $a --target sm_90a --schedule auto --explain-schedule --ir plan 2>&1 | grep "^auto-schedule"
done
echo "== compute-sanitizer memcheck: auto-schedules at ragged shapes"
for a in "stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=257,D=128" \
         "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=2,S=200,D=64" \
         "stdlib/nn.emmy --op sdpa --shape B=1,H=1,S=130,D=256" \
         "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023"; do
  echo "-- $a"
  timeout 90 compute-sanitizer --tool memcheck "$B/emmyc" run $a --target sm_90a --schedule auto --no-cache 2>&1 | tail -4
done
echo "== harness"
timeout 400 python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/auto \
  --only '^(sdpa B|softmax|layernorm|rmsnorm|matmul)' --blocks '\[(default|auto)(, sm_90a)?\]' \
  --sdpa 1,8,4096,64 --sdpa 4,16,4096,128 --sdpa 16,16,1024,128 --sdpa 2,16,2048,256 \
  --matmul 1000,777,1023 --matmul 4096,4096,4096 2>&1 \
  | grep -E "^\[" | sed -E 's/ +\(host [0-9]+\)//'
