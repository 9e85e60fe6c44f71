#include "lower/chain_weight.hpp"

#include <vector>

#include <fmt/format.h>

#include "algebra/discover.hpp"
#include "algebra/normal_form.hpp"
#include "lower/linear_expr.hpp"
#include "lower/term_expr.hpp"

namespace emmy::lower {
namespace {

using algebra::LinearForm;
using algebra::Rational;
using tir::Expr;

bool is_float_cast(const Expr& e) {
  return e.kind == Expr::Kind::Call && e.args.size() == 1 &&
         (e.op == "f16" || e.op == "bf16" || e.op == "f32" || e.op == "f64");
}

// Is f exp(c·(x − m)) (or exp2 of it), with c the discovered scale?
bool is_shift(const Expr& f, const Expr& x, const tir::Stmt& m, Rational scale) {
  const Expr* g = &f;
  while (is_float_cast(*g)) g = &g->args[0];
  if (g->kind != Expr::Kind::Call || (g->op != "exp" && g->op != "exp2") || g->args.size() != 1) return false;
  std::optional<Rational> base = pivot_scale_of(g->args[0], x, m);
  if (!base) return false;
  return (g->op == "exp" ? base : algebra::exp2_scale_in_base_e(*base)) == scale;
}

void factors_of(const Expr& e, std::vector<Expr>& out) {
  if (e.kind == Expr::Kind::Binary && e.op == "*") {
    factors_of(e.args[0], out);
    factors_of(e.args[1], out);
    return;
  }
  out.push_back(e);
}

}  // namespace

std::optional<Rational> pivot_scale_of(const Expr& diff, const Expr& x, const tir::Stmt& pivot) {
  Expr own;  // the pivot at its own variables: m[b, h, i]
  own.kind = Expr::Kind::Read;
  own.name = pivot.name;
  for (const tir::Axis& v : pivot.vars) own.args.push_back(index_expr(v.name));
  const std::string own_text = tir::print_expr(own);
  bool other = false;  // the pivot read elsewhere, or inside a leaf
  auto leaf = [&](const Expr& e) -> std::optional<std::string> {
    std::string text = tir::print_expr(e);
    if (e.kind == Expr::Kind::Read && text == own_text) return std::string("m");
    if (tir::reads(e, pivot.name)) other = true;
    return fmt::format("@{}", text);
  };
  std::optional<LinearForm> d = linear_form(diff, leaf), y = linear_form(x, leaf);
  if (!d || !y || other) return std::nullopt;
  return algebra::pivot_shift(*d, *y, "m");
}

std::optional<Expr> chain_weight(const Expr& body, const Expr& x, const tir::Stmt& m, Rational scale) {
  std::vector<Expr> fs;
  factors_of(body, fs);
  std::optional<Expr> weight;
  int shifted = 0;
  for (const Expr& f : fs) {
    if (is_shift(f, x, m, scale)) {
      ++shifted;
      continue;
    }
    if (tir::reads(f, m.name)) return std::nullopt;
    if (!weight) {
      weight = f;
      continue;
    }
    Expr mul;
    mul.kind = Expr::Kind::Binary;
    mul.op = "*";
    mul.dtype = weight->dtype == DType::F64 || f.dtype == DType::F64 ? DType::F64 : DType::F32;
    mul.args = {*weight, f};
    weight = mul;
  }
  if (shifted != 1) return std::nullopt;
  if (!weight) {
    weight.emplace();
    weight->kind = Expr::Kind::Const;
    weight->value = 1;
  }
  return weight;
}

}  // namespace emmy::lower
