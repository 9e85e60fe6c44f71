#include "algebra/normal_form.hpp"

#include <fmt/format.h>

namespace emmy::algebra {
namespace {

LinearForm add_linear(const LinearForm& a, const LinearForm& b, Rational scale = Rational::of(1)) {
  LinearForm out = a;
  for (const auto& [v, c] : b.coef) {
    Rational r = out.coef[v] + scale * c;
    if (r.is_zero())
      out.coef.erase(v);
    else
      out.coef[v] = r;
  }
  out.constant = out.constant + scale * b.constant;
  return out;
}

void accumulate(Poly& p, const Monomial& m, Rational c) {
  if (c.is_zero()) return;
  auto it = p.terms.find(m);
  if (it == p.terms.end()) {
    p.terms.emplace(m, c);
    return;
  }
  it->second = it->second + c;
  if (it->second.is_zero()) p.terms.erase(it);
}

Monomial multiply(const Monomial& a, const Monomial& b) {
  Monomial m = a;
  for (const auto& [v, k] : b.powers) m.powers[v] += k;
  m.exp_arg = add_linear(a.exp_arg, b.exp_arg);
  return m;
}

// Cancels a common constant factor so that equal fractions print alike.
Fraction tidy(Fraction f) {
  if (auto c = f.den.as_constant(); c && !(*c == Rational::of(1))) {
    Poly inv = Poly::constant(Rational::of(1) / *c);
    f.num = f.num * inv;
    f.den = Poly::constant(Rational::of(1));
  }
  return f;
}

}  // namespace

LinearForm scaled(const LinearForm& f, Rational s) {
  LinearForm out;
  for (const auto& [v, c] : f.coef) out.coef[v] = c * s;
  out.constant = f.constant * s;
  return out;
}

LinearForm plus(const LinearForm& a, const LinearForm& b) {
  LinearForm out = a;
  for (const auto& [v, c] : b.coef) {
    Rational r = out.coef[v] + c;
    if (r.is_zero())
      out.coef.erase(v);
    else
      out.coef[v] = r;
  }
  out.constant = out.constant + b.constant;
  return out;
}

std::optional<LinearForm> linear_combine(std::string_view op, const LinearForm& a, const LinearForm& b) {
  if (op == "+") return plus(a, b);
  if (op == "-") return plus(a, scaled(b, Rational::of(-1)));
  if (op == "*" && a.coef.empty()) return scaled(b, a.constant);
  if (op == "*" && b.coef.empty()) return scaled(a, b.constant);
  if (op == "/" && b.coef.empty() && !b.constant.is_zero()) return scaled(a, Rational::of(1) / b.constant);
  return std::nullopt;
}

std::optional<Rational> pivot_shift(const LinearForm& diff, const LinearForm& y, const std::string& pivot) {
  auto c = diff.coef.find(pivot);
  if (y.coef.count(pivot) || c == diff.coef.end() || c->second.sign() >= 0) return std::nullopt;
  const Rational scale = -c->second;
  try {
    // diff - scale·(y - pivot) must vanish: no other term, no constant.
    LinearForm rest = plus(plus(diff, scaled(y, -scale)), LinearForm{{{pivot, scale}}, Rational::of(0)});
    if (!rest.coef.empty() || !rest.constant.is_zero()) return std::nullopt;
  } catch (const Overflow&) {
    return std::nullopt;
  }
  return scale;
}

// Substitutes var := by in a linear form.
LinearForm replace(const LinearForm& f, const std::string& var, const LinearForm& by) {
  auto it = f.coef.find(var);
  if (it == f.coef.end()) return f;
  LinearForm rest = f;
  Rational c = it->second;
  rest.coef.erase(var);
  return plus(rest, scaled(by, c));
}

std::optional<std::pair<std::string, LinearForm>> solve(const LinearForm& f) {
  for (auto it = f.coef.rbegin(); it != f.coef.rend(); ++it) {
    if (it->first == kNegInf || it->first == kPosInf) continue;
    LinearForm rest = f;
    rest.coef.erase(it->first);
    return std::make_pair(it->first, scaled(rest, Rational::of(-1) / it->second));
  }
  return std::nullopt;
}

std::string LinearForm::str() const {
  std::string s;
  for (const auto& [v, c] : coef) {
    std::string term = c == Rational::of(1) ? v : c == Rational::of(-1) ? "-" + v : c.str() + "*" + v;
    s += s.empty() ? term : (term[0] == '-' ? " - " + term.substr(1) : " + " + term);
  }
  if (!constant.is_zero() || s.empty())
    s += s.empty() ? constant.str() : (constant.sign() < 0 ? " - " + (-constant).str() : " + " + constant.str());
  return s;
}

Poly Poly::constant(Rational r) {
  Poly p;
  accumulate(p, Monomial{}, r);
  return p;
}

Poly Poly::var(const std::string& v) {
  Poly p;
  Monomial m;
  m.powers[v] = 1;
  accumulate(p, m, Rational::of(1));
  return p;
}

std::optional<Rational> Poly::as_constant() const {
  if (terms.empty()) return Rational::of(0);
  if (terms.size() == 1 && terms.begin()->first == Monomial{}) return terms.begin()->second;
  return std::nullopt;
}

std::optional<LinearForm> Poly::as_linear() const {
  LinearForm l;
  for (const auto& [m, c] : terms) {
    if (!(m.exp_arg == LinearForm{})) return std::nullopt;
    if (m.powers.empty()) {
      l.constant = c;
    } else if (m.powers.size() == 1 && m.powers.begin()->second == 1) {
      l.coef[m.powers.begin()->first] = c;
    } else {
      return std::nullopt;
    }
  }
  return l;
}

std::string Poly::str() const {
  if (terms.empty()) return "0";
  std::string s;
  for (const auto& [m, c] : terms) {
    std::vector<std::string> factors;
    for (const auto& [v, k] : m.powers) factors.push_back(k == 1 ? v : fmt::format("{}^{}", v, k));
    if (!(m.exp_arg == LinearForm{})) factors.push_back(fmt::format("exp({})", m.exp_arg.str()));
    std::string coef = c.sign() < 0 ? (-c).str() : c.str();
    std::string product = fmt::format("{}", fmt::join(factors, "*"));
    std::string term = factors.empty() ? coef : coef == "1" ? product : fmt::format("{}*{}", coef, product);
    const char* sign = s.empty() ? (c.sign() < 0 ? "-" : "") : (c.sign() < 0 ? " - " : " + ");
    s += fmt::format("{}{}", sign, term);
  }
  return s;
}

Poly operator+(const Poly& a, const Poly& b) {
  Poly out = a;
  for (const auto& [m, c] : b.terms) accumulate(out, m, c);
  return out;
}
Poly operator-(const Poly& a) {
  Poly out;
  for (const auto& [m, c] : a.terms) accumulate(out, m, -c);
  return out;
}
Poly operator-(const Poly& a, const Poly& b) { return a + (-b); }
Poly operator*(const Poly& a, const Poly& b) {
  Poly out;
  for (const auto& [ma, ca] : a.terms)
    for (const auto& [mb, cb] : b.terms) accumulate(out, multiply(ma, mb), ca * cb);
  return out;
}

Poly substitute(const Poly& p, const std::string& var, const LinearForm& by) {
  Poly by_poly = Poly::constant(by.constant);
  for (const auto& [v, c] : by.coef) by_poly = by_poly + Poly::var(v) * Poly::constant(c);
  Poly out;
  for (const auto& [m, c] : p.terms) {
    Monomial rest = m;
    int k = 0;
    if (auto it = rest.powers.find(var); it != rest.powers.end()) {
      k = it->second;
      rest.powers.erase(it);
    }
    if (auto it = rest.exp_arg.coef.find(var); it != rest.exp_arg.coef.end()) {
      Rational e = it->second;
      rest.exp_arg.coef.erase(it);
      rest.exp_arg = add_linear(rest.exp_arg, by, e);
    }
    Poly term;
    accumulate(term, rest, c);
    for (int i = 0; i < k; ++i) term = term * by_poly;
    out = out + term;
  }
  return out;
}

std::optional<LinearForm> Fraction::as_linear() const {
  auto d = den.as_constant();
  auto n = num.as_linear();
  if (!d || !n || d->is_zero()) return std::nullopt;
  LinearForm out;
  for (const auto& [v, c] : n->coef) out.coef[v] = c / *d;
  out.constant = n->constant / *d;
  return out;
}

std::string Fraction::str() const {
  if (auto d = den.as_constant(); d && *d == Rational::of(1)) return num.str();
  return fmt::format("({}) / ({})", num.str(), den.str());
}

Fraction add(const Fraction& a, const Fraction& b) {
  if (a.den == b.den) return tidy({a.num + b.num, a.den});
  return tidy({a.num * b.den + b.num * a.den, a.den * b.den});
}
Fraction sub(const Fraction& a, const Fraction& b) { return add(a, {-b.num, b.den}); }
Fraction mul(const Fraction& a, const Fraction& b) { return tidy({a.num * b.num, a.den * b.den}); }
Fraction div(const Fraction& a, const Fraction& b) {
  if (b.num.is_zero()) throw Overflow{};
  // A single-monomial divisor (x, exp(L), 2*x^2) divides exactly: keep the fraction flat.
  if (b.num.terms.size() == 1 && b.den.as_constant()) {
    const auto& [m, c] = *b.num.terms.begin();
    bool pure_exp = m.powers.empty();
    if (pure_exp) {
      Monomial inv;
      inv.exp_arg = add_linear(LinearForm{}, m.exp_arg, Rational::of(-1));
      Poly p;
      accumulate(p, inv, *b.den.as_constant() / c);
      return mul(a, Fraction::of(p));
    }
  }
  return tidy({a.num * b.den, a.den * b.num});
}

Fraction exp_of(const Fraction& a) {
  if (auto l = a.as_linear()) {
    Monomial m;
    m.exp_arg = *l;
    Poly p;
    accumulate(p, m, Rational::of(1));
    return Fraction::of(p);
  }
  return opaque("exp", {a});
}

Fraction opaque(const std::string& fn, const std::vector<Fraction>& args) {
  std::string name = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) name += (i ? ", " : "") + args[i].str();
  return Fraction::of(Poly::var(name + ")"));
}

bool equal(const Fraction& a, const Fraction& b) {
  Fraction x = drop_vanishing(a), y = drop_vanishing(b);
  return x.num * y.den == y.num * x.den;
}

Fraction drop_vanishing(const Fraction& f) {
  auto vanishes = [](const Monomial& m) {
    auto neg = m.exp_arg.coef.find(kNegInf);
    auto pos = m.exp_arg.coef.find(kPosInf);
    return (neg != m.exp_arg.coef.end() && neg->second.sign() > 0) ||
           (pos != m.exp_arg.coef.end() && pos->second.sign() < 0);
  };
  Fraction out = f;
  for (Poly* p : {&out.num, &out.den})
    for (auto it = p->terms.begin(); it != p->terms.end();)
      it = vanishes(it->first) ? p->terms.erase(it) : std::next(it);
  if (out.den.is_zero()) return f;
  return out;
}

}  // namespace emmy::algebra
