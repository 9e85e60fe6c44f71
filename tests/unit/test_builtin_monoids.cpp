// The built-in reductions are their definitions: each row of the lowering's table agrees with
// its monoid in stdlib/monoids.emmy (identity exactly, combine and lift at every point of a grid
// with ties, infinities and NaN), both are proved the same, and integer identities are the limits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"
#include "lower/monoid_table.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

using algebra::Term;
using kir::ScalarType;
using Env = std::vector<std::pair<std::string, double>>;

const ast::MonoidDecl* stdlib_monoid(const CheckedProgram& p, const std::string& name) {
  auto it = p.monoids.find(name);
  return it == p.monoids.end() ? nullptr : it->second.decl;
}

// The stdlib's monoids `names` (std.monoids, checked) as terms.
std::vector<algebra::MonoidTerms> stdlib_terms(const std::vector<std::string>& names) {
  auto r = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/monoids.emmy");
  REQUIRE(r->program);
  std::vector<algebra::MonoidTerms> out;
  for (const std::string& name : names) {
    std::string why;
    std::optional<algebra::MonoidTerms> def = algebra::monoid_terms(*stdlib_monoid(*r->program, name), why);
    REQUIRE(def);
    out.push_back(*def);
  }
  return out;
}

// A monoid of one field x from its identity and its combine over a.x and b.x.
algebra::MonoidTerms one_field(int64_t identity, Term combine) {
  algebra::MonoidTerms m;
  m.fields = {"x"};
  m.identity = {Term::constant(algebra::Rational::of(identity))};
  m.combine = {std::move(combine)};
  return m;
}

bool same(double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; }

// Every assignment of `values` to the variables "a.f", "b.f" of each field (index fields, the
// argmax family's i, take small naturals; bool fields 0 and 1).
std::vector<Env> grid(const algebra::MonoidTerms& m) {
  const std::vector<double> reals = {-INFINITY, -3, -1, -0.5, 0, 0.5, 1, 3, INFINITY, NAN};
  const std::vector<double> naturals = {0, 1, 2, 7}, bools = {0, 1};
  std::vector<std::pair<std::string, const std::vector<double>*>> vars;
  for (const char* side : {"a.", "b."})
    for (const std::string& f : m.fields) {
      bool is_bool = std::count(m.bool_fields.begin(), m.bool_fields.end(), f) > 0;
      vars.emplace_back(side + f, is_bool ? &bools : f == "i" ? &naturals : &reals);
    }
  std::vector<Env> out = {{}};
  for (const auto& [name, vals] : vars) {
    std::vector<Env> next;
    for (const Env& e : out)
      for (double v : *vals) {
        next.push_back(e);
        next.back().emplace_back(name, v);
      }
    out = std::move(next);
  }
  return out;
}

