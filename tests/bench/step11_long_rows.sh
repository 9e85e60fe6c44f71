#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the rows with weights whose rows
# start at every offset mod 8 (layernorm, rmsnorm at (8192, 50257): a peeled chunk reads gamma[c]
# realigned), and the kernels specialized to a run's size class (lower::specialize_sizes). The
# row ops, auto-schedule, f16 and f32: with another build's libemmy.so (OTHER_LIB, e.g.
# build-other/libemmy.so with its ANTLR runtime beside it, carried: the widest-access
# realignment of commit 3281e50, which `git revert c4789a3` (branch realign-widest) restores),
# with this build's shape-generic kernels (EMMY_SPECIALIZE=0), and with this build's default
# (specialized), beside Inductor and the copy ceiling; then Nsight Compute's memory traffic of the
# three ops' kernels at C = 50257 (ncu_rows_memory.sh: held by DRAM or by L2). Writes
# $OUT/long-*.txt, $OUT/long-*.json, $OUT/ncu-mem.txt. Parts' seconds: OTHER_SECONDS, GENERIC_SECONDS (0: skipped; GENERIC_ROWS: its
# --rows), NEW_SECONDS, NCU_SECONDS (NCU=0: skipped); ALIGNED= leaves out C = 50256; HARNESS_ARGS
# goes to every harness run (e.g. '--flush clean').
source "$(dirname "$0")/gpu_env.sh"
rows() {  # tag lib extra-args...
  local tag=$1 lib=$2
  shift 2
  rows_harness "long-$tag" "$lib" "${SECONDS_ROWS:-150}" "$@"
}
long=(--rows 8192,50257 --rows 8192,50257,f32)
short=(--rows 4097,1000 --rows 4097,1000,f32 --rows 32768,8192 --rows 32768,8192,f32)
[ -n "${OTHER_LIB:-}" ] && SECONDS_ROWS=${OTHER_SECONDS:-100} rows other "$OTHER_LIB" "${long[@]}"
[ "${GENERIC_SECONDS:-130}" -gt 0 ] && EMMY_SPECIALIZE=0 SECONDS_ROWS=${GENERIC_SECONDS:-130} rows generic "$B/libemmy.so" \
  ${GENERIC_ROWS:-"${long[@]}" "${short[@]}"}
SECONDS_ROWS=${NEW_SECONDS:-200} rows new "$B/libemmy.so" --inductor "${long[@]}" "${short[@]}" ${ALIGNED---rows 8192,50256 --rows 8192,50256,f32}
[ "${NCU:-1}" = 1 ] && timeout ${NCU_SECONDS:-100} bash tests/bench/ncu_rows_memory.sh N=8192,C=50257 f16 | tee "$OUT/ncu-mem.txt"
