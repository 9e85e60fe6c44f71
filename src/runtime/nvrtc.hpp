// CUDA C++ to PTX and CUBIN through NVRTC, loaded at run time with dlopen, with the ptxas resource report.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedule/targets.hpp"

namespace emmy::runtime {

// What ptxas reports for one entry function (`--ptxas-options=-v`).
struct KernelResources {
  std::string kernel;    // the entry name: kernels are extern "C", so unmangled
  int registers = 0;     // per thread
  int spill_stores = 0;  // bytes
  int spill_loads = 0;   // bytes
  int smem_bytes = 0;    // static shared memory per block
  int stack_bytes = 0;   // per-thread stack frame; the cumulative size over callees when ptxas gives it
  int barriers = 0;      // named barriers used
  int cmem_bytes = 0;    // constant bank 0 (kernel parameters); ptxas omits it for some targets
};

struct CompileOptions {
  const TargetInfo* target = nullptr;    // required
  bool cubin = true;                     // sm_XX: PTX + CUBIN + ptxas report; false: compute_XX, PTX only
  std::vector<std::string> extra_flags;  // appended after Emmy's own flags
  bool phase_times = false;              // NVRTC times its own phases (--time) into CompileResult::phases
  // Threads NVRTC's optimizer and ptxas may spread the program's kernels over (--split-compile):
  // 0, every core; 1, none (a caller that builds several programs at once). The code is the
  // same either way (each kernel's sections byte for byte; the symbol table's order and the
  // note of the tool's options may differ), so the kernel cache's key leaves it out.
  int threads = 0;
};

// One phase of NVRTC's compile as its --time report names it: "CUDA C++ Frontend", "NVVM
// Optimizer", "PTX Translation" (ptxas, for an sm_XX target).
struct NvrtcPhase {
  std::string name;
  double seconds = 0;
};

struct CompileResult {
  bool ok = false;
  std::string log;  // NVRTC's program log: front-end errors, ptxas report
  std::string ptx;
  std::vector<char> cubin;                 // empty unless options.cubin
  std::vector<KernelResources> resources;  // one per entry function, in ptxas order
  std::vector<NvrtcPhase> phases;          // with CompileOptions::phase_times, in NVRTC's order
};

// The options compile_cuda passes to NVRTC for `options` (the architecture, ptxas -v, C++17, the
// CUDA include directory, then extra_flags): the kernel cache keys an entry by them.
std::vector<std::string> nvrtc_flags(const CompileOptions& options);

// Whether libnvrtc could be loaded and has every entry point Emmy uses; otherwise `why` says why.
bool nvrtc_available(std::string* why = nullptr);

// The loaded NVRTC's version, "13.0"; "" when NVRTC is not available.
std::string nvrtc_version();

// Compiles one CUDA C++ translation unit for options.target. Throws std::runtime_error (one line)
// when NVRTC cannot be loaded and std::invalid_argument when options.target is null.
CompileResult compile_cuda(std::string_view source, std::string_view program_name, const CompileOptions& options);

// The rows of NVRTC's --time report ("x.cu, NVVM Optimizer, 420, ms"), in seconds.
std::vector<NvrtcPhase> parse_time_report(std::string_view csv);

// The entry functions of a ptxas -v report as NVRTC 13 writes it into the program log.
std::vector<KernelResources> parse_ptxas_report(std::string_view log);

// "k_sdpa: 58 registers, 0 spill stores, 0 spill loads, 4104 B smem, 0 B stack"
std::string format_resources(const KernelResources& resources);

}  // namespace emmy::runtime
