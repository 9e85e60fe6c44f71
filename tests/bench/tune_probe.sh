source tests/bench/gpu_env.sh
export EMMY_TUNE_DB=$OUT/tune.sqlite
cp stdlib/nn.emmy stdlib/linalg.emmy $OUT/
( time $B/emmyc tune $OUT/nn.emmy --op softmax --shape N=32768,C=8192 --target sm_90 --budget 60s --write ) > $OUT/tune_softmax.log 2>&1
tail -25 $OUT/tune_softmax.log
$B/emmyc run $OUT/nn.emmy --op softmax --shape N=32768,C=8192 --target sm_90 --bench 2>&1 | grep -E "^Emmy|^k_|ok$|FAIL" | head -5
grep -n "emmyc tune:" -A6 $OUT/nn.emmy | head -12
( time timeout 200 $B/emmyc tune $OUT/linalg.emmy --op matmul --shape M=4096,N=4096,K=4096 --target sm_90 --budget 90s --timeout 20 --write ) > $OUT/tune_matmul.log 2>&1
tail -25 $OUT/tune_matmul.log
$B/emmyc tune --list
