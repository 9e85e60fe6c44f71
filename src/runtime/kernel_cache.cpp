// The kernel cache: KEY.cu (the source, compared on a hit), KEY.ptx, KEY.cubin and KEY.log (the
// NVRTC log with the ptxas report) in one directory; written to a temporary name and renamed.
#include "runtime/kernel_cache.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "emmy/version.hpp"
#include "support/hash.hpp"
#include "support/paths.hpp"

namespace emmy::runtime {
namespace {

namespace fs = std::filesystem;

// The key only names the entry; the stored source settles a hit.
std::string cache_key(std::string_view source, const CompileOptions& options) {
  std::string salt = fmt::format("emmy {}|nvrtc {}|{}|{}|{}", EMMY_VERSION_STRING, nvrtc_version(),
                                 options.target->name, options.cubin ? "cubin" : "ptx",
                                 fmt::join(options.extra_flags, " "));
  return fmt::format("{:016x}", fnv1a(source, fnv1a(salt)));
}

// Writes through a temporary file and a rename, so a reader never sees half an entry file.
bool write_all(const fs::path& path, std::string_view data) {
  fs::path tmp = path;
  tmp += fmt::format(".tmp{}", static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out.write(data.data(), static_cast<std::streamsize>(data.size()))) return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

std::optional<CompileResult> load_entry(const fs::path& base, std::string_view source) {
  auto stored = read_file(fs::path(base).replace_extension(".cu"));
  if (!stored || *stored != source) return std::nullopt;
  auto ptx = read_file(fs::path(base).replace_extension(".ptx"));
  auto cubin = read_file(fs::path(base).replace_extension(".cubin"));
  auto log = read_file(fs::path(base).replace_extension(".log"));
  if (!ptx || !cubin || !log) return std::nullopt;
  CompileResult r;
  r.ok = true;
  r.ptx = std::move(*ptx);
  r.cubin.assign(cubin->begin(), cubin->end());
  r.log = std::move(*log);
  r.resources = parse_ptxas_report(r.log);
  return r;
}

// The .cu goes last: it is what marks the entry complete.
bool store_entry(const fs::path& base, std::string_view source, const CompileResult& r) {
  return write_all(fs::path(base).replace_extension(".ptx"), r.ptx) &&
         write_all(fs::path(base).replace_extension(".cubin"), std::string_view(r.cubin.data(), r.cubin.size())) &&
         write_all(fs::path(base).replace_extension(".log"), r.log) &&
         write_all(fs::path(base).replace_extension(".cu"), source);
}

}  // namespace

std::string default_cache_dir() {
  if (const char* dir = std::getenv("EMMY_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "emmy" / "kernels").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "emmy" / "kernels").string();
  return "";
}

CachedCompile compile_cuda_cached(std::string_view source, std::string_view program_name, const CompileOptions& options,
                                  const CacheOptions& cache) {
  CachedCompile out;
  const std::string dir = cache.dir.empty() ? default_cache_dir() : cache.dir;
  if (!cache.enabled || dir.empty()) {
    out.result = compile_cuda(source, program_name, options);
    if (cache.enabled) out.warning = "no cache directory ($EMMY_CACHE_DIR, $XDG_CACHE_HOME and $HOME are unset)";
    return out;
  }
  const fs::path base = fs::path(dir) / cache_key(source, options);
  out.path = base.string();
  if (auto entry = load_entry(base, source)) {
    out.result = std::move(*entry);
    out.hit = true;
    return out;
  }
  out.result = compile_cuda(source, program_name, options);
  if (!out.result.ok) return out;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !store_entry(base, source, out.result)) {
    out.warning = fmt::format("cannot write the kernel cache in {}{}", dir, ec ? ": " + ec.message() : "");
    out.path.clear();
  }
  return out;
}

}  // namespace emmy::runtime
