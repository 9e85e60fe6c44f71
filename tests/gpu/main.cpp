// emmy_gpu_tests: opens the CUDA driver and NVRTC, picks the device's target, then runs doctest.
// Without a GPU, a driver or NVRTC it prints one line and exits 77, which ctest reports as
// skipped (SKIP_RETURN_CODE 77); EMMY_REQUIRE_GPU=1 makes that a failure (exit 1) instead.
//
// Options of its own (the rest go to doctest), each also an environment variable:
//   --ops=sdpa,attention*   EMMY_GPU_OPS      only these ops ('*' matches any run of characters)
//   --small                 EMMY_GPU_SMALL=1  small shapes only: for compute-sanitizer
//   --threads=N             EMMY_GPU_THREADS  CPU workers for lowering, NVRTC and the reference
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "gpu_context.hpp"
#include "runtime/driver.hpp"
#include "runtime/nvrtc.hpp"
#include "schedule/targets.hpp"

namespace emmy::gpu_test {

Context& context() {
  static Context c;
  return c;
}

bool glob_match(const std::string& pattern, const std::string& name) {
  // Iterative wildcard match: '*' backtracks to the last star seen.
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

constexpr int kSkip = 77;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(at, comma - at);
    if (!item.empty()) out.push_back(item);
    at = comma + 1;
  }
  return out;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The repository holding stdlib/ and examples/: $EMMY_SOURCE_DIR, else the source tree this
// binary was built from, else the working directory (the binary carried to another machine
// and run from the repository's root there).
std::optional<std::string> find_root() {
  std::vector<std::string> candidates;
  if (!env("EMMY_SOURCE_DIR").empty()) candidates.push_back(env("EMMY_SOURCE_DIR"));
  candidates.push_back(EMMY_SOURCE_DIR);
  candidates.push_back(std::filesystem::current_path().string());
  for (const std::string& dir : candidates)
    if (std::filesystem::exists(dir + "/stdlib/nn.emmy") && std::filesystem::is_directory(dir + "/examples"))
      return dir;
  return std::nullopt;
}

// The newest non-arch-specific target whose cubins the device runs (sm_90 on an H200; the
// schedules then also run on its arch-specific twin, sm_90a, where the device has one).
const TargetInfo* portable_device_target(int major, int minor) {
  const TargetInfo* t = device_target(major * 10 + minor);
  const TargetInfo* base = t ? base_target(*t) : nullptr;
  return base ? base : t;
}

// Exit 77 (skipped) with one line, or 1 when EMMY_REQUIRE_GPU=1.
int unavailable(const std::string& what) {
  if (env("EMMY_REQUIRE_GPU") == "1") {
    std::fprintf(stderr, "emmy_gpu_tests: FAILED: EMMY_REQUIRE_GPU=1 but %s\n", what.c_str());
    return 1;
  }
  std::printf("emmy_gpu_tests: SKIPPED: %s\n", what.c_str());
  return kSkip;
}

}  // namespace
}  // namespace emmy::gpu_test

int main(int argc, char** argv) {
  using namespace emmy;
  using namespace emmy::gpu_test;
  Context& ctx = context();

  ctx.ops = split_list(env("EMMY_GPU_OPS"));
  ctx.small = env("EMMY_GPU_SMALL") == "1";
  unsigned threads = std::thread::hardware_concurrency();
  if (!env("EMMY_GPU_THREADS").empty()) threads = static_cast<unsigned>(std::atoi(env("EMMY_GPU_THREADS").c_str()));
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--ops=", 0) == 0)
      ctx.ops = split_list(a.substr(6));
    else if (a == "--small")
      ctx.small = true;
    else if (a.rfind("--threads=", 0) == 0)
      threads = static_cast<unsigned>(std::atoi(a.c_str() + 10));
    else
      rest.push_back(argv[i]);
  }
  ctx.threads = threads > 0 ? threads : 1;

  std::string why;
  std::optional<runtime::Driver> driver = runtime::Driver::open(&why);
  if (!driver) return unavailable(fmt::format("no CUDA GPU ({})", why));
  if (!runtime::nvrtc_available(&why)) return unavailable(fmt::format("no NVRTC ({})", why));
  ctx.target = portable_device_target(driver->cc_major(), driver->cc_minor());
  if (!ctx.target)
    return unavailable(fmt::format("no Emmy target for {} (compute capability {}.{})", driver->name(),
                                   driver->cc_major(), driver->cc_minor()));
  std::optional<std::string> root = find_root();
  if (!root) {
    std::fprintf(stderr,
                 "emmy_gpu_tests: error: stdlib/ and examples/ not found (set EMMY_SOURCE_DIR to the repository, "
                 "or run from its root)\n");
    return 2;
  }
  ctx.root = *root;
  ctx.driver = &*driver;
  std::printf(
      "emmy_gpu_tests: %s, compute capability %d.%d, %d SMs, driver %d, NVRTC %s, target %s, %u CPU workers%s%s\n",
      driver->name().c_str(), driver->cc_major(), driver->cc_minor(), driver->multiprocessors(),
      driver->driver_version(), runtime::nvrtc_version().c_str(), std::string(ctx.target->name).c_str(), ctx.threads,
      ctx.small ? ", small shapes" : "",
      ctx.ops.empty() ? "" : fmt::format(", ops {}", fmt::join(ctx.ops, ",")).c_str());
  std::fflush(stdout);

  doctest::Context dt;
  dt.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  int rc = dt.run();
  ctx.driver = nullptr;
  return rc;
}
