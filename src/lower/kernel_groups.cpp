// Which statements share a kernel (kernel_groups.hpp).
#include "lower/kernel_groups.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace emmy::lower {

using tir::Expr;

std::string vars_text(const std::vector<tir::Axis>& vars) {
  std::vector<std::string> names;
  for (const tir::Axis& a : vars) names.push_back(a.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::set<std::string> per_element_recomputes(const tir::Program& p, const std::set<std::string>& materialized,
                                             const std::map<std::string, bool>& place_at) {
  auto intermediate = [&](const std::string& name) {
    const tir::Tensor* t = p.find(name);
    return t && t->role == tir::Tensor::Role::Intermediate;
  };
  std::set<std::string> cut = materialized, found;
  const tir::Stmt* reader = nullptr;
  std::function<void(const Expr&, const std::set<std::string>&)> walk = [&](const Expr& e,
                                                                            const std::set<std::string>& bound) {
    if (e.kind == Expr::Kind::Reduce) {
      std::set<std::string> inner = bound;
      for (const tir::Axis& a : e.axes) inner.insert(a.name);
      for (const Expr& a : e.args) walk(a, inner);
      for (const Expr& w : e.where) walk(w, inner);
      return;
    }
    if (e.kind == Expr::Kind::Read && intermediate(e.name) && !cut.count(e.name))
      if (const tir::Stmt* def = p.def(e.name)) {
        auto used = [&](const std::string& v) {
          return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return tir::uses_index(a, v); });
        };
        const bool at_element = std::any_of(bound.begin(), bound.end(), used);
        const bool constant_along = std::any_of(reader->vars.begin(), reader->vars.end(), [&](const tir::Axis& a) {
          return &a != &reader->vars.back() && !used(a.name);
        });
        if (at_element && constant_along && tir::has_reduce(def->value) && p.find(e.name)->record.empty() &&
            !place_at.count(e.name)) {
          found.insert(e.name);
        } else {
          std::vector<std::pair<std::string, Expr>> by;
          for (size_t k = 0; k < def->vars.size() && k < e.args.size(); ++k)
            by.emplace_back(def->vars[k].name, e.args[k]);
          walk(tir::substitute(def->value, by), bound);
        }
      }
    for (const Expr& a : e.args) walk(a, bound);
  };
  // Readers: the outputs and the cut statements, then each reduction found (dl read inside
  // dk_part, itself found inside dk's sum over the group), until none is new.
  std::set<std::string> walked;
  for (bool more = true; more;) {
    more = false;
    for (const tir::Stmt& y : p.stmts)
      if ((!intermediate(y.name) || cut.count(y.name) || found.count(y.name)) && !y.vars.empty() &&
          walked.insert(y.name).second) {
        reader = &y;
        const size_t before = found.size();
        walk(y.value, {});
        for (const std::string& f : found) cut.insert(f);
        more = more || found.size() != before;
      }
  }
  return found;
}

OutputGroups group_outputs(const tir::Program& p, const std::vector<std::string>& materialized,
                           const std::set<std::string>& group_results, const StmtPair& siblings,
                           const StmtPair& one_fold) {
  auto intermediate = [&](const std::string& name) {
    const tir::Tensor* t = p.find(name);
    return t && t->role == tir::Tensor::Role::Intermediate && !group_results.count(name);
  };
  OutputGroups out;
  std::vector<const tir::Stmt*> rest, outputs;
  for (const tir::Stmt& s : p.stmts)
    if (!std::count(materialized.begin(), materialized.end(), s.name) || group_results.count(s.name)) {
      rest.push_back(&s);
      if (!intermediate(s.name)) outputs.push_back(&s);
    }
  auto prefix = [](const std::vector<tir::Axis>& a, const std::vector<tir::Axis>& b) {
    return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                              [](const tir::Axis& x, const tir::Axis& y) { return x.name == y.name; });
  };
  std::vector<size_t> group(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) group[i] = i;
  std::function<size_t(size_t)> root = [&](size_t i) { return group[i] == i ? i : group[i] = root(group[i]); };
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if ((prefix(outputs[i]->vars, outputs[j]->vars) || prefix(outputs[j]->vars, outputs[i]->vars)) &&
          !group_results.count(outputs[i]->name) && !group_results.count(outputs[j]->name))
        group[root(i)] = root(j);
      else if (group_results.count(outputs[i]->name) && group_results.count(outputs[j]->name) &&
               one_fold(*outputs[j], *outputs[i])) {
        group[root(i)] = root(j);
        out.decisions.push_back(
            fmt::format("{} and {}: one fold of their chain, one kernel", outputs[j]->name, outputs[i]->name));
      } else if (siblings(*outputs[i], *outputs[j])) {
        group[root(i)] = root(j);
        out.decisions.push_back(fmt::format(
            "{} and {} sum over {} at the same rows ({}): one kernel, each key's weights computed once for both",
            outputs[j]->name, outputs[i]->name, outputs[i]->value.axes[0].name,
            vars_text({outputs[i]->vars.begin(), outputs[i]->vars.end() - 1})));
      }
  std::set<size_t> roots;
  for (size_t i = 0; i < outputs.size(); ++i) roots.insert(root(i));
  if (roots.size() <= 1) {
    out.groups = {rest};
    return out;
  }
  // Each group after the groups whose results it reads: by its last output's statement.
  std::vector<std::pair<size_t, size_t>> order;  // (last output's index in `outputs`, root)
  for (size_t r : roots) {
    size_t last = 0;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (root(i) == r) last = i;
    order.emplace_back(last, r);
  }
  std::sort(order.begin(), order.end());
  std::vector<std::string> said;
  for (const auto& [last, r] : order) {
    // The group's outputs and what they read, transitively; another group's result is read
    // from global memory, not computed again.
    std::set<std::string> own, needed;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (root(i) == r) own.insert(outputs[i]->name);
    needed = own;
    auto computed = [&](const std::string& n) { return needed.count(n) && (own.count(n) || !group_results.count(n)); };
    for (auto s = rest.rbegin(); s != rest.rend(); ++s)
      if (computed((*s)->name)) tir::add_reads((*s)->value, needed);
    std::vector<const tir::Stmt*> g;
    std::vector<std::string> names;
    for (const tir::Stmt* s : rest)
      if (computed(s->name)) {
        g.push_back(s);
        if (!intermediate(s->name)) names.push_back(fmt::format("{}[{}]", s->name, vars_text(s->vars)));
      }
    said.push_back(fmt::format("{}", fmt::join(names, ", ")));
    out.groups.push_back(std::move(g));
  }
  out.decisions.push_back(fmt::format("outputs {} share no thread space: a kernel each", fmt::join(said, "; ")));
  return out;
}

}  // namespace emmy::lower
