// The CUDA libraries Emmy loads with dlopen (NVRTC, nvJitLink): where they are looked for and
// how their entry points resolve, so that emmyc starts (and interprets) without CUDA.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace emmy::runtime {

// The first of `names` that loads from $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the dynamic
// loader's path, its path in *path; null with *error ("libX not found in ... (dlerror)") otherwise.
void* open_cuda_library(std::initializer_list<std::string_view> names, std::string_view what, std::string* path,
                        std::string* error);

// dlsym of `name` into `slot`; the first name that does not resolve is kept in `missing`.
template <class F>
void resolve_symbol(void* handle, const char* name, F& slot, std::string& missing) {
  void* symbol = dlsym(handle, name);
  slot = reinterpret_cast<F>(symbol);
  if (!symbol && missing.empty()) missing = name;
}

}  // namespace emmy::runtime
