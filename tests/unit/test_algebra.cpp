// The prover decides the laws of the standard monoids and refutes wrong ones with a
// counterexample that evaluates as printed.
#include <doctest/doctest.h>

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
      {"sum", "PPP"},       {"prod", "PPP"},     {"max", "PPP"},     {"min", "PPP"},
      {"argmax", "PPP"},    {"argmin", "PPP"},   {"logsumexp", "PPP"}, {"welford", "PPP"},
      {"softmax_pv", "PPP"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    MonoidReport r = laws_of("import std.monoids;\n", c.name);
    INFO(explain(r));
    CHECK(verdicts(r) == c.verdicts);
  }
}

TEST_CASE("online softmax's identity needs the -inf guard") {
  MonoidReport r = laws_of("import std.monoids;\n", "softmax_pv");
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("NaN") != std::string::npos);
}

TEST_CASE("a non-associative mean is refuted with a checkable counterexample") {
  MonoidReport r = laws_of(
      "monoid mean2(x: f32) { identity = 0; combine(a, b) { yield (a.x + b.x) / 2; } }\n", "mean2");
  CHECK(r.associative.outcome == Outcome::Refuted);
  INFO(explain(r));
  CHECK(r.associative.counterexample.find("combine(combine(a,b),c) = ") == 0);
  CHECK(r.identity.outcome == Outcome::Refuted);
  CHECK(r.commutative.outcome == Outcome::Proved);
}
