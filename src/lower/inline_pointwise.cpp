// Substitutes every elementwise intermediate (no reduction in its definition) into its
// uses, so a thread recomputes it where needed; PLACE@name=cut keeps it a tensor, and so does
// a definition of tir::kMaxCopiedNodes nodes or more.
#include "lower/passes.hpp"

#include <map>

namespace emmy::lower {
namespace {

using tir::Expr;

Expr inline_reads(const Expr& e, const std::map<std::string, const tir::Stmt*>& defs) {
  Expr out = tir::map_children(e, [&](const Expr& x) { return inline_reads(x, defs); });
  if (out.kind != Expr::Kind::Read) return out;
  auto it = defs.find(out.name);
  if (it == defs.end()) return out;
  const tir::Stmt& def = *it->second;
  std::vector<std::pair<std::string, Expr>> by;
  for (size_t k = 0; k < def.vars.size() && k < out.args.size(); ++k) by.emplace_back(def.vars[k].name, out.args[k]);
  return tir::substitute(def.value, by);
}

}  // namespace

tir::Program inline_pointwise(const tir::Program& program, const Knobs& knobs) {
  tir::Program out = program;
  out.stmts.clear();
  std::map<std::string, const tir::Stmt*> defs;
  std::vector<tir::Stmt> kept;
  kept.reserve(program.stmts.size());
  for (const tir::Stmt& s : program.stmts) {
    tir::Stmt t = s;
    t.value = inline_reads(s.value, defs);
    const tir::Tensor* info = program.find(s.name);
    // A large one stays a tensor: copied into each read, nested definitions would grow with the
    // size of their expansion (exponentially in the nesting), not their own.
    bool pointwise = info && info->role == tir::Tensor::Role::Intermediate && info->record.empty() &&
                     !tir::has_reduce(t.value) && tir::node_count(t.value, tir::kMaxCopiedNodes) < tir::kMaxCopiedNodes;
    auto cut = knobs.place_at.find(s.name);
    kept.push_back(std::move(t));
    if (pointwise && !(cut != knobs.place_at.end() && !cut->second)) defs[s.name] = &kept.back();
  }
  for (tir::Stmt& s : kept)
    if (!defs.count(s.name)) out.stmts.push_back(s);
  std::erase_if(out.tensors, [&](const tir::Tensor& t) { return defs.count(t.name) > 0; });
  return out;
}

}  // namespace emmy::lower
