// A discovered Welford chain (a mean, then the sum of squared deviations from it) as one fold
// over the reduced axis, carrying (n, mean, M2) through the chain's proved monoid.
#include "lower/chain_fold.hpp"

#include <algorithm>
#include <set>

#include "lower/chain_weight.hpp"
#include "lower/term_expr.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower {
namespace {

using tir::Expr;

// Float casts do not change which value a term is (the prover reasons over the reals too).
Expr strip_float_casts(const Expr& e) {
  if (e.kind == Expr::Kind::Call && e.args.size() == 1 &&
      (e.op == "f16" || e.op == "bf16" || e.op == "f32" || e.op == "f64"))
    return strip_float_casts(e.args[0]);
  return tir::map_args(e, strip_float_casts);
}

// The sum of mean[I] = sum(j: X) / N, as discover_variances matched it: a float quotient of
// one unmasked sum over one axis.
const Expr* mean_sum(const tir::Stmt& head) {
  const Expr& v = head.value;
  if (v.kind != Expr::Kind::Binary || v.op != "/" || !is_float(v.dtype)) return nullptr;
  const Expr& s = v.args[0];
  if (s.kind != Expr::Kind::Reduce || s.op != "sum" || s.axes.size() != 1 || s.args.size() != 1 || !s.where.empty() ||
      !is_float(s.dtype))
    return nullptr;
  return &s;
}

// The unmasked sum in `e` over an axis the size of `axis` whose body is (X - mean) * (X - mean).
Expr* deviation_sum(Expr& e, const Expr& x, const tir::Axis& axis, const tir::Stmt& head) {
  if (e.kind == Expr::Kind::Reduce && e.op == "sum" && e.axes.size() == 1 && e.axes[0].size == axis.size &&
      e.args.size() == 1 && e.where.empty() && is_float(e.dtype)) {
    Expr body = strip_float_casts(tir::substitute(e.args[0], {{e.axes[0].name, index_expr(axis.name)}}));
    if (body.kind == Expr::Kind::Binary && body.op == "*" &&
        tir::print_expr(body.args[0]) == tir::print_expr(body.args[1]) &&
        pivot_scale_of(body.args[0], x, head) == algebra::Rational::of(1))  // X - mean[I], on linear forms
      return &e;
  }
  for (Expr& a : e.args)
    if (Expr* r = deviation_sum(a, x, axis, head)) return r;
  return nullptr;
}

// Whether `e` reads only inputs, the mean and statements before it: the M2 statement's result
// is computed where the fold runs, at the mean's place.
bool reads_before(const Expr& e, const tir::Program& p, const tir::Stmt& head) {
  std::set<std::string> read;
  tir::add_reads(e, read);
  return std::all_of(read.begin(), read.end(), [&](const std::string& t) {
    const tir::Stmt* def = p.def(t);
    return !def || def <= &head;
  });
}

// M2's lift, 0 * x: 0 for a finite element, NaN for an infinite or NaN one. The two passes'
// sum of squared deviations is NaN as soon as one element is not finite (its deviation is
// inf - inf); Chan's merge alone would give a single infinite element an M2 of +inf.
Expr m2_lift(const Expr& x, DType dtype) { return binary_expr("*", const_expr(0, dtype), x, dtype); }

}  // namespace

std::optional<Fold> welford_fold(const tir::Program& program, const algebra::DiscoveredChain& chain,
                                 const std::vector<std::string>& materialized) {
  EMMY_INTERNAL_ASSERT(chain.sum_stmts.size() == 1 && chain.monoid.fields.size() == 3 &&
                           chain.monoid.fields[1] == chain.max_stmt && chain.monoid.fields[2] == chain.sum_stmts[0],
                       "a Welford chain is (count, mean, M2) over a mean and one statement of squared deviations");
  const std::string &mean = chain.max_stmt, &m2 = chain.sum_stmts[0];
  auto cut = [&](const std::string& s) { return std::count(materialized.begin(), materialized.end(), s) > 0; };
  const tir::Stmt* head = program.def(mean);
  const tir::Stmt* dev = program.def(m2);
  if (!head || !dev || head == dev || cut(mean) || cut(m2)) return std::nullopt;
  const Expr* sum = mean_sum(*head);
  // The M2 statement is computed with the mean's thread indices: the same variables.
  if (!sum || dev->vars.size() != head->vars.size() ||
      !std::equal(dev->vars.begin(), dev->vars.end(), head->vars.begin(),
                  [](const tir::Axis& a, const tir::Axis& b) { return a.name == b.name; }))
    return std::nullopt;
  const Expr& x = sum->args[0];
  const tir::Axis& axis = sum->axes[0];
  tir::Stmt result = *dev;
  Expr* r = deviation_sum(result.value, x, axis, *head);
  if (!r) return std::nullopt;
  const DType m2_type = r->dtype, mean_type = head->value.dtype;
  *r = reg_expr("run_" + m2, m2_type);
  if (!reads_before(result.value, program, *head)) return std::nullopt;
  Fold f;
  f.axis = axis;
  f.terms = chain.monoid;
  f.summary = chain.summary;
  tir::Stmt mean_result = *head;
  mean_result.value = reg_expr("run_" + mean, mean_type);
  // The fold runs at the mean's place: the count rides on the mean's statement, read by none.
  f.members.push_back({head, {chain.monoid.fields[0], mean_type, const_expr(1, mean_type), false}, tir::Stmt{}, true});
  f.members.push_back({head, {mean, mean_type, x, false}, std::move(mean_result)});
  f.members.push_back({dev, {m2, m2_type, m2_lift(x, m2_type), false}, std::move(result)});
  return f;
}

}  // namespace emmy::lower
