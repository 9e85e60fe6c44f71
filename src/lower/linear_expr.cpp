#include "lower/linear_expr.hpp"

namespace emmy::lower {

using algebra::LinearForm;
using algebra::Rational;
using tir::Expr;

std::optional<LinearForm> linear_form(const Expr& e, const LeafName& leaf) {
  try {
    if (e.kind == Expr::Kind::Const) {
      std::optional<Rational> r = Rational::of_double(e.value);
      return r ? std::optional(LinearForm{{}, *r}) : std::nullopt;
    }
    if (e.kind == Expr::Kind::Call && e.args.size() == 1 &&
        (e.op == "f16" || e.op == "bf16" || e.op == "f32" || e.op == "f64"))
      return linear_form(e.args[0], leaf);
    if (e.kind == Expr::Kind::Unary && e.op == "-") {
      std::optional<LinearForm> a = linear_form(e.args[0], leaf);
      return a ? std::optional(scaled(*a, Rational::of(-1))) : std::nullopt;
    }
    if (e.kind == Expr::Kind::Binary &&
        (e.op == "+" || e.op == "-" || e.op == "*" || (e.op == "/" && is_float(e.dtype)))) {
      std::optional<LinearForm> a = linear_form(e.args[0], leaf), b = linear_form(e.args[1], leaf);
      if (!a || !b) return std::nullopt;
      if (std::optional<LinearForm> f = linear_combine(e.op, *a, *b)) return f;
    }
  } catch (const algebra::Overflow&) {
    return std::nullopt;
  }
  std::optional<std::string> name = leaf(e);
  if (!name) return std::nullopt;
  return LinearForm{{{*name, Rational::of(1)}}, Rational::of(0)};
}

}  // namespace emmy::lower
