#!/usr/bin/env bash
# Issue 26, item 3 on the GPU machine (device tool): tune stdlib ops at their anchor shapes with
# `emmyc tune --shapes ... --write`, which writes one block a shape class, guarded to its sizes
# (docs/tuning.md). The rewritten stdlib files and the tuning database come back under $OUT:
# copy $OUT/stdlib/*.emmy over stdlib/ here, check them (ctest), and commit them with the
# RESULTS.md entry. One device call holds 10 minutes: pass the ops of this call as arguments
# (default: the row ops), and BUDGET an op, split between its shapes (default 150s).
#
#   bash tests/bench/step11_tune_shapes.sh softmax layernorm rmsnorm
#   bash tests/bench/step11_tune_shapes.sh sdpa sdpa_causal
#   bash tests/bench/step11_tune_shapes.sh matmul matmul_bias_gelu sdpa_gqa
# The search measures the auto-schedule first and then the cost model's best (docs/tuning.md), so
# a BUDGET of 60-90 s an op is enough to meet or beat the auto-schedule at each shape.
source "$(dirname "$0")/gpu_env.sh"
BUDGET=${BUDGET:-150s}
export EMMY_TUNE_DB=$OUT/tune.sqlite
rows='N=4097,C=1000;N=32768,C=8192;N=8192,C=50257'
# The harness's anchors (tests/bench/harness.py: SDPA_ANCHORS, DECODE_SHAPES, MATMUL_SHAPES,
# GEMM_EPILOGUE_SHAPES, GQA_SHAPES, ROW_SHAPES and the long row): each a shape class of its own.
attention='B=1,H=8,S=4096,D=64;B=4,H=16,S=4096,D=64;B=4,H=16,S=4096,D=128;B=2,H=16,S=8192,D=128;B=16,H=16,S=1024,D=128'
decode='B=8,H=32,S=1,T=16384,D=128'
products='M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=1000,N=777,K=1023'
mkdir -p "$OUT/stdlib"
for op in "${@:-softmax layernorm rmsnorm}"; do
  for one in $op; do
    case $one in
      softmax | layernorm | rmsnorm) file=stdlib/nn.emmy shapes=$rows ;;
      sdpa) file=stdlib/nn.emmy shapes="$attention;$decode" ;;
      sdpa_causal) file=stdlib/nn.emmy shapes=$attention ;;
      sdpa_gqa) file=stdlib/nn.emmy shapes='B=2,H=32,KH=4,S=2048,D=128' ;;
      matmul) file=stdlib/linalg.emmy shapes=$products ;;
      matmul_bias_gelu) file=stdlib/linalg.emmy shapes='M=8192,N=8192,K=4096;M=1000,N=777,K=1023' ;;
      *) echo "step11_tune_shapes: no anchor shapes for $one" >&2; continue ;;
    esac
    echo "== $one ($file) at $shapes, $BUDGET in all"
    "$B/emmyc" tune "$file" --op "$one" --target sm_90a --shapes "$shapes" --budget "$BUDGET" --write \
      > "$OUT/tune-$one.txt" 2>&1
    echo "exit $?"; grep -E '^--|^.* (added|replaced) the tuned block|error' "$OUT/tune-$one.txt"
  done
done
cp stdlib/*.emmy "$OUT/stdlib/"
"$B/emmyc" tune --list --db "$EMMY_TUNE_DB" > "$OUT/tune-list.txt" 2>&1
