// The built-in reductions as monoid terms (their reference definitions are the monoids
// of stdlib/monoids.emmy), and user monoids through the prover's term translation.
#include "lower/monoid_table.hpp"

#include <limits>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "lower/passes.hpp"
#include "sema/types.hpp"

namespace emmy::lower {
namespace {

using algebra::Rational;
using algebra::Term;
using algebra::TermOp;
using kir::ScalarType;

Term a(const char* f) { return Term::var(fmt::format("a.{}", f)); }
Term b(const char* f) { return Term::var(fmt::format("b.{}", f)); }
Term op(TermOp o, Term x, Term y) { return Term::make(o, {std::move(x), std::move(y)}); }
Term num(int64_t v) { return Term::constant(Rational::of(v)); }

// The extreme value of a type: -inf/+inf for floats, the integer limits otherwise (INT_MIN,
// not -INT_MAX: max of a row holding INT_MIN is INT_MIN).
Term extreme(ScalarType t, bool low) {
  if (kir::is_float(t)) return Term::make(low ? TermOp::NegInf : TermOp::PosInf, {});
  if (t == ScalarType::I32) return num(low ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
  return num(low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
}

MonoidLowering single(ScalarType t, Term identity, TermOp combine) {
  MonoidLowering m;
  m.fields = {"x"};
  m.types = {t};
  m.identity = {std::move(identity)};
  m.combine = {op(combine, a("x"), b("x"))};
  m.lift = {Term::var("x")};
  m.lift_params = {"x"};
  return m;
}

MonoidLowering index_of(ScalarType value, TermOp better) {
  MonoidLowering m;
  m.fields = {"v", "i"};
  m.types = {value, ScalarType::I64};
  m.identity = {extreme(value, better == TermOp::Gt), num(0)};
  // Ties go to the smaller index, and NaN beats every value, as in PyTorch (stdlib/monoids.emmy):
  // associative and commutative.
  Term a_nan = op(TermOp::Ne, a("v"), a("v")), b_nan = op(TermOp::Ne, b("v"), b("v"));
  Term earlier = op(TermOp::Lt, b("i"), a("i"));
  Term ordinary =
      op(TermOp::Or, b_nan,
         op(TermOp::Or, op(better, b("v"), a("v")), op(TermOp::And, op(TermOp::Eq, b("v"), a("v")), earlier)));
  Term take_b = op(TermOp::Or, op(TermOp::And, op(TermOp::And, a_nan, b_nan), earlier),
                   op(TermOp::And, Term::make(TermOp::Not, {a_nan}), ordinary));
  m.combine = {Term::make(TermOp::Select, {take_b, b("v"), a("v")}),
               Term::make(TermOp::Select, {take_b, b("i"), a("i")})};
  m.lift = {Term::var("x"), Term::var("j")};
  m.lift_params = {"x"};
  m.axis_param = std::string(1, 'j');
  return m;
}

ScalarType arg0(const std::vector<ScalarType>& args) { return args.empty() ? ScalarType::F32 : args[0]; }

const BuiltinMonoid kBuiltins[] = {
    {"sum", "x", [](ScalarType t, const std::vector<ScalarType>&) { return single(t, num(0), TermOp::Add); }},
    {"prod", "x", [](ScalarType t, const std::vector<ScalarType>&) { return single(t, num(1), TermOp::Mul); }},
    {"max", "x", [](ScalarType t, const std::vector<ScalarType>&) { return single(t, extreme(t, true), TermOp::Max); }},
    {"min", "x",
     [](ScalarType t, const std::vector<ScalarType>&) { return single(t, extreme(t, false), TermOp::Min); }},
    {"any", "x", [](ScalarType t, const std::vector<ScalarType>&) { return single(t, num(0), TermOp::Or); }},
    {"all", "x", [](ScalarType t, const std::vector<ScalarType>&) { return single(t, num(1), TermOp::And); }},
    {"argmax", "i", [](ScalarType, const std::vector<ScalarType>& args) { return index_of(arg0(args), TermOp::Gt); }},
    {"argmin", "i", [](ScalarType, const std::vector<ScalarType>& args) { return index_of(arg0(args), TermOp::Lt); }},
};

}  // namespace

const BuiltinMonoid* builtin_monoid(std::string_view name) {
  for (const BuiltinMonoid& m : kBuiltins)
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<std::string_view> builtin_monoid_names() {
  std::vector<std::string_view> out;
  for (const BuiltinMonoid& m : kBuiltins) out.push_back(m.name);
  return out;
}

algebra::MonoidTerms terms_of(std::string_view name, const MonoidLowering& m) {
  algebra::MonoidTerms t;
  t.name = std::string(name);
  t.fields = m.fields;
  t.identity = m.identity;
  t.combine = m.combine;
  t.lift = m.lift;
  for (size_t i = 0; i < m.fields.size() && i < m.types.size(); ++i)
    if (m.types[i] == ScalarType::Pred)
      t.bool_fields.push_back(m.fields[i]);
    else if (!kir::is_float(m.types[i]))
      t.int_fields.push_back(m.fields[i]);
  return t;
}

MonoidLowering user_monoid(const ast::MonoidDecl& decl) {
  std::string why;
  std::optional<algebra::MonoidTerms> terms = algebra::monoid_terms(decl, why);
  if (!terms) throw LowerError(fmt::format("error: monoid {} cannot be lowered: {}", decl.name.name, why));
  MonoidLowering m;
  m.fields = terms->fields;
  for (const ast::Field& f : decl.fields) m.types.push_back(scalar_of(parse_dtype(f.dtype.name).value_or(DType::F32)));
  m.identity = terms->identity;
  m.combine = terms->combine;
  if (decl.lift_params) {
    for (const ast::Field& p : *decl.lift_params) m.lift_params.push_back(p.name.name);
    m.lift = terms->lift;
  } else {
    for (const std::string& f : m.fields) {
      m.lift_params.push_back(fmt::format("in_{}", f));
      m.lift.push_back(Term::var(fmt::format("in_{}", f)));
    }
  }
  return m;
}

}  // namespace emmy::lower
