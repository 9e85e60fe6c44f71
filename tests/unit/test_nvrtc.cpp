// Unit tests of NVRTC compilation per target, its error log, and the ptxas -v report parser.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/nvrtc.hpp"
#include "schedule/targets.hpp"
#include "test_helpers.hpp"

using namespace emmy;
using namespace emmy::runtime;

namespace {

constexpr std::string_view kHalfKernel = R"(#include <cuda_fp16.h>
extern "C" __global__ void k_scale(const __half* x, __half* y, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? __half2float(x[i]) : 0.0f;
  __syncthreads();
  if (i < n) y[i] = __float2half(tile[(threadIdx.x + 1) % 256] * 2.0f);
}
)";

// Captured from NVRTC 13.0 (sm_80, --maxrregcount=16), with a non-inlined helper's report appended.
constexpr std::string_view kCapturedLog =
    "ptxas warning : For profile sm_80 adjusting per thread register count of 16 to lower bound of 24\n"
    "ptxas info    : Overriding maximum register limit 256 for 'k_spill' with  24 of maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'k_spill' for 'sm_80'\n"
    "ptxas info    : Function properties for k_spill\n"
    "ptxas         .     112 bytes stack frame, 188 bytes spill stores, 188 bytes spill loads\n"
    "ptxas info    : Used 24 registers, used 1 barriers, 112 bytes cumulative stack size, 4104 bytes smem, "
    "372 bytes cmem[0]\n"
    "ptxas info    : Compile time = 20.642 ms\n"
    "ptxas info    : Compiling entry function 'k_two' for 'sm_80'\n"
    "ptxas info    : Function properties for k_two\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 84 registers, used 0 barriers, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 12.407 ms\n"
    "ptxas info    : Function properties for _Z6helperPfi\n"
    "ptxas         .     40 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n";

// Each section of a 64-bit little-endian ELF file (a CUBIN) by name: its bytes (none for NOBITS).
std::map<std::string, std::string> elf_sections(const std::vector<char>& elf) {
  auto read = [&](size_t at, auto value) {
    REQUIRE(at + sizeof(value) <= elf.size());
    std::memcpy(&value, elf.data() + at, sizeof(value));
    return value;
  };
  const auto table = read(0x28, uint64_t{});
  const auto entry = read(0x3a, uint16_t{}), count = read(0x3c, uint16_t{}), names = read(0x3e, uint16_t{});
  auto header = [&](size_t i) { return table + i * entry; };
  const auto names_at = read(header(names) + 0x18, uint64_t{});
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < count; ++i) {
    const auto name = read(header(i), uint32_t{}), type = read(header(i) + 4, uint32_t{});
    const auto at = read(header(i) + 0x18, uint64_t{}), size = read(header(i) + 0x20, uint64_t{});
    REQUIRE((type == 8 || at + size <= elf.size()));
    out[std::string(elf.data() + names_at + name)] = type == 8 ? "" : std::string(elf.data() + at, size);
  }
  return out;
}

}  // namespace

TEST_CASE("nvrtc: a __half kernel compiles to PTX and CUBIN for every target") {
  if (!test::nvrtc_or_skip()) return;
  CHECK(nvrtc_version().starts_with("1"));
  for (std::string_view name : {"sm_80", "sm_90", "sm_90a", "sm_120"}) {
    CAPTURE(name);
    const TargetInfo* target = find_target(name);
    REQUIRE(target);
    const CompileResult r = compile_cuda(kHalfKernel, "scale.cu", CompileOptions{target, true, {}});
    INFO(r.log);
    REQUIRE(r.ok);
    CHECK(r.ptx.find(".entry k_scale") != std::string::npos);
    CHECK(r.ptx.find(".target " + std::string(name)) != std::string::npos);
    CHECK_FALSE(r.cubin.empty());
    REQUIRE(r.resources.size() == 1);
    const KernelResources& k = r.resources[0];
    CHECK(k.kernel == "k_scale");
    CHECK(k.registers > 0);
    CHECK(k.spill_stores == 0);
    CHECK(k.spill_loads == 0);
    CHECK(k.smem_bytes == 1024);
    CHECK(k.barriers == 1);
  }
}

TEST_CASE("nvrtc: without cubin the result is PTX only, with no ptxas report") {
  if (!test::nvrtc_or_skip()) return;
  const CompileResult r = compile_cuda(kHalfKernel, "scale.cu", CompileOptions{find_target("sm_90a"), false, {}});
  REQUIRE(r.ok);
  CHECK(r.ptx.find(".entry k_scale") != std::string::npos);
  CHECK(r.cubin.empty());
  CHECK(r.resources.empty());
}

TEST_CASE("nvrtc: a syntax error fails with a log naming the file and line") {
  if (!test::nvrtc_or_skip()) return;
  const CompileResult r = compile_cuda("extern \"C\" __global__ void k(float* x) {\n  x[0] = 1.0f\n}\n", "broken.cu",
                                       CompileOptions{find_target("sm_90"), true, {}});
  CHECK_FALSE(r.ok);
  CHECK(r.log.find("broken.cu(3): error") != std::string::npos);
  CHECK(r.ptx.empty());
  CHECK(r.cubin.empty());
}

