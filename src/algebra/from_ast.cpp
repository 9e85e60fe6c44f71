#include "algebra/from_ast.hpp"

#include <map>

#include <fmt/format.h>

#include "sema/types.hpp"

namespace emmy::algebra {
namespace {

struct Unsupported {
  std::string why;
};

// A term with the dtype sema gives its expression: integer `/` and casts depend on it.
struct Typed {
  Term term;
  Type type;
};

struct OpRow {
  std::string_view spelling;
  TermOp op;
};
const OpRow kBinary[] = {{"+", TermOp::Add}, {"-", TermOp::Sub}, {"*", TermOp::Mul}, {"/", TermOp::Div},
                         {"%", TermOp::Mod}, {"<", TermOp::Lt},  {"<=", TermOp::Le}, {">", TermOp::Gt},
                         {">=", TermOp::Ge}, {"==", TermOp::Eq}, {"!=", TermOp::Ne}, {"&&", TermOp::And},
                         {"||", TermOp::Or}};
const OpRow kCalls[] = {{"exp", TermOp::Exp}, {"log", TermOp::Log}, {"sqrt", TermOp::Sqrt},
                        {"max", TermOp::Max}, {"min", TermOp::Min}, {"select", TermOp::Select}};

bool is_integer(const Type& t) { return is_int(materialize(t)); }
bool is_predicate(TermOp op) { return op >= TermOp::Lt && op <= TermOp::Not; }

// A binary operator's result type, as sema types it (expr_typer.cpp).
Type binary_type(TermOp op, const Type& a, const Type& b) {
  return is_predicate(op) ? Type::scalar(DType::Bool) : promote(a, b);
}

// A built-in call's result type (FnRule of sema/types.cpp).
Type call_type(const std::string& name, const std::vector<Typed>& args) {
  const BuiltinFn* fn = find_builtin_fn(name);
  Type t = args[0].type;
  switch (fn ? fn->rule : FnRule::SameAsArgs) {
    case FnRule::FloatUnary:
      if (!is_float(t.dtype)) t = Type::scalar(DType::F32);
      return t;
    case FnRule::SameAsArgs:
      for (size_t i = 1; i < args.size(); ++i) t = promote(t, args[i].type);
      return t;
    case FnRule::Select: return args[1].type.is_bool() ? args[1].type : promote(args[1].type, args[2].type);
    case FnRule::Cast: return Type::scalar(*parse_dtype(name));
  }
  return t;
}

// A cast as the reference evaluator applies it: to bool `!= 0`; to an integer type a
// truncation (none for a value that is an integer already, unless i64 narrows to i32,
// which wraps); to a float type a Cast the prover reads as the identity (the reference is
// exact) and the lowering keeps, so that its operand is computed in floating point.
Term cast_term(DType to, const Typed& x) {
  if (to == DType::Bool)
    return x.type.is_bool() ? x.term : Term::make(TermOp::Ne, {x.term, Term::constant(Rational::of(0))});
  DType from = materialize(x.type);
  bool same = from == to || (is_int(to) && (from == DType::Bool || (from == DType::I32 && to == DType::I64)));
  return same ? x.term : Term::cast(std::string(dtype_name(to)), x.term);
}

Type field_type(const ast::Field& f) { return Type::scalar(parse_dtype(f.dtype.name).value_or(DType::F32)); }

class Translator {
 public:
  explicit Translator(const ast::MonoidDecl& m) : m_(m) {
    for (const ast::Field& f : m.fields) {
      names_[m.combine_lhs.name + "." + f.name.name] = {Term::var("a." + f.name.name), field_type(f)};
      names_[m.combine_rhs.name + "." + f.name.name] = {Term::var("b." + f.name.name), field_type(f)};
    }
    if (m.lift_params)
      for (const ast::Field& p : *m.lift_params) names_[p.name.name] = {Term::var(p.name.name), field_type(p)};
  }

