// Proves that a flat op's outputs do not depend on one tensor's value: shifting it by a constant
// c (t -> t + c) is traced through the later statements as an abstract value — unchanged, shifted
// by k * c, scaled by exp(c)^k, or unknown — and every output must come out unchanged. That is how
// attention's and softmax's row maximum drops out of their derivatives: exp(s - m) is scaled by
// exp(-c), so are its sums, and their quotient is unchanged.
#include <cmath>

#include "sema/grad.hpp"

namespace emmy::sema::grad {
namespace {

using ast::Expr;
using ast::ExprKind;

struct Effect {
  enum Kind { Same, Shift, Scale, Unknown } kind = Same;
  double k = 0;  // Shift: by k * c; Scale: by exp(c)^k
  static Effect same() { return {}; }
  static Effect shift(double k) { return k == 0 ? same() : Effect{Shift, k}; }
  static Effect scale(double k) { return k == 0 ? same() : Effect{Scale, k}; }
  static Effect unknown() { return {Unknown, 0}; }
  bool is(Kind x) const { return kind == x; }
  bool operator==(const Effect& o) const { return kind == o.kind && k == o.k; }
};

// A scaling's exponent, Same counting as exp(c)^0; nullopt for a shift or the unknown.
std::optional<double> scale_of(const Effect& e) {
  if (e.is(Effect::Same)) return 0.0;
  if (e.is(Effect::Scale)) return e.k;
  return std::nullopt;
}

std::optional<double> shift_of(const Effect& e) {
  if (e.is(Effect::Same)) return 0.0;
  if (e.is(Effect::Shift)) return e.k;
  return std::nullopt;
}

class Tracer {
 public:
  Tracer(const Straight& f, const std::string& candidate) : f_(f), candidate_(candidate) {}

  bool run() {
    bool after = false;
    for (const Line& l : f_.lines) {
      if (l.name == candidate_) {
        effects_[l.name] = Effect::shift(1);
        after = true;
        continue;
      }
      if (after) effects_[l.name] = of(l.value);
    }
    for (const std::string& o : f_.outputs)
      if (auto it = effects_.find(o); it != effects_.end() && !it->second.is(Effect::Same)) return false;
    return after;
  }

 private:
  Effect tensor(const std::string& n) const {
    auto it = effects_.find(n);
    return it == effects_.end() ? Effect::same() : it->second;
  }

  Effect of(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::Name: return tensor(e.text);
      case ExprKind::Index: {
        for (size_t k = 1; k < e.args.size(); ++k)
          if (!of(e.args[k]).is(Effect::Same)) return Effect::unknown();
        return e.args[0].kind == ExprKind::Name ? tensor(e.args[0].text) : of(e.args[0]);
      }
      case ExprKind::Unary: {
        Effect a = of(e.args[0]);
        if (e.text == "!") return a.is(Effect::Same) ? a : Effect::unknown();
        return a.is(Effect::Shift) ? Effect::shift(-a.k) : a;  // -(x * exp(c)^k) is scaled alike
      }
      case ExprKind::Binary: return binary(e.text, of(e.args[0]), of(e.args[1]));
      case ExprKind::Call: return call(e);
      case ExprKind::Reduce: {
        for (const Expr& w : e.where_)
          if (!of(w).is(Effect::Same)) return Effect::unknown();
        if (e.args.size() != 1) return all_same(e.args);
        Effect body = of(e.args[0]);
        if (body.is(Effect::Same)) return body;
        if (e.text == "sum") return body.is(Effect::Scale) ? body : Effect::unknown();
        if (e.text == "max" || e.text == "min") return body;  // order kept: exp(c)^k > 0
        return Effect::unknown();
      }
      case ExprKind::Field:
      case ExprKind::Tuple: return all_same(e.args);
      default: return Effect::same();
    }
  }

  Effect all_same(const std::vector<Expr>& args) const {
    for (const Expr& a : args)
      if (!of(a).is(Effect::Same)) return Effect::unknown();
    return Effect::same();
  }

  static Effect binary(const std::string& op, Effect a, Effect b) {
    if (a.is(Effect::Unknown) || b.is(Effect::Unknown)) return Effect::unknown();
    if (op == "+" || op == "-") {
      const double sign = op == "+" ? 1 : -1;
      if (auto x = shift_of(a), y = shift_of(b); x && y) return Effect::shift(*x + sign * *y);
      if (a.is(Effect::Scale) && a == b) return a;  // x e^kc + y e^kc = (x + y) e^kc
      return Effect::unknown();
    }
    if (op == "*" || op == "/") {
      auto x = scale_of(a), y = scale_of(b);
      if (!x || !y) return Effect::unknown();
      return Effect::scale(op == "*" ? *x + *y : *x - *y);
    }
    // Comparisons: both sides moved alike keep their order (a shift, or a positive factor).
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=")
      return a == b ? Effect::same() : Effect::unknown();
    return a.is(Effect::Same) && b.is(Effect::Same) ? Effect::same() : Effect::unknown();
  }

  Effect call(const Expr& e) const {
    std::vector<Effect> args;
    for (const Expr& a : e.args) args.push_back(of(a));
    const std::string& fn = e.text;
    bool all_same = true;
    for (const Effect& a : args) all_same = all_same && a.is(Effect::Same);
    if (all_same) return Effect::same();
    if (fn == "f16" || fn == "bf16" || fn == "f32" || fn == "f64") return args[0];
    if (fn == "exp" && args[0].is(Effect::Shift)) return Effect::scale(args[0].k);
    if (fn == "exp2" && args[0].is(Effect::Shift)) return Effect::scale(args[0].k * std::log(2.0));
    if (fn == "log" && args[0].is(Effect::Scale)) return Effect::shift(args[0].k);
    if (fn == "log2" && args[0].is(Effect::Scale)) return Effect::shift(args[0].k / std::log(2.0));
    if (fn == "sqrt" && args[0].is(Effect::Scale)) return Effect::scale(args[0].k / 2);
    if (fn == "rsqrt" && args[0].is(Effect::Scale)) return Effect::scale(-args[0].k / 2);
    if (fn == "abs" && args[0].is(Effect::Scale)) return args[0];
    if ((fn == "max" || fn == "min") && args[0] == args[1]) return args[0];
    if (fn == "select" && args[0].is(Effect::Same)) {
      if (args[1] == args[2]) return args[1];
      // Zero is zero however scaled: select(p, x, 0) moves as x does.
      if (is_number(e.args[2], 0) && args[1].is(Effect::Scale)) return args[1];
      if (is_number(e.args[1], 0) && args[2].is(Effect::Scale)) return args[2];
    }
    return Effect::unknown();
  }

  const Straight& f_;
  const std::string& candidate_;
  std::map<std::string, Effect> effects_;
};

}  // namespace

bool outputs_shift_invariant(const Straight& f, const std::string& candidate) { return Tracer(f, candidate).run(); }

}  // namespace emmy::sema::grad
