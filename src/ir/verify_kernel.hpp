// The kernel IR verifier: types, scopes, register-array indexing, memory spaces, intrinsic
// operands and barrier placement under divergence; its messages are internal errors.
#pragma once

#include <string>
#include <vector>

#include "ir/kernel.hpp"

namespace emmy {

// One message per problem, "<kernel>: `<statement>`: <problem>"; empty: the kernel is well formed.
std::vector<std::string> verify_kernel(const kir::Kernel& kernel);
// The program's bindings (buffer params name program buffers of the same type, scalar params
// are i64 sizes, no kernel writes an input), then verify_kernel of every kernel.
std::vector<std::string> verify_program(const kir::Program& program);

}  // namespace emmy
