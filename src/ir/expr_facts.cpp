// Launch invariance and positivity of kernel-IR expressions, by structural recursion.
#include "ir/expr_facts.hpp"

#include <algorithm>

namespace emmy::kir {

bool launch_invariant(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Const:
    case Expr::Kind::Param: return true;
    case Expr::Kind::Unary:
    case Expr::Kind::Binary:
    case Expr::Kind::Select:
    case Expr::Kind::Cast: return std::all_of(e.args.begin(), e.args.end(), launch_invariant);
    default: return false;
  }
}

bool positive_for_every_launch(const Expr& e, const std::vector<std::string>& sizes) {
  auto positive = [&](const Expr& a) { return positive_for_every_launch(a, sizes); };
  switch (e.kind) {
    case Expr::Kind::Const: return is_float(e.type) ? e.fval > 0 : e.ival > 0;
    case Expr::Kind::Param: return std::find(sizes.begin(), sizes.end(), e.name) != sizes.end();
    case Expr::Kind::Cast: return positive(e.args[0]);
    case Expr::Kind::Unary:
      if (e.un == UnOp::Exp || e.un == UnOp::Exp2 || e.un == UnOp::Exp2Ftz) return true;
      return (e.un == UnOp::Sqrt || e.un == UnOp::Rsqrt) && positive(e.args[0]);
    case Expr::Kind::Binary:
      if (e.bin == BinOp::Max) return positive(e.args[0]) || positive(e.args[1]);
      return (e.bin == BinOp::Mul || e.bin == BinOp::Div || e.bin == BinOp::Add || e.bin == BinOp::Min) &&
             positive(e.args[0]) && positive(e.args[1]);
    default: return false;
  }
}

}  // namespace emmy::kir
