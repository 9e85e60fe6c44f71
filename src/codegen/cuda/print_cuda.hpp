// Prints a kernel-IR program as one CUDA translation unit for NVRTC: a header comment, the
// includes and intrinsic helpers it uses, then each kernel as readable CUDA C++.
#pragma once

#include <string>

#include "ir/kernel.hpp"

namespace emmy {

std::string print_cuda(const kir::Program& program);
// One expression as CUDA C++ (explicit conversions; the IR's meaning exactly).
std::string print_cuda_expr(const kir::Expr& expr);

}  // namespace emmy
