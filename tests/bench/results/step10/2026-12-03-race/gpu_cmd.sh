# Run 1: the racecheck reproducer's four variants; racecheck on hd128-pingpong at shapes whose last
# row tile is full (S=256) and partial (S=300, S=320: a warpgroup with no valid rows); then hd64 and
# S=1024 variants in the harness.
source tests/bench/gpu_env.sh
R=tests/bench/results/step10/2026-12-03-race/racecheck_repro
nvcc -gencode arch=compute_90a,code=sm_90a -o $OUT/repro tests/bench/results/step10/2026-12-03-rowslab/racecheck_repro/repro.cu
for v in "0 0" "0 1" "1 0" "1 1"; do
  compute-sanitizer --tool racecheck $OUT/repro $v > $OUT/repro-$(echo $v | tr ' ' _).txt 2>&1
  echo "repro $v :: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/repro-$(echo $v | tr ' ' _).txt | tail -1)"
done
for s in "S=256,T=257" "S=300,T=257" "S=320,T=257" "S=384,T=257"; do
  timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 "$B/emmyc" run stdlib/nn.emmy --op sdpa --target sm_90a --schedule hd128-pingpong --shape B=1,H=2,$s,D=128,E=100 --no-cache > "$OUT/rc-$s.txt" 2>&1
  echo "racecheck pp $s exit $? :: $(grep -E 'RACECHECK SUMMARY' "$OUT/rc-$s.txt" | tail -1) :: blocks $(grep -o 'in block ([0-9,]*)' "$OUT/rc-$s.txt" | sort | uniq -c | tr '\n' ' ')"
done
w() { echo "PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w$1x1/k$2,TILE@e=f$3,STAGE=$4,FAST_EXP=1$5"; }
OPP=",OVERLAP=1,PINGPONG=1,WSPEC=p1"
timeout 300 python3 tests/bench/harness.py --lib "$B/libemmy.so" --out "$OUT/results" --deadline 260 \
  --emmy-launch-cap 0.5 --only '^sdpa B=(1 H=8 S=4096|16 H=16 S=1024)' --blocks 'sm_90a' \
  --knobs "sdpa@sm_90a=$(w 8 4 64 d3/tma/ring $OPP)" --knobs "sdpa@sm_90a=$(w 8 4 64 d3/tma/ring $OPP,PERSIST=1)" \
  --knobs "sdpa@sm_90a=$(w 8 4 64 d2/tma/ring $OPP)" --knobs "sdpa@sm_90a=$(w 4 4 64 d3/tma/ring ,OVERLAP=1)" \
  --knobs "sdpa@sm_90a=$(w 8 8 128 d2/tma/ring $OPP,PERSIST=1)" --knobs "sdpa_causal@sm_90a=$(w 8 8 128 d2/tma/ring $OPP)" \
  > "$OUT/harness.log" 2>&1
tail -5 "$OUT/harness.log"
rm -rf "$OUT/kernel-cache"
