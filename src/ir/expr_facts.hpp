// Facts about a kernel-IR expression that hold for every launch: whether it is computed from
// scalar parameters and constants only, and whether it is positive whatever the sizes are.
#pragma once

#include <string>
#include <vector>

#include "ir/kernel.hpp"

namespace emmy::kir {

// Constants and parameters, through unary, binary, select and cast nodes: no register, no
// thread or block index, no memory. Such a value can be computed once, before every loop.
bool launch_invariant(const Expr& e);

// Positive for every launch: constants > 0, the named `sizes` (parameters that are axis
// sizes), and what sqrt, rsqrt, exp, products, quotients, sums, min and max keep positive.
// False means "not proved", not "negative".
bool positive_for_every_launch(const Expr& e, const std::vector<std::string>& sizes);

}  // namespace emmy::kir
