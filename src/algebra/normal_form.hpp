// Normal forms of the reduction fragment: rational functions whose monomials are
// products of variables (and opaque atoms) times one exp of a linear form. Two terms
// are equal on every case when their normal forms are.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "algebra/term.hpp"

namespace emmy::algebra {

// The variables standing for -inf and +inf: larger (smaller) than every finite value.
inline const std::string kNegInf = "-inf";
inline const std::string kPosInf = "+inf";

// sum(coef[v] * v) + constant.
struct LinearForm {
  std::map<std::string, Rational> coef;
  Rational constant;
  bool operator==(const LinearForm&) const = default;
  auto operator<=>(const LinearForm&) const = default;
  std::string str() const;
};

LinearForm scaled(const LinearForm& f, Rational s);
LinearForm plus(const LinearForm& a, const LinearForm& b);
// Substitutes var := by in a linear form.
LinearForm replace(const LinearForm& f, const std::string& var, const LinearForm& by);
// a op b for op + - * /, when the result is linear: a product or quotient by a constant (the
// caller decides that / is a real quotient); nullopt otherwise. Throws Overflow as plus does.
std::optional<LinearForm> linear_combine(std::string_view op, const LinearForm& a, const LinearForm& b);
// diff = c·(y - pivot) with c > 0, `pivot` a variable y does not have: c; else nullopt (the shifted
// difference of an online softmax's weight, exp(c·(x - m)), or a deviation from a mean).
std::optional<Rational> pivot_shift(const LinearForm& diff, const LinearForm& y, const std::string& pivot);
// An equality f == 0 solved for its largest variable (the infinities are never solved for).
std::optional<std::pair<std::string, LinearForm>> solve(const LinearForm& f);

// prod(v ^ powers[v]) * exp(exp_arg).
struct Monomial {
  std::map<std::string, int> powers;
  LinearForm exp_arg;
  bool operator==(const Monomial&) const = default;
  auto operator<=>(const Monomial&) const = default;
};

struct Poly {
  std::map<Monomial, Rational> terms;  // no zero coefficients
  static Poly constant(Rational r);
  static Poly var(const std::string& v);
  bool is_zero() const { return terms.empty(); }
  std::optional<Rational> as_constant() const;
  // The linear form when every monomial has degree <= 1 and no exp.
  std::optional<LinearForm> as_linear() const;
  std::string str() const;
  bool operator==(const Poly&) const = default;
};

Poly operator+(const Poly& a, const Poly& b);
Poly operator-(const Poly& a);
Poly operator-(const Poly& a, const Poly& b);
Poly operator*(const Poly& a, const Poly& b);
Poly substitute(const Poly& p, const std::string& var, const LinearForm& by);

// num / den; den is never the zero polynomial.
struct Fraction {
  Poly num = Poly::constant(Rational::of(0));
  Poly den = Poly::constant(Rational::of(1));
  static Fraction of(Poly p) { return {std::move(p), Poly::constant(Rational::of(1))}; }
  std::optional<LinearForm> as_linear() const;
  std::string str() const;
};

Fraction add(const Fraction& a, const Fraction& b);
Fraction sub(const Fraction& a, const Fraction& b);
Fraction mul(const Fraction& a, const Fraction& b);
Fraction div(const Fraction& a, const Fraction& b);                         // throws Overflow when b is zero
Fraction exp_of(const Fraction& a);                                         // exp of a linear form, else an opaque atom
Fraction opaque(const std::string& fn, const std::vector<Fraction>& args);  // log(x), sqrt(x), ...
bool equal(const Fraction& a, const Fraction& b);

// Limits at the infinities: exp terms that vanish (exp(-inf + ...)) are dropped.
Fraction drop_vanishing(const Fraction& f);

}  // namespace emmy::algebra
