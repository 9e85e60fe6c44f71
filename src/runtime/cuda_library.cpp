// The search for a dlopen'd CUDA library: $CUDA_HOME/lib64, /usr/local/cuda/lib64, the loader's path.
#include "runtime/cuda_library.hpp"

#include <cstdlib>
#include <vector>

namespace emmy::runtime {

void* open_cuda_library(std::initializer_list<std::string_view> names, std::string_view what, std::string* path,
                        std::string* error) {
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back("");  // the dynamic loader's own search path
  std::string last_error;
  for (const std::string& dir : dirs)
    for (std::string_view name : names) {
      const std::string candidate = dir + std::string(name);
      if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        *path = candidate;
        return handle;
      }
      last_error = dlerror();
    }
  *error = std::string(what) + " not found in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the loader path (" +
           last_error + ")";
  return nullptr;
}

}  // namespace emmy::runtime
