#!/usr/bin/env bash
# The row ops where the auto-schedule trails the blocks (issue 26): emmyc tune measures the whole
# row space (COOP threads and vectors x PLACE x FAST_EXP) at (32768, 8192) and (8192, 50257), to
# size the auto-scheduler's row table from measurements.
source tests/bench/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
export EMMY_TUNE_DB=$OUT/tune.sqlite
for a in "--op softmax --shape N=32768,C=8192" "--op layernorm --shape N=32768,C=8192" \
         "--op rmsnorm --shape N=32768,C=8192" "--op softmax --shape N=8192,C=50257"; do
  echo "== $a"
  timeout 110 "$B/emmyc" tune stdlib/nn.emmy $a --target sm_90 --budget 60s --top 40 2>&1 | grep -v "^\[" | tail -45
done
