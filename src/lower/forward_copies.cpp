// An output that copies an intermediate element for element is written by the intermediate's
// statement itself (passes.hpp).
#include "lower/passes.hpp"
#include "lower/term_expr.hpp"

namespace emmy::lower {
namespace {

using tir::Expr;

// The intermediate `s` copies: its value a read of one at s's own variables, in order.
const tir::Tensor* copied(const tir::Program& p, const tir::Stmt& s) {
  const Expr& v = s.value;
  if (v.kind != Expr::Kind::Read || v.args.size() != s.vars.size()) return nullptr;
  for (size_t k = 0; k < s.vars.size(); ++k)
    if (v.args[k].kind != Expr::Kind::Index || v.args[k].name != s.vars[k].name) return nullptr;
  const tir::Tensor *x = p.find(v.name), *out = p.find(s.name);
  if (!x || !out || x->role != tir::Tensor::Role::Intermediate || !x->record.empty() || x->dims != out->dims ||
      !p.def(x->name))
    return nullptr;
  return x;
}

}  // namespace

ForwardedCopies forward_copies(const tir::Program& program) {
  ForwardedCopies f{program, {}};
  tir::Program& out = f.program;
  for (const tir::Stmt& s : program.stmts) {
    const tir::Tensor* target = program.find(s.name);
    if (!target || target->role != tir::Tensor::Role::Output) continue;
    const tir::Tensor* x = copied(program, s);
    if (!x) continue;
    const size_t readers = std::count_if(program.stmts.begin(), program.stmts.end(),
                                         [&](const tir::Stmt& r) { return tir::reads(r.value, x->name); });
    if (readers != 1) continue;
    const std::string name = x->name;
    auto named = [&](const std::string& n) {
      return std::find_if(out.stmts.begin(), out.stmts.end(), [&](const tir::Stmt& d) { return d.name == n; });
    };
    const auto def = named(name);
    std::vector<std::pair<std::string, Expr>> by;
    for (size_t k = 0; k < def->vars.size(); ++k) by.emplace_back(def->vars[k].name, index_expr(s.vars[k].name));
    // (x's type is the callee's output's; like every intermediate's, the reference does not round
    // through it, and neither does the output.)
    Expr value = tir::substitute(def->value, by);
    out.stmts.erase(named(s.name));  // the copy (after x's statement, which takes its place)
    *named(name) = tir::Stmt{s.name, s.vars, std::move(value)};
    out.tensors.erase(
        std::find_if(out.tensors.begin(), out.tensors.end(), [&](const tir::Tensor& t) { return t.name == name; }));
    f.renamed[name] = s.name;
  }
  return f;
}

}  // namespace emmy::lower
