// Divides a chain's sum that is normalized inside, sum(j: exp(x - m) / l * v) with l the chain's
// own denominator sum(j: exp(x - m)) read where m is, after the sum instead:
// select(l == 0, 0, sum(j: exp(x - m) * v) / l), so the sum joins the chain's fold (to_loops).
// Exact in real arithmetic: l is at least exp(0) = 1 on a non-empty range, 0 on an empty one,
// where the empty sum's 0 is kept.
#include "lower/passes.hpp"
#include "lower/term_expr.hpp"

#include <algorithm>

namespace emmy::lower {
namespace {

using tir::Expr;

struct Quotient {
  std::vector<Expr> num, den;
};

// e as numerator factors over divisors: products and quotients unfolded.
void unfold(const Expr& e, Quotient& q, bool inverted) {
  if (e.kind == Expr::Kind::Binary && (e.op == "*" || e.op == "/")) {
    unfold(e.args[0], q, inverted);
    unfold(e.args[1], q, e.op == "/" ? !inverted : inverted);
    return;
  }
  (inverted ? q.den : q.num).push_back(e);
}

std::string printed_args(const Expr& read) {
  std::string out;
  for (const Expr& a : read.args) out += tir::print_expr(a) + ";";
  return out;
}

// Every read of `tensor` in e at the same indices: those (printed), else nullopt.
std::optional<std::string> reads_at(const Expr& e, const std::string& tensor) {
  std::optional<std::string> at;
  bool same = true;
  tir::visit(e, [&](const Expr& x) {
    if (x.kind != Expr::Kind::Read || x.name != tensor) return;
    std::string p = printed_args(x);
    if (at && *at != p) same = false;
    at = p;
  });
  return same ? at : std::nullopt;
}

// The head's predicate over the axis named `axis` (printed; empty: none).
std::string range_of(const tir::Expr& head, const std::string& axis) {
  if (head.where.empty()) return "";
  return tir::print_expr(tir::substitute(head.where[0], {{head.axes[0].name, index_expr(axis)}}));
}

// The sums of e over the head's range normalized by a read of `l` where `pivot` is read, factored.
Expr factor(const Expr& e, const Expr& head, const std::string& pivot, const std::string& l) {
  Expr out = tir::map_children(e, [&](const Expr& x) { return factor(x, head, pivot, l); });
  if (out.kind != Expr::Kind::Reduce || out.op != "sum" || out.axes.size() != 1 ||
      out.axes[0].size != head.axes[0].size || out.args.size() != 1 || out.args[0].kind != Expr::Kind::Binary ||
      out.where.size() > 1 ||
      (out.where.empty() ? "" : tir::print_expr(out.where[0])) != range_of(head, out.axes[0].name))
    return out;
  Quotient q;
  unfold(out.args[0], q, false);
  if (q.den.size() != 1 || q.den[0].kind != Expr::Kind::Read || q.den[0].name != l ||
      tir::uses_index(q.den[0], out.axes[0].name))
    return out;
  const std::optional<std::string> at = reads_at(out.args[0], pivot);
  if (!at || *at != printed_args(q.den[0])) return out;
  const DType t = out.args[0].dtype;
  Expr lift = q.num[0];
  for (size_t k = 1; k < q.num.size(); ++k) lift = binary_expr("*", std::move(lift), q.num[k], t);
  Expr denominator = q.den[0];
  out.args[0] = std::move(lift);
  const DType rt = out.dtype;
  return call_expr("select",
                   {binary_expr("==", denominator, const_expr(0, denominator.dtype), DType::Bool), const_expr(0, rt),
                    binary_expr("/", std::move(out), denominator, rt)},
                   rt);
}

}  // namespace

tir::Program factor_normalizer(const tir::Program& program, const std::vector<algebra::DiscoveredChain>& chains) {
  tir::Program out = program;
  for (const algebra::DiscoveredChain& c : chains) {
    const tir::Stmt* head = program.def(c.max_stmt);
    if (!head || head->value.kind != Expr::Kind::Reduce || head->value.axes.size() != 1) continue;
    std::string stmt;  // a second sum of one statement is field l_2 of statement l
    for (size_t k = 0; k < c.sum_stmts.size(); ++k) {
      if (program.def(c.sum_stmts[k])) stmt = c.sum_stmts[k];
      if (k >= c.sum_normalizers.size() || c.sum_normalizers[k].empty() || stmt.empty()) continue;
      for (tir::Stmt& s : out.stmts)
        if (s.name == stmt) s.value = factor(s.value, head->value, c.max_stmt, c.sum_normalizers[k]);
    }
  }
  return out;
}

}  // namespace emmy::lower
