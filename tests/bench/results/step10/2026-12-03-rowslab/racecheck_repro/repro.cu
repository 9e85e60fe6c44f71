// The pattern racecheck flags in the pingpong kernels, alone: two consumer warpgroups taking turns
// on named barriers 2 and 3 (bar.arrive / bar.sync, 256 threads), then each stores into a shared
// tile, bar.sync 1, 256, and each reads the other warpgroup's part. A producer warpgroup (threads
// 256..383) takes no part. With TURNS=0 the turns are left out. Build: nvcc -arch=sm_90a.
#include <cstdio>
#include <cuda_fp16.h>

__device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }

template <bool kTurns>
__global__ void __launch_bounds__(384, 1) k(float* out, int blocks) {
  __shared__ __half tile[256 * 8];
  const int t = threadIdx.x;
  if (t >= 256) return;  // producers: nothing here
  const int wg = t / 128, mine = wg + 2, next = (wg + 1) % 2 + 2;
  float acc = 0;
  if (kTurns && wg == 1) bar_arrive(2, 256);
  for (int b = 0; b < blocks; ++b) {
    if (kTurns) bar_sync(mine, 256);
    acc += b * 0.5f + t;
    if (kTurns) bar_arrive(next, 256);
    acc = acc * 0.999f;
  }
  if (kTurns && wg == 0) bar_sync(2, 256);
  bar_sync(1, 256);
  for (int i = 0; i < 8; ++i) tile[t * 8 + i] = __float2half(acc + i);
  bar_sync(1, 256);
  const int other = t ^ 128;  // the other warpgroup's row
  float s = 0;
  for (int i = 0; i < 8; ++i) s += __half2float(tile[other * 8 + i]);
  out[blockIdx.x * 256 + t] = s;
  bar_sync(1, 256);
}

int main() {
  float* out;
  cudaMalloc(&out, 4 * 256 * sizeof(float));
  k<true><<<4, 384>>>(out, 5);
  k<false><<<4, 384>>>(out, 5);
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
