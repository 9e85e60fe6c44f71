// Soundness of the prover: the witness solver of failing cases, integer semantics
// (truncating division, casts) in the oracle and the normal forms, counterexamples that
// re-evaluate as printed, logaddexp in two spellings, and an integer monoid with a cast
// and a division run on the SIMT interpreter against the float64 reference.
#include <doctest/doctest.h>

#include <cmath>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"
#include "algebra/witness.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "lower/passes.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"

using namespace emmy;
using namespace emmy::algebra;

namespace {

LinearForm form(std::map<std::string, int64_t> coef, int64_t constant) {
  LinearForm f;
  for (const auto& [v, c] : coef) f.coef[v] = Rational::of(c);
  f.constant = Rational::of(constant);
  return f;
}

Case case_of(std::vector<Premise> premises) { return Case{std::move(premises)}; }

bool holds(const Premise& p, const Point& at) {
  Rational v = p.form.constant;
  for (const auto& [var, c] : p.form.coef) v = v + c * at.at(var);
  return p.rel == Rel::Gt ? v.sign() > 0 : p.rel == Rel::Ge ? v.sign() >= 0 : v.is_zero();
}

void check_witness(const Case& c, int variant = 0) {
  CAPTURE(c.str());
  CAPTURE(variant);
  std::optional<Point> p = witness(c, variant);
  REQUIRE(p.has_value());
  for (const Premise& q : c.premises) {
    CAPTURE(q.str());
    CHECK(holds(q, *p));
  }
}

MonoidReport laws_of(const std::string& source, const std::string& name) {
  auto r = test::check_source(source);
  REQUIRE(!r->diags->has_errors());
  std::string why;
  auto terms = monoid_terms(*r->program->monoids.at(name).decl, why);
  REQUIRE_MESSAGE(terms.has_value(), why);
  return check_laws(*terms);
}

}  // namespace

TEST_CASE("witness: strict, non-strict and mixed premises get a point inside") {
  // x > 2, x < 3: no integer, a rational point strictly inside.
  check_witness(case_of({{form({{"x", 1}}, -2), Rel::Gt}, {form({{"x", -1}}, 3), Rel::Gt}}));
  std::optional<Point> p = witness(case_of({{form({{"x", 1}}, -2), Rel::Gt}, {form({{"x", -1}}, 3), Rel::Gt}}));
  REQUIRE(p);
  CHECK(p->at("x") == Rational::of(5, 2));
  // x >= 2, x <= 2: the one point.
  p = witness(case_of({{form({{"x", 1}}, -2), Rel::Ge}, {form({{"x", -1}}, 2), Rel::Ge}}));
  REQUIRE(p);
  CHECK(p->at("x") == Rational::of(2));
  // a + b > 100, a >= 0, b - a > 3: chains of bounds across variables, several variants.
  Case chain = case_of({{form({{"a", 1}, {"b", 1}}, -100), Rel::Gt},
                        {form({{"a", 1}}, 0), Rel::Ge},
                        {form({{"b", 1}, {"a", -1}}, -3), Rel::Gt}});
  for (int v = 0; v < 6; ++v) check_witness(chain, v);
  CHECK(witness(chain, 0) != witness(chain, 1));  // variants are different points
}

TEST_CASE("witness: equalities are solved and back-substituted") {
  // a - 2b == 0, b > 1, c == a + b.
  Case c = case_of({{form({{"a", 1}, {"b", -2}}, 0), Rel::Eq},
                    {form({{"b", 1}}, -1), Rel::Gt},
                    {form({{"c", 1}, {"a", -1}, {"b", -1}}, 0), Rel::Eq}});
  for (int v = 0; v < 4; ++v) check_witness(c, v);
  // Variables no premise names still get values.
  std::optional<Point> p = witness(c, 0, {"d"});
  REQUIRE(p);
  CHECK(p->count("d") == 1);
}

TEST_CASE("witness: infeasible premises have none") {
  // x > 0 and -x >= 0.
  CHECK(!witness(case_of({{form({{"x", 1}}, 0), Rel::Gt}, {form({{"x", -1}}, 0), Rel::Ge}})));
  // x - y > 0, y - z > 0, z - x > 0: a strict cycle.
  CHECK(!witness(case_of({{form({{"x", 1}, {"y", -1}}, 0), Rel::Gt},
                          {form({{"y", 1}, {"z", -1}}, 0), Rel::Gt},
                          {form({{"z", 1}, {"x", -1}}, 0), Rel::Gt}})));
  // x == 1 and x == 2.
  CHECK(!witness(case_of({{form({{"x", 1}}, -1), Rel::Eq}, {form({{"x", 1}}, -2), Rel::Eq}})));
  // 0 > 0 after substitution.
  CHECK(!witness(case_of({{form({{"x", 1}}, 0), Rel::Eq}, {form({{"x", 2}}, 0), Rel::Gt}})));
}

