// The H200's mma.sync ceiling: m16n8k16 f16 x f16 -> f32 issued back to back from registers (no
// memory traffic), for several warps per SM and independent accumulators per warp. It bounds
// what any mma.sync kernel (Emmy's contraction lowering included) can reach on this GPU.
// Build: nvcc -O3 -arch=sm_90 -o mma_peak tests/bench/mma_peak.cu; run: ./mma_peak
#include <cstdio>
#include <cuda_runtime.h>

template <int kChains>
__global__ void mma_loop(float* sink, int iters, unsigned seed) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = seed * (threadIdx.x + 3 * i + 1) | 0x3c003c00u;
  for (int i = 0; i < 2; ++i) b[i] = seed * (threadIdx.x + 5 * i + 2) | 0x3c003c00u;
  float c[kChains][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < kChains; ++j)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float s = 0;
  for (int j = 0; j < kChains; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == 1234.5f) sink[threadIdx.x] = s;  // keeps the chains live; never true for these inputs
}

template <int kChains>
void measure(int sms, int warps_per_block, int blocks_per_sm) {
  const int iters = 4096, blocks = sms * blocks_per_sm;
  float* sink;
  cudaMalloc(&sink, 1024 * sizeof(float));
  mma_loop<kChains><<<blocks, warps_per_block * 32>>>(sink, iters, 7u);  // warm-up
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(t0);
    mma_loop<kChains><<<blocks, warps_per_block * 32>>>(sink, iters, 7u);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms;
    cudaEventElapsedTime(&ms, t0, t1);
    if (ms < best) best = ms;
  }
  const double flop = double(blocks) * warps_per_block * iters * kChains * 16.0 * 8 * 16 * 2;
  std::printf("chains %2d  warps/SM %2d  %.1f TFLOP/s\n", kChains, warps_per_block * blocks_per_sm,
              flop / (best * 1e-3) / 1e12);
  cudaFree(sink);
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  std::printf("%s, %d SMs, mma.sync.m16n8k16 f16->f32 from registers\n", p.name, p.multiProcessorCount);
  for (int w : {4, 8, 16}) {
    measure<4>(p.multiProcessorCount, w, 1);
    measure<8>(p.multiProcessorCount, w, 1);
    measure<16>(p.multiProcessorCount, w, 1);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
