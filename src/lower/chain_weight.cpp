#include "lower/chain_weight.hpp"

#include <functional>
#include <vector>

#include <fmt/format.h>

#include "algebra/discover.hpp"
#include "algebra/normal_form.hpp"

namespace emmy::lower {
namespace {

using algebra::LinearForm;
using algebra::Rational;
using tir::Expr;

bool is_float_cast(const Expr& e) {
  return e.kind == Expr::Kind::Call && e.args.size() == 1 &&
         (e.op == "f16" || e.op == "bf16" || e.op == "f32" || e.op == "f64");
}

// e as a linear form over its leaves (reads, index values, sizes, registers), each named
// by `atom`; nullopt when e is not linear in them.
std::optional<LinearForm> linear_of(const Expr& e, const std::function<std::string(const Expr&)>& atom) {
  try {
    if (e.kind == Expr::Kind::Const) {
      std::optional<Rational> r = Rational::of_double(e.value);
      return r ? std::optional(LinearForm{{}, *r}) : std::nullopt;
    }
    if (is_float_cast(e)) return linear_of(e.args[0], atom);
    if (e.kind == Expr::Kind::Unary && e.op == "-") {
      std::optional<LinearForm> a = linear_of(e.args[0], atom);
      return a ? std::optional(scaled(*a, Rational::of(-1))) : std::nullopt;
    }
    if (e.kind == Expr::Kind::Binary && (e.op == "+" || e.op == "-" || e.op == "*" || e.op == "/")) {
      std::optional<LinearForm> a = linear_of(e.args[0], atom), b = linear_of(e.args[1], atom);
      if (!a || !b) return std::nullopt;
      if (e.op == "+") return plus(*a, *b);
      if (e.op == "-") return plus(*a, scaled(*b, Rational::of(-1)));
      if (e.op == "*" && a->coef.empty()) return scaled(*b, a->constant);
      if (e.op == "*" && b->coef.empty()) return scaled(*a, b->constant);
      if (e.op == "/" && b->coef.empty() && !b->constant.is_zero()) return scaled(*a, Rational::of(1) / b->constant);
      // a product of two non-constants: one leaf
    }
  } catch (const algebra::Overflow&) {
    return std::nullopt;
  }
  return LinearForm{{{atom(e), Rational::of(1)}}, Rational::of(0)};
}

// Is f exp(c·(x − m)) (or exp2 of it), with c the discovered scale?
bool is_shift(const Expr& f, const Expr& x, const std::string& m, Rational scale) {
  const Expr* g = &f;
  while (is_float_cast(*g)) g = &g->args[0];
  if (g->kind != Expr::Kind::Call || (g->op != "exp" && g->op != "exp2") || g->args.size() != 1) return false;
  bool bad = false;  // m inside a leaf: not linear in it
  auto atom = [&](const Expr& e) -> std::string {
    if (e.kind == Expr::Kind::Read && e.name == m) return "m";
    if (tir::reads(e, m)) bad = true;
    return fmt::format("@{}", tir::print_expr(e));
  };
  std::optional<LinearForm> diff = linear_of(g->args[0], atom), y = linear_of(x, atom);
  if (!diff || !y || bad || y->coef.count("m")) return false;
  auto c = diff->coef.find("m");
  if (c == diff->coef.end() || c->second.sign() >= 0) return false;
  Rational base = -c->second;
  std::optional<Rational> in_e = g->op == "exp" ? std::optional(base) : algebra::exp2_scale_in_base_e(base);
  if (in_e != scale) return false;
  try {
    LinearForm rest = plus(plus(*diff, scaled(*y, -base)), LinearForm{{{"m", base}}, Rational::of(0)});
    return rest.coef.empty() && rest.constant.is_zero();
  } catch (const algebra::Overflow&) {
    return false;
  }
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

std::optional<Expr> chain_weight(const Expr& body, const Expr& x, const std::string& m, Rational scale) {
  std::vector<Expr> fs;
  factors_of(body, fs);
  std::optional<Expr> weight;
  int shifted = 0;
  for (const Expr& f : fs) {
    if (is_shift(f, x, m, scale)) {
      ++shifted;
      continue;
    }
    if (tir::reads(f, m)) return std::nullopt;
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
