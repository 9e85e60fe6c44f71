#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the row schedules the auto-scheduler
# chooses between, measured at the three row shapes, f16 and f32, to rank them (and to fit the cost
# model on: tests/bench/cost_model_rank.py reads the results.json files). Each COOP value is the
# auto-schedule's knobs at (32768, 8192) with its COOP replaced. Then the launch configurations
# Inductor's kernels take at (4097, 1000) and (32768, 8192) f16 (TORCH_LOGS=output_code). Writes $OUT/f16.txt,
# $OUT/f32.txt, their raw folders, $OUT/inductor_code.txt and (NCU=1) $OUT/ncu-rows.txt.
# Parts: PROBE=1 (140 s), DTYPES (default f16 f32, 220 s each), INDUCTOR=1 (100 s), NCU=1 (150 s):
# one device call holds 600 s, so run some parts in one call and the rest on the warm machine.
source "$(dirname "$0")/gpu_env.sh"
# The hand-written forms and Emmy's kernels with 32-bit indices (row_variants_probe) first.
[ "${PROBE:-1}" = 1 ] && timeout ${PROBE_SECONDS:-140} python3 tests/bench/row_variants_probe.py --emmyc "$B/emmyc" \
  --reps 30 --cases ${PROBE_CASES:-0,1,2,5,6} > "$OUT/probe.txt" 2>&1
[ "${PROBE:-1}" = 1 ] && grep -v Warning "$OUT/probe.txt" | cut -c1-120
declare -A COOPS=(
  [f16]="t32/v8/r4 t64/v8/r2 t128/v8/r1 t128/v8/c8 t128/v8/r8 t256/v8/r4 t512/v8/r2 t512/v8/c13 t1024/v8/c7 t256/v8/c25"
  [f32]="t32/v4/c8 t32/v4/r8 t64/v4/r4 t128/v4/r2 t128/v4/c16 t256/v4/r8 t512/v4/r4 t1024/v4/r2 t1024/v4/c13 t512/v4/c25")
for dt in ${DTYPES-f16 f32}; do
  V=()
  for op in softmax layernorm rmsnorm; do
    while read -r k; do V+=(--knobs "$k"); done < <(coop_variants $op $dt N=32768,C=8192 ${COOPS[$dt]})
  done
  sfx=$([ $dt = f32 ] && echo ,f32)
  timeout ${SECONDS_A_DTYPE:-220} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/$dt" \
    --only 'softmax|layernorm|rmsnorm' --blocks '\[auto(, f32)?\]' --inductor \
    --rows 4097,1000$sfx --rows 32768,8192$sfx --rows 8192,50257$sfx --deadline $(( ${SECONDS_A_DTYPE:-220} - 30 )) \
    "${V[@]}" > "$OUT/$dt.txt" 2>&1
  grep -E "emmy|Inductor|copy" "$OUT/$dt.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-150 | tail -5
done
[ "${INDUCTOR:-1}" = 1 ] && TORCH_LOGS=output_code timeout ${INDUCTOR_SECONDS:-100} python3 - > "$OUT/inductor_code.txt" 2>&1 <<'PY'
import torch
for n, c in ((4097, 1000), (32768, 8192)):
    x = torch.randn(n, c, device="cuda", dtype=torch.float16)
    w = torch.randn(c, device="cuda", dtype=torch.float16)
    b = torch.randn(c, device="cuda", dtype=torch.float16)
    fs = {"softmax": lambda x: torch.softmax(x, -1),
          "layernorm": lambda x: torch.nn.functional.layer_norm(x, (c,), w, b),
          "rmsnorm": lambda x: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).half() * w}
    for name, f in fs.items():
        print("=== op", name, n, c, flush=True)
        torch._dynamo.reset()
        torch.compile(f)(x)
        torch.cuda.synchronize()
PY
[ "${INDUCTOR:-1}" = 1 ] && grep -E "=== op|def triton|num_warps|XBLOCK|R0_BLOCK|RBLOCK|tl.load|tl.store|persistent_reduction|@triton_heuristics" "$OUT/inductor_code.txt" | cut -c1-220 | head -150
# Nsight Compute: Emmy's best knob beside Inductor's kernel where Inductor is ahead.
[ "${NCU:-1}" = 1 ] && timeout ${NCU_SECONDS:-150} bash tests/bench/ncu_rows.sh \
  'rmsnorm 32768,8192 PLACE=fuse,COOP=t256/v8/r4' 'rmsnorm 4097,1000 PLACE=fuse,COOP=t32/v8/r4' > /dev/null 2>&1
[ -f "$OUT/ncu-rows.txt" ] && cat "$OUT/ncu-rows.txt"
