#include "algebra/term.hpp"
#include "support/ieee_rules.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace emmy::algebra {
namespace {

int64_t checked(__int128 v) {
  if (v > INT64_MAX || v < INT64_MIN) throw Overflow{};  // INT64_MIN: the identity of an i64 max
  return static_cast<int64_t>(v);
}

Rational normalized(__int128 n, __int128 d) {
  if (d == 0) throw Overflow{};  // division by zero is never an identity we can use
  if (d < 0) n = -n, d = -d;
  __int128 a = n < 0 ? -n : n, b = d;
  while (b) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  if (a > 1) n /= a, d /= a;
  return {checked(n), checked(d)};
}

}  // namespace

Rational Rational::of(int64_t n, int64_t d) { return normalized(n, d); }

std::optional<Rational> Rational::of_double(double v) {
  if (!std::isfinite(v)) return std::nullopt;
  if (v == 0) return Rational::of(0);
  int e = 0;
  double frac = std::frexp(v, &e);  // v = frac * 2^e, 0.5 <= |frac| < 1
  auto mant = static_cast<int64_t>(std::ldexp(frac, 53));
  int shift = e - 53;
  for (; shift < 0 && mant % 2 == 0; ++shift) mant /= 2;
  if (shift >= 0) {
    if (shift > 9) return std::nullopt;
    return Rational::of(mant * (int64_t{1} << shift));
  }
  if (shift < -62) return std::nullopt;
  return Rational::of(mant, int64_t{1} << -shift);
}

std::optional<Rational> Rational::parse(const std::string& text) {
  try {
    __int128 mant = 0;
    int exp10 = 0;
    size_t i = 0;
    bool seen_dot = false;
    for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
      if (text[i] == '.') {
        seen_dot = true;
        continue;
      }
      mant = mant * 10 + (text[i] - '0');
      if (mant > INT64_MAX) return std::nullopt;
      if (seen_dot) --exp10;
    }
    if (i < text.size()) exp10 += std::stoi(text.substr(i + 1));
    if (exp10 < -18 || exp10 > 18) return std::nullopt;
    __int128 scale = 1;
    for (int k = 0; k < std::abs(exp10); ++k) scale *= 10;
    return exp10 >= 0 ? normalized(mant * scale, 1) : normalized(mant, scale);
  } catch (...) {
    return std::nullopt;
  }
}

std::string Rational::str() const { return den == 1 ? std::to_string(num) : fmt::format("{}/{}", num, den); }

Rational operator+(Rational a, Rational b) {
  return normalized(static_cast<__int128>(a.num) * b.den + static_cast<__int128>(b.num) * a.den,
                    static_cast<__int128>(a.den) * b.den);
}
Rational operator-(Rational a) { return {checked(-static_cast<__int128>(a.num)), a.den}; }
Rational operator-(Rational a, Rational b) { return a + (-b); }
Rational operator*(Rational a, Rational b) {
  return normalized(static_cast<__int128>(a.num) * b.num, static_cast<__int128>(a.den) * b.den);
}
Rational operator/(Rational a, Rational b) {
  return normalized(static_cast<__int128>(a.num) * b.den, static_cast<__int128>(a.den) * b.num);
}

namespace {

struct OpInfo {
  TermOp op;
  const char* spelling;
  bool infix;
};

const OpInfo kOps[] = {
    {TermOp::Const, "", false},     {TermOp::Var, "", false},    {TermOp::NegInf, "-inf", false},
    {TermOp::PosInf, "inf", false}, {TermOp::Add, "+", true},    {TermOp::Sub, "-", true},
    {TermOp::Mul, "*", true},       {TermOp::Div, "/", true},    {TermOp::Neg, "-", false},
    {TermOp::Exp, "exp", false},    {TermOp::Log, "log", false}, {TermOp::Sqrt, "sqrt", false},
    {TermOp::Max, "max", false},    {TermOp::Min, "min", false}, {TermOp::Select, "select", false},
    {TermOp::Lt, "<", true},        {TermOp::Le, "<=", true},    {TermOp::Gt, ">", true},
    {TermOp::Ge, ">=", true},       {TermOp::Eq, "==", true},    {TermOp::Ne, "!=", true},
    {TermOp::And, "&&", true},      {TermOp::Or, "||", true},    {TermOp::Not, "!", false},
    {TermOp::IDiv, "/", true},      {TermOp::Mod, "%", true},    {TermOp::Cast, "", false},
};

const OpInfo& info(TermOp op) { return kOps[static_cast<size_t>(op)]; }

}  // namespace

std::string Term::str() const {
  switch (op) {
    case TermOp::Const: return value.str();
    case TermOp::Var: return name;
    case TermOp::NegInf:
    case TermOp::PosInf: return info(op).spelling;
    case TermOp::Neg: return fmt::format("-{}", args[0].str());
    case TermOp::Not: return fmt::format("!{}", args[0].str());
    case TermOp::Cast: return fmt::format("{}({})", name, args[0].str());
    default: break;
  }
  const OpInfo& i = info(op);
  if (i.infix) return fmt::format("({} {} {})", args[0].str(), i.spelling, args[1].str());
  std::vector<std::string> parts;
  for (const Term& a : args) parts.push_back(a.str());
  return fmt::format("{}({})", i.spelling, fmt::join(parts, ", "));
}

Term substitute(const Term& t, const std::vector<std::pair<std::string, Term>>& by) {
  if (t.op == TermOp::Var)
    for (const auto& [n, r] : by)
      if (n == t.name) return r;
  Term out = t;
  for (Term& a : out.args) a = substitute(a, by);
  return out;
}

