#!/usr/bin/env bash
# Run 1 (issue 26, item 1): the auto-scheduler on the H200. Its decision times on this machine's
# cores; block-less example ops under it against the naive schedule (emmyc run --bench); then
# stdlib ops' auto-schedule (`[auto]`) against their default blocks and the peers, in one harness run.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
echo "== decision times ($(nproc) cores)"
for a in "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" \
         "stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64" \
         "stdlib/nn.emmy --op softmax --shape N=4097,C=1000"; do
  "$B/emmyc" compile $a --target sm_90a --schedule auto --explain-schedule --ir plan 2>&1 | grep "^auto-schedule"
done
echo "== block-less example ops: the auto-schedule against the naive schedule"
for a in "examples/sliding_window.emmy --shape B=1,H=8,S=4096,D=64 --set w=256" \
         "examples/argmax.emmy --op greedy --shape N=8192,V=50257" \
         "examples/argmax.emmy --op chosen_logprob --shape N=8192,V=50257"; do
  echo "-- $a"
  timeout 60 "$B/emmyc" run $a --target sm_90a --bench --no-cache 2>&1 | tail -12
done
echo "== harness"
timeout 240 python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/auto \
  --only '^(sdpa B|softmax|layernorm|rmsnorm|matmul)' --blocks '\[(default|auto)\]' \
  --sdpa 1,8,4096,64 --sdpa 4,16,4096,128 --matmul 1000,777,1023 --matmul 4096,4096,4096 2>&1 \
  | grep -E "^\[" | sed -E 's/ +\(host [0-9]+\)//'
