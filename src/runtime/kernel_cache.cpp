// The kernel cache: KEY.cu (NVRTC's source, compared on a hit), KEY.ptx (nvJitLink's source for
// Emmy's own PTX), KEY.cubin, KEY.log (the compile's log with the ptxas report) and KEY.manifest,
// written last, which vouches for the others (cache_manifest.hpp); each file is written to a
// temporary name and renamed.
#include "runtime/kernel_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "emmy/version.hpp"
#include "runtime/cache_manifest.hpp"
#include "runtime/driver.hpp"
#include "runtime/ptx_link.hpp"
#include "support/hash.hpp"
#include "support/paths.hpp"
#include "support/write_file.hpp"

namespace emmy::runtime {
namespace {

namespace fs = std::filesystem;

// What an entry is compiled from and by: CUDA through NVRTC (the source is KEY.cu) or Emmy's PTX
// through nvJitLink (the source is KEY.ptx); the salt is everything else the result depends on.
struct Compiler {
  bool from_ptx = false;
  std::string salt;
  std::function<CompileResult()> compile;
};

// The key only names the entry; the stored source settles a hit.
std::string cache_key(std::string_view source, const Compiler& compiler) {
  return fmt::format("{:016x}", fnv1a(source, fnv1a(compiler.salt)));
}

fs::path with_extension(const fs::path& base, const char* extension) {
  return fs::path(base).replace_extension(extension);
}

// The entry's files as a compile left them, or why they cannot be used (`why`).
std::optional<CompileResult> load_entry(const fs::path& base, std::string_view source, bool from_ptx, bool cubin,
                                        std::string& why) {
  const char* source_extension = from_ptx ? ".ptx" : ".cu";
  const std::optional<std::string> stored = read_file(with_extension(base, source_extension));
  if (!stored) return std::nullopt;  // no entry: a plain miss
  if (*stored != source) {
    why = fmt::format("the stored {} is another source (a colliding or corrupt entry)", source_extension);
    return std::nullopt;
  }
  const std::optional<std::string> ptx = from_ptx ? stored : read_file(with_extension(base, ".ptx"));
  const std::optional<std::string> binary = read_file(with_extension(base, ".cubin"));
  const std::optional<std::string> log = read_file(with_extension(base, ".log"));
  const std::optional<std::string> manifest = read_file(with_extension(base, ".manifest"));
  if (!ptx || !binary || !log) {
    why = fmt::format("the entry's .{} is missing or unreadable", !ptx ? "ptx" : !binary ? "cubin" : "log");
    return std::nullopt;
  }
  CompileResult r;
  r.ok = true;
  r.resources = parse_ptxas_report(*log);
  why = check_entry(manifest.value_or(""), {from_ptx ? "" : *stored, *ptx, *binary, *log}, r.resources, cubin);
  if (!why.empty()) return std::nullopt;
  r.ptx = *ptx;
  r.cubin.assign(binary->begin(), binary->end());
  r.log = *log;
  return r;
}

// The manifest goes first (removed) and last (written): an entry is never complete halfway.
std::string store_entry(const fs::path& base, std::string_view source, bool from_ptx, const CompileResult& r) {
  const fs::path manifest = with_extension(base, ".manifest");
  std::error_code ec;
  fs::remove(manifest, ec);
  const WriteOptions fast{false};  // every read checks the entry: no fsync needed
  const EntryFiles files{from_ptx ? "" : std::string(source), r.ptx, std::string(r.cubin.begin(), r.cubin.end()),
                         r.log};
  // A PTX entry has no .cu: its source is the .ptx.
  for (const auto& [extension, content] : {std::pair<const char*, const std::string*>{".cu", &files.cu},
                                           {".ptx", &files.ptx},
                                           {".cubin", &files.cubin},
                                           {".log", &files.log}}) {
    if (from_ptx && content == &files.cu) continue;
    if (std::string failed = write_file(with_extension(base, extension), *content, fast); !failed.empty())
      return failed;
  }
  return write_file(manifest, format_manifest(files, r.resources), fast);
}

std::string off(const std::string& why) { return "the kernel cache is off: " + why + "; compiling without it"; }

CachedCompile compile_cached(std::string_view source, const Compiler& compiler, bool cubin, const CacheOptions& cache) {
  CachedCompile out;
  out.warning = cache_warning(cache);
  if (!cache.enabled || !out.warning.empty()) {
    out.result = compiler.compile();
    return out;
  }
  const std::string dir = cache.dir.empty() ? default_cache_dir() : cache.dir;
  const fs::path base = fs::path(dir) / cache_key(source, compiler);
  out.path = base.string();
  if (auto entry = load_entry(base, source, compiler.from_ptx, cubin, out.invalid)) {
    out.result = std::move(*entry);
    out.hit = true;
    return out;
  }
  out.result = compiler.compile();
  if (!out.result.ok) return out;
  if (std::string failed = store_entry(base, source, compiler.from_ptx, out.result); !failed.empty()) {
    out.warning = off(failed);
    out.path.clear();
  }
  return out;
}

}  // namespace

std::string default_cache_dir() {
  if (const char* dir = std::getenv("EMMY_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "emmy" / "kernels").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "emmy" / "kernels").string();
  return "";
}

std::string cache_dir_problem(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return fmt::format("'{}': {}", dir, std::error_code(errno, std::generic_category()).message());
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return fmt::format("cannot create the directory '{}': {}", dir, ec.message());
    if (::stat(dir.c_str(), &st) != 0) return fmt::format("'{}' vanished after it was created", dir);
  }
  if (!S_ISDIR(st.st_mode)) return fmt::format("'{}' is not a directory", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("'{}' is not writable: {}", dir, std::error_code(errno, std::generic_category()).message());
  return "";
}

std::string cache_warning(const CacheOptions& cache) {
  if (!cache.enabled) return "";
  const std::string dir = cache.dir.empty() ? default_cache_dir() : cache.dir;
  if (dir.empty()) return off("no cache directory ($EMMY_CACHE_DIR, $XDG_CACHE_HOME and $HOME are unset)");
  const std::string problem = cache_dir_problem(dir);
  return problem.empty() ? "" : off(problem);
}

// Everything the result depends on besides the source: Emmy's, NVRTC's and the driver's
// versions, and NVRTC's whole command line (the architecture, sm_XX for a CUBIN or compute_XX for
// PTX, the include directory, extra flags).
CachedCompile compile_cuda_cached(std::string_view source, std::string_view program_name, const CompileOptions& options,
                                  const CacheOptions& cache) {
  Compiler nvrtc{false,
                 fmt::format("emmy {}|nvrtc {}|driver {}|{}", EMMY_VERSION_STRING, nvrtc_version(),
                             installed_driver_version(), fmt::join(nvrtc_flags(options), " ")),
                 [&] { return compile_cuda(source, program_name, options); }};
  return compile_cached(source, nvrtc, options.cubin, cache);
}

// Emmy's, nvJitLink's and the driver's versions and nvJitLink's options (the architecture).
CachedCompile compile_ptx_cached(std::string_view ptx, const CompileOptions& options, const CacheOptions& cache) {
  Compiler link{true,
                fmt::format("emmy {}|nvjitlink {}|driver {}|{}", EMMY_VERSION_STRING, ptx_link_version(),
                            installed_driver_version(), fmt::join(ptx_link_flags(options), " ")),
                [&] { return compile_ptx(ptx, options); }};
  return compile_cached(ptx, link, true, cache);
}

}  // namespace emmy::runtime