double evaluate(const Term& t, const std::vector<std::pair<std::string, double>>& env) {
  auto arg = [&](size_t i) { return evaluate(t.args[i], env); };
  switch (t.op) {
    case TermOp::Const: return t.value.value();
    case TermOp::Var:
      for (const auto& [n, v] : env)
        if (n == t.name) return v;
      return NAN;
    case TermOp::NegInf: return -INFINITY;
    case TermOp::PosInf: return INFINITY;
    case TermOp::Exp:  // Emmy's exp of a difference (support/ieee_rules.hpp), as the kernels compute it
      if (t.args[0].op == TermOp::Sub)
        return std::exp(exp_difference(evaluate(t.args[0].args[0], env), evaluate(t.args[0].args[1], env)));
      return std::exp(arg(0));
    case TermOp::Neg:
    case TermOp::Log:
    case TermOp::Sqrt:
    case TermOp::Not: return ieee_unary(t.op, arg(0));
    case TermOp::Select: return arg(0) != 0.0 ? arg(1) : arg(2);
    case TermOp::Cast: return integer_cast(t) ? ieee_integer(arg(0), t.name == "i32") : arg(0);
    default: return ieee_binary(t.op, arg(0), arg(1));
  }
}

bool integer_cast(const Term& t) { return t.op == TermOp::Cast && (t.name == "i32" || t.name == "i64"); }

int64_t floor_of(Rational r) {
  int64_t q = r.num / r.den;
  return (r.num % r.den != 0 && r.num < 0) ? q - 1 : q;
}

int64_t trunc_of(Rational r) { return r.num / r.den; }

namespace {

using ExactEnv = std::vector<std::pair<std::string, Rational>>;
using Exact = std::optional<Rational>;

Rational truth(bool b) { return Rational::of(b ? 1 : 0); }

// Integer / and % of integer-valued rationals; nullopt for a zero divisor or a fraction.
Exact exact_quotient(Rational a, Rational b, bool remainder) {
  if (a.den != 1 || b.den != 1 || b.num == 0) return std::nullopt;
  return Rational::of(remainder ? a.num % b.num : a.num / b.num);
}

Exact cast_exact(Rational x, const std::string& dtype) {
  int64_t v = trunc_of(x);
  return Rational::of(dtype == "i32" ? static_cast<int32_t>(static_cast<uint32_t>(v)) : v);
}

// exp, log and sqrt have rational values only at these points.
Exact transcendental(TermOp op, Rational x) {
  if (op == TermOp::Exp && x.is_zero()) return Rational::of(1);
  if (op == TermOp::Log && x == Rational::of(1)) return Rational::of(0);
  if (op == TermOp::Sqrt && x.sign() >= 0) {
    auto root = [](int64_t v) -> std::optional<int64_t> {
      auto r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(v))));
      for (int64_t c = std::max<int64_t>(0, r - 1); c <= r + 1; ++c)
        if (c * c == v) return c;
      return std::nullopt;
    };
    if (auto n = root(x.num), d = root(x.den); n && d) return Rational::of(*n, *d);
  }
  return std::nullopt;
}

Exact exact(const Term& t, const ExactEnv& env);

Exact binary_exact(TermOp op, Rational a, Rational b) {
  switch (op) {
    case TermOp::Add: return a + b;
    case TermOp::Sub: return a - b;
    case TermOp::Mul: return a * b;
    case TermOp::Div: return b.is_zero() ? Exact{} : Exact{a / b};
    case TermOp::Max: return std::max(a, b);
    case TermOp::Min: return std::min(a, b);
    case TermOp::Lt: return truth(a < b);
    case TermOp::Le: return truth(a <= b);
    case TermOp::Gt: return truth(a > b);
    case TermOp::Ge: return truth(a >= b);
    case TermOp::Eq: return truth(a == b);
    case TermOp::Ne: return truth(!(a == b));
    case TermOp::And: return truth(!a.is_zero() && !b.is_zero());
    case TermOp::Or: return truth(!a.is_zero() || !b.is_zero());
    case TermOp::IDiv: return exact_quotient(a, b, false);
    case TermOp::Mod: return exact_quotient(a, b, true);
    default: return std::nullopt;
  }
}

Exact exact(const Term& t, const ExactEnv& env) {
  switch (t.op) {
    case TermOp::Const: return t.value;
    case TermOp::Var:
      for (const auto& [n, v] : env)
        if (n == t.name) return v;
      return std::nullopt;
    case TermOp::NegInf:
    case TermOp::PosInf: return std::nullopt;
    case TermOp::Select: {
      Exact c = exact(t.args[0], env);
      if (!c) return std::nullopt;
      return exact(t.args[c->is_zero() ? 2 : 1], env);
    }
    default: break;
  }
  std::vector<Rational> args;
  for (const Term& a : t.args) {
    Exact v = exact(a, env);
    if (!v) return std::nullopt;
    args.push_back(*v);
  }
  switch (t.op) {
    case TermOp::Neg: return -args[0];
    case TermOp::Not: return truth(args[0].is_zero());
    case TermOp::Cast: return integer_cast(t) ? cast_exact(args[0], t.name) : args[0];
    case TermOp::Exp:
    case TermOp::Log:
    case TermOp::Sqrt: return transcendental(t.op, args[0]);
    default: return binary_exact(t.op, args[0], args[1]);
  }
}

}  // namespace

std::optional<Rational> evaluate_exact(const Term& t, const std::vector<std::pair<std::string, Rational>>& env) {
  try {
    return exact(t, env);
  } catch (const Overflow&) {
    return std::nullopt;
  }
}

}  // namespace emmy::algebra
