// Hand-written row kernels for row_variants_probe.py: forms the COOP tier could take for short
// rows, timed against Emmy's emitted kernel and Inductor before any of them goes into the emitter.
// Not Emmy output and not part of the build: compiled by CuPy (NVRTC) on the GPU machine.
//
// rows_softmax / rows_rmsnorm<T, TPR, V, R, CEXP, BLOCK>: TPR threads a row (BLOCK / TPR rows a
// block), chunks of V elements strided over the row's threads, R chunks a thread, the row held in
// registers (read from memory once, no shared memory, no cp.async), CEXP: softmax keeps its exps
// (f32) in registers for the store pass instead of recomputing them. Rows of C <= TPR * V * R with
// C % V == 0 only (the probe's shapes).
#include <cuda_fp16.h>

__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float max_nan(float a, float b) {
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ float to_f(__half h) { return __half2float(h); }
__device__ __forceinline__ float to_f(float h) { return h; }
template <class T> __device__ __forceinline__ T from_f(float f);
template <> __device__ __forceinline__ __half from_f<__half>(float f) { return __float2half_rn(f); }
template <> __device__ __forceinline__ float from_f<float>(float f) { return f; }

template <class T, int V> struct Chunk {
  static constexpr int BYTES = V * sizeof(T);
  union {
    uint4 w16;
    uint2 w8;
    unsigned w4;
    T e[V];
  };
  __device__ __forceinline__ void load(const T* p) {
    if constexpr (BYTES == 16) w16 = __ldg(reinterpret_cast<const uint4*>(p));
    else if constexpr (BYTES == 8) w8 = __ldg(reinterpret_cast<const uint2*>(p));
    else w4 = __ldg(reinterpret_cast<const unsigned*>(p));
  }
  __device__ __forceinline__ void store(T* p) const {
    if constexpr (BYTES == 16) *reinterpret_cast<uint4*>(p) = w16;
    else if constexpr (BYTES == 8) *reinterpret_cast<uint2*>(p) = w8;
    else *reinterpret_cast<unsigned*>(p) = w4;
  }
};

// The row's TPR partial values combined: butterflies in the warp, then (TPR > 32) the row's
// warps through shared memory `box` (BLOCK / 32 floats).
template <int TPR, int BLOCK, bool MAX> __device__ __forceinline__ float row_combine(float v, float* box) {
#pragma unroll
  for (int s = 1; s < (TPR < 32 ? TPR : 32); s *= 2) {
    float o = __shfl_xor_sync(0xffffffffu, v, s);
    v = MAX ? max_nan(v, o) : v + o;
  }
  if constexpr (TPR > 32) {
    const int warp = threadIdx.x / 32, first = warp / (TPR / 32) * (TPR / 32);
    if (threadIdx.x % 32 == 0) box[warp] = v;
    __syncthreads();
    v = box[first];
#pragma unroll
    for (int w = 1; w < TPR / 32; ++w) v = MAX ? max_nan(v, box[first + w]) : v + box[first + w];
  }
  return v;
}

template <class T, int TPR, int V, int R, bool CEXP, int BLOCK>
__device__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, int N, int C) {
  __shared__ float box_m[BLOCK / 32], box_l[BLOCK / 32];
  const int row = blockIdx.x * (BLOCK / TPR) + threadIdx.x / TPR, lane = threadIdx.x % TPR;
  const bool ok = row < N;
  const int n = ok ? row : N - 1;
  const T* xr = x + (long long)n * C;
  Chunk<T, V> v[R];
#pragma unroll
  for (int k = 0; k < R; ++k)
    if ((lane + k * TPR) * V < C) v[k].load(xr + (lane + k * TPR) * V);
  float m = -__int_as_float(0x7f800000);
#pragma unroll
  for (int k = 0; k < R; ++k)
    if ((lane + k * TPR) * V < C)
#pragma unroll
      for (int u = 0; u < V; ++u) m = max_nan(m, to_f(v[k].e[u]));
  m = row_combine<TPR, BLOCK, true>(m, box_m);
  const float mm = (m == -__int_as_float(0x7f800000) ? 0.0f : m) * 1.442695f;
  float l = 0.0f;
  float ex[CEXP ? R : 1][V];
#pragma unroll
  for (int k = 0; k < R; ++k)
    if ((lane + k * TPR) * V < C)
#pragma unroll
      for (int u = 0; u < V; ++u) {
        const float t = ex2_ftz(to_f(v[k].e[u]) * 1.442695f - mm);
        if constexpr (CEXP) ex[k][u] = t;
        l += t;
      }
  l = row_combine<TPR, BLOCK, false>(l, box_l);
  const float inv = 1.0f / l;
  T* yr = y + (long long)n * C;
#pragma unroll
  for (int k = 0; k < R; ++k)
    if (ok && (lane + k * TPR) * V < C) {
      Chunk<T, V> o;
#pragma unroll
      for (int u = 0; u < V; ++u) {
        float t;
        if constexpr (CEXP) t = ex[k][u];
        else t = ex2_ftz(to_f(v[k].e[u]) * 1.442695f - mm);
        o.e[u] = from_f<T>(t * inv);
      }
      o.store(yr + (lane + k * TPR) * V);
    }
}

