// Unit tests of the on-disk kernel cache: misses compile and store, hits load the same CUBIN,
// a changed or corrupt entry is a miss and is rewritten, a disabled or unusable cache still compiles.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "runtime/cache_manifest.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/ptx_link.hpp"
#include "support/paths.hpp"
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
  co.extra_flags = {"-lineinfo"};  // another NVRTC command line: another entry
  CHECK(!runtime::compile_cuda_cached(source, "t.cu", co, cache).hit);
  co.extra_flags.clear();
  {  // another CUDA include directory (headers of another toolkit): another entry
    const char* home = std::getenv("CUDA_HOME");
    const std::string saved = home ? home : "";
    setenv("CUDA_HOME", dir.path.c_str(), 1);
    const std::vector<std::string> flags = runtime::nvrtc_flags(co);
    CHECK(std::find(flags.begin(), flags.end(), "-I" + (dir.path / "include").string()) != flags.end());
    CHECK(!runtime::compile_cuda_cached(source, "t.cu", co, cache).hit);
    if (home)
      setenv("CUDA_HOME", saved.c_str(), 1);
    else
      unsetenv("CUDA_HOME");
  }
  CHECK(runtime::compile_cuda_cached(source, "t.cu", co, cache).hit);  // the first entry is still there

  std::ofstream(first.path + ".cu") << "// not the source\n";  // a colliding or corrupt entry
  runtime::CachedCompile third = runtime::compile_cuda_cached(source, "t.cu", co, cache);
  CHECK(!third.hit);
  CHECK(runtime::compile_cuda_cached(source, "t.cu", co, cache).hit);  // rewritten

  runtime::CachedCompile off = runtime::compile_cuda_cached(source, "t.cu", co, {false, dir.path.string()});
  CHECK(!off.hit);
  CHECK(off.path.empty());

  runtime::CachedCompile unwritable =
      runtime::compile_cuda_cached(source, "t.cu", co, {true, "/proc/emmy-no-such-dir"});
  CHECK(unwritable.result.ok);
  CHECK(unwritable.warning.find("the kernel cache is off: cannot create the directory '/proc/emmy-no-such-dir'") == 0);
}

