// The host-side evaluation of launch expressions shared by the interpreter and the GPU launcher.
#include "ir/launch_expr.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace emmy::kir {
namespace {

struct Bad {
  std::string what;
};

// An integer result truncated to its type's width, as the GPU holds it.
int64_t wrap(ScalarType t, int64_t v) {
  switch (t) {
    case ScalarType::I32: return static_cast<int32_t>(v);
    case ScalarType::U32: return static_cast<uint32_t>(v);
    case ScalarType::Pred: return v != 0;
    default: return v;
  }
}

int64_t constant(const Expr& e) {
  if (!is_float(e.type)) return e.ival;
  if (!std::isfinite(e.fval) || std::fabs(e.fval) >= 9.2e18) throw Bad{"has a constant out of the integer range"};
  return static_cast<int64_t>(e.fval);
}

int64_t eval(const Expr& e, const std::map<std::string, int64_t>& scalars) {
  auto arg = [&](size_t i) { return eval(e.args[i], scalars); };
  switch (e.kind) {
    case Expr::Kind::Const: return constant(e);
    case Expr::Kind::Param: {
      auto it = scalars.find(e.name);
      if (it == scalars.end()) throw Bad{fmt::format("uses {}, not a scalar parameter", e.name)};
      return it->second;
    }
    case Expr::Kind::Cast: return wrap(e.type, arg(0));
    case Expr::Kind::Select: return arg(0) != 0 ? arg(1) : arg(2);
    case Expr::Kind::Unary:
      if (e.un == UnOp::Not) return arg(0) == 0;
      throw Bad{fmt::format("uses '{}'", unop_name(e.un))};
    case Expr::Kind::Binary: break;
    default: throw Bad{"may use only constants, scalar parameters and integer arithmetic"};
  }
  const int64_t a = arg(0), b = arg(1);
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (e.bin) {
    case BinOp::Add: return wrap(e.type, static_cast<int64_t>(ua + ub));
    case BinOp::Sub: return wrap(e.type, static_cast<int64_t>(ua - ub));
    case BinOp::Mul: return wrap(e.type, static_cast<int64_t>(ua * ub));
    case BinOp::Div:
      if (b == 0) throw Bad{"divides by zero"};
      return wrap(e.type, a / b);
    case BinOp::Rem:
      if (b == 0) throw Bad{"divides by zero"};
      return a % b;
    case BinOp::Min: return std::min(a, b);
    case BinOp::Max: return std::max(a, b);
    case BinOp::Lt: return a < b;
    case BinOp::Le: return a <= b;
    case BinOp::Gt: return a > b;
    case BinOp::Ge: return a >= b;
    case BinOp::Eq: return a == b;
    case BinOp::Ne: return a != b;
    case BinOp::And: return a != 0 && b != 0;
    case BinOp::Or: return a != 0 || b != 0;
    default: throw Bad{fmt::format("uses '{}'", binop_name(e.bin))};
  }
}

}  // namespace

std::variant<int64_t, std::string> evaluate_launch_expr(const Expr& e, const std::map<std::string, int64_t>& scalars) {
  try {
    return eval(e, scalars);
  } catch (const Bad& bad) {
    return bad.what;
  }
}

int64_t ctas_at(const Kernel& k, const std::map<std::string, int64_t>& sizes) {
  const auto grid = evaluate_launch_expr(k.grid_x, sizes);
  return std::max<int64_t>(std::holds_alternative<int64_t>(grid) ? std::get<int64_t>(grid) : 1, 1);
}

}  // namespace emmy::kir
