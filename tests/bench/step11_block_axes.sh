#!/usr/bin/env bash
# Step 11 on the GPU machine (device tool), one call: examples/causal_attention.emmy's attention
# block against PyTorch now that its output projection (a sum over heads and head dims) runs on the
# tensor cores, and `emmyc run`'s check of the block where it failed before the check's RMS term;
# compute-sanitizer memcheck on a two-axis contraction by TMA at ragged sizes. Writes $OUT/block_axes.txt.
source "$(dirname "$0")/gpu_env.sh"
export EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=$PWD/python
{
  echo "# $(date -u +%FT%TZ) commit ${EMMY_COMMIT:-?} $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  for shape in 4,2048,1024,16,64 2,1000,256,4,64; do
    timeout 150 python3 tests/bench/attention_block.py --lib "$B/libemmy.so" --shape $shape --schedule auto \
      --schedule sm_90-block 2>&1 | tail -6
  done
  block=examples/causal_attention.emmy
  check_runs "$block --op causal_self_attention --shape B=2,S=1000,C=256,H=4,D=64 --knobs PLACE=fuse,PLACE@q=cut,PLACE@sdpa_causal1_o=cut,TILE=a:wgmma_m64n64k16_f16/w4x1/k4,STAGE=d2/tma/ring" \
    "$block --op causal_self_attention --shape B=2,S=1000,C=256,H=4,D=64 --schedule auto" \
    "$block --op causal_self_attention --shape B=1,S=300,C=512,H=8,D=64"
  # memcheck only (the call's device time is short): the boxes' h coordinates and the chunks past D.
  compute-sanitizer --tool memcheck --error-exitcode 9 "$B/emmyc" run tests/lit/lower/contraction_axes.emmy --op proj \
    --shape B=2,H=3,S=70,D=40,C=72 --target sm_90a --no-cache \
    --knobs PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w4x1/k4,STAGE=d2/tma/ring > "$OUT/san.log" 2>&1
  echo "memcheck exit $? :: $(grep -E 'ERROR SUMMARY' "$OUT/san.log" | tail -1) :: $(grep -E ' ok| FAIL' "$OUT/san.log" | tail -1)"
} > "$OUT/block_axes.txt" 2>&1
cat "$OUT/block_axes.txt"
