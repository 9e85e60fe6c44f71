#!/usr/bin/env bash
# Step 5 probe on the GPU machine: emmyc run --bench over tensor-core schedules of sdpa and
# matmul, every output checked. Binaries from gpu-carry/ (scripts/gpu_stage.sh); logs in $OUT.
# Usage: tests/bench/step5_probe.sh [defaults|sdpa|sdpa128|hd128|causal|small-s|matmul|mm-tiles|rows|decode|decode-tc|decode-coop|extra|tma|tma-check|mm-tma]...
# EMMYC=path/to/emmyc times another build (e.g. the previous commit's) with the same script;
# TARGET=sm_90a probes the arch-specific target (default sm_90: the mma.sync schedules).
source "$(dirname "$0")/gpu_env.sh"
run_bench() {  # file op shape [more emmyc run arguments]
  local file=$1 op=$2 shape=$3; shift 3
  echo "== $op $shape $*"
  "${EMMYC:-$B/emmyc}" run "$file" --op "$op" --shape "$shape" --target "${TARGET:-sm_90}" "$@" --bench 2>&1 | tee -a "$OUT/probe.log" |
    grep -E "^(Emmy|naive)|^k_|FAIL|error|  ok$" | sed 's/  */ /g'
}
bench() { run_bench "$1" "$2" "$3" --knobs "$4"; }  # file op shape knobs
sched() { run_bench "$1" "$2" "$3" ${4:+--schedule "$4"}; }  # file op shape [schedule name]
A=TILE=a:mma_m16n8k16_f16
F=FAST_EXP=1
for what in "${@:-sdpa matmul}"; do
  case $what in
    sdpa) for t in w4x1/f1x8/k4 w4x1/f2x4/k4 w8x1/f1x8/k4; do
            for s in d1/cp d2/cp/ring; do bench stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64 "$A/$t,STAGE=$s,$F"; done
          done
          bench stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64 "$A/w4x1/f1x8/k4,STAGE=d2/cp/ring,FAST_EXP=0" ;;
    sdpa128) for t in w4x1/f1x8/k8 w8x1/f1x8/k8; do
            bench stdlib/nn.emmy sdpa B=4,H=16,S=4096,D=128 "$A/$t,TILE@e=f128,STAGE=d2/cp/ring,$F"; done ;;
    causal) bench stdlib/nn.emmy sdpa_causal B=1,H=8,S=4096,D=64 "$A/w4x1/f1x8/k4,STAGE=d2/cp/ring,$F" ;;
    matmul) for t in w2x2/f4x8/k2 w2x2/f4x4/k2 w2x2/f4x4/k4; do
            bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/$t,STAGE=d3/cp/ring,RASTER="; done ;;
    defaults) sched stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64
            sched stdlib/nn.emmy sdpa B=4,H=16,S=4096,D=128 tc-hd128
            bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/w2x2/f4x8/k4,STAGE=d2/cp/ring" ;;
    mm-tiles) for t in w2x2/f4x8/k4 w2x4/f4x8/k2 w2x4/f4x8/k4 w4x2/f4x8/k4; do
            for s in d3/cp/ring d4/cp/ring; do bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/$t,STAGE=$s"; done
          done ;;
    decode-tc) for k in f1x8/k8,STAGE=d2/cp/ring,REDUCE=g8k f1x8/k8,STAGE=d2/cp/ring,REDUCE=g4k f1x8/k8,STAGE=d3/cp/ring,REDUCE=g8k \
                      f1x4/k8,STAGE=d3/cp/ring,REDUCE=g8k f1x4/k8,STAGE=d4/cp/ring,REDUCE=g8k f1x4/k8,STAGE=d4/cp/ring,REDUCE=g16k; do
            bench stdlib/nn.emmy sdpa B=8,H=32,S=1,T=16384,D=128,E=128 "$A/w1x1/$k,TILE@e=f128,$F"; done ;;
    hd128) for sh in B=4,H=16,S=4096,D=128 B=16,H=16,S=1024,D=128; do
             for t in w8x1/f1x8/k8 w4x1/f1x8/k8 w8x1/f1x4/k8; do
               bench stdlib/nn.emmy sdpa $sh "$A/$t,TILE@e=f128,STAGE=d3/cp/ring,$F"; done
           done ;;
    small-s) for t in w4x1/f1x8/k4 w4x1/f2x8/k4 w2x1/f2x8/k4; do
            bench stdlib/nn.emmy sdpa B=1,H=8,S=1000,D=64 "$A/$t,STAGE=d3/cp/ring,$F"; done ;;
    rows) for op in softmax layernorm rmsnorm; do
            for s in "" warp-row t1024; do sched stdlib/nn.emmy $op N=32768,C=8192 $s; done
          done ;;
    decode) for s in fa1-scalar decode-splitkv; do sched stdlib/nn.emmy sdpa B=8,H=32,S=1,T=16384,D=128,E=128 $s; done
            for r in g16k g64k; do
              bench stdlib/nn.emmy sdpa B=8,H=32,S=1,T=16384,D=128,E=128 "TILE=a:scalar,TILE@e=f64,REDUCE=$r"; done ;;
    decode-coop) for k in "COOP=t32,REDUCE=g16k" "COOP=t64,REDUCE=g16k" "COOP=t128,REDUCE=g8k" "COOP=t128,REDUCE=g32k" "COOP=t256,REDUCE=g16k" "COOP=t128"; do
             bench stdlib/nn.emmy sdpa B=8,H=32,S=1,T=16384,D=128,E=128 "PLACE=fuse,TILE=a:scalar,TILE@e=f128,STAGE=,FAST_EXP=1,$k"; done ;;
    tma) for s in d3/cp/ring d3/tma/ring d2/tma/ring d4/tma/ring; do  # the move: cp.async -> TMA, same tiles
           bench stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64 "$A/w4x1/f2x8/k4,STAGE=$s,$F,PLACE=fuse"
           bench stdlib/nn.emmy sdpa_causal B=1,H=8,S=4096,D=64 "$A/w4x1/f2x8/k4,STAGE=$s,$F,PLACE=fuse"
         done
         for s in d3/cp/ring d3/tma/ring; do
           bench stdlib/nn.emmy sdpa B=4,H=16,S=4096,D=128 "$A/w4x1/f2x4/k8,TILE@e=f128,STAGE=$s,$F,PLACE=fuse"
           bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/w2x2/f4x8/k4,STAGE=$s"
           bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/w2x4/f4x8/k4,STAGE=$s"
         done
         W=TILE=a:wgmma_m64n128k16_f16
         for s in d2/cp/ring d2/tma/ring d3/tma/ring; do
           TARGET=sm_90a bench stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64 "$W/w4x1/k4,TILE@e=f64,STAGE=$s,$F,PLACE=fuse"
           TARGET=sm_90a bench stdlib/nn.emmy sdpa B=4,H=16,S=4096,D=128 "$W/w8x1/k8,TILE@e=f128,STAGE=$s,$F,PLACE=fuse"
         done
         for s in d4/cp/ring d4/tma/ring; do
           TARGET=sm_90a bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$W/w16x1/k4,STAGE=$s"; done ;;
    mm-tma) for t in w2x2/f4x8/k4 w2x4/f4x8/k4 w4x2/f4x8/k4 w2x2/f4x4/k4 w4x2/f4x4/k4 w4x4/f2x8/k4; do
             for s in d3/tma/ring d4/tma/ring; do bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/$t,STAGE=$s"; done
           done ;;
    tma-check) # ragged shapes on the GPU (E = 61: the cp.async fallback), then compute-sanitizer
         T="$A/w4x1/f2x8/k4,STAGE=d3/tma/ring,$F,PLACE=fuse"
         for sh in B=1,H=2,S=130,T=77,D=64,E=64 B=2,H=3,S=200,T=333,D=64,E=64 B=1,H=2,S=130,T=77,D=61,E=61; do
           "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape $sh --target sm_90 --knobs "$T" 2>&1 | grep -E "^o |error"; done
         "$B/emmyc" run stdlib/nn.emmy --op sdpa_causal --shape B=1,H=2,S=300,D=64 --target sm_90 --knobs "$T" 2>&1 | grep -E "^o |error"
         "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=130,T=300,D=128,E=128 --target sm_90 \
           --knobs "$A/w4x1/f2x4/k8,TILE@e=f128,STAGE=d3/tma/ring,$F,PLACE=fuse" 2>&1 | grep -E "^o |error"
         "$B/emmyc" run stdlib/linalg.emmy --op matmul --shape M=200,N=136,K=152 --target sm_90 \
           --knobs "$A/w2x2/f4x8/k4,STAGE=d3/tma/ring" 2>&1 | grep -E "^c |error"
         "$B/emmyc" run stdlib/linalg.emmy --op matmul --shape M=300,N=136,K=152 --target sm_90a \
           --knobs "TILE=a:wgmma_m64n128k16_f16/w16x1/k4,STAGE=d4/tma/ring" 2>&1 | grep -E "^c |error"
         "$B/emmyc" run stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=130,T=77,D=64,E=64 --target sm_90a \
           --knobs "TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d2/tma/ring,$F" 2>&1 | grep -E "^o |error"
         sanitize "stdlib/nn.emmy --op sdpa --target sm_90 --shape B=1,H=2,S=200,T=77,D=64,E=64 --knobs $T" \
                  "stdlib/nn.emmy --op sdpa_causal --target sm_90 --shape B=1,H=2,S=300,D=64 --knobs $T" \
                  "stdlib/linalg.emmy --op matmul --target sm_90 --shape M=200,N=136,K=152 --knobs $A/w2x2/f4x8/k4,STAGE=d3/tma/ring" \
                  "stdlib/linalg.emmy --op matmul --target sm_90a --shape M=300,N=136,K=152 --knobs TILE=a:wgmma_m64n128k16_f16/w16x1/k4,STAGE=d4/tma/ring" ;;
    extra) for k in "COOP=t32/v8,FAST_EXP=1" "COOP=t32/v8,FAST_EXP=1,PLACE@m=cut" "COOP=t128/v8,FAST_EXP=1,PLACE@m=cut" "COOP=t256/v8,FAST_EXP=1,PLACE@m=cut"; do
             bench stdlib/nn.emmy softmax N=32768,C=8192 "$k"; done
           for t in w2x2/f4x8/k4 w2x4/f4x8/k2; do
             for s in d2/cp/ring d3/cp/ring; do bench stdlib/linalg.emmy matmul M=4096,N=4096,K=4096 "$A/$t,STAGE=$s"; done
           done
           for t in w8x1/f2x4/k4 w2x1/f2x4/k4; do
             bench stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64 "$A/$t,STAGE=d2/cp/ring,$F"; done
           bench stdlib/nn.emmy sdpa B=1,H=8,S=4096,D=64 "$A/w4x1/f2x4/k4,STAGE=d3/cp/ring,$F" ;;
  esac
done
