// The loop IR verifier: kernels, their index spaces and loop nests; its messages are internal
// errors.
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.hpp"

namespace emmy::lir {

// One message per problem, "<kernel>: `<statement>`: <problem>"; empty: the program is well
// formed. Its tensor program verifies (tir::verify_program); kernel names are unique ("" the main kernel's); every
// index variable is a thread's, an enclosing loop's, the fold's own (in its lifts and
// predicate) or a reduction's; stores write an output or a materialized intermediate at its
// rank, atomics only with sum, max or min; folds have a monoid, fields and at most one
// predicate, a range of none or two bounds; loops tile by at least 1.
std::vector<std::string> verify_program(const Program& program);

}  // namespace emmy::lir
