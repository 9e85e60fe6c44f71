// The kernel form of support/ieee_rules.hpp's difference inside exp.
#pragma once

#include "ir/kernel.hpp"
#include "support/ieee_rules.hpp"

namespace emmy::kir {

// a - (a == -inf ? |b| : b): a - b wherever that is not NaN from two -inf, -inf there, and still
// NaN when b is NaN. One compare and one select; |b| is a free operand modifier, and |b| hoists
// with b out of a loop where b is a row's maximum.
Expr exp_difference(Expr a, Expr b);

}  // namespace emmy::kir
