// `emmyc compile --ir ast` after sema: the AST annotated with dtypes, shapes and the
// sizes of reduction axes.
#pragma once

#include <string>

#include "sema/sema.hpp"

namespace emmy {

std::string print_checked(const CheckedProgram& program, size_t module = 0);

}  // namespace emmy
