# Sourced by the GPU-machine scripts of tests/bench: the repository root as the working folder,
# the carried binaries (B), the output folder (OUT, the device tool's $OUT), the stdlib and a
# kernel cache outside OUT (the device tool brings back at most 8 files from OUT: thousands of
# cached kernels there crowded out a tuning run's rewritten stdlib).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=$PWD/gpu-carry
OUT=${OUT:-/tmp/emmy-out}
mkdir -p "$OUT"
export EMMY_STDLIB=$PWD/stdlib EMMY_CACHE_DIR=${EMMY_CACHE_DIR:-/tmp/emmy-kernel-cache}
[ -f "$B/COMMIT" ] && export EMMY_COMMIT="$(cat "$B/COMMIT")"
# compute-sanitizer memcheck, racecheck and synccheck on each `emmyc run` argument list given (one
# string each, split on spaces): a line per run with the exit status and the tool's summary.
sanitize() {
  local tool run
  for tool in memcheck racecheck synccheck; do
    for run in "$@"; do
      compute-sanitizer --tool $tool --error-exitcode 9 "$B/emmyc" run $run --no-cache > "$OUT/san.log" 2>&1
      echo "$tool exit $? :: $run :: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san.log" | tail -1)"
    done
  done
}
# Each `emmyc run` argument list given (one string each, split on spaces) on sm_90a against the
# reference, under a 60-s timeout: its last line (the comparison), or that it timed out.
check_runs() {
  local run
  for run in "$@"; do
    timeout 60 "$B/emmyc" run $run --target sm_90a --no-cache 2>&1 | tail -1 | sed "s|^|$run :: |"
    [ "${PIPESTATUS[0]}" = 124 ] && echo "$run :: TIMED OUT (a hang?)"
  done
}
# The auto-schedule's knobs for OP at SHAPE (sm_90a, DTYPE) with its COOP replaced by each FORM (a
# COOP value, optionally followed by more knobs: t256/v8/c7/k4,PERSIST=1): the harness's --knobs
# values, a line each.
coop_variants() {  # op dtype shape forms...
  local op=$1 dt=$2 shape=$3 auto f coop rest
  shift 3
  auto=$("$B/emmyc" compile stdlib/nn.emmy --op "$op" --target sm_90a --ir cost --schedule auto --dtype "$dt" \
    --shape "$shape" 2>&1 | grep -o 'auto-schedule [^ ]*' | cut -d' ' -f2)
  for f in "$@"; do
    coop=${f%%,*} rest=${f#"$coop"}
    if [[ $auto == *COOP=* ]]; then echo "$op=$(echo "$auto" | sed "s|COOP=[^,]*|COOP=$coop|")$rest"
    else echo "$op=$auto,COOP=$coop$rest"; fi
  done
}
# The harness on the row ops' auto-schedules (the f16 and f32 blocks) through `lib`, under a
# timeout of `seconds`, with HARNESS_ARGS and the arguments given (a later --only or --flush wins):
# $OUT/TAG.txt and $OUT/TAG.json (the device tool brings back 8 files), its Emmy, Inductor and copy
# lines to stdout.
rows_harness() {  # tag lib seconds args...
  local tag=$1 lib=$2 s=$3
  shift 3
  timeout "$s" python3 tests/bench/harness.py --lib "$lib" --out "/tmp/rows-$tag" --only 'softmax|layernorm|rmsnorm' \
    --blocks '\[auto(, f32)?\]' ${HARNESS_ARGS:-} --deadline $(( s - 20 )) "$@" > "$OUT/$tag.txt" 2>&1
  cp "/tmp/rows-$tag/results.json" "$OUT/$tag.json"
  echo "== $tag ($lib)"
  grep -E "emmy|Inductor|copy" "$OUT/$tag.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-160
}
