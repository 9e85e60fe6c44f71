#!/usr/bin/env bash
# Step 6's acceptance runs on the GPU machine: `emmyc tune --blocks reference` (the winner from the
# enumerated space alone; the op's hand-written blocks measured after the search for comparison)
# on sdpa at the two anchor shapes, then matmul, softmax, layernorm and rmsnorm, each with
# --write into a copy of its stdlib file; then `emmyc run --bench` of every written block, to
# show it reproduces its recorded time. Binaries from gpu-carry/; logs and copies in $OUT.
# Usage: [BUDGET=10m TARGET=sm_90] tests/bench/tune_session.sh [sdpa64|sdpa128|causal64|matmul|gelu|rows]...
# BUDGET_ROWS (each row op) and BUDGET_MATMUL override BUDGET for those ops, so that one call can
# run the row ops and matmul with their own budgets.
source "$(dirname "$0")/gpu_env.sh"
export EMMY_TUNE_DB=$OUT/tune.sqlite
export EMMY_CACHE_DIR=/tmp/emmy-tune-kernels  # hundreds of cubins: not under $OUT, which comes back
BUDGET=${BUDGET:-10m} TARGET=${TARGET:-sm_90}
cp stdlib/nn.emmy stdlib/linalg.emmy "$OUT/"
tune() {  # file op shape [budget]
  local BUDGET=${4:-$BUDGET}
  local log="$OUT/tune_$2_$(echo "$3" | tr ',=' '_-')_$TARGET.log"
  echo "== emmyc tune $1 --op $2 --shape $3 --target $TARGET --budget $BUDGET ($(date -u +%H:%M:%S))"
  ( time "$B/emmyc" tune "$OUT/$1" --op "$2" --shape "$3" --target "$TARGET" --budget "$BUDGET" --blocks reference \
      --write ) > "$log" 2>&1
  grep -vE "^\s*$" "$log" | grep -vE "^\[rung" | tail -22
  echo "-- emmyc run --bench (the written block)"
  "$B/emmyc" run "$OUT/$1" --op "$2" --shape "$3" --target "$TARGET" --bench 2>&1 | grep -E "^Emmy|^k_|ok$|FAIL"
}
[ $# -gt 0 ] || set -- sdpa64 sdpa128 matmul rows
for what in "$@"; do
  case $what in
    sdpa64) tune nn.emmy sdpa B=1,H=8,S=4096,D=64 ;;
    sdpa128) tune nn.emmy sdpa B=4,H=16,S=4096,D=128 ;;
    sdpa128s) tune nn.emmy sdpa B=16,H=16,S=1024,D=128 ;;
    causal64) tune nn.emmy sdpa_causal B=4,H=16,S=4096,D=64 ;;
    sdpa64b1) tune nn.emmy sdpa B=1,H=8,S=4096,D=64 ;;
    matmul) tune linalg.emmy matmul M=4096,N=4096,K=4096 "${BUDGET_MATMUL:-}" ;;
    gelu) tune linalg.emmy matmul_bias_gelu M=8192,N=8192,K=4096 "${BUDGET_MATMUL:-}" ;;
    rows) for op in softmax layernorm rmsnorm; do tune nn.emmy $op N=32768,C=8192 "${BUDGET_ROWS:-}"; done ;;
  esac
done
"$B/emmyc" tune --list
cp /tmp/emmyc-tune-*.log "$OUT/" 2>/dev/null  # the workers' stderr