TEST_CASE("nvrtc: phase_times reports NVRTC's own phases, ptxas's among them for a CUBIN") {
  if (!test::nvrtc_or_skip()) return;
  CompileOptions options{find_target("sm_90a"), true, {}};
  options.phase_times = true;
  const CompileResult r = compile_cuda(kHalfKernel, "scale.cu", options);
  REQUIRE(r.ok);
  std::vector<std::string> names;
  for (const NvrtcPhase& phase : r.phases) {
    names.push_back(phase.name);
    CHECK(phase.seconds >= 0);
    CHECK(phase.seconds < 60);
  }
  CHECK(names == std::vector<std::string>{"CUDA C++ Frontend", "NVVM Optimizer", "PTX Translation"});
  CHECK(compile_cuda(kHalfKernel, "scale.cu", CompileOptions{find_target("sm_90a"), true, {}}).phases.empty());
}

TEST_CASE("nvrtc: split compiles (threads) give each kernel the same code as one thread") {
  if (!test::nvrtc_or_skip()) return;
  const std::string two = std::string(kHalfKernel) +
                          "extern \"C\" __global__ void k_twice(float* y, int n) {\n"
                          "  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = __expf(y[i]) * 2.0f;\n}\n";
  CompileOptions one{find_target("sm_90a"), true, {}};
  one.threads = 1;
  const CompileResult serial = compile_cuda(two, "two.cu", one);
  REQUIRE(serial.ok);
  const std::map<std::string, std::string> expected = elf_sections(serial.cubin);
  REQUIRE(expected.count(".text.k_scale"));
  REQUIRE(expected.count(".text.k_twice"));
  for (int threads : {0, 2}) {
    CAPTURE(threads);
    CompileOptions split = one;
    split.threads = threads;
    const CompileResult r = compile_cuda(two, "two.cu", split);
    REQUIRE(r.ok);
    CHECK(r.ptx == serial.ptx);
    const std::map<std::string, std::string> got = elf_sections(r.cubin);
    // Each kernel's sections (code, constants, attributes) byte for byte; the symbol table may
    // list the kernels in another order, and the tool's note records its options.
    CHECK(got.size() == expected.size());
    for (const auto& [name, bytes] : expected) {
      CAPTURE(name);
      REQUIRE(got.count(name) == 1);
      if (name.find(".k_") != std::string::npos) CHECK(got.at(name) == bytes);
    }
  }
}

TEST_CASE("nvrtc: parse_time_report reads the millisecond rows and skips the rest") {
  const std::vector<NvrtcPhase> phases = parse_time_report(
      "File name, phase name, metric, unit\n"
      "x.cu, CUDA C++ Frontend, 79, ms\n"
      "x.cu, NVVM Optimizer, 420.5, ms\n"
      "x.cu, Peak memory, 12, MB\n"
      "x.cu, PTX Translation, twelve, ms\n"
      "x.cu, PTX Translation, 222, ms");
  REQUIRE(phases.size() == 3);
  CHECK(phases[0].name == "CUDA C++ Frontend");
  CHECK(phases[0].seconds == doctest::Approx(0.079));
  CHECK(phases[1].seconds == doctest::Approx(0.4205));
  CHECK(phases[2].name == "PTX Translation");
  CHECK(phases[2].seconds == doctest::Approx(0.222));
  CHECK(parse_time_report("").empty());
}

TEST_CASE("nvrtc: compile_cuda needs a target") {
  CHECK_THROWS_AS(compile_cuda("", "empty.cu", CompileOptions{}), std::invalid_argument);
}

TEST_CASE("nvrtc: parse_ptxas_report reads every field of every entry function") {
  const auto kernels = parse_ptxas_report(kCapturedLog);
  REQUIRE(kernels.size() == 2);
  const KernelResources& a = kernels[0];
  CHECK(a.kernel == "k_spill");
  CHECK(a.registers == 24);
  CHECK(a.spill_stores == 188);
  CHECK(a.spill_loads == 188);
  CHECK(a.smem_bytes == 4104);
  CHECK(a.stack_bytes == 112);
  CHECK(a.barriers == 1);
  CHECK(a.cmem_bytes == 372);
  const KernelResources& b = kernels[1];
  CHECK(b.kernel == "k_two");
  CHECK(b.registers == 84);
  CHECK(b.spill_stores == 0);
  CHECK(b.spill_loads == 0);
  CHECK(b.smem_bytes == 0);
  CHECK(b.stack_bytes == 0);
  CHECK(b.barriers == 0);
  CHECK(b.cmem_bytes == 360);
  CHECK(parse_ptxas_report("").empty());
  CHECK(parse_ptxas_report("broken.cu(3): error: expected a \";\"\n").empty());
}

TEST_CASE("nvrtc: format_resources") {
  KernelResources k;
  k.kernel = "k_sdpa";
  k.registers = 58;
  k.smem_bytes = 4104;
  k.barriers = 1;
  CHECK(format_resources(k) == "k_sdpa: 58 registers, 0 spill stores, 0 spill loads, 4104 B smem, 0 B stack");
}
