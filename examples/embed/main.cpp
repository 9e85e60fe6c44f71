// Embedding Emmy in a C++ program: compile two ops from a source string (one uses the
// logsumexp monoid of the installed std.monoids), run them on the CPU interpreter on random
// host data and check every element against a double-precision computation of the same math.
//
// With EMMY_EMBED_GPU=1 and a CUDA driver, the ops are also launched on the GPU: device
// memory comes from the CUDA driver API, loaded with dlopen (no CUDA headers or libraries
// at build time), in the primary context of device 0, where Emmy launches.
//
// Prints the largest error of each run and "ok"; exits nonzero on a mismatch or an error.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <emmy/emmy.hpp>

namespace {

constexpr const char* kSource = R"emmy(import std.monoids;

/// Softmax of each row in one pass, through the logsumexp monoid of std.monoids.
op row_softmax(x: f32[N, C]) -> (y: f32[N, C]) {
  r[n] = logsumexp(c: x[n, c]);
  lse[n] = r.m + log(r.s);
  y[n, c] = exp(x[n, c] - lse[n]);
}

/// RMS normalization over the last axis: y = x / sqrt(mean(x^2) + 1e-6) * weight.
op rmsnorm(x: f32[N, C], weight: f32[C]) -> (y: f32[N, C]) {
  ms[n] = sum(c: x[n, c] * x[n, c]) / C;
  y[n, c] = x[n, c] * rsqrt(ms[n] + 1e-6) * weight[c];
}
)emmy";

using emmy::api::DType;
using emmy::api::Tensor;

// ---- the same math in double precision -----------------------------------------------

std::vector<double> softmax_reference(const std::vector<float>& x, int64_t n, int64_t c) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    const float* row = &x[i * c];
    double m = -INFINITY;
    for (int64_t j = 0; j < c; ++j) m = std::fmax(m, double(row[j]));
    double l = 0;
    for (int64_t j = 0; j < c; ++j) l += std::exp(double(row[j]) - m);
    for (int64_t j = 0; j < c; ++j) y[i * c + j] = std::exp(double(row[j]) - m) / l;
  }
  return y;
}

std::vector<double> rmsnorm_reference(const std::vector<float>& x, const std::vector<float>& w, int64_t n, int64_t c) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double ms = 0;
    for (int64_t j = 0; j < c; ++j) ms += double(x[i * c + j]) * x[i * c + j];
    double r = 1.0 / std::sqrt(ms / double(c) + 1e-6);
    for (int64_t j = 0; j < c; ++j) y[i * c + j] = double(x[i * c + j]) * r * w[j];
  }
  return y;
}

// Every element within an f32 tolerance of the reference; prints the largest error.
bool compare(const std::string& what, const std::vector<float>& got, const std::vector<double>& want) {
  double max_err = 0;
  size_t bad = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    double err = std::fabs(double(got[k]) - want[k]);
    max_err = std::fmax(max_err, err);
    if (!(err <= 1e-5 + 1e-5 * std::fabs(want[k])) && bad++ < 5)  // NaN fails too
      std::fprintf(stderr, "  %s: [%zu] = %.9g, expected %.9g\n", what.c_str(), k, got[k], want[k]);
  }
  if (bad)
    std::printf("%-30s max |err| = %.3g  MISMATCH (%zu of %zu)\n", what.c_str(), max_err, bad, want.size());
  else
    std::printf("%-30s max |err| = %.3g\n", what.c_str(), max_err);
  return bad == 0;
}

// ---- the few CUDA driver API calls the GPU part needs, through dlopen ------------------

struct Cuda {
  using CUresult = int;
  using CUdevice = int;
  using CUcontext = void*;
  using CUdeviceptr = unsigned long long;

  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;

  void* lib = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;

