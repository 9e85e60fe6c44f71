#!/usr/bin/env bash
# Run 2 (binaries 13cc56f): the guarded stdlib defaults on the GPU. emmy.load's sdpa with no
# schedule named at head dims 64-256 (default_choice.py: every element against float64); then the
# harness's attention and matmul anchors with each op's default beside the blocks it now picks,
# cuDNN / cuBLAS in the same process. (As run, the --blocks pattern began '^default', which
# matched no label: the defaults themselves ran in run 3.)
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
EMMY_LIBRARY=$B/libemmy.so python3 tests/bench/results/step10/2026-12-04-guards/default_choice.py 2>&1
check_runs "stdlib/linalg.emmy --op matmul --shape M=1000,N=777,K=1023" "stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=300,T=257,D=100,E=100" \
  "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=2,S=301,D=96,E=80"
python3 tests/bench/harness.py --lib $B/libemmy.so --out $OUT/anchors \
  --only '^(sdpa B=(1 H=8 S=4096|4 H=16 S=4096|2 H=16 S=8192|16 H=16 S=1024) |matmul M=)' \
  --blocks '\[default|hd128-pingpong|hd64-w12|hd64-w16|tile-128x128' 2>&1 | grep -E "^\[" | sed -E 's/knobs [^ ]+,/knobs ...,/'
