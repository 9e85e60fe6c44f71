# Run 1: issue 28's cold start; the ring depth at hd128 pingpong (PERSIST and not) for the tile's
# fixed cost; where the hd64 block's issue slots and pipes go (Nsight Compute) against cuDNN's kernel.
source tests/bench/gpu_env.sh
PP="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
H64="PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,PINGPONG=1,WSPEC=p1"
echo "== cold start"; timeout 120 python3 tests/bench/cold_start.py --lib "$B/libemmy.so" --runs 3 2>&1 | grep -v Warning
timeout 60 python3 tests/bench/cold_start.py --lib "$B/libemmy.so" --runs 1 --op sdpa --shape 4,16,4096,128 2>&1 | grep -v Warning
echo "== ring depth"
timeout 150 python3 tests/bench/tile_overhead.py --lib "$B/libemmy.so" --shape 16,16,1024,128 --keys 128,512,1024 \
  --knobs "$PP,PERSIST=1" --knobs "${PP/d3/d2},PERSIST=1" --knobs "$PP" --knobs "${PP/d3/d2}" 2>&1 | grep -v Warning | grep -v "op = emmy"
timeout 100 python3 tests/bench/tile_overhead.py --lib "$B/libemmy.so" --shape 4,16,4096,128 --keys 4096 \
  --knobs "$PP" --knobs "${PP/d3/d2}" 2>&1 | grep -v Warning | grep -v "op = emmy"
echo "== ncu hd64"
M=sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,sm__inst_executed_pipe_xu.sum,gpu__time_duration.sum
timeout 120 ncu --clock-control none -k regex:k_sdpa -c 1 --metrics $M "$B/emmyc" run stdlib/nn.emmy --op sdpa \
  --shape B=1,H=8,S=4096,D=64 --target sm_90a --check none > $OUT/ncu-hd64-emmy.txt 2>&1; echo "ncu emmy exit $?"
cat > /tmp/cudnn1.py <<'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(1, 8, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(3))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(3): torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
timeout 120 ncu --clock-control none -k regex:'cudnn|sm90|fmha|flash' -s 2 -c 1 --metrics $M python3 /tmp/cudnn1.py > $OUT/ncu-hd64-cudnn.txt 2>&1; echo "ncu cudnn exit $?"
grep -E "k_sdpa|cudnn|sm90|fmha|flash|pct|inst_executed|duration" $OUT/ncu-hd64-*.txt | cut -c1-200
rm -rf "$OUT/kernel-cache"
