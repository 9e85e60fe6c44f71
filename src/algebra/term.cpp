#include "algebra/term.hpp"

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
    {TermOp::Const, "", false}, {TermOp::Var, "", false},     {TermOp::NegInf, "-inf", false},
    {TermOp::PosInf, "inf", false}, {TermOp::Add, "+", true}, {TermOp::Sub, "-", true},
    {TermOp::Mul, "*", true},   {TermOp::Div, "/", true},     {TermOp::Neg, "-", false},
    {TermOp::Exp, "exp", false}, {TermOp::Log, "log", false}, {TermOp::Sqrt, "sqrt", false},
    {TermOp::Max, "max", false}, {TermOp::Min, "min", false}, {TermOp::Select, "select", false},
    {TermOp::Lt, "<", true},    {TermOp::Le, "<=", true},     {TermOp::Gt, ">", true},
    {TermOp::Ge, ">=", true},   {TermOp::Eq, "==", true},     {TermOp::Ne, "!=", true},
    {TermOp::And, "&&", true},  {TermOp::Or, "||", true},     {TermOp::Not, "!", false},
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
    case TermOp::Add: return arg(0) + arg(1);
    case TermOp::Sub: return arg(0) - arg(1);
    case TermOp::Mul: return arg(0) * arg(1);
    case TermOp::Div: return arg(0) / arg(1);
    case TermOp::Neg: return -arg(0);
    case TermOp::Exp: return std::exp(arg(0));
    case TermOp::Log: return std::log(arg(0));
    case TermOp::Sqrt: return std::sqrt(arg(0));
    case TermOp::Max: return std::fmax(arg(0), arg(1));
    case TermOp::Min: return std::fmin(arg(0), arg(1));
    case TermOp::Select: return arg(0) != 0.0 ? arg(1) : arg(2);
    case TermOp::Lt: return arg(0) < arg(1);
    case TermOp::Le: return arg(0) <= arg(1);
    case TermOp::Gt: return arg(0) > arg(1);
    case TermOp::Ge: return arg(0) >= arg(1);
    case TermOp::Eq: return arg(0) == arg(1);
    case TermOp::Ne: return arg(0) != arg(1);
    case TermOp::And: return arg(0) != 0.0 && arg(1) != 0.0;
    case TermOp::Or: return arg(0) != 0.0 || arg(1) != 0.0;
    case TermOp::Not: return arg(0) == 0.0;
  }
  return NAN;
}

}  // namespace emmy::algebra