  Typed term(const ast::Expr& e) {
    using K = ast::ExprKind;
    switch (e.kind) {
      case K::Int:
      case K::Float: {
        auto r = Rational::parse(e.text);
        if (!r) throw Unsupported{fmt::format("the constant {} has no exact rational form here", e.text)};
        return {Term::constant(*r), Type::scalar(e.kind == K::Int ? DType::I64 : DType::F32, true)};
      }
      case K::Bool: return {Term::constant(Rational::of(e.int_value)), Type::scalar(DType::Bool)};
      case K::Inf: return {Term::make(TermOp::PosInf, {}), Type::scalar(DType::F32, true)};
      case K::Name: return named(e.text);
      case K::Field:
        if (e.args[0].kind == K::Name) return named(e.args[0].text + "." + e.text);
        break;
      case K::Index: return term(e.args[0]);  // a channel of a vector field: every channel alike
      case K::Unary: {
        Typed x = term(e.args[0]);
        if (e.text == "!") return {Term::make(TermOp::Not, {x.term}), Type::scalar(DType::Bool)};
        if (x.term.op == TermOp::PosInf) return {Term::make(TermOp::NegInf, {}), x.type};
        return {Term::make(TermOp::Neg, {x.term}), x.type};
      }
      case K::Binary:
        for (const OpRow& r : kBinary)
          if (r.spelling == e.text) return binary(r.op, term(e.args[0]), term(e.args[1]));
        break;
      case K::Call: return call(e);
      default: break;
    }
    throw Unsupported{
        fmt::format("'{}' is outside the fragment the prover decides", e.text.empty() ? "expression" : e.text)};
  }

  std::vector<Term> carrier(const ast::Expr& e) {
    std::vector<Term> out;
    if (e.kind == ast::ExprKind::Tuple)
      for (const ast::Expr& a : e.args) out.push_back(term(a).term);
    else
      out.push_back(term(e).term);
    return out;
  }

  MonoidTerms run() {
    MonoidTerms t;
    t.name = m_.name.name;
    for (const ast::Field& f : m_.fields) {
      t.fields.push_back(f.name.name);
      if (f.dtype.name == "bool") t.bool_fields.push_back(f.name.name);
      if (is_int(field_type(f).dtype)) t.int_fields.push_back(f.name.name);
    }
    t.identity = carrier(*m_.identity);
    if (m_.lift_value) t.lift = carrier(*m_.lift_value);
    for (const ast::LetStmt& let : m_.combine_lets) names_[let.name.name] = term(let.value);
    t.combine = carrier(*m_.combine_yield);
    return t;
  }

 private:
  Typed named(const std::string& name) const {
    if (auto it = names_.find(name); it != names_.end()) return it->second;
    return {Term::var(name), Type::scalar(DType::F32)};
  }

  // Integer `/` truncates: an opaque IDiv for the prover, not the field's division.
  static Typed binary(TermOp op, const Typed& a, const Typed& b) {
    Type t = binary_type(op, a.type, b.type);
    if (op == TermOp::Div && is_integer(t)) op = TermOp::IDiv;
    return {Term::make(op, {a.term, b.term}), t};
  }

  Typed call(const ast::Expr& e) {
    std::vector<Typed> args;
    for (const ast::Expr& a : e.args) args.push_back(term(a));
    if (args.empty()) throw Unsupported{fmt::format("'{}' without arguments is outside the fragment", e.text)};
    Type t = call_type(e.text, args);
    std::vector<Term> terms;
    for (const Typed& a : args) terms.push_back(a.term);
    for (const OpRow& r : kCalls)
      if (r.spelling == e.text) return {Term::make(r.op, std::move(terms)), t};
    if (auto to = parse_dtype(e.text)) return {cast_term(*to, args[0]), t};
    if (e.text == "abs") return {Term::make(TermOp::Max, {terms[0], Term::make(TermOp::Neg, {terms[0]})}), t};
    if (e.text == "rsqrt")
      return {Term::make(TermOp::Div, {Term::constant(Rational::of(1)), Term::make(TermOp::Sqrt, {terms[0]})}), t};
    throw Unsupported{fmt::format("'{}' is outside the fragment the prover decides", e.text)};
  }

  const ast::MonoidDecl& m_;
  std::map<std::string, Typed> names_;  // combine's a.f and b.f, the lift's parameters, lets
};

}  // namespace

std::optional<MonoidTerms> monoid_terms(const ast::MonoidDecl& m, std::string& why) {
  if (!m.identity || !m.combine_yield) {
    why = "the monoid has no identity or no combine";
    return std::nullopt;
  }
  try {
    return Translator(m).run();
  } catch (const Unsupported& u) {
    why = u.why;
    return std::nullopt;
  }
}

}  // namespace emmy::algebra
