// The symbolic term language of combiners: arithmetic, exp/log/sqrt, max/min, select
// with comparisons, integer division, remainder and casts, exact rational constants
// and the infinities.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace emmy::algebra {

// An exact rational number; arithmetic throws Overflow past 64-bit numerators.
struct Rational {
  int64_t num = 0;
  int64_t den = 1;  // > 0, gcd(num, den) == 1

  static Rational of(int64_t n, int64_t d = 1);
  // Exact value of a decimal literal such as "0.5", "1e-5", "3"; nullopt if too large.
  static std::optional<Rational> parse(const std::string& text);
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

// Exact evaluation over the rationals; nullopt where the value is not rational (exp(1),
// an infinity), undefined (a division by zero) or too large.
std::optional<Rational> evaluate_exact(const Term& t, const std::vector<std::pair<std::string, Rational>>& env);

// Is the Cast `t` to an integer dtype (a truncation), not a float one (the identity)?
bool integer_cast(const Term& t);

// Rounding of rationals: floor, and truncation toward zero (C's integer division).
int64_t floor_of(Rational r);
int64_t trunc_of(Rational r);

}  // namespace emmy::algebra
