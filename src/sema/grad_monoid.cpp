// A user monoid's combine as expressions, and reverse mode through it: what a reduction by the
// monoid passes to an element comes from the proved combine alone (grad_reverse.cpp applies it
// at combine(combine(prefix, x), suffix)).
#include <fmt/format.h>

#include "sema/grad.hpp"
#include "sema/grad_rules.hpp"

namespace emmy::sema::grad {
namespace {

using ast::Expr;
using ast::ExprKind;

std::vector<std::string> field_names(const ast::MonoidDecl& m) {
  std::vector<std::string> out;
  for (const ast::Field& f : m.fields) out.push_back(f.name.name);
  return out;
}

bool is_vector(const ast::MonoidDecl& m, const std::string& field) {
  for (const ast::Field& f : m.fields)
    if (f.name.name == field) return f.vector_dim.has_value();
  return false;
}

Expr element(Expr vector, const std::string& var) {
  Expr e;
  e.kind = ExprKind::Index;
  e.args.push_back(std::move(vector));
  e.args.push_back(name(var));
  return e;
}

// The combine's yielded components over the symbolic fields a.f and b.f (its lets substituted),
// a vector field's reads taken at their element (a.o[e]): the combine is elementwise in them.
std::vector<Expr> yields(const ast::MonoidDecl& m, const VectorVars& vv) {
  std::map<std::string, Expr> lets;
  auto inline_lets = [&](const Expr& e) {
    return rewrite(e, [&](const Expr& n) -> std::optional<Expr> {
      if (n.kind == ExprKind::Name)
        if (auto it = lets.find(n.text); it != lets.end()) return it->second;
      return std::nullopt;
    });
  };
  for (const ast::LetStmt& l : m.combine_lets) lets[l.name.name] = inline_lets(l.value);
  const Expr y = rewrite(inline_lets(*m.combine_yield), [&](const Expr& n) -> std::optional<Expr> {
    if (n.kind == ExprKind::Field && n.args[0].kind == ExprKind::Name && vv.count(n.text))
      return element(n, vv.at(n.text));
    return std::nullopt;
  });
  if (y.kind == ExprKind::Tuple) return y.args;
  return {y};
}

// The field `f` of side `side` (the combine's a or b) where `e` reads one: a.m -> ("a", "m"),
// a.o[e] -> ("a", "o").
std::optional<std::pair<std::string, std::string>> field_read(const Expr& e) {
  if (e.kind == ExprKind::Field && e.args[0].kind == ExprKind::Name) return std::pair{e.args[0].text, e.text};
  if (e.kind == ExprKind::Index && e.args.size() == 2 && e.args[0].kind == ExprKind::Field &&
      e.args[0].args[0].kind == ExprKind::Name)
    return std::pair{e.args[0].args[0].text, e.args[0].text};
  return std::nullopt;
}

// Reverse mode over one yielded component, its leaves the fields of a and b.
std::optional<Failure> visit(const Expr& e, const Expr& g, std::map<std::pair<std::string, std::string>, Expr>& out) {
  if (auto f = field_read(e)) {
    auto [it, fresh] = out.emplace(*f, g);
    if (!fresh) it->second = add(std::move(it->second), g);
    return std::nullopt;
  }
  if (e.kind != ExprKind::Unary && e.kind != ExprKind::Binary && e.kind != ExprKind::Call) return std::nullopt;
  auto adjoints = operand_adjoints(e.text, g, e.args, e);
  if (!adjoints)
    return Failure{e.range, fmt::format("grad: no derivative rule for '{}' in a monoid's combine", e.text),
                   "compute the combine from operations with derivatives"};
  for (size_t k = 0; k < e.args.size(); ++k)
    if ((*adjoints)[k])
      if (auto failure = visit(e.args[k], *(*adjoints)[k], out)) return failure;
  return std::nullopt;
}

Expr at(const Expr& e, const ast::MonoidDecl& m, const Fields& a, const Fields& b) {
  return rewrite(e, [&](const Expr& n) -> std::optional<Expr> {
    if (auto f = field_read(n)) {
      const Fields& side = f->first == m.combine_lhs.name ? a : b;
      if (auto it = side.find(f->second); it != side.end()) return it->second;
    }
    return std::nullopt;
  });
}

}  // namespace

std::optional<std::string> combine_unsupported(const ast::MonoidDecl& m) {
  std::optional<std::string> dim;
  for (const ast::Field& f : m.fields)
    if (f.vector_dim) {
      const std::string d = f.vector_dim->is_literal() ? std::to_string(f.vector_dim->value) : f.vector_dim->name;
      if (dim && *dim != d) return fmt::format("its vector fields have different lengths ({} and {})", *dim, d);
      dim = d;
    }
  if (!m.combine_yield) return "it has no combine";
  return std::nullopt;
}

Fields lift_at(const ast::MonoidDecl& m, const std::vector<Expr>& args, const VectorVars& vv) {
  const std::vector<std::string> fields = field_names(m);
  // A vector field's slice v[j, :] at its element variable: v[j, e].
  auto at_element = [&](const std::string& field, const Expr& e) {
    if (!vv.count(field)) return e;
    return rewrite(e, [&](const Expr& n) -> std::optional<Expr> {
      if (n.kind == ExprKind::Slice) return name(vv.at(field));
      return std::nullopt;
    });
  };
  Fields out;
  if (!m.lift_value) {
    for (size_t k = 0; k < fields.size() && k < args.size(); ++k) out[fields[k]] = at_element(fields[k], args[k]);
    return out;
  }
  std::map<std::string, Expr> params;
  for (size_t k = 0; k < m.lift_params->size() && k < args.size(); ++k) params[(*m.lift_params)[k].name.name] = args[k];
  const Expr value = rewrite(*m.lift_value, [&](const Expr& n) -> std::optional<Expr> {
    if (n.kind == ExprKind::Name)
      if (auto it = params.find(n.text); it != params.end()) return it->second;
    return std::nullopt;
  });
  const std::vector<Expr> parts = value.kind == ExprKind::Tuple ? value.args : std::vector<Expr>{value};
  for (size_t k = 0; k < fields.size() && k < parts.size(); ++k) out[fields[k]] = at_element(fields[k], parts[k]);
  return out;
}

Fields combine_at(const ast::MonoidDecl& m, const Fields& a, const Fields& b, const VectorVars& vv) {
  const std::vector<std::string> fields = field_names(m);
  const std::vector<Expr> ys = yields(m, vv);
  Fields out;
  for (size_t k = 0; k < fields.size() && k < ys.size(); ++k) out[fields[k]] = at(ys[k], m, a, b);
  return out;
}

std::variant<std::pair<Fields, Fields>, Failure> combine_adjoints(const ast::MonoidDecl& m, const Fields& a,
                                                                  const Fields& b, const Fields& seeds,
                                                                  const VectorVars& vv) {
  const std::vector<std::string> fields = field_names(m);
  const std::vector<Expr> ys = yields(m, vv);
  // The seeds enter as placeholders (no name of the language: '$' does not lex), so that a field
  // read in a seed is never taken for one of the combine's: they are put in last.
  std::map<std::pair<std::string, std::string>, Expr> symbolic;
  for (size_t k = 0; k < fields.size() && k < ys.size(); ++k) {
    if (!seeds.count(fields[k])) continue;
    std::map<std::pair<std::string, std::string>, Expr> one;
    if (auto failure = visit(ys[k], name("$" + fields[k]), one)) return *failure;
    for (auto& [leaf, adjoint] : one) {
      // A vector yield's elements each pass a scalar field a share: their sum.
      if (vv.count(fields[k]) && !is_vector(m, leaf.second))
        adjoint = reduce("sum", {vv.at(fields[k])}, std::nullopt, std::move(adjoint));
      auto [it, fresh] = symbolic.emplace(leaf, adjoint);
      if (!fresh) it->second = add(std::move(it->second), std::move(adjoint));
    }
  }
  auto seeded = [&](const Expr& e) {
    return rewrite(e, [&](const Expr& n) -> std::optional<Expr> {
      if (n.kind == ExprKind::Name && !n.text.empty() && n.text[0] == '$') return seeds.at(n.text.substr(1));
      return std::nullopt;
    });
  };
  std::pair<Fields, Fields> out;
  for (const auto& [leaf, adjoint] : symbolic) {
    Fields& side = leaf.first == m.combine_lhs.name ? out.first : out.second;
    side[leaf.second] = seeded(at(adjoint, m, a, b));
  }
  return out;
}

}  // namespace emmy::sema::grad
