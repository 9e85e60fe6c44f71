export GPU_OPS="matmul,bmm,matmul_nt,matmul_bias_relu" GPU_TESTS_TIMEOUT=70 HARNESS_TIMEOUT=330 DEADLINE=300 BLOCKS=sm_90a
export ONLY='^(sdpa B=|matmul)'
export MM_VARIANTS="TILE=a:wgmma_m64n128k16_f16/w16x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8 TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1 TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8 TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d3/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8 TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d5/tma/ring,WSPEC=p1,OVERLAP=1"
H64A="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
H64B="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,WSPEC=p1"
HD128="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
export VARIANTS="sdpa@sm_90a=$HD128 sdpa_causal@sm_90a=$HD128 sdpa@sm_90a=$H64A sdpa_causal@sm_90a=$H64A sdpa@sm_90a=$H64B sdpa_causal@sm_90a=$H64B"
timeout 590 bash tests/bench/staged_probe.sh > $OUT/probe.log 2>&1
grep -v "^\[" $OUT/probe.log | tail -40
