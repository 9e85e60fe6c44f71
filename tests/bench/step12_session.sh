#!/usr/bin/env bash
# Step 12 on the GPU machine in one device call, each item under its own timeout so one hang does
# not cost the rest: the gradient golden file (float64 torch.autograd, tests/data/grad_golden.json),
# emmy.torch's tests, the attention backward against torch's backends, the 200-step training run,
# compute-sanitizer on the backward kernels. ONLY: a regex of item names to run (golden, torch,
# kernels, bwd, train, sanitize); BWD_SHAPES: --shape arguments for the backward benchmark (default:
# Step 10's five anchors).
# Usage: tests/bench/step12_session.sh   (binaries from gpu-carry/, results in $OUT)
source "$(dirname "$0")/gpu_env.sh"
export EMMY_LIBRARY=$B/libemmy.so PYTHONPATH=$PWD/python
want() { [[ $1 =~ ${ONLY:-.} ]]; }
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
if want golden; then
  step golden
  timeout 90 python3 tests/python/make_grad_golden.py --out "$OUT/grad_golden.json" > "$OUT/golden.log" 2>&1
  echo "exit $?"; tail -3 "$OUT/golden.log"
fi
if want torch; then
  step "emmy.torch tests"
  timeout 200 python3 tests/python/test_emmy_torch.py -v > "$OUT/torch_tests.log" 2>&1
  echo "exit $?"; grep -E "^(FAIL|ERROR)|Ran |OK|FAILED" "$OUT/torch_tests.log" | tail -15
fi
if want kernels; then
  step "attention backward kernel by kernel"
  timeout 200 python3 tests/bench/step12_bwd_kernels.py --knobs "" \
    --knobs "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w8x1/f1x4/k8,STAGE=d2/tma/ring,FAST_EXP=1,TILE@d=f128,TILE@e=f128" \
    --knobs "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w8x1/f1x8/k4,STAGE=d3/tma/ring,FAST_EXP=1" \
    --out "$OUT/step12" > "$OUT/kernels.log" 2>&1
  echo "exit $?"; grep '^{' "$OUT/kernels.log" | cut -c1-400
fi
if want bwd; then
  step "attention backward"
  timeout 330 python3 tests/bench/step12_backward.py --no-flex \
    ${BWD_SHAPES:---shape 1,8,4096,64 --shape 4,16,4096,64 --shape 4,16,4096,128 --shape 2,16,8192,128 --shape 16,16,1024,128} \
    --out "$OUT/step12" > "$OUT/bwd.log" 2>&1
  echo "exit $?"; grep '^{' "$OUT/bwd.log" | cut -c1-300 | tail -80; tail -1 "$OUT/bwd.log"
fi
if want train; then
  step "200-step training"
  timeout 200 python3 tests/bench/step12_train.py --out "$OUT/step12" > "$OUT/train.log" 2>&1
  echo "exit $?"; tail -12 "$OUT/train.log"
fi
if want sanitize; then
  step compute-sanitizer
  cat > "$OUT/bwd.emmy" <<'EMMY'
import std.nn;
op sdpa_bwd = grad(sdpa, q, k, v);
op sdpa_causal_bwd = grad(sdpa_causal, q, k, v);
op sdpa_saved_bwd = grad(sdpa) saving o, m, l;
EMMY
  sanitize "$OUT/bwd.emmy --target sm_90a --op sdpa_bwd --shape B=1,H=2,S=130,T=190,D=64,E=64" \
           "$OUT/bwd.emmy --target sm_90a --op sdpa_causal_bwd --shape B=1,H=2,S=200,D=64,E=64" \
           "$OUT/bwd.emmy --target sm_90a --op sdpa_saved_bwd --shape B=1,H=2,S=130,T=190,D=64,E=64"
fi
rm -rf "$EMMY_CACHE_DIR"
