#include "algebra/from_ast.hpp"

#include <map>

#include <fmt/format.h>

namespace emmy::algebra {
namespace {

struct Unsupported {
  std::string why;
};

struct OpRow {
  std::string_view spelling;
  TermOp op;
};
const OpRow kBinary[] = {{"+", TermOp::Add}, {"-", TermOp::Sub}, {"*", TermOp::Mul}, {"/", TermOp::Div},
                         {"<", TermOp::Lt},  {"<=", TermOp::Le}, {">", TermOp::Gt},  {">=", TermOp::Ge},
                         {"==", TermOp::Eq}, {"!=", TermOp::Ne}, {"&&", TermOp::And}, {"||", TermOp::Or}};
const OpRow kCalls[] = {{"exp", TermOp::Exp}, {"log", TermOp::Log}, {"sqrt", TermOp::Sqrt},
                        {"max", TermOp::Max}, {"min", TermOp::Min}, {"select", TermOp::Select}};
const std::string_view kCasts[] = {"bool", "i32", "i64", "f16", "bf16", "f32", "f64"};

class Translator {
public:
  explicit Translator(const ast::MonoidDecl& m) : m_(m) {}

  Term term(const ast::Expr& e) {
    using K = ast::ExprKind;
    switch (e.kind) {
      case K::Int:
      case K::Float: {
        auto r = Rational::parse(e.text);
        if (!r) throw Unsupported{fmt::format("the constant {} has no exact rational form here", e.text)};
        return Term::constant(*r);
      }
      case K::Bool: return Term::constant(Rational::of(e.int_value));
      case K::Inf: return Term::make(TermOp::PosInf, {});
      case K::Name: {
        if (auto it = lets_.find(e.text); it != lets_.end()) return it->second;
        return Term::var(e.text);
      }
      case K::Field:
        if (e.args[0].kind == K::Name) return Term::var(e.args[0].text + "." + e.text);
        break;
      case K::Index: return term(e.args[0]);  // a channel of a vector field: every channel alike
      case K::Unary: {
        Term x = term(e.args[0]);
        if (e.text == "!") return Term::make(TermOp::Not, {x});
        if (x.op == TermOp::PosInf) return Term::make(TermOp::NegInf, {});
        return Term::make(TermOp::Neg, {x});
      }
      case K::Binary:
        for (const OpRow& r : kBinary)
          if (r.spelling == e.text) return Term::make(r.op, {term(e.args[0]), term(e.args[1])});
        break;
      case K::Call: {
        std::vector<Term> args;
        for (const ast::Expr& a : e.args) args.push_back(term(a));
        for (const OpRow& r : kCalls)
          if (r.spelling == e.text) return Term::make(r.op, std::move(args));
        for (std::string_view c : kCasts)
          if (c == e.text) return args[0];  // the laws are proved over the reals
        if (e.text == "abs") return Term::make(TermOp::Max, {args[0], Term::make(TermOp::Neg, {args[0]})});
        if (e.text == "rsqrt")
          return Term::make(TermOp::Div, {Term::constant(Rational::of(1)), Term::make(TermOp::Sqrt, {args[0]})});
        break;
      }
      default: break;
    }
    throw Unsupported{fmt::format("'{}' is outside the fragment the prover decides", e.text.empty() ? "expression" : e.text)};
  }

  std::vector<Term> carrier(const ast::Expr& e) {
    std::vector<Term> out;
    if (e.kind == ast::ExprKind::Tuple)
      for (const ast::Expr& a : e.args) out.push_back(term(a));
    else
      out.push_back(term(e));
    return out;
  }

  MonoidTerms run() {
    MonoidTerms t;
    t.name = m_.name.name;
    for (const ast::Field& f : m_.fields) {
      t.fields.push_back(f.name.name);
      if (f.dtype.name == "bool") t.bool_fields.push_back(f.name.name);
    }
    t.identity = carrier(*m_.identity);
    if (m_.lift_value) t.lift = carrier(*m_.lift_value);
    // combine's parameters may be named anything: rename them to a and b.
    for (const ast::LetStmt& let : m_.combine_lets) lets_[let.name.name] = renamed(term(let.value));
    t.combine = carrier(*m_.combine_yield);
    for (Term& c : t.combine) c = renamed(c);
    return t;
  }

private:
  Term renamed(const Term& t) const {
    std::vector<std::pair<std::string, Term>> by;
    for (const ast::Field& f : m_.fields) {
      by.emplace_back(m_.combine_lhs.name + "." + f.name.name, Term::var("a." + f.name.name));
      by.emplace_back(m_.combine_rhs.name + "." + f.name.name, Term::var("b." + f.name.name));
    }
    return substitute(t, by);
  }

  const ast::MonoidDecl& m_;
  std::map<std::string, Term> lets_;
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
