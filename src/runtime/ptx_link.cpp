// nvJitLink through dlopen (emmyc starts without CUDA): Emmy's PTX to a CUBIN and ptxas's report.
#include "runtime/ptx_link.hpp"

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "runtime/cuda_library.hpp"

namespace emmy::runtime {
namespace {

// ---- the entry points, declared from nvJitLink.h's documented signatures -----------------------
struct LinkOpaque;
using Handle = LinkOpaque*;
using Result = int;           // nvJitLinkResult; 0 is NVJITLINK_SUCCESS
constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX
using SizeFn = Result (*)(Handle, size_t*);
using GetFn = Result (*)(Handle, char*);

struct Api {
  Result (*create)(Handle*, uint32_t, const char**) = nullptr;
  Result (*destroy)(Handle*) = nullptr;
  Result (*add_data)(Handle, int, const void*, size_t, const char*) = nullptr;
  Result (*complete)(Handle) = nullptr;
  SizeFn cubin_size = nullptr, error_log_size = nullptr, info_log_size = nullptr;
  Result (*cubin)(Handle, void*) = nullptr;
  Result (*version)(unsigned*, unsigned*) = nullptr;
  GetFn error_log = nullptr, info_log = nullptr;
};

struct Library {
  Api api;
  std::string error;  // empty when every entry point resolved
};

// $CUDA_HOME/lib64, /usr/local/cuda/lib64, then the loader's path, as NVRTC is found.
Library load_library() {
  Library lib;
  std::string path;
  void* handle = open_cuda_library({"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"}, "libnvJitLink",
                                   &path, &lib.error);
  if (!handle) return lib;
  std::string missing;
  Api& a = lib.api;
  resolve_symbol(handle, "nvJitLinkCreate", a.create, missing);
  resolve_symbol(handle, "nvJitLinkDestroy", a.destroy, missing);
  resolve_symbol(handle, "nvJitLinkAddData", a.add_data, missing);
  resolve_symbol(handle, "nvJitLinkComplete", a.complete, missing);
  resolve_symbol(handle, "nvJitLinkGetLinkedCubinSize", a.cubin_size, missing);
  resolve_symbol(handle, "nvJitLinkGetLinkedCubin", a.cubin, missing);
  resolve_symbol(handle, "nvJitLinkGetErrorLogSize", a.error_log_size, missing);
  resolve_symbol(handle, "nvJitLinkGetErrorLog", a.error_log, missing);
  resolve_symbol(handle, "nvJitLinkGetInfoLogSize", a.info_log_size, missing);
  resolve_symbol(handle, "nvJitLinkGetInfoLog", a.info_log, missing);
  resolve_symbol(handle, "nvJitLinkVersion", a.version, missing);
  if (!missing.empty()) lib.error = path + " has no " + missing;
  return lib;
}

const Library& library() {
  static const Library lib = load_library();
  return lib;
}

std::string text_of(Handle h, SizeFn size_fn, GetFn get_fn) {
  size_t size = 0;
  if (size_fn(h, &size) != 0 || size == 0) return "";
  std::string out(size, '\0');
  if (get_fn(h, out.data()) != 0) return "";
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

}  // namespace

bool ptx_link_available(std::string* why) {
  if (why) *why = library().error;
  return library().error.empty();
}

std::string ptx_link_version() {
  if (!ptx_link_available()) return "";
  unsigned major = 0, minor = 0;
  if (library().api.version(&major, &minor) != 0) return "";
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> ptx_link_flags(const CompileOptions& options) {
  return {fmt::format("-arch={}", options.target->name), "-Xptxas=-v"};
}

CompileResult compile_ptx(std::string_view ptx, const CompileOptions& options) {
  if (!options.target) throw std::invalid_argument("compile_ptx: no target");
  const Library& lib = library();
  if (!lib.error.empty()) throw std::runtime_error("nvJitLink is not available: " + lib.error);
  const Api& api = lib.api;
  const std::vector<std::string> options_text = ptx_link_flags(options);
  std::vector<const char*> flags;
  for (const std::string& flag : options_text) flags.push_back(flag.c_str());
  Handle h = nullptr;
  if (api.create(&h, static_cast<uint32_t>(flags.size()), flags.data()) != 0)
    throw std::runtime_error("nvJitLinkCreate failed for " + options_text[0]);
  std::unique_ptr<LinkOpaque, void (*)(Handle)> owner(h, [](Handle x) { library().api.destroy(&x); });
  CompileResult out;
  out.ptx = std::string(ptx);
  const bool added = api.add_data(h, kInputPtx, out.ptx.c_str(), out.ptx.size() + 1, "emmy.ptx") == 0;
  out.ok = added && api.complete(h) == 0;
  out.log = text_of(h, api.info_log_size, api.info_log) + text_of(h, api.error_log_size, api.error_log);
  if (!out.ok) return out;
  size_t size = 0;
  if (api.cubin_size(h, &size) != 0 || size == 0) return out.ok = false, out;
  out.cubin.resize(size);
  if (api.cubin(h, out.cubin.data()) != 0) return out.ok = false, out;
  out.resources = parse_ptxas_report(out.log);
  return out;
}

}  // namespace emmy::runtime