TEST_CASE("every built-in reduction lowers as its stdlib/monoids.emmy definition") {
  auto r = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/monoids.emmy");
  REQUIRE(r->program);
  std::vector<std::string_view> names = lower::builtin_monoid_names();
  CHECK(names.size() == 8);
  for (std::string_view name : names) {
    CAPTURE(name);
    const ast::MonoidDecl* decl = stdlib_monoid(*r->program, std::string(name));
    REQUIRE(decl);  // every row of the table has its definition
    std::string why;
    std::optional<algebra::MonoidTerms> def = algebra::monoid_terms(*decl, why);
    REQUIRE(def);
    const lower::BuiltinMonoid* b = lower::builtin_monoid(name);
    REQUIRE(b);
    // The definitions are written over f32 (bool for any/all).
    ScalarType t = def->bool_fields.empty() ? ScalarType::F32 : ScalarType::Pred;
    algebra::MonoidTerms table = lower::terms_of(name, b->lowering(t, {t}));
    REQUIRE(table.fields == def->fields);
    for (size_t i = 0; i < def->fields.size(); ++i) {
      CAPTURE(def->fields[i]);
      CHECK(same(algebra::evaluate(table.identity[i], {}), algebra::evaluate(def->identity[i], {})));
    }
    for (const Env& env : grid(*def))
      for (size_t i = 0; i < def->fields.size(); ++i)
        if (!same(algebra::evaluate(table.combine[i], env), algebra::evaluate(def->combine[i], env))) {
          FAIL_CHECK(fmt::format("combine field {} differs at {}", def->fields[i], table.combine[i].str()));
          break;
        }
    // The lift: the table's over its parameters (and the axis), the definition's over its own.
    lower::MonoidLowering low = b->lowering(t, {t});
    if (!def->lift.empty()) {
      REQUIRE(decl->lift_params);
      for (double x : {-2.0, 0.0, 5.0})
        for (double j : {0.0, 3.0}) {
          Env table_env = {{low.lift_params[0], x}}, def_env = {{(*decl->lift_params)[0].name.name, x}};
          if (low.axis_param) table_env.emplace_back(*low.axis_param, j);
          if (decl->lift_params->size() > 1) def_env.emplace_back((*decl->lift_params)[1].name.name, j);
          for (size_t i = 0; i < def->fields.size(); ++i)
            CHECK(same(algebra::evaluate(low.lift[i], table_env), algebra::evaluate(def->lift[i], def_env)));
        }
    }
    algebra::MonoidReport from_table = algebra::check_laws(table), from_def = algebra::check_laws(*def);
    CHECK(from_table.associative.outcome == algebra::Outcome::Proved);
    CHECK(from_def.associative.outcome == algebra::Outcome::Proved);
    CHECK(from_table.identity.outcome == from_def.identity.outcome);
    CHECK(from_table.commutative.outcome == from_def.commutative.outcome);
  }
}

template <class T>
void check_integer_identities(ScalarType t) {
  auto identity = [&](std::string_view name, size_t field) {
    return algebra::evaluate(lower::builtin_monoid(name)->lowering(t, {t}).identity[field], {});
  };
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  CHECK(identity("max", 0) == lo);
  CHECK(identity("min", 0) == hi);
  CHECK(identity("argmax", 0) == lo);
  CHECK(identity("argmin", 0) == hi);
  CHECK(identity("sum", 0) == 0);
  CHECK(identity("prod", 0) == 1);
  // Exactly the limit, not a rounded double: the term's rational.
  const Term m = lower::builtin_monoid("max")->lowering(t, {t}).identity[0];
  REQUIRE(m.op == algebra::TermOp::Const);
  CHECK(m.value.num == static_cast<int64_t>(std::numeric_limits<T>::min()));
  CHECK(lower::builtin_monoid("min")->lowering(t, {t}).identity[0].value.num ==
        static_cast<int64_t>(std::numeric_limits<T>::max()));
}

TEST_CASE("integer max and min start from the type's limits (INT_MIN, not INT_MIN + 1)") {
  check_integer_identities<int32_t>(ScalarType::I32);
  check_integer_identities<int64_t>(ScalarType::I64);
}

