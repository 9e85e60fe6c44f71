// The symbolic term language of combiners: arithmetic, exp/log/sqrt, max/min, select
// with comparisons, integer division, remainder and casts, exact rational constants
// and the infinities.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/ieee_rules.hpp"

namespace emmy::algebra {

// An exact rational number; arithmetic throws Overflow past 64-bit numerators.
struct Rational {
  int64_t num = 0;
  int64_t den = 1;  // > 0, gcd(num, den) == 1

  static Rational of(int64_t n, int64_t d = 1);
  // Exact value of a decimal literal such as "0.5", "1e-5", "3"; nullopt if too large.
  static std::optional<Rational> parse(const std::string& text);
  // Exact value of a finite double; nullopt past 64-bit numerators and denominators.
  static std::optional<Rational> of_double(double v);
  bool is_zero() const { return num == 0; }
  int sign() const { return num > 0 ? 1 : num < 0 ? -1 : 0; }
  double value() const { return static_cast<double>(num) / static_cast<double>(den); }
  std::string str() const;
  std::strong_ordering operator<=>(const Rational& o) const {
    return static_cast<__int128>(num) * o.den <=> static_cast<__int128>(o.num) * den;
  }
  bool operator==(const Rational& o) const = default;
};
struct Overflow {};
Rational operator+(Rational a, Rational b);
Rational operator-(Rational a, Rational b);
Rational operator*(Rational a, Rational b);
Rational operator/(Rational a, Rational b);
Rational operator-(Rational a);

// The enumerators grouped by family, as laid out by hand.
// clang-format off
enum class TermOp {
  Const, Var, NegInf, PosInf,
  Add, Sub, Mul, Div, Neg,
  Exp, Log, Sqrt, Max, Min, Select,
  Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not,
  IDiv, Mod,  // integer / (truncating toward zero) and % (the dividend's sign), as in C
  Cast,       // to the dtype `name`: "i32", "i64" truncate toward zero; a float dtype is the
              // identity over the reals (the reference is exact), kept for the lowering
};
// clang-format on

// A value-semantic term tree. Vector fields are variables too: every operation is
// elementwise, so a law proved for one channel holds for all.
struct Term {
  TermOp op = TermOp::Const;
  Rational value;    // Const
  std::string name;  // Var; Cast: the target dtype
  std::vector<Term> args;

  static Term constant(Rational r) { return {TermOp::Const, r, "", {}}; }
  static Term var(std::string n) { return {TermOp::Var, {}, std::move(n), {}}; }
  static Term make(TermOp op, std::vector<Term> args) { return {op, {}, "", std::move(args)}; }
  static Term cast(std::string dtype, Term arg) { return {TermOp::Cast, {}, std::move(dtype), {std::move(arg)}}; }
  std::string str() const;
};

// Replaces variables by terms (simultaneously).
Term substitute(const Term& t, const std::vector<std::pair<std::string, Term>>& by);

// IEEE double evaluation (the infinities are real infinities): the oracle of refutation.
// Integer ops follow the reference evaluator: truncating / and %, casts that truncate (and
// wrap to 32 bits for i32); an integer division by zero or a cast of a non-finite value
// is NaN (undefined: it proves nothing).
double evaluate(const Term& t, const std::vector<std::pair<std::string, double>>& env);

// The IEEE value of one operation on evaluated operands, as `evaluate` computes it:
// ieee_unary for Neg, Exp, Log, Sqrt, Not; ieee_binary for the two-operand operations (NaN for
// any other); ieee_integer for a cast to i32 (`i32`) or i64. Inline: they are the inner loop of
// `evaluate` and of the refutation search's compiled terms.
inline double ieee_integer_quotient(double a, double b, bool remainder) {
  if (!std::isfinite(a) || !std::isfinite(b) || std::fabs(a) >= 9.2e18 || std::fabs(b) >= 9.2e18) return NAN;
  auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  if (y == 0) return NAN;
  return static_cast<double>(remainder ? x % y : x / y);
}

inline double ieee_integer(double x, bool i32) {
  double t = std::trunc(x);
  if (!std::isfinite(t) || std::fabs(t) >= 9.2e18) return NAN;
  auto v = static_cast<int64_t>(t);
  return i32 ? static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(v))) : static_cast<double>(v);
}

inline double ieee_unary(TermOp op, double a) {
  switch (op) {
    case TermOp::Neg: return -a;
    case TermOp::Exp: return std::exp(a);
    case TermOp::Log: return std::log(a);
    case TermOp::Sqrt: return std::sqrt(a);
    case TermOp::Not: return a == 0.0;
    default: return NAN;
  }
}

inline double ieee_binary(TermOp op, double a, double b) {
  switch (op) {
    case TermOp::Add: return a + b;
    case TermOp::Sub: return a - b;
    case TermOp::Mul: return a * b;
    case TermOp::Div: return a / b;
    case TermOp::Max: return max_nan(a, b);
    case TermOp::Min: return min_nan(a, b);
    case TermOp::Lt: return a < b;
    case TermOp::Le: return a <= b;
    case TermOp::Gt: return a > b;
    case TermOp::Ge: return a >= b;
    case TermOp::Eq: return a == b;
    case TermOp::Ne: return a != b;
    case TermOp::And: return a != 0.0 && b != 0.0;
    case TermOp::Or: return a != 0.0 || b != 0.0;
    case TermOp::IDiv: return ieee_integer_quotient(a, b, false);
    case TermOp::Mod: return ieee_integer_quotient(a, b, true);
    default: return NAN;
  }
}

// Exact evaluation over the rationals; nullopt where the value is not rational (exp(1),
// an infinity), undefined (a division by zero) or too large.
std::optional<Rational> evaluate_exact(const Term& t, const std::vector<std::pair<std::string, Rational>>& env);

// Is the Cast `t` to an integer dtype (a truncation), not a float one (the identity)?
bool integer_cast(const Term& t);

// Rounding of rationals: floor, and truncation toward zero (C's integer division).
int64_t floor_of(Rational r);
int64_t trunc_of(Rational r);

}  // namespace emmy::algebra
