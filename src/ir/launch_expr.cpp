// The host-side evaluation of launch expressions shared by the interpreter and the GPU launcher.
#include "ir/launch_expr.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ir/print_kernel.hpp"

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

// Whether `e` reads only constants and scalar parameters (no register, thread index or memory).
bool of_sizes(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Const:
    case Expr::Kind::Param:
    case Expr::Kind::Cast:
    case Expr::Kind::Select:
    case Expr::Kind::Unary:
    case Expr::Kind::Binary: return std::all_of(e.args.begin(), e.args.end(), of_sizes);
    default: return false;
  }
}

// The value of a sizes-only expression at `scalars`; nullopt where it reads anything else.
std::optional<int64_t> at_sizes(const Expr& e, const std::map<std::string, int64_t>& scalars) {
  if (!of_sizes(e)) return std::nullopt;
  const std::variant<int64_t, std::string> v = evaluate_launch_expr(e, scalars);
  return std::holds_alternative<int64_t>(v) ? std::optional<int64_t>(std::get<int64_t>(v)) : std::nullopt;
}

// zero_size_divisor's walk of one expression: its operands that run, then the node.
std::optional<std::string> zero_divisor(const Expr& e, const std::map<std::string, int64_t>& scalars) {
  auto in = [&](size_t i) { return zero_divisor(e.args[i], scalars); };
  if (e.kind == Expr::Kind::Select) {  // the condition, then the operand it picks (neither on data)
    if (auto d = in(0)) return d;
    std::optional<int64_t> c = at_sizes(e.args[0], scalars);
    return c ? in(*c != 0 ? 1 : 2) : std::nullopt;
  }
  if (e.kind == Expr::Kind::Binary && (e.bin == BinOp::And || e.bin == BinOp::Or)) {
    if (auto d = in(0)) return d;
    std::optional<int64_t> a = at_sizes(e.args[0], scalars);
    return a && ((*a != 0) == (e.bin == BinOp::And)) ? in(1) : std::nullopt;
  }
  for (size_t i = 0; i < e.args.size(); ++i)
    if (auto d = in(i)) return d;
  if (e.kind == Expr::Kind::Binary && (e.bin == BinOp::Div || e.bin == BinOp::Rem) && !is_float(e.type))
    if (at_sizes(e.args[1], scalars) == 0) return print_expr(e.args[1]);
  return std::nullopt;
}

std::optional<std::string> zero_divisor(const std::vector<Stmt>& body, const std::map<std::string, int64_t>& scalars) {
  for (const Stmt& s : body) {
    if (s.kind == Stmt::Kind::If) {  // the condition, then the branch a test of sizes takes (both on data)
      std::optional<std::string> d = zero_divisor(s.args[0], scalars);
      if (d) return d;
      std::optional<int64_t> c = at_sizes(s.args[0], scalars);
      if ((!c || *c != 0) && (d = zero_divisor(s.body, scalars))) return d;
      if ((!c || *c == 0) && (d = zero_divisor(s.orelse, scalars))) return d;
      continue;
    }
    for (const Expr& a : s.args)
      if (auto d = zero_divisor(a, scalars)) return d;
    if (auto d = zero_divisor(s.body, scalars)) return d;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> zero_size_divisor(const Program& p, const std::map<std::string, int64_t>& scalars) {
  for (const Kernel& k : p.kernels)
    if (std::optional<std::string> d = zero_divisor(k.body, scalars)) return d;
  return std::nullopt;
}

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
