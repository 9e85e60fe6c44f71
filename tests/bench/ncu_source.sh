#!/usr/bin/env bash
# Nsight Compute on the GPU machine: where one Emmy kernel's warps stall, per SASS instruction
# (warp-state samples of the SourceCounters section), and the kernel's SASS.
# Usage: [TARGET=sm_90a] tests/bench/ncu_source.sh TAG FILE OP SHAPE [KNOBS]
# (binaries from gpu-carry/, reports in $OUT; the target defaults to sm_90)
source "$(dirname "$0")/gpu_env.sh"
tag=$1 file=$2 op=$3 shape=$4 knobs=${5:-}
export EMMY_CACHE_DIR=/tmp/emmy-kc-$tag
ncu --clock-control none -k "regex:k_${op}_" -c 1 --section SourceCounters --section WarpStateStats \
  --page source --print-source sass --csv \
  "$B/emmyc" run "$file" --op "$op" --shape "$shape" --target "${TARGET:-sm_90}" ${knobs:+--knobs "$knobs"} --check none \
  > "$OUT/ncu_src_$tag.csv" 2> "$OUT/ncu_src_$tag.err"
for c in "$EMMY_CACHE_DIR"/*.cubin; do cuobjdump -sass "$c" >> "$OUT/sass_$tag.txt" 2>&1; done
echo "== $tag: $(wc -l < "$OUT/ncu_src_$tag.csv") source rows, $(grep -c HMMA "$OUT/sass_$tag.txt") HMMA in SASS"