TEST_CASE("kernel cache: Emmy's PTX through nvJitLink is cached by the PTX itself, apart from NVRTC's entries") {
  std::string why;
  if (!runtime::ptx_link_available(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  TempDir dir("emmy-ptx-cache-test-");
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k_store(.param .u64 y) {\n  .reg .b64 %a;\n  .reg .b32 %v;\n"
      "  ld.param.u64 %a, [y];\n  cvta.to.global.u64 %a, %a;\n  mov.b32 %v, 7;\n  st.global.b32 [%a], %v;\n"
      "  ret;\n}\n";
  runtime::CompileOptions co;
  co.target = find_target("sm_90");
  runtime::CacheOptions cache{true, dir.path.string()};
  runtime::CachedCompile first = runtime::compile_ptx_cached(ptx, co, cache);
  REQUIRE_MESSAGE(first.result.ok, first.result.log);
  CHECK(!first.hit);
  REQUIRE(!first.path.empty());
  CHECK(fs::exists(first.path + ".ptx"));
  CHECK(!fs::exists(first.path + ".cu"));  // the PTX is the entry's source
  runtime::CachedCompile second = runtime::compile_ptx_cached(ptx, co, cache);
  CHECK(second.hit);
  CHECK(second.result.cubin == first.result.cubin);
  REQUIRE(second.result.resources.size() == 1);
  CHECK(second.result.resources[0].kernel == "k_store");
  // Another PTX (one constant changed), another target: misses.
  std::string seven = ptx;
  seven.replace(seven.find("mov.b32 %v, 7"), 13, "mov.b32 %v, 8");
  CHECK(!runtime::compile_ptx_cached(seven, co, cache).hit);
  co.target = find_target("sm_90a");
  CHECK(!runtime::compile_ptx_cached(ptx, co, cache).hit);
  co.target = find_target("sm_90");
  // A corrupt source file is a miss, rewritten.
  std::ofstream(first.path + ".ptx") << "// not the source\n";
  CHECK(!runtime::compile_ptx_cached(ptx, co, cache).hit);
  CHECK(runtime::compile_ptx_cached(ptx, co, cache).hit);
}

namespace {

// A file's whole text, replaced.
void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

const char* const kKernel = "extern \"C\" __global__ void k_twice(float* y) { y[threadIdx.x] *= 2.0f; }\n";

// Damage to one file of a valid entry, and what the next read must say about it.
struct Corruption {
  const char* what;
  std::function<void(const std::string& base)> damage;
  const char* reason;
};

}  // namespace

TEST_CASE("kernel cache: an entry is valid only as a whole: each corrupt variant is a miss, recompiled, then a hit") {
  if (!test::nvrtc_or_skip()) return;
  TempDir dir("emmy-cache-corrupt-");
  runtime::CompileOptions co;
  co.target = find_target("sm_90");
  const runtime::CacheOptions cache{true, dir.path.string()};
  const runtime::CachedCompile good = runtime::compile_cuda_cached(kKernel, "t.cu", co, cache);
  REQUIRE(good.result.ok);
  REQUIRE(good.warning.empty());
  REQUIRE(good.result.resources.size() == 1);
  const std::string log = *read_file(good.path + ".log");
  REQUIRE(log.find(" 0 bytes spill stores") != std::string::npos);

  const std::vector<Corruption> corruptions = {
      {"an emptied .cubin", [](const std::string& b) { put(b + ".cubin", ""); },
       "the .cubin does not match the manifest (0 bytes"},
      {"an emptied .ptx", [](const std::string& b) { put(b + ".ptx", ""); },
       "the .ptx does not match the manifest (0 bytes"},
      {"a truncated .cubin",
       [](const std::string& b) {
         const std::string c = *read_file(b + ".cubin");
         put(b + ".cubin", c.substr(0, c.size() / 2));
       },
       "the .cubin does not match the manifest"},
      {"a garbled .cubin of the same size",
       [](const std::string& b) {
         std::string c = *read_file(b + ".cubin");
         c[c.size() / 2] = static_cast<char>(c[c.size() / 2] ^ 0x5a);
         put(b + ".cubin", c);
       },
       "the .cubin does not match the manifest (its hash differs)"},
      {"a .log forged to claim 4096 spill bytes",
       [&](const std::string& b) {
         put(b + ".log", replaced(log, " 0 bytes spill stores", " 4096 bytes spill stores"));
       },
       "the .log does not match the manifest"},
      {"a missing .log", [](const std::string& b) { fs::remove(b + ".log"); }, "the entry's .log is missing"},
      {"a missing manifest", [](const std::string& b) { fs::remove(b + ".manifest"); }, "no manifest"},
      {"a truncated manifest",
       [](const std::string& b) {
         const std::string m = *read_file(b + ".manifest");
         put(b + ".manifest", m.substr(0, m.rfind("end\n")));
       },
       "the manifest is truncated"},
      {"a manifest whose report disagrees with the .log",
       [](const std::string& b) {
         const std::string m = *read_file(b + ".manifest");
         const size_t kernel = m.find("kernel k_twice ");
         REQUIRE(kernel != std::string::npos);
         put(b + ".manifest", m.substr(0, kernel) + "kernel k_twice 255 4096 4096 0 0 0 0\nend\n");
       },
       "the ptxas report in the .log does not match the manifest"},
      {"a .log without a report, with a manifest to match",
       [](const std::string& b) {
         put(b + ".log", "garbage\n");
         runtime::EntryFiles f{*read_file(b + ".cu"), *read_file(b + ".ptx"), *read_file(b + ".cubin"), "garbage\n"};
         put(b + ".manifest", runtime::format_manifest(f, runtime::parse_ptxas_report(f.log)));
       },
       "the .log has no ptxas report for k_twice"},
  };
  for (const Corruption& c : corruptions) {
    const std::string what = c.what;
    CAPTURE(what);
    REQUIRE(runtime::compile_cuda_cached(kKernel, "t.cu", co, cache).hit);  // valid before
    c.damage(good.path);
    const runtime::CachedCompile again = runtime::compile_cuda_cached(kKernel, "t.cu", co, cache);
    CHECK_FALSE(again.hit);
    CHECK(again.invalid.find(c.reason) != std::string::npos);
    CHECK(again.warning.empty());
    CHECK(again.result.cubin == good.result.cubin);
    REQUIRE(again.result.resources.size() == 1);
    CHECK(again.result.resources[0].spill_stores == good.result.resources[0].spill_stores);
    CHECK(again.result.resources[0].registers == good.result.resources[0].registers);
    const runtime::CachedCompile rewritten = runtime::compile_cuda_cached(kKernel, "t.cu", co, cache);
    CHECK(rewritten.hit);  // the entry was overwritten whole
    CHECK(rewritten.invalid.empty());
    CHECK(rewritten.result.cubin == good.result.cubin);
    const std::string rewritten_log = *read_file(good.path + ".log");  // its compile time may differ
    CHECK(rewritten_log.find("4096") == std::string::npos);
    CHECK(runtime::parse_ptxas_report(rewritten_log)[0].registers == good.result.resources[0].registers);
  }
}

TEST_CASE("kernel cache: an unusable directory is said in one warning and the compile runs without the cache") {
  TempDir dir("emmy-cache-unusable-");
  fs::create_directories(dir.path);
  const std::string file = (dir.path / "a-file").string();
  put(file, "not a directory\n");
  CHECK(runtime::cache_dir_problem(file) == "'" + file + "' is not a directory");
  CHECK(runtime::cache_warning({true, file}) ==
        "the kernel cache is off: '" + file + "' is not a directory; compiling without it");
  CHECK(runtime::cache_warning({false, file}).empty());
  CHECK(runtime::cache_dir_problem(file + "/kernels") == "'" + file + "/kernels': Not a directory");
  CHECK(runtime::cache_dir_problem((dir.path / "new" / "kernels").string()).empty());  // created
  CHECK(fs::is_directory(dir.path / "new" / "kernels"));
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directories(dir.path / "locked");
    fs::permissions(dir.path / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(runtime::cache_dir_problem((dir.path / "locked").string()).find("is not writable") != std::string::npos);
    fs::permissions(dir.path / "locked", fs::perms::owner_all);
  }

  if (!test::nvrtc_or_skip()) return;
  runtime::CompileOptions co;
  co.target = find_target("sm_90");
  const runtime::CachedCompile c = runtime::compile_cuda_cached(kKernel, "t.cu", co, {true, file});
  CHECK(c.result.ok);
  CHECK(!c.result.cubin.empty());
  CHECK_FALSE(c.hit);
  CHECK(c.path.empty());
  CHECK(c.warning.find("is not a directory") != std::string::npos);
  CHECK(read_file(file) == "not a directory\n");
}

TEST_CASE("kernel cache manifest: it names every file's size and hash and the report; a difference is named") {
  const std::string log =
      "ptxas info    : Compiling entry function 'k_a' for 'sm_90'\n"
      "ptxas info    : Function properties for k_a\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]\n";
  const runtime::EntryFiles files{"__global__ void k_a() {}", ".visible .entry k_a(\n)\n{\n}\n",
                                  "\x7f"
                                  "ELF rest",
                                  log};
  const auto report = runtime::parse_ptxas_report(log);
  const std::string manifest = runtime::format_manifest(files, report);
  CHECK(manifest.find("file cubin 9 ") != std::string::npos);
  CHECK(manifest.find("\nkernel k_a 12 0 0 0 0 0 360\nend\n") != std::string::npos);
  CHECK(runtime::check_entry(manifest, files, report, true) == "");
  CHECK(runtime::ptx_entries(".visible .entry k_a(\n.visible .entry k_b (\n") ==
        std::vector<std::string>{"k_a", "k_b"});

  runtime::EntryFiles empty_cubin = files;
  empty_cubin.cubin.clear();
  CHECK(runtime::check_entry(manifest, empty_cubin, report, true) ==
        "the .cubin does not match the manifest (0 bytes, the manifest says 9)");
  CHECK(runtime::check_entry(manifest + "more\n", files, report, true) == "the manifest has lines after its end");
  CHECK(runtime::check_entry("", files, report, true).find("no manifest") != std::string::npos);
  // A consistent entry that is still unusable: no CUBIN where one was asked for, no report.
  CHECK(runtime::check_entry(runtime::format_manifest(empty_cubin, report), empty_cubin, report, true) ==
        "the .cubin is not an ELF file (0 bytes)");
  CHECK(runtime::check_entry(runtime::format_manifest(empty_cubin, report), empty_cubin, report, false) == "");
  CHECK(runtime::check_entry(runtime::format_manifest(files, {}), files, {}, true) ==
        "the .log has no ptxas report for k_a");
}
