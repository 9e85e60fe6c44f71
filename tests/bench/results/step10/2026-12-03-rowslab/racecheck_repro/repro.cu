// The pattern racecheck flags in the pingpong kernels, alone: two consumer warpgroups taking turns
// on named barriers 2 and 3 (bar.arrive / bar.sync, 256 threads), then each stores into a shared
// tile, bar.sync 1, 256, and each reads the other warpgroup's part. A producer warpgroup (threads
// 256..383) takes no part. kTurns=false leaves the turns out; kRegs moves registers to the
// consumers with setmaxnreg as the kernels do.
// Build: nvcc -gencode arch=compute_90a,code=sm_90a -o repro repro.cu
// Run: ./repro T R (T: 0 no turns, 1 the turns, 2 the turns with bar.sync in place of bar.arrive;
// R: 0 or 1), each variant in its own process under compute-sanitizer --tool racecheck.
// H200, 2026-12-03 (tests/bench/results/step10/2026-12-03-race/run1, run2): T=1 2 hazards (R=0 and
// R=1), T=0 none, T=2 none: racecheck's model of bar.arrive, the code being race-free.
#include <cstdio>
#include <cuda_fp16.h>

__device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
// kSyncOnly: every bar.arrive of the turns a bar.sync (the same barrier counts, the warpgroups in lockstep).
template <bool kSyncOnly>
__device__ __forceinline__ void turn_arrive(int id, int n) {
  if (kSyncOnly) bar_sync(id, n); else bar_arrive(id, n);
}

template <bool kTurns, bool kRegs, bool kSyncOnly = false>
__global__ void __launch_bounds__(384, 1) k(float* out, int blocks) {
  __shared__ __half tile[256 * 8];
  const int t = threadIdx.x;
  if (t >= 256) {  // producers: nothing here
    if (kRegs) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    return;
  }
  if (kRegs) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
  const int wg = t / 128, mine = wg + 2, next = (wg + 1) % 2 + 2;
  float acc = 0;
  if (kTurns && wg == 1) turn_arrive<kSyncOnly>(2, 256);
  for (int b = 0; b < blocks; ++b) {
    if (kTurns) bar_sync(mine, 256);
    acc += b * 0.5f + t;
    if (kTurns) turn_arrive<kSyncOnly>(next, 256);
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

int main(int argc, char** argv) {
  // T = 2: the turns with bar.sync in place of bar.arrive.
  const bool turns = argc > 1 && argv[1][0] != '0', regs = argc > 2 && argv[2][0] == '1';
  const bool sync_only = argc > 1 && argv[1][0] == '2';
  float* out;
  cudaMalloc(&out, 4 * 256 * sizeof(float));
  if (sync_only) k<true, false, true><<<4, 384>>>(out, 5);
  else if (turns && regs) k<true, true><<<4, 384>>>(out, 5);
  else if (turns && !regs) k<true, false><<<4, 384>>>(out, 5);
  else if (!turns && regs) k<false, true><<<4, 384>>>(out, 5);
  else k<false, false><<<4, 384>>>(out, 5);
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