TEST_CASE("integer semantics: truncating / and %, casts, in both evaluations") {
  Term a = Term::var("a"), b = Term::var("b");
  Term q = Term::make(TermOp::IDiv, {a, b}), r = Term::make(TermOp::Mod, {a, b});
  CHECK(evaluate(q, {{"a", -7}, {"b", 2}}) == -3);
  CHECK(evaluate(r, {{"a", -7}, {"b", 2}}) == -1);
  CHECK(std::isnan(evaluate(q, {{"a", 1}, {"b", 0}})));
  CHECK(evaluate_exact(q, {{"a", Rational::of(-7)}, {"b", Rational::of(2)}}) == Rational::of(-3));
  CHECK(evaluate_exact(r, {{"a", Rational::of(7)}, {"b", Rational::of(-2)}}) == Rational::of(1));
  CHECK(!evaluate_exact(q, {{"a", Rational::of(1)}, {"b", Rational::of(0)}}));
  Term t = Term::cast("i64", a), f = Term::cast("f32", a), w = Term::cast("i32", a);
  CHECK(evaluate(t, {{"a", -2.75}}) == -2);
  CHECK(evaluate(f, {{"a", -2.75}}) == -2.75);
  CHECK(evaluate(w, {{"a", 4294967297.0}}) == 1);  // wraps like the reference
  CHECK(evaluate_exact(t, {{"a", Rational::of(-11, 4)}}) == Rational::of(-2));
  CHECK(evaluate_exact(f, {{"a", Rational::of(-11, 4)}}) == Rational::of(-11, 4));
}

TEST_CASE("capped sum: refuted from the failing case, the counterexample re-evaluates") {
  MonoidReport r =
      laws_of("monoid capped(x: f32) { identity = 0; combine(a, b) { yield select(a.x + b.x > 100, 0, a.x + b.x); } }",
              "capped");
  INFO(explain(r));
  REQUIRE(r.associative.outcome == Outcome::Refuted);
  CHECK(r.associative.witness.find("a point of the case") != std::string::npos);
  CHECK(r.associative.witness.find("re-checked: exact") != std::string::npos);
}

TEST_CASE("integer division is opaque: idiv is never proved, and refuted with integers") {
  MonoidReport r = laws_of("monoid idiv(x: i64) { identity = 3; combine(a, b) { yield a.x * b.x / 3; } }", "idiv");
  INFO(explain(r));
  CHECK(r.associative.outcome == Outcome::Refuted);
  CHECK(r.associative.counterexample.find('.') == std::string::npos);  // integer values only
  // With rational division the same combine is associative.
  MonoidReport f = laws_of("monoid fdiv(x: f32) { identity = 3; combine(a, b) { yield a.x * b.x / 3; } }", "fdiv");
  CHECK(f.associative.outcome == Outcome::Proved);
  // A cast to an integer type truncates: i64(a.x * 0.5) + b.x is not associative.
  MonoidReport c =
      laws_of("monoid half(x: i64) { identity = 0; combine(a, b) { yield i64(f32(a.x) * 0.5) + b.x; } }", "half");
  CHECK(c.associative.outcome != Outcome::Proved);
}

TEST_CASE("logaddexp is proved in both spellings") {
  for (const char* body : {"log(exp(a.x) + exp(b.x))", "max(a.x, b.x) + log(1 + exp(min(a.x, b.x) - max(a.x, b.x)))"}) {
    CAPTURE(body);
    MonoidReport r =
        laws_of(fmt::format("monoid lae(x: f32) {{ identity = -inf; combine(a, b) {{ yield {}; }} }}", body), "lae");
    INFO(explain(r));
    CHECK(r.associative.outcome == Outcome::Proved);
    CHECK(r.identity.outcome == Outcome::Proved);
    CHECK(r.commutative.outcome == Outcome::Proved);
  }
}

TEST_CASE("an integer monoid with a cast and a division: the kernel agrees with the reference") {
  // 2 * i64(s * 0.5) + s / 2 * 2 ... is s for integers (truncations cancel), so the monoid
  // is the sum; without the truncations (a float cast or a rational /) odd sums go wrong.
  const char* source = R"(
monoid isum(x: i64) {
  identity = 0;
  combine(a, b) {
    let s = a.x + b.x;
    yield (2 * i64(f32(s) * 0.5) + s / 2 * 2) / 2 + s % 2;
  }
  assume associative;
}
op row_isum(x: i64[N, K]) -> (y: i64[N]) {
  y[n] = isum(k: x[n, k]).x;
}
)";
  auto r = test::check_source(source);
  REQUIRE(!r->diags->has_errors());
  const CheckedOp& op = r->program->ops.at("row_isum");
  const TargetInfo& target = *find_target("sm_90");
  SizeBindings sizes{{"N", 5}, {"K", 7}};
  TensorMap inputs = random_inputs(op, sizes, 11);
  HostTensor& x = inputs.at("x");
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<double>(static_cast<int>(i * 7 % 23) - 11);
  TensorMap ref = evaluate_reference(*r->program, op, sizes, inputs);
  for (size_t n = 0; n < 5; ++n) {  // the reference is the plain row sum
    double want = 0;
    for (size_t k = 0; k < 7; ++k) want += x.data[n * 7 + k];
    CHECK(ref.at("y").data[n] == want);
  }
  for (const std::string& knobs : {std::string("TILE=a:scalar"), std::string("TILE=a:scalar,PLACE=cut")}) {
    CAPTURE(knobs);
    lower::Lowered low = lower::lower_op(*r->program, op, {nullptr, "", knobs}, target);
    TensorMap buffers = inputs;
    run_simt(low.kernels, sizes, buffers, SimtOptions{});
    Comparison c = compare(buffers.at("y"), ref.at("y"), 0);
    CHECK_MESSAGE(c.ok, fmt::format("max abs {}", c.max_abs));
  }
}
