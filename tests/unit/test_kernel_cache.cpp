// Unit tests of the on-disk kernel cache: misses compile and store, hits load the same CUBIN,
// a changed entry is a miss, a disabled or unwritable cache still compiles.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/kernel_cache.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using namespace emmy;

namespace {

// A fresh directory under the system's temporary folder, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / (name + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("kernel cache: a miss compiles and stores, a hit loads the same CUBIN, a changed entry is a miss") {
  if (!test::nvrtc_or_skip()) return;
  TempDir dir("emmy-cache-test-");
  const std::string source = "extern \"C\" __global__ void k_twice(float* y) { y[threadIdx.x] *= 2.0f; }\n";
  runtime::CompileOptions co;
  co.target = find_target("sm_90");
  runtime::CacheOptions cache{true, dir.path.string()};

  runtime::CachedCompile first = runtime::compile_cuda_cached(source, "t.cu", co, cache);
  REQUIRE(first.result.ok);
  CHECK(!first.hit);
  CHECK(first.warning.empty());
  REQUIRE(!first.path.empty());
  CHECK(fs::exists(first.path + ".cubin"));

  runtime::CachedCompile second = runtime::compile_cuda_cached(source, "t.cu", co, cache);
  CHECK(second.hit);
  CHECK(second.result.cubin == first.result.cubin);
  REQUIRE(second.result.resources.size() == 1);
  CHECK(second.result.resources[0].kernel == "k_twice");
  CHECK(second.result.resources[0].registers == first.result.resources[0].registers);

  co.target = find_target("sm_80");  // another target: another entry
  CHECK(!runtime::compile_cuda_cached(source, "t.cu", co, cache).hit);
  co.target = find_target("sm_90");

  std::ofstream(first.path + ".cu") << "// not the source\n";  // a colliding or corrupt entry
  runtime::CachedCompile third = runtime::compile_cuda_cached(source, "t.cu", co, cache);
  CHECK(!third.hit);
  CHECK(runtime::compile_cuda_cached(source, "t.cu", co, cache).hit);  // rewritten

  runtime::CachedCompile off = runtime::compile_cuda_cached(source, "t.cu", co, {false, dir.path.string()});
  CHECK(!off.hit);
  CHECK(off.path.empty());

  runtime::CachedCompile unwritable = runtime::compile_cuda_cached(source, "t.cu", co, {true, "/proc/emmy-no-such-dir"});
  CHECK(unwritable.result.ok);
  CHECK(unwritable.warning.find("cannot write the kernel cache in /proc/emmy-no-such-dir") == 0);
}
