// An on-disk cache of NVRTC results, so a kernel compiled once is loaded, not recompiled.
#pragma once

#include <string>
#include <string_view>

#include "runtime/nvrtc.hpp"

namespace emmy::runtime {

// Sizes are kernel parameters and knobs, op and source are all in the generated CUDA, so an
// entry is keyed by the CUDA text itself together with the target, the NVRTC version and Emmy's
// version: a change of any of them is a miss, a new shape is a hit.
struct CacheOptions {
  bool enabled = true;
  std::string dir;  // empty: default_cache_dir()
};

// $EMMY_CACHE_DIR, else $XDG_CACHE_HOME/emmy/kernels, else $HOME/.cache/emmy/kernels; "" when none is set.
std::string default_cache_dir();

struct CachedCompile {
  CompileResult result;
  bool hit = false;
  std::string path;     // the entry's files without extension; "" when the cache was not used
  std::string warning;  // why the cache was skipped (an unwritable directory); the compile still ran
};

// compile_cuda through the cache. Only successful compiles are stored; a corrupt or colliding
// entry (its stored CUDA differs) is treated as a miss and overwritten.
CachedCompile compile_cuda_cached(std::string_view source, std::string_view program_name, const CompileOptions& options,
                                  const CacheOptions& cache);

}  // namespace emmy::runtime