template <class T, int TPR, int V, int R, int BLOCK>
__device__ void rmsnorm_rows(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, int C) {
  __shared__ float box[BLOCK / 32];
  const int row = blockIdx.x * (BLOCK / TPR) + threadIdx.x / TPR, lane = threadIdx.x % TPR;
  const bool ok = row < N;
  const int n = ok ? row : N - 1;
  const T* xr = x + (long long)n * C;
  Chunk<T, V> v[R];
#pragma unroll
  for (int k = 0; k < R; ++k)
    if ((lane + k * TPR) * V < C) v[k].load(xr + (lane + k * TPR) * V);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < R; ++k)
    if ((lane + k * TPR) * V < C)
#pragma unroll
      for (int u = 0; u < V; ++u) s += to_f(v[k].e[u]) * to_f(v[k].e[u]);
  s = row_combine<TPR, BLOCK, false>(s, box);
  const float r = rsqrtf(s / C + 1e-6f);
  T* yr = y + (long long)n * C;
#pragma unroll
  for (int k = 0; k < R; ++k)
    if (ok && (lane + k * TPR) * V < C) {
      Chunk<T, V> g, o;
      g.load(w + (lane + k * TPR) * V);
#pragma unroll
      for (int u = 0; u < V; ++u) o.e[u] = from_f<T>(to_f(v[k].e[u]) * r * to_f(g.e[u]));
      o.store(yr + (lane + k * TPR) * V);
    }
}

#define SOFTMAX(NAME, T, TPR, V, R, CEXP, BLOCK, MINB)                                                       \
  extern "C" __global__ void __launch_bounds__(BLOCK, MINB) NAME(const T* x, T* y, int N, int C) {          \
    softmax_rows<T, TPR, V, R, CEXP, BLOCK>(x, y, N, C);                                                     \
  }
#define RMSNORM(NAME, T, TPR, V, R, BLOCK, MINB)                                                             \
  extern "C" __global__ void __launch_bounds__(BLOCK, MINB) NAME(const T* x, const T* w, T* y, int N, int C) { \
    rmsnorm_rows<T, TPR, V, R, BLOCK>(x, w, y, N, C);                                                        \
  }

// f16, C <= 1024
SOFTMAX(sm_h_t32v8r4, __half, 32, 8, 4, false, 128, 8)
SOFTMAX(sm_h_t32v8r4e, __half, 32, 8, 4, true, 128, 8)
SOFTMAX(sm_h_t64v8r2e, __half, 64, 8, 2, true, 128, 8)
SOFTMAX(sm_h_t128v8r1e, __half, 128, 8, 1, true, 128, 16)
SOFTMAX(sm_h_t256v4r1e, __half, 256, 4, 1, true, 256, 8)
SOFTMAX(sm_h_t128v4r2e, __half, 128, 4, 2, true, 128, 16)
RMSNORM(rms_h_t32v8r4, __half, 32, 8, 4, 128, 8)
RMSNORM(rms_h_t64v8r2, __half, 64, 8, 2, 128, 8)
RMSNORM(rms_h_t128v8r1, __half, 128, 8, 1, 128, 16)
RMSNORM(rms_h_t256v4r1, __half, 256, 4, 1, 256, 8)
// f32, C <= 1024
SOFTMAX(sm_f_t32v4r8e, float, 32, 4, 8, true, 128, 8)
SOFTMAX(sm_f_t64v4r4e, float, 64, 4, 4, true, 128, 8)
SOFTMAX(sm_f_t128v4r2e, float, 128, 4, 2, true, 128, 16)
SOFTMAX(sm_f_t256v4r1e, float, 256, 4, 1, true, 256, 8)
RMSNORM(rms_f_t64v4r4, float, 64, 4, 4, 128, 8)
RMSNORM(rms_f_t128v4r2, float, 128, 4, 2, 128, 16)
RMSNORM(rms_f_t256v4r1, float, 256, 4, 1, 256, 8)
// f16 / f32, C = 8192
SOFTMAX(sm_h8k_t256v8r4e, __half, 256, 8, 4, true, 256, 4)
SOFTMAX(sm_h8k_t512v8r2e, __half, 512, 8, 2, true, 512, 2)
SOFTMAX(sm_h8k_t1024v8r1e, __half, 1024, 8, 1, true, 1024, 1)
SOFTMAX(sm_f8k_t256v4r8e, float, 256, 4, 8, true, 256, 2)
SOFTMAX(sm_f8k_t512v4r4e, float, 512, 4, 4, true, 512, 2)
SOFTMAX(sm_f8k_t1024v4r2e, float, 1024, 4, 2, true, 1024, 1)
RMSNORM(rms_h8k_t256v8r4, __half, 256, 8, 4, 256, 4)
RMSNORM(rms_h8k_t512v8r2, __half, 512, 8, 2, 512, 2)
RMSNORM(rms_f8k_t512v4r4, float, 512, 4, 4, 512, 2)
RMSNORM(rms_f8k_t1024v4r2, float, 1024, 4, 2, 1024, 1)
