// PTX to CUBIN through nvJitLink (ptxas in a library), loaded at run time with dlopen: the
// compile behind Emmy's own PTX printer (codegen/ptx), with the same ptxas report as NVRTC's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/nvrtc.hpp"

namespace emmy::runtime {

// Whether libnvJitLink could be loaded with every entry point Emmy uses; otherwise `why` says why.
bool ptx_link_available(std::string* why = nullptr);

// The loaded nvJitLink's version, "13.0"; "" when nvJitLink is not available.
std::string ptx_link_version();

// nvJitLink's options for options.target: "-arch=sm_90a -Xptxas=-v".
std::vector<std::string> ptx_link_flags(const CompileOptions& options);

// One PTX module compiled for options.target (its sm_XX[a]) with ptxas -v: the CUBIN, the
// report's resources and the log (ptxas's errors when !ok). result.ptx is `ptx`. Throws
// std::runtime_error (one line) when nvJitLink cannot be loaded, std::invalid_argument when
// options.target is null.
CompileResult compile_ptx(std::string_view ptx, const CompileOptions& options);

}  // namespace emmy::runtime
