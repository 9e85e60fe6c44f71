// NVRTC through dlopen (emmyc starts without CUDA), the compile flags per target, and the ptxas -v parser.
#include "runtime/nvrtc.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/cuda_library.hpp"
#include "support/paths.hpp"

#ifndef EMMY_CUDA_INCLUDE
#define EMMY_CUDA_INCLUDE ""
#endif

namespace emmy::runtime {
namespace {

// ---- the NVRTC entry points, declared from nvrtc.h's documented signatures --------------------
struct NvrtcProgramOpaque;  // nvrtcProgram is a pointer to an opaque struct
using Program = NvrtcProgramOpaque*;
using Result = int;  // nvrtcResult; 0 is NVRTC_SUCCESS
using SizeFn = Result (*)(Program, std::size_t*);
using GetFn = Result (*)(Program, char*);

struct Api {
  const char* (*get_error_string)(Result) = nullptr;
  Result (*version)(int*, int*) = nullptr;
  Result (*create_program)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  Result (*destroy_program)(Program*) = nullptr;
  Result (*compile_program)(Program, int, const char* const*) = nullptr;
  SizeFn get_program_log_size = nullptr;
  GetFn get_program_log = nullptr;
  SizeFn get_ptx_size = nullptr;
  GetFn get_ptx = nullptr;
  SizeFn get_cubin_size = nullptr;
  GetFn get_cubin = nullptr;
};

struct Library {
  Api api;
  std::string error;  // empty when every entry point resolved
};

Library load_library() {
  Library lib;
  std::string path;
  void* handle = open_cuda_library({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "libnvrtc", &path, &lib.error);
  if (!handle) return lib;
  std::string missing;
  Api& a = lib.api;
  resolve_symbol(handle, "nvrtcGetErrorString", a.get_error_string, missing);
  resolve_symbol(handle, "nvrtcVersion", a.version, missing);
  resolve_symbol(handle, "nvrtcCreateProgram", a.create_program, missing);
  resolve_symbol(handle, "nvrtcDestroyProgram", a.destroy_program, missing);
  resolve_symbol(handle, "nvrtcCompileProgram", a.compile_program, missing);
  resolve_symbol(handle, "nvrtcGetProgramLogSize", a.get_program_log_size, missing);
  resolve_symbol(handle, "nvrtcGetProgramLog", a.get_program_log, missing);
  resolve_symbol(handle, "nvrtcGetPTXSize", a.get_ptx_size, missing);
  resolve_symbol(handle, "nvrtcGetPTX", a.get_ptx, missing);
  resolve_symbol(handle, "nvrtcGetCUBINSize", a.get_cubin_size, missing);
  resolve_symbol(handle, "nvrtcGetCUBIN", a.get_cubin, missing);
  if (!missing.empty()) lib.error = path + " has no " + missing;
  return lib;
}

// The one piece of global state: the library, loaded once on first use (thread-safe static
// initialisation) and never unloaded.
const Library& library() {
  static const Library lib = load_library();
  return lib;
}

const Api& loaded_api() {
  const Library& lib = library();
  if (!lib.error.empty()) throw std::runtime_error("NVRTC is not available: " + lib.error);
  return lib.api;
}

void check(const Api& api, Result result, std::string_view what) {
  if (result != 0) throw std::runtime_error(fmt::format("{} failed: {}", what, api.get_error_string(result)));
}

struct ProgramDeleter {
  Result (*destroy)(Program*);
  void operator()(Program program) const { destroy(&program); }
};
using ProgramPtr = std::unique_ptr<NvrtcProgramOpaque, ProgramDeleter>;

std::vector<char> fetch(const Api& api, Program program, SizeFn size_fn, GetFn get_fn, std::string_view what) {
  std::size_t size = 0;
  check(api, size_fn(program, &size), what);
  std::vector<char> bytes(size);
  if (size > 0) check(api, get_fn(program, bytes.data()), what);
  return bytes;
}

// Log and PTX sizes count a terminating NUL.
std::string text(const std::vector<char>& bytes) { return {bytes.data(), strnlen(bytes.data(), bytes.size())}; }

// ---- flags -------------------------------------------------------------------------------------
std::string cuda_include_dir() {
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) return std::string(home) + "/include";
  std::string_view configured = EMMY_CUDA_INCLUDE;
  return configured.ends_with("-NOTFOUND") ? std::string() : std::string(configured);
}

// ---- the ptxas -v report -----------------------------------------------------------------------
// One comma-separated item of a report line ("Used 58 registers", "4104 bytes smem") and its field.
struct ReportItem {
  std::string_view unit;
  int KernelResources::*field;
};

// "cumulative stack size" follows "stack frame" when ptxas gives both, so it wins.
constexpr ReportItem kReportItems[] = {
    {"registers", &KernelResources::registers},
    {"barriers", &KernelResources::barriers},
    {"bytes smem", &KernelResources::smem_bytes},
    {"bytes cmem[0]", &KernelResources::cmem_bytes},
    {"bytes stack frame", &KernelResources::stack_bytes},
    {"bytes cumulative stack size", &KernelResources::stack_bytes},
    {"bytes spill stores", &KernelResources::spill_stores},
    {"bytes spill loads", &KernelResources::spill_loads},
};

std::string_view trim(std::string_view s) {
  const std::size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

std::optional<std::string_view> after(std::string_view s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return std::nullopt;
  return s.substr(prefix.size());
}

// "ptxas info    : Used 12 registers" and "ptxas         .     0 bytes stack frame" -> the message.
std::string_view ptxas_message(std::string_view line) {
  if (!line.starts_with("ptxas")) return {};
  const std::size_t colon = line.find(" : "), dot = line.find(" . ");
  const std::size_t mark = std::min(colon, dot);
  return mark == std::string_view::npos ? std::string_view() : trim(line.substr(mark + 3));
}

// A line of numbers for the current function: "Used ..." or "0 bytes stack frame, ...".
bool is_number_line(std::string_view message) {
  return message.starts_with("Used ") || (!message.empty() && message[0] >= '0' && message[0] <= '9');
}

void apply_item(std::string_view item, KernelResources& kernel) {
  item = trim(item);
  item = after(item, "Used ").value_or(after(item, "used ").value_or(item));
  int value = 0;
  auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (error != std::errc()) return;
  const std::string_view unit = trim(item.substr(static_cast<std::size_t>(end - item.data())));
  for (const ReportItem& row : kReportItems)
    if (row.unit == unit) kernel.*row.field = value;
}

void apply_items(std::string_view message, KernelResources& kernel) {
  for (std::size_t start = 0; start <= message.size();) {
    const std::size_t comma = std::min(message.find(',', start), message.size());
    apply_item(message.substr(start, comma - start), kernel);
    start = comma + 1;
  }
}

std::optional<std::size_t> kernel_index(const std::vector<KernelResources>& kernels, std::string_view name) {
  for (std::size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].kernel == name) return i;
  return std::nullopt;  // a non-inlined device function: not reported
}

// A file of its own in the temporary directory, removed with the object (NVRTC's --time
// report goes there).
struct TempFile {
  std::string path;
  TempFile() {
    // mkstemp replaces the six X with a unique suffix and creates the file.
    std::string pattern = (std::filesystem::temp_directory_path() / "emmy-nvrtc-time-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw std::runtime_error("cannot create a temporary file for NVRTC's --time report");
    ::close(fd);
    path = pattern;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

// sm_XX runs ptxas (CUBIN + resource report); compute_XX stops at PTX.
std::vector<std::string> nvrtc_flags(const CompileOptions& options) {
  std::string_view number = options.target->name.substr(std::string_view("sm_").size());
  std::vector<std::string> flags = {fmt::format("--gpu-architecture={}{}", options.cubin ? "sm_" : "compute_", number),
                                    "--ptxas-options=-v", "-std=c++17", "-default-device"};
  if (std::string include = cuda_include_dir(); !include.empty()) flags.push_back("-I" + include);
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

bool nvrtc_available(std::string* why) {
  const Library& lib = library();
  if (why) *why = lib.error;
  return lib.error.empty();
}

std::string nvrtc_version() {
  if (!nvrtc_available()) return "";
  int major = 0, minor = 0;
  check(library().api, library().api.version(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

CompileResult compile_cuda(std::string_view source, std::string_view program_name, const CompileOptions& options) {
  if (!options.target) throw std::invalid_argument("compile_cuda: CompileOptions::target is not set");
  const Api& api = loaded_api();
  const std::string src(source), name(program_name);
  Program raw = nullptr;
  check(api, api.create_program(&raw, src.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  const ProgramPtr program(raw, ProgramDeleter{api.destroy_program});

  std::vector<std::string> flags = nvrtc_flags(options);
  std::optional<TempFile> time_report;
  if (options.phase_times) flags.push_back("--time=" + time_report.emplace().path);
  if (options.threads != 1) flags.push_back(fmt::format("--split-compile={}", std::max(options.threads, 0)));
  std::vector<const char*> argv;
  for (const std::string& flag : flags) argv.push_back(flag.c_str());
  const Result compiled = api.compile_program(raw, static_cast<int>(argv.size()), argv.data());

  CompileResult result;
  if (time_report) result.phases = parse_time_report(read_file(time_report->path).value_or(""));
  result.ok = compiled == 0;
  result.log = text(fetch(api, raw, api.get_program_log_size, api.get_program_log, "nvrtcGetProgramLog"));
  if (!result.ok) return result;
  result.ptx = text(fetch(api, raw, api.get_ptx_size, api.get_ptx, "nvrtcGetPTX"));
  if (options.cubin) result.cubin = fetch(api, raw, api.get_cubin_size, api.get_cubin, "nvrtcGetCUBIN");
  result.resources = parse_ptxas_report(result.log);
  return result;
}

std::vector<NvrtcPhase> parse_time_report(std::string_view csv) {
  std::vector<NvrtcPhase> phases;
  for (std::size_t start = 0; start < csv.size();) {
    const std::size_t newline = std::min(csv.find('\n', start), csv.size());
    std::vector<std::string_view> cells;
    for (std::string_view line = csv.substr(start, newline - start);;) {
      const std::size_t comma = line.find(',');
      cells.push_back(trim(line.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      line.remove_prefix(comma + 1);
    }
    start = newline + 1;
    double value = 0;
    if (cells.size() != 4 || cells[3] != "ms") continue;  // the header, or a row of another unit
    auto [end, error] = std::from_chars(cells[2].data(), cells[2].data() + cells[2].size(), value);
    if (error == std::errc() && end == cells[2].data() + cells[2].size())
      phases.push_back({std::string(cells[1]), value / 1000.0});
  }
  return phases;
}

std::vector<KernelResources> parse_ptxas_report(std::string_view log) {
  std::vector<KernelResources> kernels;
  std::optional<std::size_t> current;  // the function the number lines describe
  for (std::size_t start = 0; start < log.size();) {
    const std::size_t newline = std::min(log.find('\n', start), log.size());
    const std::string_view message = ptxas_message(log.substr(start, newline - start));
    start = newline + 1;
    if (auto entry = after(message, "Compiling entry function '")) {
      kernels.push_back({std::string(entry->substr(0, entry->find('\'')))});
      current = kernels.size() - 1;
    } else if (auto function = after(message, "Function properties for ")) {
      current = kernel_index(kernels, *function);
    } else if (current && is_number_line(message)) {
      apply_items(message, kernels[*current]);
    }
  }
  return kernels;
}

std::string format_resources(const KernelResources& r) {
  return fmt::format("{}: {} registers, {} spill stores, {} spill loads, {} B smem, {} B stack", r.kernel, r.registers,
                     r.spill_stores, r.spill_loads, r.smem_bytes, r.stack_bytes);
}

}  // namespace emmy::runtime
