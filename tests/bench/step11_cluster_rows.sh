#!/usr/bin/env bash
# Issue 26, item 5, on the GPU machine (device tool), one call: the long rows (8192, 50257), f16 and
# f32, with each row split between the CTAs of a cluster (COOP=.../k<K>) and with CTAs that walk
# the rows (PERSIST=1), against the auto-schedule, Inductor and the copy ceiling in the same
# process; then Nsight Compute's memory traffic of layernorm's kernel under one of them (NCU=0:
# skipped). Each variant is the auto-schedule's knobs with its COOP replaced (and PERSIST added).
# Before them, the new kernels against the reference and under compute-sanitizer at small ragged
# shapes (CHECKS=0: skipped). Writes $OUT/cluster-f16.txt, $OUT/cluster-f32.txt (and .json),
# $OUT/checks.txt, $OUT/ncu-cluster.txt.
source "$(dirname "$0")/gpu_env.sh"
declare -A FORMS=(
  [f16]="t512/v8/c13 t512/v8/c13,PERSIST=1 t256/v8/c13/k2 t256/v8/c13/k2,PERSIST=1 t256/v8/c7/k4,PERSIST=1 t256/v8/c4/k8,PERSIST=1 t128/v8/c7/k8,PERSIST=1 t256/v8/c7/k4"
  [f32]="t512/v4/c25 t512/v4/c13/k2,PERSIST=1 t256/v4/c13/k4,PERSIST=1 t256/v4/c7/k8,PERSIST=1 t256/v4/c13/k4")
# First the new kernels against the reference and under compute-sanitizer at ragged small shapes.
if [ "${CHECKS:-1}" = 1 ]; then
  check_runs "stdlib/nn.emmy --op layernorm --shape N=37,C=5001 --knobs COOP=t256/v8/c2/k4,PERSIST=1" \
    "stdlib/nn.emmy --op rmsnorm --shape N=300,C=50257 --knobs COOP=t256/v8/c7/k4,PERSIST=1" \
    "stdlib/nn.emmy --op softmax --shape N=5,C=77 --knobs COOP=t128/v8/k8" \
    "stdlib/nn.emmy --op cross_entropy --shape N=33,C=1001 --knobs COOP=t128/v4/k2" | tee "$OUT/checks.txt"
  sanitize "stdlib/nn.emmy --op layernorm --shape N=37,C=5001 --knobs COOP=t256/v8/c2/k4,PERSIST=1 --target sm_90a" \
    "stdlib/nn.emmy --op softmax --shape N=5,C=77 --knobs COOP=t128/v8/k8 --target sm_90a" | tee -a "$OUT/checks.txt"
fi
for dt in ${DTYPES-f16 f32}; do
  V=()
  for op in softmax layernorm rmsnorm; do
    while read -r k; do V+=(--knobs "$k"); done < <(coop_variants $op $dt N=8192,C=50257 ${FORMS[$dt]})
  done
  sfx=$([ $dt = f32 ] && echo ,f32)
  timeout ${SECONDS_A_DTYPE:-150} python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "/tmp/cluster-$dt" \
    --only 'softmax|layernorm|rmsnorm' --blocks '\[auto(, f32)?\]' --inductor --rows 8192,50257$sfx \
    --deadline $(( ${SECONDS_A_DTYPE:-150} - 20 )) "${V[@]}" > "$OUT/cluster-$dt.txt" 2>&1
  cp "/tmp/cluster-$dt/results.json" "$OUT/cluster-$dt.json"
  echo "== $dt"
  grep -E "emmy|Inductor|copy" "$OUT/cluster-$dt.txt" | sed 's/ (host [0-9]*)//; s/check pass (max err [^)]*)/ok/' | cut -c12-170
done
if [ "${NCU:-1}" = 1 ]; then
  m=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct
  for k in "COOP=t256/v8/c7/k4,PERSIST=1" "COOP=t512/v8/c13"; do
    echo "== ncu layernorm (8192, 50257) f16 $k"
    EMMY_CACHE_DIR=/tmp/emmy-kc-ncu timeout ${NCU_SECONDS:-60} ncu --clock-control none -k "regex:k_layernorm_" -c 1 \
      --metrics "$m" --csv "$B/emmyc" run stdlib/nn.emmy --op layernorm --shape N=8192,C=50257 --target sm_90a \
      --knobs "$k" --check none 2>/dev/null | grep -E '"(gpu__|dram__|lts__|l1tex__)' | awk -F'","' '{printf "  %-55s %s %s\n", $(NF-2), $(NF-1), $NF}' | tr -d '"'
  done | tee "$OUT/ncu-cluster.txt"
fi
