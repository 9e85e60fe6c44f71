// A compiled term evaluates exactly as `evaluate` does: random terms over every operation,
// at random points (small integers, reals, infinities, NaN, -0, huge values), bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "algebra/compiled_term.hpp"

using namespace emmy::algebra;

namespace {

const std::vector<std::string> kVars = {"a.x", "a.y", "b.x", "b.y"};

Term random_term(std::mt19937_64& rng, int depth) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  if (depth == 0 || pick(5) == 0) {
    switch (pick(5)) {
      case 0: return Term::constant(Rational::of(static_cast<int64_t>(pick(9)) - 4, 1 + static_cast<int64_t>(pick(3))));
      case 1: return Term::make(pick(2) ? TermOp::NegInf : TermOp::PosInf, {});
      case 2: return Term::var("unbound");  // reads NaN
      default: return Term::var(kVars[pick(kVars.size())]);
    }
  }
  static const TermOp kOps[] = {TermOp::Add, TermOp::Sub,  TermOp::Mul,  TermOp::Div, TermOp::Neg,    TermOp::Exp,
                                TermOp::Log, TermOp::Sqrt, TermOp::Max,  TermOp::Min, TermOp::Select, TermOp::Lt,
                                TermOp::Le,  TermOp::Gt,   TermOp::Ge,   TermOp::Eq,  TermOp::Ne,     TermOp::And,
                                TermOp::Or,  TermOp::Not,  TermOp::IDiv, TermOp::Mod, TermOp::Cast};
  TermOp op = kOps[pick(std::size(kOps))];
  auto sub = [&] { return random_term(rng, depth - 1); };
  switch (op) {
    case TermOp::Neg:
    case TermOp::Log:
    case TermOp::Sqrt:
    case TermOp::Not: return Term::make(op, {sub()});
    case TermOp::Exp:  // both spellings: exp of a difference has its own rule
      return Term::make(op, {pick(2) ? Term::make(TermOp::Sub, {sub(), sub()}) : sub()});
    case TermOp::Select: return Term::make(op, {sub(), sub(), sub()});
    case TermOp::Cast: {
      static const char* kTypes[] = {"i32", "i64", "f32"};
      return Term::cast(kTypes[pick(3)], sub());
    }
    default: return Term::make(op, {sub(), sub()});
  }
}

double random_value(std::mt19937_64& rng) {
  static const double kSpecial[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e300, -3e9, 2.5e18, 4294967296.5};
  switch (rng() % 4) {
    case 0: return kSpecial[rng() % std::size(kSpecial)];
    case 1: return std::uniform_real_distribution<double>(-8, 8)(rng);
    default: return static_cast<double>(static_cast<int>(rng() % 9) - 4);
  }
}

bool same_bits(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof x) == 0;
}

}  // namespace

TEST_CASE("a compiled term evaluates as evaluate does, bit for bit") {
  std::mt19937_64 rng(2026);
  std::vector<double> stack;
  int finite = 0, undefined = 0;  // the draws reach both kinds of value
  for (int t = 0; t < 3000; ++t) {
    Term term = random_term(rng, 5);
    CompiledTerm compiled(term, kVars);
    for (int p = 0; p < 8; ++p) {
      std::vector<double> point;
      std::vector<std::pair<std::string, double>> env;
      for (const std::string& v : kVars) {
        point.push_back(random_value(rng));
        env.emplace_back(v, point.back());
      }
      double want = evaluate(term, env), got = compiled(point, stack);
      if (!same_bits(want, got))
        FAIL_CHECK(term.str() << " at " << point[0] << ", " << point[1] << ", " << point[2] << ", " << point[3] << ": "
                              << want << " vs " << got);
      (std::isfinite(want) ? finite : undefined) += std::isnan(want) || std::isfinite(want);
    }
  }
  CHECK(finite > 2000);
  CHECK(undefined > 2000);
}
