# The scores' first wgmma without C (scale-d false: no zeroing of 64 accumulators a block), on every
# sdpa anchor, the ragged rows, GQA, decode and the bf16 cases, with the stdlib's sm_90a blocks and
# the best key-block variants of run keyblocks; then Nsight Compute on the hd64 and hd128 kernels.
source tests/bench/gpu_env.sh
w() { echo "PLACE=fuse,TILE=a:wgmma_m64n$1k16_f16/w8x1/k$2,TILE@e=f$3,STAGE=$4,FAST_EXP=1$5"; }
OPP=",OVERLAP=1,PINGPONG=1,WSPEC=p1"
echo "=== correctness $(date -u +%T)"
check_runs "stdlib/nn.emmy --op sdpa --knobs $(w 192 4 64 d3/tma/ring $OPP) --shape B=2,H=3,S=1000,T=1111,D=61,E=61" \
  "stdlib/nn.emmy --op sdpa_causal --shape B=1,H=3,S=1001,D=64" \
  "stdlib/nn.emmy --op sdpa --schedule wgmma-hd128 --shape B=1,H=2,S=777,T=1000,D=128,E=100" \
  "stdlib/nn.emmy --op sdpa_causal --knobs $(w 176 8 128 d2/tma/ring ,WSPEC=p1) --shape B=1,H=2,S=1000,D=120"
args=(--knobs "sdpa@sm_90a=$(w 192 4 64 d3/tma/ring $OPP)" --knobs "sdpa_causal@sm_90a=$(w 128 8 128 d3/tma/ring $OPP)"
      --knobs "sdpa@sm_90a=$(w 128 8 128 d3/tma/ring $OPP)" --knobs "sdpa@sm_90a=$(w 192 8 128 d2/tma/ring ,WSPEC=p1)")
echo "=== harness $(date -u +%T)"
timeout 390 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 290 \
  --emmy-launch-cap 0.5 --only '^(sdpa|gqa|decode)' --blocks 'sm_90a' "${args[@]}" > "$OUT/harness.log" 2>&1
echo "exit $?"; grep -E "cuDNN|sm_90a|FA-2|SDPA" "$OUT/harness.log" | cut -c1-60,100-175 | head -150
echo "=== ncu + sass $(date -u +%T)"
K64="$(w 128 4 64 d3/tma/ring $OPP)"
rm -rf "$OUT/kernel-cache"; export EMMY_CACHE_DIR=$OUT/cache-hd64
ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
  --metrics 'regex:^sm__(inst_executed_pipe|pipe)_.*pct_of_peak_sustained_active$' --print-details all \
  --clock-control none -c 1 -k regex:k_sdpa "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=4,H=16,S=4096,D=64 \
  --target sm_90a --knobs "$K64" --check none > "$OUT/ncu-emmy-hd64-scaled.txt" 2>&1
grep -E "Duration|Executed Instructions  |pipe_(alu|fma|xu)\.avg" "$OUT/ncu-emmy-hd64-scaled.txt"
for c in "$OUT"/cache-hd64/*.cubin; do
  cuobjdump -sass "$c" > "$c.sass" 2>&1 || nvdisasm "$c" > "$c.sass" 2>&1
  echo "-- $c"; grep -oE "^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9_.]+" "$c.sass" | awk '{print $2}' | sort | uniq -c | sort -rn | head -25
done
