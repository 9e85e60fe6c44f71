// An on-disk cache of NVRTC and nvJitLink results, so a kernel compiled once is loaded, not recompiled.
#pragma once

#include <string>
#include <string_view>

#include "runtime/nvrtc.hpp"

namespace emmy::runtime {

// Sizes are kernel parameters and knobs, op and source are all in the generated CUDA (or PTX), so
// an entry is keyed by the source text itself together with the compiler's command line (the
// target, the include directory, extra flags) and the compiler's, driver's and Emmy's versions: a
// change of any of them is a miss, a new shape is a hit.
struct CacheOptions {
  bool enabled = true;
  std::string dir;  // empty: default_cache_dir()
};

// $EMMY_CACHE_DIR, else $XDG_CACHE_HOME/emmy/kernels, else $HOME/.cache/emmy/kernels; "" when none is set.
std::string default_cache_dir();

// Why `dir` cannot hold the cache ("" when it can); a missing directory is created.
std::string cache_dir_problem(const std::string& dir);

// The warning compile_cuda_cached gives before it compiles: "" when the cache is usable (its
// directory created if missing) or disabled, else "the kernel cache is off: '/x' is not a
// directory; compiling without it". A caller that compiles many times (the tuner) prints it once.
std::string cache_warning(const CacheOptions& cache);

struct CachedCompile {
  CompileResult result;
  bool hit = false;
  std::string path;     // the entry's files without extension; "" when the cache was not used
  std::string warning;  // why the cache was skipped (an unusable directory, a failed write); the compile still ran
  std::string invalid;  // on a miss, why the entry found was not used ("the .cubin does not match the manifest ...")
};

// compile_cuda through the cache. Only successful compiles are stored. An entry is used only as
// a whole: its manifest, written last, must give the size and hash of every other file and the
// ptxas report its log parses to, the stored CUDA must be the source, the PTX non-empty, the
// CUBIN an ELF file with a report for every entry function. Anything else (an emptied .cubin, a
// forged .log, a missing file or manifest) is a miss: recompiled, and the entry overwritten.
CachedCompile compile_cuda_cached(std::string_view source, std::string_view program_name, const CompileOptions& options,
                                  const CacheOptions& cache);

// compile_ptx (Emmy's own PTX through nvJitLink) through the same cache: the entry's source is its
// KEY.ptx; the key holds nvJitLink's version and options instead of NVRTC's.
CachedCompile compile_ptx_cached(std::string_view ptx, const CompileOptions& options, const CacheOptions& cache);

}  // namespace emmy::runtime
