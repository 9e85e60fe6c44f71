#!/usr/bin/env bash
# Step 11 on the GPU machine (device tool), one call: ops built from library calls against PyTorch
# (tests/bench/library_calls.py: the MLP, embedding + RMSNorm, the attention block kernel by kernel)
# and `emmyc run`'s check of the attention block at (1,300,512,8,64) on sm_90a and sm_90.
# Writes $OUT/calls.txt.
source "$(dirname "$0")/gpu_env.sh"
export EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=$PWD/python
{
  echo "# $(date -u +%FT%TZ) commit ${EMMY_COMMIT:-?} $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  block=examples/causal_attention.emmy
  for t in sm_90a sm_90; do
    for s in "" "--schedule auto"; do
      timeout 90 "$B/emmyc" run $block --op causal_self_attention --shape B=1,S=300,C=512,H=8,D=64 $s \
        --target $t --no-cache 2>&1 | tail -1 | sed "s|^|block (1,300,512,8,64) $t ${s:-default} :: |"
    done
  done
  timeout 120 python3 tests/bench/library_calls.py --lib "$B/libemmy.so" --case mlp=4096,1024,4096 \
    --case mlp=1000,768,3072 --schedule auto --schedule target=sm_90 2>&1 | grep -v Warning
  timeout 100 python3 tests/bench/library_calls.py --lib "$B/libemmy.so" --case embed=50000,8192,4096 \
    --case embed=32000,4097,1000 --schedule auto --schedule COOP=t256/v8/c2 --schedule COOP=t128/v8/c1 \
    --schedule COOP=t32/v8/c4 2>&1 | grep -v Warning
  timeout 150 python3 tests/bench/library_calls.py --lib "$B/libemmy.so" --case block=4,2048,1024,16,64 \
    --schedule auto 2>&1 | grep -v Warning
} > "$OUT/calls.txt" 2>&1
cat "$OUT/calls.txt"
