#!/usr/bin/env bash
# Writes the CUDA (and the warnings) of every op of stdlib/ and examples/ under every schedule
# block, a matrix of tensor-core and scalar knob lists, and three targets, one file each, into
# DIR: run it before and after a back-end change and `diff -r` the two folders (the split of
# an emitter must leave the CUDA byte-identical, or say where and why it differs).
# Usage: scripts/cuda_snapshot.sh EMMYC DIR
set -uo pipefail
emmyc="$1"
dir="$2"
mkdir -p "$dir"
root="$(cd "$(dirname "$0")/.." && pwd)"
knob_sets=(
  "TILE=a:scalar"
  "TILE=a:scalar,PLACE=cut"
  "COOP=t32/v4"
  "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x8/k4,TILE@e=f64,STAGE=d2/cp/ring"
  "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w2x1/f2x8/k4,STAGE=d3/tma/ring,FAST_EXP=1"
  "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w2x1/f1x8/k8,TILE@e=f128,STAGE=d2/tma/ring"
  "TILE=a:mma_m16n8k16_f16/w2x2/f2x8/k4,STAGE=d3/tma/ring"
  "TILE=a:mma_m16n8k16_f16/w2x2/f4x8/k2,STAGE=d3/tma/ring"
  "TILE=a:mma_m16n8k16_bf16/w2x1/f1x2/k4,STAGE=d2/cp/ring"
  "TILE=a:mma_m16n8k16_f16/w2x2/f2x8/k4"
)
wgmma_sets=(
  "PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w4x1/k4,TILE@e=f64,STAGE=d2/cp/ring"
  "PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d2/tma/ring"
  "TILE=a:wgmma_m64n128k16_f16/w16x1/k4,STAGE=d4/tma/ring"
  "TILE=a:wgmma_m64n64k16_f16/w4x1/k4,STAGE=d2/cp/ring"
)
n=0
for f in "$root"/stdlib/*.emmy "$root"/examples/*.emmy; do
  base="$(basename "$f" .emmy)"
  ops=$("$emmyc" compile "$f" --ir ast 2>/dev/null | sed -n 's/^ *op \([A-Za-z_0-9]*\).*/\1/p' | sort -u)
  for op in $ops; do
    for target in sm_90 sm_90a sm_120; do
      scheds=$(sed -n "s/^schedule $op for $target as \"\([^\"]*\)\".*/\1/p" "$f")
      "$emmyc" compile "$f" --op "$op" --target "$target" --ir cuda > "$dir/$base.$op.$target.block.cu" 2>&1
      for s in $scheds; do
        "$emmyc" compile "$f" --op "$op" --target "$target" --schedule "$s" --ir cuda > "$dir/$base.$op.$target.$s.cu" 2>&1
      done
      sets=("${knob_sets[@]}")
      [ "$target" = sm_90a ] && sets+=("${wgmma_sets[@]}")
      for k in "${sets[@]}"; do
        tag=$(printf '%s' "$k" | md5sum | cut -c1-8)
        { echo "// knobs: $k"; "$emmyc" compile "$f" --op "$op" --target "$target" --knobs "$k" --ir cuda 2>&1; } > "$dir/$base.$op.$target.$tag.cu"
        n=$((n + 1))
      done
    done
  done
done
echo "$n knob points and every block written to $dir"
