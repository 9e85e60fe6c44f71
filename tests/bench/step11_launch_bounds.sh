#!/usr/bin/env bash
# Issue 26, item 5 (GPU machine, one call): the rows at (32768, 8192) in Inductor's shape (512
# threads a row, few elements a thread) with the launch bounds asking ptxas for more CTAs an SM
# than the row cache's register floor grants (rows_weights_probe.py --min-blocks: the emitted
# kernel's __launch_bounds__ edited), f16 (COOP=t512/v8/r2) and f32 (t512/v4/r4); then the harness's
# rows with Inductor for the same shapes. $OUT/bounds-f16.txt, bounds-f32.txt, bounds-auto-f16.txt.
source "$(dirname "$0")/gpu_env.sh"
probe() {  # dtype coop
  timeout 200 python3 tests/bench/rows_weights_probe.py --emmyc "$B/emmyc" --rows 32768,8192 --no-inductor --dtypes "$1" \
    --knobs "softmax=PLACE=cut,COOP=$2,FAST_EXP=1" --knobs "layernorm=PLACE=cut,COOP=$2" --knobs "rmsnorm=PLACE=fuse,COOP=$2" \
    --min-blocks 3,4 --reps 40 > "$OUT/bounds-$1.txt" 2>&1
  grep -v "no such form" "$OUT/bounds-$1.txt" | cut -c1-120
}
probe f16 t512/v8/r2
probe f32 t512/v4/r4
# The f16 auto-schedule (t128/v8/r8: 71 registers, 7 CTAs an SM) asked for 8 (63 registers, no spills),
# beside Inductor.
timeout 180 python3 tests/bench/rows_weights_probe.py --emmyc "$B/emmyc" --rows 32768,8192 --dtypes f16 \
  --min-blocks 8 --reps 40 > "$OUT/bounds-auto-f16.txt" 2>&1
grep -v "no such form" "$OUT/bounds-auto-f16.txt" | cut -c1-120