TEST_CASE("float max and min start from the infinities") {
  CHECK(algebra::evaluate(lower::builtin_monoid("max")->lowering(ScalarType::F32, {}).identity[0], {}) == -INFINITY);
  CHECK(algebra::evaluate(lower::builtin_monoid("min")->lowering(ScalarType::F32, {}).identity[0], {}) == INFINITY);
}

}  // namespace
TEST_CASE("identity_exact: a share that combined no element may be combined as it is") {
  // The single-field built-ins: their identity changes no carrier a fold reaches (sum's +0 never
  // meets a -0: it is not reached from +0), so COOP's lanes carry no flag.
  for (std::string_view name : {"sum", "prod", "max", "min", "any", "all"}) {
    CAPTURE(name);
    const lower::BuiltinMonoid* b = lower::builtin_monoid(name);
    for (ScalarType t : name == "any" || name == "all" ? std::vector<ScalarType>{ScalarType::Pred}
                                                       : std::vector<ScalarType>{ScalarType::F32, ScalarType::I32}) {
      CAPTURE(static_cast<int>(t));
      CHECK(algebra::identity_exact(lower::terms_of(name, b->lowering(t, {t}))));
    }
  }
  // Several fields (argmax's (v, i); the stdlib's logsumexp, welford, softmax_pv): keep the flag.
  const lower::BuiltinMonoid* argmax = lower::builtin_monoid("argmax");
  CHECK_FALSE(algebra::identity_exact(lower::terms_of("argmax", argmax->lowering(ScalarType::I64, {ScalarType::F32}))));
  for (const algebra::MonoidTerms& def : stdlib_terms({"logsumexp", "welford"})) {
    CAPTURE(def.name);
    CHECK_FALSE(algebra::identity_exact(def));
  }
  // One field whose identity is a two-sided identity of the reals but not of the floats it meets:
  // combine(a, b) = a + b - 0 * a is NaN at a = inf where b alone is not (identity 0, v = inf).
  algebra::MonoidTerms odd = one_field(
      0, Term::make(algebra::TermOp::Sub,
                    {Term::make(algebra::TermOp::Add, {Term::var("a.x"), Term::var("b.x")}),
                     Term::make(algebra::TermOp::Mul, {Term::constant(algebra::Rational::of(0)), Term::var("a.x")})}));
  CHECK_FALSE(algebra::identity_exact(odd));
  // A sum from 1: not an identity at all. (A max from 0 is exact on what it reaches, the values
  // at or above 0, so it needs no flag either: the flag only says which shares met an element.)
  algebra::MonoidTerms from_one = lower::terms_of("sum", lower::builtin_monoid("sum")->lowering(ScalarType::F32, {}));
  from_one.identity = {Term::constant(algebra::Rational::of(1))};
  CHECK_FALSE(algebra::identity_exact(from_one));
  algebra::MonoidTerms from_zero = lower::terms_of("max", lower::builtin_monoid("max")->lowering(ScalarType::F32, {}));
  from_zero.identity = {Term::constant(algebra::Rational::of(0))};
  CHECK(algebra::identity_exact(from_zero));
}

TEST_CASE("combine_symmetric: the lanes of a butterfly may take either share first") {
  auto builtin = [](std::string_view name, ScalarType t) {
    return lower::terms_of(name, lower::builtin_monoid(name)->lowering(t, {t}));
  };
  // a + b and a * b are b + a and b * a bit for bit; integer max and min too; any and all.
  for (std::string_view name : {"sum", "prod", "max", "min"}) {
    CAPTURE(name);
    CHECK(algebra::combine_symmetric(builtin(name, ScalarType::I32)));
  }
  CHECK(algebra::combine_symmetric(builtin("sum", ScalarType::F32)));
  CHECK(algebra::combine_symmetric(builtin("prod", ScalarType::F32)));
  CHECK(algebra::combine_symmetric(builtin("any", ScalarType::Pred)));
  // Float max and min may return either zero of max(-0, +0): the evaluation refutes them.
  CHECK_FALSE(algebra::combine_symmetric(builtin("max", ScalarType::F32)));
  CHECK_FALSE(algebra::combine_symmetric(builtin("min", ScalarType::F32)));
  // The stdlib's several-field monoids: logsumexp's max, welford's a-first update.
  for (const algebra::MonoidTerms& def : stdlib_terms({"logsumexp", "welford", "softmax_pv"})) {
    CAPTURE(def.name);
    CHECK_FALSE(algebra::combine_symmetric(def));
  }
  // Commutative over the reals, not term for term: a - (0 - b) is a + b, but not written as it.
  algebra::MonoidTerms sub = one_field(
      0, Term::make(algebra::TermOp::Sub,
                    {Term::var("a.x"),
                     Term::make(algebra::TermOp::Sub, {Term::constant(algebra::Rational::of(0)), Term::var("b.x")})}));
  CHECK_FALSE(algebra::combine_symmetric(sub));
  // A structurally symmetric combine whose operands are sums of both: (a + b) * (b + a).
  algebra::MonoidTerms twice = one_field(
      1, Term::make(algebra::TermOp::Mul, {Term::make(algebra::TermOp::Add, {Term::var("a.x"), Term::var("b.x")}),
                                           Term::make(algebra::TermOp::Add, {Term::var("b.x"), Term::var("a.x")})}));
  CHECK(algebra::combine_symmetric(twice));
}

}  // namespace emmy
