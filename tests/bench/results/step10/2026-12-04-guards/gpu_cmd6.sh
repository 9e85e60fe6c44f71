#!/usr/bin/env bash
# Run 6 (binaries of the hd256 commit): stdlib sdpa's hd256 blocks (f16, guarded past head dim 128)
# under compute-sanitizer at a ragged shape, then default_choice.py with (2,16,2048,256) and cuDNN.
source tests/bench/gpu_env.sh
sanitize "stdlib/nn.emmy --op sdpa --target sm_90a --shape B=1,H=2,S=200,T=170,D=256,E=200" \
  "stdlib/nn.emmy --op sdpa_causal --target sm_90a --shape B=1,H=2,S=201,D=160,E=256"
EMMY_LIBRARY=$B/libemmy.so python3 tests/bench/results/step10/2026-12-04-guards/default_choice.py 2>&1
