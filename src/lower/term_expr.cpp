// Monoid terms as tensor-IR expressions, one table of operator spellings.
#include "lower/term_expr.hpp"

#include <cmath>

#include <fmt/format.h>

#include "lower/passes.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower {

using tir::Expr;

Expr const_expr(double value, DType dtype) {
  Expr e;
  e.kind = Expr::Kind::Const;
  e.dtype = dtype;
  e.value = value;
  return e;
}

Expr index_expr(const std::string& name) {
  Expr e;
  e.kind = Expr::Kind::Index;
  e.dtype = DType::I64;
  e.name = name;
  return e;
}

Expr reg_expr(const std::string& name, DType dtype) {
  Expr e;
  e.kind = Expr::Kind::Reg;
  e.dtype = dtype;
  e.name = name;
  return e;
}

Expr binary_expr(const std::string& op, Expr a, Expr b, DType dtype) {
  Expr e;
  e.kind = Expr::Kind::Binary;
  e.op = op;
  e.dtype = dtype;
  e.args = {std::move(a), std::move(b)};
  return e;
}

Expr call_expr(const std::string& fn, std::vector<Expr> args, DType dtype) {
  Expr e;
  e.kind = Expr::Kind::Call;
  e.op = fn;
  e.dtype = dtype;
  e.args = std::move(args);
  return e;
}

// A monoid's identity or lift term as an expression over the reduction's arguments.
Expr term_expr(const algebra::Term& t, const std::map<std::string, Expr>& params, DType dtype) {
  using algebra::TermOp;
  static const std::pair<TermOp, const char*> kBinary[] = {
      {TermOp::Add, "+"},  {TermOp::Sub, "-"}, {TermOp::Mul, "*"},  {TermOp::Div, "/"}, {TermOp::Lt, "<"},
      {TermOp::Le, "<="},  {TermOp::Gt, ">"},  {TermOp::Ge, ">="},  {TermOp::Eq, "=="}, {TermOp::Ne, "!="},
      {TermOp::And, "&&"}, {TermOp::Or, "||"}, {TermOp::IDiv, "/"}, {TermOp::Mod, "%"}};
  static const std::pair<TermOp, const char*> kCalls[] = {{TermOp::Exp, "exp"},   {TermOp::Log, "log"},
                                                          {TermOp::Sqrt, "sqrt"}, {TermOp::Max, "max"},
                                                          {TermOp::Min, "min"},   {TermOp::Select, "select"}};
  switch (t.op) {
    case TermOp::Const: return const_expr(t.value.value(), dtype);
    case TermOp::NegInf: return const_expr(-INFINITY, dtype);
    case TermOp::PosInf: return const_expr(INFINITY, dtype);
    case TermOp::Var:
      if (auto it = params.find(t.name); it != params.end()) return it->second;
      internal_error(__FILE__, __LINE__, fmt::format("the monoid term variable '{}' is unbound", t.name));
    case TermOp::Neg:
    case TermOp::Not: {
      Expr e;
      e.kind = Expr::Kind::Unary;
      e.op = std::string(1, t.op == TermOp::Neg ? '-' : '!');  // (a literal here trips GCC 12's -Wrestrict)
      e.args.push_back(term_expr(t.args[0], params, dtype));
      e.dtype = t.op == TermOp::Not ? DType::Bool : e.args[0].dtype;
      return e;
    }
    case TermOp::Cast: {  // to an integer dtype: the reference's truncation, kept in the kernel
      Expr e;
      e.kind = Expr::Kind::Call;
      e.op = t.name;
      e.args.push_back(term_expr(t.args[0], params, dtype));
      e.dtype = parse_dtype(t.name).value_or(DType::I64);
      return e;
    }
    default: break;
  }
  Expr e;
  for (const auto& [op, spelling] : kBinary)
    if (op == t.op) e.kind = Expr::Kind::Binary, e.op = spelling;
  for (const auto& [op, spelling] : kCalls)
    if (op == t.op) e.kind = Expr::Kind::Call, e.op = spelling;
  if (e.op.empty())
    internal_error(__FILE__, __LINE__, fmt::format("no tensor-IR form for the monoid term '{}'", t.str()));
  for (const algebra::Term& a : t.args) e.args.push_back(term_expr(a, params, dtype));
  bool predicate =
      e.kind == Expr::Kind::Binary && e.op != "+" && e.op != "-" && e.op != "*" && e.op != "/" && e.op != "%";
  e.dtype = predicate ? DType::Bool : e.args.back().dtype;
  if ((t.op == TermOp::IDiv || t.op == TermOp::Mod) && !is_int(e.dtype))  // an integer op on integer operands
    e.dtype = is_int(e.args[0].dtype) ? e.args[0].dtype : DType::I64;
  return e;
}

}  // namespace emmy::lower
