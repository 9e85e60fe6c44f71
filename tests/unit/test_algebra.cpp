// The prover decides the laws of the standard monoids and refutes wrong ones with a
// counterexample that evaluates as printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "algebra/classify.hpp"
#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"
#include "test_helpers.hpp"

using namespace emmy;
using namespace emmy::algebra;

namespace {

MonoidReport laws_of(const std::string& source, const std::string& name) {
  auto r = test::check_source(source);
  REQUIRE(r->rendered() == "");
  const CheckedMonoid& m = r->program->monoids.at(name);
  std::string why;
  auto terms = monoid_terms(*m.decl, why);
  REQUIRE_MESSAGE(terms.has_value(), why);
  return check_laws(*terms);
}

std::string verdicts(const MonoidReport& r) {
  auto v = [](const LawReport& l) {
    return l.outcome == Outcome::Proved ? "P" : l.outcome == Outcome::Refuted ? "R" : "U";
  };
  return std::string(v(r.associative)) + v(r.identity) + v(r.commutative);
}

}  // namespace

TEST_CASE("the standard monoids: associative, identity, commutative") {
  struct Case {
    const char* name;
    const char* verdicts;  // associative, identity, commutative: Proved / Refuted / Unproved
  };
  const Case cases[] = {
      {"sum", "PPP"},       {"prod", "PPP"},    {"max", "PPP"},        {"min", "PPP"},
      {"any", "PPP"},       {"all", "PPP"},     {"argmax", "PPP"},     {"argmin", "PPP"},
      {"logsumexp", "PPP"}, {"welford", "PPP"}, {"softmax_pv", "PPP"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    MonoidReport r = laws_of("import std.monoids;\n", c.name);
    INFO(explain(r));
    CHECK(verdicts(r) == c.verdicts);
  }
}

TEST_CASE("every built-in reduction has a reference definition whose laws are proved") {
  auto r = test::check_source("import std.monoids;\n");
  for (const BuiltinReduction& b : builtin_reductions()) {
    CAPTURE(b.name);
    REQUIRE(r->program->monoids.count(std::string(b.name)) == 1);
    std::string why;
    auto terms = monoid_terms(*r->program->monoids.at(std::string(b.name)).decl, why);
    REQUIRE(terms.has_value());
    MonoidReport laws = check_laws(*terms);
    CHECK(laws.associative.outcome == Outcome::Proved);
    CHECK(laws.identity.outcome == Outcome::Proved);
  }
}

TEST_CASE("classify for the ops a command lowers: their monoids and the file's own, their chains") {
  auto r = test::check_source(
      "import std.monoids;\n"
      "monoid pick(x: f32) {\n  identity = 0;\n  combine(a, b) {\n    yield b.x;\n  }\n}\n"
      "op total(x: f32[N]) -> (y: f32[1]) {\n  y[z] = sum(n: x[n]);\n}\n"
      "op peak(x: f32[N]) -> (y: f32[1]) {\n  y[z] = max(n: x[n]);\n}\n"
      "op both(x: f32[N]) -> (y: f32[1]) {\n  y[z] = total(x)[z] + argmax(n: x[n]);\n}\n");
  REQUIRE(!r->diags->has_errors());
  Diagnostics all_diags(r->sources), scoped_diags(r->sources);
  const algebra::ProgramLaws all = algebra::classify(*r->program, all_diags);
  CHECK(all.monoids.count("prod"));
  const std::set<std::string> ops{"both"};
  const algebra::ProgramLaws scoped = algebra::classify(*r->program, scoped_diags, nullptr, &ops);
  std::vector<std::string> proved;
  for (const auto& [name, report] : scoped.monoids) proved.push_back(name);
  // both's argmax, sum through the op it calls, the file's own pick; not max, prod, ...
  CHECK(proved == std::vector<std::string>{"argmax", "pick", "sum"});
  for (const auto& [name, report] : scoped.monoids) {
    CAPTURE(name);
    CHECK(report.associative.outcome == all.monoids.at(name).associative.outcome);
  }
  for (const algebra::DiscoveredChain& c : scoped.chains) CHECK(c.op == "both");
}

TEST_CASE("exp(log u) = u only where u > 0 is known") {
  MonoidReport pos = laws_of(
      "monoid lae(x: f32) { identity = -inf; combine(a, b) { yield log(exp(a.x) + exp(b.x)); } }\n"
      "monoid back(x: f32) { identity = -inf; combine(a, b) { yield exp(log(exp(a.x) + exp(b.x))); } }\n",
      "back");
  // exp(log(e^a + e^b)) normalizes to e^a + e^b: not associative as written, refuted.
  CHECK(pos.associative.outcome == Outcome::Refuted);
  CHECK(pos.commutative.outcome == Outcome::Proved);
  CHECK(pos.commutative.proof.at(0) == "when always: x = exp(a.x) + exp(b.x)");
}

TEST_CASE("online softmax's identity meets itself without NaN (the exp of a difference); 0 * inf is still noted") {
  MonoidReport r = laws_of("import std.monoids;\n", "softmax_pv");
  CHECK(r.notes.empty());  // exp(-inf - -inf) is 0 (support/ieee_rules.hpp), not NaN
  // Outside exp the identity's infinity still meets itself: -inf - -inf in a plain field.
  MonoidReport d = laws_of(
      "monoid diff(m: f32, s: f32) { identity = (-inf, 0); combine(a, b) {\n"
      "  yield (max(a.m, b.m), a.s + b.s + 0 * (a.m - b.m)); } }\n",
      "diff");
  REQUIRE(!d.notes.empty());
  CHECK(d.notes[0].find("is NaN in IEEE arithmetic") != std::string::npos);
}

TEST_CASE("a non-associative mean is refuted with a checkable counterexample") {
  MonoidReport r =
      laws_of("monoid mean2(x: f32) { identity = 0; combine(a, b) { yield (a.x + b.x) / 2; } }\n", "mean2");
  CHECK(r.associative.outcome == Outcome::Refuted);
  INFO(explain(r));
  CHECK(r.associative.counterexample.find("combine(combine(a,b),c) = ") == 0);
  CHECK(r.identity.outcome == Outcome::Refuted);
  CHECK(r.commutative.outcome == Outcome::Proved);
}

namespace {

// Random combiners over one or two fields from a small grammar.
struct Generator {
  std::mt19937_64 rng;
  std::vector<std::string> fields;

  Term leaf() {
    switch (rng() % 4) {
      case 0: return Term::constant(Rational::of(static_cast<int64_t>(rng() % 5) - 2));
      case 1: return Term::var("b." + fields[rng() % fields.size()]);
      default: return Term::var("a." + fields[rng() % fields.size()]);
    }
  }
  Term expr(int depth) {
    if (depth == 0) return leaf();
    static const TermOp binary[] = {TermOp::Add, TermOp::Sub, TermOp::Mul, TermOp::Max, TermOp::Min};
    switch (rng() % 8) {
      case 0: return Term::make(TermOp::Exp, {expr(depth - 1)});
      case 1:
        return Term::make(TermOp::Select, {Term::make(TermOp::Gt, {expr(depth - 1), expr(depth - 1)}), expr(depth - 1),
                                           expr(depth - 1)});
      case 2: return leaf();
      default: return Term::make(binary[rng() % 5], {expr(depth - 1), expr(depth - 1)});
    }
  }
};

}  // namespace

TEST_CASE("prover fuzz: no 'proved' verdict is contradicted at fresh random points") {
  std::mt19937_64 points(987654321);
  Generator gen{std::mt19937_64(2026), {}};
  int proved = 0, refuted = 0, unproved = 0;
  for (int n = 0; n < 250; ++n) {
    MonoidTerms m;
    m.name = "random" + std::to_string(n);
    m.fields = n % 2 ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"x"};
    gen.fields = m.fields;
    for (size_t f = 0; f < m.fields.size(); ++f) {
      m.combine.push_back(gen.expr(2 + static_cast<int>(gen.rng() % 2)));
      m.identity.push_back(Term::constant(Rational::of(0)));
    }
    MonoidReport r = check_laws(m);
    if (r.associative.outcome == Outcome::Refuted) ++refuted;
    if (r.associative.outcome == Outcome::Unproved) ++unproved;
    if (r.associative.outcome != Outcome::Proved) continue;
    ++proved;
    // Check the law at points the prover never saw (wider, real-valued).
    std::vector<Term> a, b, c;
    for (const std::string& f : m.fields) {
      a.push_back(Term::var("p." + f));
      b.push_back(Term::var("q." + f));
      c.push_back(Term::var("r." + f));
    }
    auto apply = [&](const std::vector<Term>& x, const std::vector<Term>& y) {
      std::vector<std::pair<std::string, Term>> by;
      for (size_t i = 0; i < m.fields.size(); ++i) {
        by.emplace_back("a." + m.fields[i], x[i]);
        by.emplace_back("b." + m.fields[i], y[i]);
      }
      std::vector<Term> out;
      for (const Term& t : m.combine) out.push_back(substitute(t, by));
      return out;
    };
    std::vector<Term> lhs = apply(apply(a, b), c), rhs = apply(a, apply(b, c));
    for (int k = 0; k < 100; ++k) {
      std::vector<std::pair<std::string, double>> env;
      for (const char* who : {"p.", "q.", "r."})
        for (const std::string& f : m.fields)
          env.emplace_back(who + f, std::uniform_real_distribution<double>(-6, 6)(points));
      for (size_t i = 0; i < lhs.size(); ++i) {
        double x = evaluate(lhs[i], env), y = evaluate(rhs[i], env);
        if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) continue;
        INFO(m.combine[i].str());
        CHECK(std::fabs(x - y) <= 1e-6 * std::max({1.0, std::fabs(x), std::fabs(y)}));
      }
    }
  }
  MESSAGE("random combiners: " << proved << " proved, " << refuted << " refuted, " << unproved << " unproved");
  CHECK(proved >= 10);  // the fuzz exercises both verdicts
  CHECK(refuted >= 100);
}
