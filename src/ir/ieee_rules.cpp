// The kernel form of the difference inside exp (support/ieee_rules.hpp).
#include "ir/ieee_rules.hpp"

#include <limits>

namespace emmy::kir {

Expr exp_difference(Expr a, Expr b) {
  Expr first = binary(BinOp::Eq, a, cf(-std::numeric_limits<double>::infinity(), a.type));
  Expr guarded = select(std::move(first), unary(UnOp::Abs, b), b);
  return binary(BinOp::Sub, std::move(a), std::move(guarded));
}

}  // namespace emmy::kir
