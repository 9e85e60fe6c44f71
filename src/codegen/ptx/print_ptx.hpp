// Prints kernel IR as PTX for ptxas, without NVRTC's front end and NVVM optimizer (issue 28):
// registers named after the kernel IR's, structured control flow as branches, the math the
// CUDA printer calls spelled as PTX sequences.
#pragma once

#include <string>
#include <string_view>

#include "ir/kernel.hpp"

namespace emmy {

struct PtxPrint {
  std::string ptx;          // the module: every kernel of the program (empty when `unsupported` is set)
  std::string unsupported;  // what has no PTX spelling here yet ("erf of f32 in k_gelu_1a2b3c"); empty: printed
};

// `arch`: the .target ("sm_90a", "sm_80").
PtxPrint print_ptx(const kir::Program& program, std::string_view arch);

}  // namespace emmy
