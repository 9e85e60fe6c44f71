// Times matmul kernels (cubins of Emmy's generated CUDA, hand-varied for a probe) against cuBLAS
// in one process: the same L2 flush (256 MB zeroed) before each launch, CUDA events around each,
// medians; every variant's output compared element by element with cuBLAS's.
// Build (GPU machine): nvcc -O2 -arch=sm_90 driver.cu -lcuda -lcublas -o mm_probe
// Usage: mm_probe M N K  CUBIN:KERNEL:THREADS:SMEM:BM:BN:BK[:GRID] ...
//   BM x BN the block tile, BK the K chunk (A's box BK x BM, B's boxes 64 x BK); GRID overrides the
//   grid (persistent kernels); kernel parameters (a_map, b_map, a, b, c, M, K, N) as Emmy's.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s; cuGetErrorString(r_, &s); \
  std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s); std::exit(1); } } while (0)
#define RK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(r_)); std::exit(1); } } while (0)

static CUtensorMap map2d(const void* base, long long inner, long long outer, int box_inner, int box_outer) {
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  cuuint64_t strides[1] = {(cuuint64_t)inner * 2};
  cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
  cuuint32_t es[2] = {1, 1};
  CK(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(base), dims, strides, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

struct Timer {
  void* flush = nullptr;
  cudaEvent_t e0, e1;
  Timer() {
    RK(cudaMalloc(&flush, 256 << 20));
    RK(cudaEventCreate(&e0));
    RK(cudaEventCreate(&e1));
  }
  template <class F> double median_us(F launch, int n) {
    std::vector<float> t;
    for (int i = 0; i < n; ++i) {
      RK(cudaMemsetAsync(flush, 0, 256 << 20));
      RK(cudaEventRecord(e0));
      launch();
      RK(cudaEventRecord(e1));
      RK(cudaEventSynchronize(e1));
      float ms;
      RK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1000.f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

int main(int argc, char** argv) {
  if (argc < 5) { std::fprintf(stderr, "usage: mm_probe M N K CUBIN:KERNEL:THREADS:SMEM:BM:BN:BK[:GRID]...\n"); return 2; }
  long long M = std::atoll(argv[1]), N = std::atoll(argv[2]), K = std::atoll(argv[3]);
  RK(cudaFree(nullptr));
  std::vector<__half> ha(M * K), hb(K * N);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& x : ha) { float v = u(rng); x = __float2half(v == 0.f ? 0.5f : v); }
  for (auto& x : hb) { float v = u(rng); x = __float2half(v == 0.f ? 0.5f : v); }
  __half *a, *b, *c, *ref;
  RK(cudaMalloc(&a, M * K * 2)); RK(cudaMalloc(&b, K * N * 2));
  RK(cudaMalloc(&c, M * N * 2)); RK(cudaMalloc(&ref, M * N * 2));
  RK(cudaMemcpy(a, ha.data(), M * K * 2, cudaMemcpyHostToDevice));
  RK(cudaMemcpy(b, hb.data(), K * N * 2, cudaMemcpyHostToDevice));
  Timer timer;
  cublasHandle_t h;
  cublasCreate(&h);
  const float one = 1.f, zero = 0.f;
  // Row-major C = A B is column-major C^T = B^T A^T.
  auto blas = [&] {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, b, CUDA_R_16F, (int)N, a, CUDA_R_16F,
                 (int)K, &zero, ref, CUDA_R_16F, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  blas();
  RK(cudaDeviceSynchronize());
  std::vector<__half> href(M * N), hc(M * N);
  RK(cudaMemcpy(href.data(), ref, M * N * 2, cudaMemcpyDeviceToHost));
  const double flop = 2.0 * M * N * K;
  double t_blas = timer.median_us(blas, 50);
  std::printf("%lldx%lldx%lld cuBLAS %.1f us %.0f TFLOP/s\n", M, N, K, t_blas, flop / t_blas * 1e-6);
  for (int i = 4; i < argc; ++i) {
    char spec[512];
    std::snprintf(spec, sizeof spec, "%s", argv[i]);
    std::vector<std::string> f;
    for (char* s = std::strtok(spec, ":"); s; s = std::strtok(nullptr, ":")) f.push_back(s);
    if (f.size() < 7) { std::fprintf(stderr, "bad spec %s\n", argv[i]); return 2; }
    int threads = std::atoi(f[2].c_str()), smem = std::atoi(f[3].c_str());
    int bm = std::atoi(f[4].c_str()), bn = std::atoi(f[5].c_str()), bk = std::atoi(f[6].c_str());
    int grid = (int)(((M + bm - 1) / bm) * ((N + bn - 1) / bn));
    if (f.size() > 7) grid = std::atoi(f[7].c_str());
    CUmodule mod;
    CUfunction fn;
    CK(cuModuleLoad(&mod, f[0].c_str()));
    CK(cuModuleGetFunction(&fn, mod, f[1].c_str()));
    CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
    int regs;
    CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
    CUtensorMap am = map2d(a, K, M, bk, bm), bmap = map2d(b, N, K, 64, bk);
    void* params[] = {&am, &bmap, &a, &b, &c, &M, &K, &N};
    auto launch = [&] { CK(cuLaunchKernel(fn, grid, 1, 1, threads, 1, 1, smem, nullptr, params, nullptr)); };
    RK(cudaMemset(c, 0, M * N * 2));
    launch();
    RK(cudaDeviceSynchronize());
    RK(cudaMemcpy(hc.data(), c, M * N * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    long long bad = 0;
    for (long long e = 0; e < M * N; ++e) {
      double x = __half2float(hc[e]), r = __half2float(href[e]);
      double d = std::abs(x - r) / (1e-2 + std::abs(r));
      worst = std::max(worst, d);
      if (!(d < 2e-2)) ++bad;
    }
    double t = timer.median_us(launch, 50);
    std::printf("%-28s %3d regs grid %5d  %7.1f us %4.0f TFLOP/s  %.3fx cuBLAS  worst rel %.2e  %lld bad\n",
                f[0].c_str(), regs, grid, t, flop / t * 1e-6, t_blas / t, worst, bad);
    CK(cuModuleUnload(mod));
  }
  return 0;
}