  template <class F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }

  // Empty when ready; otherwise why not (no driver, no device).
  std::string open() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return "libcuda.so.1 not found";
    bool ok = sym(cuInit, "cuInit") && sym(cuDeviceGet, "cuDeviceGet") &&
              sym(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              (sym(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") ||
               sym(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease")) &&
              sym(cuCtxSetCurrent, "cuCtxSetCurrent") && sym(cuCtxSynchronize, "cuCtxSynchronize") &&
              sym(cuMemAlloc, "cuMemAlloc_v2") && sym(cuMemFree, "cuMemFree_v2") &&
              sym(cuMemcpyHtoD, "cuMemcpyHtoD_v2") && sym(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    if (!ok) return "libcuda.so.1 lacks a driver API function";
    if (int r = cuInit(0)) return "cuInit failed (" + std::to_string(r) + ")";
    if (int r = cuDeviceGet(&device, 0)) return "no CUDA device (" + std::to_string(r) + ")";
    check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    return {};
  }

  ~Cuda() {
    if (context) cuDevicePrimaryCtxRelease(device);
  }

  static void check(CUresult r, const char* what) {
    if (r != 0) throw std::runtime_error(std::string(what) + " failed (CUresult " + std::to_string(r) + ")");
  }
};

// Device buffers for the duration of one launch.
struct DeviceBuffer {
  Cuda& cuda;
  Cuda::CUdeviceptr ptr = 0;
  size_t bytes;
  DeviceBuffer(Cuda& c, size_t n) : cuda(c), bytes(n) { Cuda::check(cuda.cuMemAlloc(&ptr, bytes), "cuMemAlloc"); }
  ~DeviceBuffer() { cuda.cuMemFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)); }
};

// Copies the host inputs to the device, launches, synchronizes and copies the output back.
std::vector<float> run_on_gpu(Cuda& cuda, const emmy::api::Op& op, const std::vector<Tensor>& host_inputs,
                              const std::vector<int64_t>& out_shape, size_t out_elems) {
  std::deque<DeviceBuffer> buffers;  // never moved: each frees its memory once
  std::vector<Tensor> inputs;
  for (const Tensor& t : host_inputs) {
    size_t elems = 1;
    for (int64_t d : t.shape) elems *= size_t(d);
    size_t bytes = elems * emmy::api::dtype_bytes(t.dtype);
    buffers.emplace_back(cuda, bytes);
    Cuda::check(cuda.cuMemcpyHtoD(buffers.back().ptr, t.data, bytes), "cuMemcpyHtoD");
    inputs.push_back({buffers.back().data(), t.dtype, t.shape});
  }
  buffers.emplace_back(cuda, out_elems * sizeof(float));
  op.launch(inputs, {{buffers.back().data(), DType::F32, out_shape}});  // the default stream
  Cuda::check(cuda.cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<float> out(out_elems);
  Cuda::check(cuda.cuMemcpyDtoH(out.data(), buffers.back().ptr, out_elems * sizeof(float)), "cuMemcpyDtoH");
  return out;
}

}  // namespace

int main() {
  try {
    const int64_t N = 6, C = 77;  // not multiples of a warp: the kernels' bounds checks matter
    std::mt19937 rng(2024);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
    std::vector<float> x(N * C), weight(C);
    for (float& v : x) v = normal(rng);
    for (float& v : weight) v = uniform(rng);

    // The stdlib (std.monoids) comes from $EMMY_STDLIB, else from the install next to libemmy.
    emmy::api::Program program = emmy::api::Program::from_source(kSource, "embed.emmy");
    std::printf("ops:");
    for (const std::string& name : program.ops()) std::printf(" %s", name.c_str());
    std::printf("\n");

    struct Case {
      emmy::api::Op op;
      std::vector<Tensor> inputs;
      std::vector<double> want;
    };
    std::vector<Case> cases;
    cases.push_back({program.op("row_softmax"), {{x.data(), DType::F32, {N, C}}}, softmax_reference(x, N, C)});
    cases.push_back({program.op("rmsnorm"),
                     {{x.data(), DType::F32, {N, C}}, {weight.data(), DType::F32, {C}}},
                     rmsnorm_reference(x, weight, N, C)});

    bool ok = true;
    for (const Case& c : cases) {
      emmy::api::Sizes sizes = c.op.bind_sizes(c.inputs);
      std::vector<int64_t> shape = c.op.output_shape(0, sizes);
      std::vector<float> y(c.want.size(), std::nanf(""));
      c.op.run_on_interpreter(c.inputs, {{y.data(), DType::F32, shape}});
      ok &= compare(c.op.name() + " (interpreter)", y, c.want);
    }

    const char* gpu = std::getenv("EMMY_EMBED_GPU");
    if (gpu && std::strcmp(gpu, "1") == 0) {
      Cuda cuda;
      std::string why = cuda.open();
      if (!why.empty()) {
        std::printf("GPU: skipped (%s)\n", why.c_str());
      } else {
        for (const Case& c : cases) {
          std::vector<int64_t> shape = c.op.output_shape(0, c.op.bind_sizes(c.inputs));
          std::vector<float> y = run_on_gpu(cuda, c.op, c.inputs, shape, c.want.size());
          ok &= compare(c.op.name() + " (GPU, " + c.op.target() + ")", y, c.want);
        }
      }
    }

    std::printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const emmy::api::Error& e) {
    std::fprintf(stderr, "emmy error (kind %d): %s\n", static_cast<int>(e.kind()), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
