// The tensor IR verifier: names resolve, arities match, index variables are in scope; its
// messages are internal errors.
#pragma once

#include <string>
#include <vector>

#include "ir/tensor_ir.hpp"

namespace emmy::tir {

// One message per problem, "<op>: `<statement>`: <problem>"; empty: the program is well formed.
// Tensors are unique, every statement writes an output or intermediate at its rank, every read
// names a tensor at its rank, an intermediate is written before it is read, index variables are
// the statement's or an enclosing reduction's, sizes are the op's or literals.
std::vector<std::string> verify_program(const Program& program);

}  // namespace emmy::tir
