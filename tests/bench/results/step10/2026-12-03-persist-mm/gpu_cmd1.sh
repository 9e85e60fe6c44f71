#!/usr/bin/env bash
# Run 1: is the sm_90a matmul L2-bound? Nsight Compute on Emmy's 128x256 and 128x128 blocks and
# on cuBLAS (torch.matmul) at 4096^3 f16: time, clock, wgmma pipe, L2 throughput and bytes.
source tests/bench/gpu_env.sh
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__t_bytes.sum.per_second,lts__t_sectors_op_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
for knobs in "TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1" \
             "TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d5/tma/ring,WSPEC=p1,OVERLAP=1"; do
  echo "== emmy $knobs"
  ncu --clock-control none -k regex:k_matmul -c 1 --metrics "$M" \
    "$B/emmyc" run stdlib/linalg.emmy --op matmul --shape M=4096,N=4096,K=4096 --target sm_90a --knobs "$knobs" --check none 2>&1 \
    | grep -E "^\s+(sm__|lts|dram|gpu__|launch|l1tex)"
done
cat > /tmp/cublas.py <<'PY'
import torch
a = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
for _ in range(3):
    c = a @ b
torch.cuda.synchronize()
PY
echo "== cuBLAS"
ncu --clock-control none -k regex:"gemm|sm90|xmma|cutlass" --launch-skip 1 -c 1 --metrics "$M" python3 /tmp/cublas.py 2>&1 \
  | grep -E "^\s+(sm__|lts|dram|gpu__|launch|l1tex)|gemm|sm90|xmma|cutlass" | head -30
