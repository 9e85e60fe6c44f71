#!/usr/bin/env bash
# Issue 26, item 5 (GPU machine, one call): the rows at (32768, 8192), where Emmy and Inductor both
# sit at DRAM's ceiling, with the auto-schedule's COOP replaced by wider forms that hold fewer
# elements a thread (Inductor's kernel there: 512 threads a row, 32 registers) — FORMS, default
# "t512/v8/r2 t1024/v8/r1 t256/v8/r4 t512/v4/r4 t1024/v4/r2" — f16 and f32, beside Inductor and the copy; then the short
# rows (4097, 1000) under both flushes (--flush dirty, the tables' default, and clean), beside
# Inductor. Writes $OUT/dram.txt, $OUT/short-dirty.txt, $OUT/short-clean.txt (and their .json).
source "$(dirname "$0")/gpu_env.sh"
run_harness() {  # tag seconds args...
  local tag=$1 s=$2
  shift 2
  rows_harness "$tag" "$B/libemmy.so" "$s" --inductor "$@"
}
if [ "${DRAM_SECONDS:-300}" -gt 0 ]; then
  variants=()
  for op in softmax layernorm rmsnorm; do
    while read -r v; do variants+=(--knobs "$v"); done < <(coop_variants "$op" f16 N=32768,C=8192 \
      ${FORMS:-t512/v8/r2 t1024/v8/r1 t256/v8/r4 t512/v4/r4 t1024/v4/r2})
  done
  printf '%s\n' "${variants[@]}" | grep -v -- --knobs
  run_harness dram "${DRAM_SECONDS:-300}" --rows 32768,8192 --rows 32768,8192,f32 "${variants[@]}"
fi
short=(--rows 4097,1000 --rows 4097,1000,f32)
[ "${SHORT_SECONDS:-120}" -gt 0 ] && run_harness short-dirty "${SHORT_SECONDS:-120}" "${short[@]}" --flush dirty
[ "${SHORT_SECONDS:-120}" -gt 0 ] && run_harness short-clean "${SHORT_SECONDS:-120}" "${short[@]}" --flush clean
