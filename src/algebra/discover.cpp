#include "algebra/discover.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>

#include <fmt/format.h>

#include "algebra/normal_form.hpp"
#include "syntax/print_ast.hpp"

namespace emmy::algebra {
namespace {

using ast::Expr;
using ast::ExprKind;

// The defining statement of every intermediate, for inlining elementwise ones.
using Defs = std::map<std::string, const ast::AssignStmt*>;

Expr make_expr(ExprKind kind, std::string text, std::vector<Expr> args = {}) {
  Expr e;
  e.kind = kind;
  e.text = std::move(text);
  e.args = std::move(args);
  return e;
}

// The assignments that follow `stmt` in the op's body.
std::vector<const ast::AssignStmt*> assignments_after(const ast::OpDecl& op, const ast::AssignStmt* stmt) {
  std::vector<const ast::AssignStmt*> out;
  bool after = false;
  for (const ast::Stmt& s : op.body) {
    const auto* a = std::get_if<ast::AssignStmt>(&s);
    if (!a) continue;
    if (after) out.push_back(a);
    after = after || a == stmt;
  }
  return out;
}

bool has_reduce(const Expr& e) {
  if (e.kind == ExprKind::Reduce) return true;
  for (const Expr& a : e.args)
    if (has_reduce(a)) return true;
  return false;
}

std::vector<std::string> lhs_names(const ast::AssignStmt& s) {
  std::vector<std::string> v;
  for (const Expr& i : s.indices) v.push_back(i.text);
  return v;
}

// Replaces index-variable names by expressions.
Expr rename(const Expr& e, const std::map<std::string, Expr>& by) {
  if (e.kind == ExprKind::Name)
    if (auto it = by.find(e.text); it != by.end()) return it->second;
  Expr out = ast::node_of(e);
  for (const Expr& a : e.args) out.args.push_back(rename(a, by));
  for (const Expr& w : e.where_) out.where_.push_back(rename(w, by));
  return out;
}

// Inlines references to elementwise intermediates (no reduction in their definition).
Expr inline_elementwise(const Expr& e, const Defs& defs) {
  const Expr* base = e.kind == ExprKind::Index ? &e.args[0] : &e;
  if (base->kind == ExprKind::Name)
    if (auto it = defs.find(base->text); it != defs.end() && !has_reduce(it->second->value)) {
      std::vector<std::string> vars = lhs_names(*it->second);
      std::map<std::string, Expr> by;
      for (size_t k = 0; k < vars.size(); ++k) {
        if (e.kind == ExprKind::Index && k + 1 < e.args.size())
          by[vars[k]] = e.args[k + 1];
        else if (e.kind == ExprKind::Name)
          by[vars[k]] = make_expr(ExprKind::Name, vars[k]);
      }
      return rename(inline_elementwise(it->second->value, defs), by);  // bare names read in the definition's scope
    }
  // A bare intermediate that stays (it holds a reduction) means r[its own indices].
  if (e.kind == ExprKind::Name)
    if (auto it = defs.find(e.text); it != defs.end()) {
      Expr ref = make_expr(ExprKind::Index, "", {e});
      for (const std::string& v : lhs_names(*it->second)) ref.args.push_back(make_expr(ExprKind::Name, v));
      return ref;
    }
  Expr out = ast::node_of(e);
  out.where_ = e.where_;
  for (size_t k = 0; k < e.args.size(); ++k)  // an index's base is a name, not a bare read
    out.args.push_back(k == 0 && e.kind == ExprKind::Index ? e.args[0] : inline_elementwise(e.args[k], defs));
  return out;
}

// Casts change the dtype, not the real value the laws speak of: drop them to compare.
Expr strip_casts(const Expr& e) {
  static const char* kCasts[] = {"f16", "bf16", "f32", "f64", "i32", "i64"};
  if (e.kind == ExprKind::Call && e.args.size() == 1)
    for (const char* c : kCasts)
      if (e.text == c) return strip_casts(e.args[0]);
  Expr out = ast::node_of(e);
  for (const Expr& a : e.args) out.args.push_back(strip_casts(a));
  for (const Expr& w : e.where_) out.where_.push_back(strip_casts(w));
  return out;
}

void factors(const Expr& e, std::vector<Expr>& out) {
  if (e.kind == ExprKind::Binary && e.text == "*") {
    factors(e.args[0], out);
    factors(e.args[1], out);
  } else {
    out.push_back(e);
  }
}

// e as numerator factors over divisors: products and quotients unfolded.
void quotient_factors(const Expr& e, std::vector<Expr>& num, std::vector<Expr>& den) {
  if (e.kind == ExprKind::Binary && (e.text == "*" || e.text == "/")) {
    quotient_factors(e.args[0], num, den);
    if (e.text == "*") return quotient_factors(e.args[1], num, den);
    std::vector<Expr> dn;  // a / (b / c) = a · c / b
    quotient_factors(e.args[1], dn, num);
    den.insert(den.end(), dn.begin(), dn.end());
  } else {
    num.push_back(e);
  }
}

// The indices of a read of `name` (none for a bare name), printed, or nullopt for another expression.
std::optional<std::string> read_args(const Expr& e, const std::string& name) {
  if (e.kind == ExprKind::Name && e.text == name) return std::string();
  if (e.kind != ExprKind::Index || e.args[0].kind != ExprKind::Name || e.args[0].text != name) return std::nullopt;
  std::vector<std::string> args;
  for (size_t k = 1; k < e.args.size(); ++k) args.push_back(print_expr(e.args[k]));
  return fmt::format("{}", fmt::join(args, ", "));
}

bool mentions(const Expr& e, const std::string& name) {
  if ((e.kind == ExprKind::Name) && e.text == name) return true;
  for (const Expr& a : e.args)
    if (mentions(a, name)) return true;
  return false;
}

struct MaxStmt {
  const ast::AssignStmt* stmt;
  std::string axis;
  Expr body;          // X of m[I] = max(j: X)
  const Expr* where;  // its predicate, or null
};

// e as a linear form over atoms: `atom` names the leaves it keeps whole (a reference to the
// pivot, an element read); sums, differences, negations, casts, products by constants and real
// quotients by constants are unfolded (an integer `/` is a leaf). nullopt when e is not linear
// in its atoms.
using AtomOf = std::function<std::optional<std::string>(const Expr&)>;

std::optional<LinearForm> linear_of(const Expr& e, const AtomOf& atom, const CheckedOp& op) {
  auto real = [&](const Expr& x) {  // an integer quotient truncates: not linear
    auto t = op.expr_types.find(x.id);
    return t != op.expr_types.end() && t->second.kind == Type::Kind::Scalar && is_float(t->second.dtype);
  };
  try {
    switch (e.kind) {
      case ExprKind::Int: return LinearForm{{}, Rational::of(e.int_value)};
      case ExprKind::Float:
        if (std::optional<Rational> r = Rational::of_double(e.float_value)) return LinearForm{{}, *r};
        return std::nullopt;
      case ExprKind::Unary:
        if (e.text != "-") break;
        if (std::optional<LinearForm> a = linear_of(e.args[0], atom, op)) return scaled(*a, Rational::of(-1));
        return std::nullopt;
      case ExprKind::Binary: {
        if (e.text != "+" && e.text != "-" && e.text != "*" && !(e.text == "/" && real(e))) break;
        std::optional<LinearForm> a = linear_of(e.args[0], atom, op), b = linear_of(e.args[1], atom, op);
        if (!a || !b) return std::nullopt;
        if (std::optional<LinearForm> f = linear_combine(e.text, *a, *b)) return f;
        break;  // a product of two non-constants: one leaf
      }
      default: break;
    }
  } catch (const Overflow&) {
    return std::nullopt;
  }
  if (std::optional<std::string> a = atom(e)) return LinearForm{{{*a, Rational::of(1)}}, Rational::of(0)};
  return std::nullopt;
}

// The first reference to the pivot `m` in e: its index expressions rename the max's own.
const Expr* pivot_ref(const Expr& e, const std::string& m) {
  if ((e.kind == ExprKind::Name && e.text == m) ||
      (e.kind == ExprKind::Index && e.args[0].kind == ExprKind::Name && e.args[0].text == m))
    return &e;
  for (const Expr& a : e.args)
    if (const Expr* r = pivot_ref(a, m)) return r;
  return nullptr;
}

// Is d (a difference, inside exp or squared) c·(Y − m) with Y the max's body where the sum
// reads it? The scale c, decided on linear normal forms over the element reads: so
// `s - m`, `(s - m) * 0.5`, `2 * s - 2 * m` and `-(m - s)` all match, with their c.
std::optional<Rational> pivot_scale(const Expr& d, const MaxStmt& m, const std::string& sum_axis, const Defs& defs,
                                    const CheckedOp& op) {
  const std::string& mx = m.stmt->target.name;
  const Expr* ref = pivot_ref(d, mx);
  if (!ref) return std::nullopt;
  std::vector<std::string> vars = lhs_names(*m.stmt);
  std::map<std::string, Expr> by;
  if (ref->kind == ExprKind::Index) {
    if (ref->args.size() != vars.size() + 1) return std::nullopt;
    for (size_t k = 0; k < vars.size(); ++k) by[vars[k]] = ref->args[k + 1];
  }  // a bare m keeps its own index names
  by[m.axis] = make_expr(ExprKind::Name, sum_axis);
  std::string pivot_text = print_expr(strip_casts(*ref));
  bool other_pivot = false;  // m read at other indices, or inside a leaf
  AtomOf atom = [&](const Expr& e) -> std::optional<std::string> {
    std::string text = print_expr(strip_casts(e));
    if (pivot_ref(e, mx)) {
      if (text == pivot_text) return std::string("m");
      other_pivot = true;
      return std::nullopt;
    }
    return fmt::format("@{}", text);
  };
  std::optional<LinearForm> diff = linear_of(strip_casts(d), atom, op);
  std::optional<LinearForm> y = linear_of(strip_casts(inline_elementwise(rename(m.body, by), defs)), atom, op);
  if (!diff || !y || other_pivot) return std::nullopt;
  return pivot_shift(*diff, *y, "m");
}

// Is `f` exp(c·(Y − m)) (or exp2 of it in base 2), Y the max's body where the sum reads it?
// The scale c > 0 of the weight, in base e.
std::optional<Rational> shifted_exp_scale(const Expr& f, const MaxStmt& m, const std::string& sum_axis,
                                          const Defs& defs, const CheckedOp& op) {
  Expr g = strip_casts(f);
  if (g.kind != ExprKind::Call || (g.text != "exp" && g.text != "exp2") || g.args.size() != 1) return std::nullopt;
  std::optional<Rational> c = pivot_scale(g.args[0], m, sum_axis, defs, op);
  if (!c || g.text == "exp") return c;
  return exp2_scale_in_base_e(*c);
}

// The sum ranges over the same indices as the max: the same predicate, or none.
bool same_range(const Expr& sum, const MaxStmt& m) {
  if (sum.where_.empty() || !m.where) return sum.where_.empty() && !m.where;
  Expr axis = make_expr(ExprKind::Name, sum.axes[0].name);
  return print_expr(rename(*m.where, {{m.axis, axis}})) == print_expr(sum.where_[0]);
}

// The chain's monoid: n = max(a.m, b.m); each d rescaled by exp(old max - n).
MonoidTerms chain_monoid(const std::string& m, const std::vector<std::string>& ds,
                         const std::vector<Rational>& scales) {
  MonoidTerms t;
  t.name = fmt::format("online({})", m);
  t.fields.push_back(m);
  for (const std::string& d : ds) t.fields.push_back(d);
  Term am = Term::var("a." + m), bm = Term::var("b." + m);
  Term n = Term::make(TermOp::Max, {am, bm});
  t.identity.push_back(Term::make(TermOp::NegInf, {}));
  t.combine.push_back(n);
  // exp(c·(k − n)); c = 1 is the plain exp(k − n).
  auto rescale = [&](const Term& k, Rational c) {
    Term diff = Term::make(TermOp::Sub, {k, n});
    if (c != Rational::of(1)) diff = Term::make(TermOp::Mul, {Term::constant(c), diff});
    return Term::make(TermOp::Exp, {diff});
  };
  for (size_t i = 0; i < ds.size(); ++i) {
    const std::string& d = ds[i];
    Term x = rescale(am, scales[i]), y = rescale(bm, scales[i]);
    t.identity.push_back(Term::constant(Rational::of(0)));
    t.combine.push_back(Term::make(TermOp::Add, {Term::make(TermOp::Mul, {Term::var("a." + d), x}),
                                                 Term::make(TermOp::Mul, {Term::var("b." + d), y})}));
  }
  return t;
}

// Welford's merge (Chan et al.): count n, mean u, sum of squared deviations q. The mean is
// the weighted mean a.u * a.n / n + b.u * b.n / n, as std.monoids' welford: an infinite mean
// stays infinite when it meets a finite one (a.u + (b.u - a.u) * w would be inf - inf).
MonoidTerms welford_monoid(const std::string& mean, const std::string& m2) {
  MonoidTerms t;
  t.name = fmt::format("welford({}, {})", mean, m2);
  std::string count = "n";  // the count is no statement's: a name the other two do not take
  while (count == mean || count == m2) count += "_";
  t.fields = {count, mean, m2};
  auto a = [&](const std::string& f) { return Term::var("a." + f); };
  auto b = [&](const std::string& f) { return Term::var("b." + f); };
  auto op = [](TermOp o, Term x, Term y) { return Term::make(o, {std::move(x), std::move(y)}); };
  Term n = op(TermOp::Add, a(count), b(count));
  Term delta = op(TermOp::Sub, b(mean), a(mean));
  auto share = [&](Term part) {
    return Term::make(TermOp::Select, {op(TermOp::Gt, n, Term::constant(Rational::of(0))),
                                       op(TermOp::Div, std::move(part), n), Term::constant(Rational::of(0))});
  };
  Term wa = share(a(count)), w = share(b(count));
  t.identity = {Term::constant(Rational::of(0)), Term::constant(Rational::of(0)), Term::constant(Rational::of(0))};
  t.combine = {n, op(TermOp::Add, op(TermOp::Mul, a(mean), wa), op(TermOp::Mul, b(mean), w)),
               op(TermOp::Add, op(TermOp::Add, a(m2), b(m2)),
                  op(TermOp::Mul, op(TermOp::Mul, delta, delta), op(TermOp::Mul, a(count), w)))};
  t.lift = {Term::constant(Rational::of(1)), Term::var("x"), Term::constant(Rational::of(0))};
  return t;
}

void sums_in(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == ExprKind::Reduce && e.text == "sum" && e.axes.size() == 1) out.push_back(&e);
  for (const Expr& a : e.args) sums_in(a, out);
}

DiscoveredChain make_chain(const CheckedOp& op, const std::string& axis, const std::string& first,
                           std::vector<std::string> rest, std::string summary, MonoidTerms monoid) {
  DiscoveredChain c{
      op.decl->name.name, std::move(summary), axis, first, std::move(rest), {}, std::move(monoid), {}, {}};
  c.laws = check_laws(c.monoid);
  return c;
}

// argmax with ties to the smaller index: carrier (value, index).
MonoidTerms argmax_monoid(const std::string& m, const std::string& idx) {
  MonoidTerms t;
  t.name = fmt::format("argmax({}, {})", m, idx);
  t.fields = {m, idx};
  auto a = [&](const std::string& f) { return Term::var("a." + f); };
  auto b = [&](const std::string& f) { return Term::var("b." + f); };
  Term take_b = Term::make(
      TermOp::Or,
      {Term::make(TermOp::Gt, {b(m), a(m)}),
       Term::make(TermOp::And, {Term::make(TermOp::Eq, {b(m), a(m)}), Term::make(TermOp::Lt, {b(idx), a(idx)})})});
  t.identity = {Term::make(TermOp::NegInf, {}), Term::constant(Rational::of(0))};
  t.combine = {Term::make(TermOp::Select, {take_b, b(m), a(m)}), Term::make(TermOp::Select, {take_b, b(idx), a(idx)})};
  return t;
}

// m[I] = max(j: X), then idx[I] = min(j where X == m: j): the first index of the
// maximum, which is argmax — one reduction with carrier (m, idx).
std::vector<DiscoveredChain> discover_argmax(const CheckedOp& op, const std::vector<MaxStmt>& maxes, const Defs& defs) {
  std::vector<DiscoveredChain> out;
  for (const MaxStmt& m : maxes) {
    if (m.where) continue;
    for (const ast::AssignStmt* a : assignments_after(*op.decl, m.stmt)) {
      const Expr& v = a->value;
      if (v.kind != ExprKind::Reduce || v.text != "min" || v.axes.size() != 1 || v.where_.size() != 1 ||
          v.args.size() != 1 || v.args[0].kind != ExprKind::Name || v.args[0].text != v.axes[0].name)
        continue;
      const Expr& w = v.where_[0];
      if (w.kind != ExprKind::Binary || w.text != "==") continue;
      // x == m or m == x: x - m is the max's body minus the max.
      bool found = false;
      for (int side = 0; side < 2 && !found; ++side) {
        Expr diff = make_expr(ExprKind::Binary, "-", {w.args[side], w.args[1 - side]});
        found = pivot_scale(diff, m, v.axes[0].name, defs, op) == Rational::of(1);
      }
      if (!found) continue;
      const std::string& mx = m.stmt->target.name;
      const std::string& idx = a->target.name;
      out.push_back(make_chain(op, m.axis, mx, {idx},
                               fmt::format("{} = max({}: ...) and {} = the first {} where it is reached are one "
                                           "reduction over {}: argmax with carrier ({}, {}), ties to the smaller index",
                                           mx, m.axis, idx, m.axis, m.axis, mx, idx),
                               argmax_monoid(mx, idx)));
    }
  }
  return out;
}

// Each sum after `head` over the same range, with its statement and the factors of its
// body once elementwise intermediates are inlined: what every chain rule inspects.
struct LaterSum {
  const ast::AssignStmt* stmt;
  const Expr* sum;
  Expr body;  // the sum's body, elementwise definitions inlined
  std::vector<Expr> factors;
};

std::vector<LaterSum> later_sums(const CheckedOp& op, const Defs& defs, const MaxStmt& head) {
  std::vector<LaterSum> out;
  for (const ast::AssignStmt* a : assignments_after(*op.decl, head.stmt)) {
    std::vector<const Expr*> sums;
    sums_in(a->value, sums);
    for (const Expr* sum : sums) {
      if (!same_range(*sum, head)) continue;
      LaterSum s{a, sum, inline_elementwise(sum->args[0], defs), {}};
      factors(s.body, s.factors);
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Is `divisor` the number of terms the sum adds (the size of its axis)?
bool divides_by_count(const CheckedOp& op, const Expr& sum, const Expr& divisor) {
  for (const ReductionInfo& r : op.reductions) {
    if (r.expr_id != sum.id || r.axis_sizes.size() != 1) continue;
    const Size& n = r.axis_sizes[0];
    return (divisor.kind == ExprKind::Name && !n.symbol.empty() && divisor.text == n.symbol) ||
           (divisor.kind == ExprKind::Int && n.symbol.empty() && divisor.int_value == n.literal);
  }
  return false;
}

// mean[I] = sum(j: X) / N, then later sum(j: (X - mean) * (X - mean)): one pass with
// Welford's carrier instead of two.
std::vector<DiscoveredChain> discover_variances(const CheckedOp& op, const Defs& defs) {
  std::vector<DiscoveredChain> out;
  std::vector<MaxStmt> means;  // same shape as a max: the statement, axis, body, predicate
  for (const ast::Stmt& s : op.decl->body) {
    const auto* a = std::get_if<ast::AssignStmt>(&s);
    if (!a) continue;
    const Expr& v = a->value;
    if (v.kind == ExprKind::Binary && v.text == "/" && v.args[0].kind == ExprKind::Reduce && v.args[0].text == "sum" &&
        v.args[0].axes.size() == 1 && v.args[0].args.size() == 1 && v.args[0].where_.empty() &&
        divides_by_count(op, v.args[0], v.args[1]))
      means.push_back({a, v.args[0].axes[0].name, v.args[0].args[0], nullptr});
  }
  for (const MaxStmt& mean : means)
    for (const LaterSum& s : later_sums(op, defs, mean)) {
      const std::vector<Expr>& fs = s.factors;
      if (fs.size() != 2 || print_expr(fs[0]) != print_expr(fs[1])) continue;
      // (Y - mean) with Y the mean's body: the difference exp(Y - m) tests, without the exp.
      if (pivot_scale(fs[0], mean, s.sum->axes[0].name, defs, op) != Rational::of(1)) continue;
      const std::string& mu = mean.stmt->target.name;
      const std::string& var = s.stmt->target.name;
      MonoidTerms monoid = welford_monoid(mu, var);
      std::string summary = fmt::format(
          "{} = sum({}: ...) / n and {} = sum of squared deviations from it are one reduction over {} with "
          "Welford's carrier ({}, {}, {})",
          mu, mean.axis, var, mean.axis, monoid.fields[0], mu, var);
      out.push_back(make_chain(op, mean.axis, mu, {var}, std::move(summary), std::move(monoid)));
    }
  return out;
}

}  // namespace

std::optional<Rational> exp2_scale_in_base_e(Rational base2) {
  double v = base2.value() * std::numbers::ln2;
  if (std::abs(v - 1) < 0x1p-40) return Rational::of(1);
  if (!(std::abs(v) < 0x1p20)) return std::nullopt;
  return Rational::of(std::llround(std::ldexp(v, 40)), int64_t{1} << 40);
}

std::vector<DiscoveredChain> discover_chains(const CheckedOp& op) {
  Defs defs;
  std::vector<MaxStmt> maxes;
  for (const ast::Stmt& s : op.decl->body) {
    const auto* a = std::get_if<ast::AssignStmt>(&s);
    if (!a) continue;
    const TensorInfo* t = op.find(a->target.name);
    if (t && t->role == TensorInfo::Role::Intermediate) defs[a->target.name] = a;
    const Expr& v = a->value;
    if (v.kind == ExprKind::Reduce && v.text == "max" && v.axes.size() == 1)
      maxes.push_back({a, v.axes[0].name, v.args[0], v.where_.empty() ? nullptr : &v.where_[0]});
  }
  std::vector<DiscoveredChain> chains = discover_variances(op, defs);
  for (DiscoveredChain& c : discover_argmax(op, maxes, defs)) chains.push_back(std::move(c));
  for (const MaxStmt& m : maxes) {
    const std::string& mx = m.stmt->target.name;
    std::vector<std::string> ds, normalizers;
    std::vector<Rational> scales;
    std::vector<std::string> denominators;  // this chain's sums of the weight alone, exp(c·(x - m))
    for (const LaterSum& s : later_sums(op, defs, m)) {
      int shifted = 0, others_mention_m = 0;
      Rational scale;
      // Normalized inside the sum, sum(j: exp(x - m) / l * v) with l = sum(j: exp(x - m)) read
      // where m is: the sum joins the chain and l is factored out of it (l is 0 only on an
      // empty range, where the lowering's guard gives the empty sum's 0).
      std::vector<Expr> factors = s.factors, num, den;
      std::string normalizer;
      quotient_factors(s.body, num, den);
      if (den.size() == 1)
        if (const Expr* pivot = pivot_ref(s.body, mx))
          for (const std::string& l : denominators)
            if (std::optional<std::string> at = read_args(den[0], l); at && at == read_args(*pivot, mx)) {
              factors = num;
              normalizer = l;
            }
      for (const Expr& f : factors) {
        if (std::optional<Rational> c = shifted_exp_scale(f, m, s.sum->axes[0].name, defs, op)) {
          ++shifted;
          scale = *c;
        } else if (mentions(f, mx)) {
          ++others_mention_m;
        }
      }
      if (shifted != 1 || others_mention_m != 0) continue;
      scales.push_back(scale);
      std::string field = s.stmt->target.name;  // two sums in one statement: l, l_2
      for (int k = 2; std::find(ds.begin(), ds.end(), field) != ds.end(); ++k)
        field = fmt::format("{}_{}", s.stmt->target.name, k);
      ds.push_back(field);
      normalizers.push_back(normalizer);
      if (factors.size() == 1 && normalizer.empty() && s.stmt->value.kind == ExprKind::Reduce)
        denominators.push_back(s.stmt->target.name);
    }
    if (ds.empty()) continue;
    std::string weight = fmt::format("exp(x - {})", mx);
    if (std::any_of(scales.begin(), scales.end(), [](Rational c) { return c != Rational::of(1); })) {
      std::vector<std::string> cs;
      for (Rational c : scales) cs.push_back(c.str());
      weight = fmt::format("exp(c·(x - {})), c = {}", mx, fmt::join(cs, ", "));
    }
    std::vector<std::string> normalized;
    for (size_t k = 0; k < ds.size(); ++k)
      if (!normalizers[k].empty()) normalized.push_back(fmt::format("{} by {}", ds[k], normalizers[k]));
    std::string summary = fmt::format(
        "{} = max({}: ...) and the sums {} weighted by {} are one reduction over {} with carrier ({}, {}){}", mx,
        m.axis, fmt::join(ds, ", "), weight, m.axis, mx, fmt::join(ds, ", "),
        normalized.empty() ? "" : fmt::format("; normalized after the fold: {}", fmt::join(normalized, ", ")));
    MonoidTerms monoid = chain_monoid(mx, ds, scales);
    DiscoveredChain chain = make_chain(op, m.axis, mx, std::move(ds), std::move(summary), std::move(monoid));
    chain.sum_scales = std::move(scales);
    chain.sum_normalizers = std::move(normalizers);
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::optional<DiscoveredChain> online_prefix(const DiscoveredChain& chain, size_t sums) {
  if (chain.monoid.name.rfind("online(", 0) != 0 || sums == 0 || sums >= chain.sum_stmts.size() ||
      chain.sum_scales.size() != chain.sum_stmts.size())
    return std::nullopt;
  DiscoveredChain c = chain;
  c.sum_stmts.resize(sums);
  c.sum_scales.resize(sums);
  if (c.sum_normalizers.size() > sums) c.sum_normalizers.resize(sums);
  c.monoid = chain_monoid(c.max_stmt, c.sum_stmts, c.sum_scales);
  c.laws = {};
  c.summary = fmt::format(
      "{} = max({}: ...) and the sums {} are one reduction over {} with carrier ({}, {}) (the "
      "first sums of a longer chain)",
      c.max_stmt, c.axis, fmt::join(c.sum_stmts, ", "), c.axis, c.max_stmt, fmt::join(c.sum_stmts, ", "));
  return c;
}

DiscoveredChain rename_statements(DiscoveredChain c, const std::function<std::string(const std::string&)>& name) {
  auto stmt = [&](std::string& n) {
    if (!n.empty()) n = name(n);
  };
  stmt(c.max_stmt);
  for (std::string& s : c.sum_stmts) stmt(s);
  for (std::string& s : c.sum_normalizers) stmt(s);
  std::map<std::string, std::string> vars;  // a.<field> -> a.<its new name>, b. the same
  for (std::vector<std::string>* fields : {&c.monoid.fields, &c.monoid.bool_fields, &c.monoid.int_fields})
    for (std::string& f : *fields) {
      const std::string to = name(f);
      vars["a." + f] = "a." + to;
      vars["b." + f] = "b." + to;
      f = to;
    }
  std::function<void(Term&)> rename = [&](Term& t) {
    if (t.op == TermOp::Var)
      if (auto it = vars.find(t.name); it != vars.end()) t.name = it->second;
    for (Term& a : t.args) rename(a);
  };
  for (std::vector<Term>* terms : {&c.monoid.identity, &c.monoid.combine, &c.monoid.lift})
    for (Term& t : *terms) rename(t);
  return c;
}

}  // namespace emmy::algebra
