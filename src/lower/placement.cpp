// PLACE (placement.hpp): decides per seam whether a producer is recomputed where it is read or
// written to global memory by a kernel of its own.
#include "lower/placement.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "lower/kernel_groups.hpp"
#include "lower/regroup_laws.hpp"

namespace emmy::lower {

using tir::Expr;

bool reads_row_local(const Expr& e, const std::string& tensor, const std::vector<tir::Axis>& vars) {
  auto has_var = [&](const std::string& name) {
    return std::any_of(vars.begin(), vars.end(), [&](const tir::Axis& a) { return a.name == name; });
  };
  return !tir::any_node(e, [&](const Expr& x) {
    return x.kind == Expr::Kind::Read && x.name == tensor &&
           std::any_of(x.args.begin(), x.args.end(),
                       [&](const Expr& a) { return a.kind != Expr::Kind::Index || !has_var(a.name); });
  });
}

bool reads_at_point(const Expr& e, const std::string& tensor, const std::vector<tir::Axis>& vars) {
  bool read = false, elsewhere = false;
  tir::visit(e, [&](const Expr& x) {
    if (x.kind != Expr::Kind::Read || x.name != tensor) return;
    read = true;
    elsewhere = elsewhere || x.args.size() != vars.size() ||
                !std::equal(x.args.begin(), x.args.end(), vars.begin(), [](const Expr& a, const tir::Axis& v) {
                  return a.kind == Expr::Kind::Index && a.name == v.name;
                });
  });
  return read && !elsewhere;
}

namespace {

using Reads = std::map<std::string, std::set<std::string>>;

// The tensors each statement reads, by statement name: one walk of each value, not one per
// pair of statements.
Reads reads_by_stmt(const tir::Program& p) {
  Reads out;
  for (const tir::Stmt& y : p.stmts) tir::add_reads(y.value, out[y.name]);
  return out;
}

bool is_intermediate(const tir::Program& p, const std::string& name) {
  const tir::Tensor* t = p.find(name);
  return t && t->role == tir::Tensor::Role::Intermediate;
}

// The statements of the first chain holding `name` that to_loops may fold here (proved, its head
// fused) whose statements are all plain intermediates nobody cut (chain_prefixes adds such a
// chain for a longer one), its head first: none if no chain qualifies.
std::vector<std::string> folded_chain(const tir::Program& p, const Knobs& knobs,
                                      const std::vector<algebra::DiscoveredChain>& chains, const std::string& name,
                                      const std::set<std::string>& cut) {
  for (const algebra::DiscoveredChain& c : chains) {
    std::vector<std::string> members{c.max_stmt};
    for (const std::string& s : c.sum_stmts)
      if (p.def(s)) members.push_back(s);
    if (!std::count(members.begin(), members.end(), name) || !proved_foldable(c) || !knobs.fuses(c.max_stmt)) continue;
    const bool plain = std::all_of(members.begin(), members.end(), [&](const std::string& m) {
      const tir::Tensor* t = p.find(m);
      return t && t->role == tir::Tensor::Role::Intermediate && t->record.empty() && !knobs.place_at.count(m) &&
             (m == name || !cut.count(m));
    });
    if (plain) return members;
  }
  return {};
}

// The seams: an output read across rows gets a kernel of its own; an intermediate read across
// rows is fused or cut as PLACE says (a pointwise one always cut).
void cut_seams(const tir::Program& p, const Knobs& knobs, const Reads& reads, Placement& out) {
  std::map<std::string, std::vector<const tir::Stmt*>> readers;  // tensor -> the statements reading it, in order
  for (const tir::Stmt& y : p.stmts)
    for (const std::string& t : reads.at(y.name)) readers[t].push_back(&y);
  for (const tir::Stmt& x : p.stmts) {
    std::vector<std::string> seam_readers;
    if (auto it = readers.find(x.name); it != readers.end())
      for (const tir::Stmt* y : it->second)
        if (!reads_row_local(y->value, x.name, y->vars)) seam_readers.push_back(y->name);
    std::string named = fmt::format("{}", fmt::join(seam_readers, ", "));
    if (!is_intermediate(p, x.name)) {
      // An output that another statement reads across rows must be complete before that
      // read: a kernel of its own, whatever PLACE says (the threads of one kernel do not wait
      // for each other).
      if (seam_readers.empty()) continue;
      out.materialized.push_back(x.name);
      out.decisions.push_back(fmt::format("{}: an output that {} read{} across rows — kernel k_{}_{} writes it first",
                                          x.name, named, seam_readers.size() == 1 ? "s" : "", p.op, x.name));
      continue;
    }
    bool pointwise_cut = !tir::has_reduce(x.value) && p.find(x.name)->record.empty();
    bool cut = pointwise_cut || (!seam_readers.empty() && !knobs.fuses(x.name));
    if (!cut) {
      if (!seam_readers.empty())
        out.decisions.push_back(fmt::format("PLACE {}: fuse — recomputed where {} read{} it", x.name, named,
                                            seam_readers.size() == 1 ? "s" : ""));
      continue;
    }
    if (!p.find(x.name)->record.empty())
      throw LowerError(
          fmt::format("error: PLACE@{}=cut: '{}' is a monoid carrier, which is not written to global "
                      "memory\n  help: cut a seam whose producer is a plain tensor",
                      x.name, x.name));
    out.materialized.push_back(x.name);
    // A reduction PLACE cuts is written by a kernel of its own group, fusing what it reads as PLACE
    // says (a library call's result: the callee's fold, as when the op is called alone).
    if (!pointwise_cut) out.group_results.insert(x.name);
    out.decisions.push_back(fmt::format("PLACE {}: cut — kernel k_{}_{} writes {}[{}] to global memory", x.name, p.op,
                                        x.name, x.name, vars_text(x.vars)));
  }
}

// The reductions kernel_groups.hpp's per_element_recomputes finds: each written by a kernel of
// its own group, fusing what it reads.
// A found statement of a chain brings the chain's other statements (folded_chain): one kernel
// folds them all and writes each (a derived backward's recomputed forward: m, l and o_sum in
// one pass over the keys, not m and l in two and o_sum again inside each reader).
void cut_per_element_recomputes(const tir::Program& p, const Knobs& knobs,
                                const std::vector<algebra::DiscoveredChain>& chains, Placement& out) {
  std::set<std::string> found;
  std::map<std::string, std::string> mates;  // a chain's statement -> the found one that brought it
  for (bool more = true; more;) {
    std::set<std::string> cut(out.materialized.begin(), out.materialized.end());
    cut.insert(found.begin(), found.end());
    const std::set<std::string> next = per_element_recomputes(p, cut, knobs.place_at);
    const size_t before = found.size();
    found.insert(next.begin(), next.end());
    for (const std::string& name : std::set<std::string>(found))
      for (const std::string& mate : folded_chain(p, knobs, chains, name, cut))
        if (found.insert(mate).second) mates[mate] = name;
    more = found.size() != before;
  }
  for (const std::string& name : found)
    if (const std::vector<std::string> chain = folded_chain(p, knobs, chains, name, {}); !chain.empty())
      out.fold_head[name] = chain.front();
  for (const tir::Stmt& x : p.stmts)
    if (found.count(x.name)) {
      out.materialized.push_back(x.name);
      out.group_results.insert(x.name);  // a kernel of its own group writes it, fusing what it reads
      out.decisions.push_back(
          mates.count(x.name)
              ? fmt::format("PLACE {}: cut — a statement of {}'s chain, folded in {}'s kernel; it writes {}[{}] "
                            "to global memory",
                            x.name, mates.at(x.name), mates.at(x.name), x.name, vars_text(x.vars))
              : fmt::format("PLACE {}: cut — a fused read would recompute it for every element of a reduction "
                            "over its index; kernel k_{}_{} writes {}[{}] to global memory (PLACE@{}=fuse keeps "
                            "it fused)",
                            x.name, p.op, x.name, x.name, vars_text(x.vars), x.name));
    }
}

// An epilogue input of `x` that no other statement reads: x's kernel computes it and nothing more.
bool own_epilogue_input(const tir::Program& p, const Reads& reads, const std::set<std::string>& cut, const tir::Stmt& x,
                        const tir::Stmt& y) {
  return epilogue_input(p, x, y, cut) && std::none_of(p.stmts.begin(), p.stmts.end(), [&](const tir::Stmt& z) {
           return &z != &x && reads.at(z.name).count(y.name);
         });
}

// A kernel of its own runs before the main kernel, so whatever statement it reads must be
// complete by then: a kernel of its own too, earlier (layernorm with PLACE@d=cut: d reads
// mean, so mean is written first), but for a pointwise statement's epilogue input, which its
// kernel computes (own_epilogue_input). Then the kernels in statement order.
void materialize_what_cuts_read(const tir::Program& p, const Reads& reads, Placement& out) {
  std::set<std::string> cut(out.materialized.begin(), out.materialized.end());
  auto materialized = [&](const std::string& name) { return cut.count(name) > 0; };
  for (auto x = p.stmts.rbegin(); x != p.stmts.rend(); ++x) {
    if (!materialized(x->name) || out.group_results.count(x->name)) continue;  // a group's: it fuses what it reads
    const std::set<std::string>& read = reads.at(x->name);
    std::vector<const tir::Stmt*> inputs;  // the statements x reads that no kernel of their own writes
    for (const tir::Stmt& y : p.stmts)
      if (&y != &*x && !materialized(y.name) && read.count(y.name)) inputs.push_back(&y);
    if (!inputs.empty() && std::all_of(inputs.begin(), inputs.end(),
                                       [&](const tir::Stmt* y) { return own_epilogue_input(p, reads, cut, *x, *y); })) {
      out.group_results.insert(x->name);  // its kernel computes them: a contraction and its epilogue
      for (const tir::Stmt* y : inputs)
        out.decisions.push_back(fmt::format("{}: computed in kernel k_{}_{}, whose epilogue reads it at its own point",
                                            y->name, p.op, x->name));
      continue;
    }
    for (const tir::Stmt& y : p.stmts) {
      if (&y == &*x || materialized(y.name) || !read.count(y.name)) continue;
      if (!p.find(y.name)->record.empty())
        throw LowerError(
            fmt::format("error: {} is written by a kernel of its own, but it reads '{}', a monoid "
                        "carrier of the fused kernel, which is not written to global memory\n"
                        "  help: fuse {} (PLACE@{}=fuse)",
                        x->name, y.name, x->name, x->name));
      out.materialized.push_back(y.name);
      cut.insert(y.name);
      out.decisions.push_back(
          fmt::format("{}: kernel k_{}_{} writes it first, because {} (a kernel of its own) reads it", y.name, p.op,
                      y.name, x->name));
    }
  }
  std::vector<std::string> ordered;
  for (const tir::Stmt& x : p.stmts)
    if (materialized(x.name)) ordered.push_back(x.name);
  out.materialized = ordered;
}

}  // namespace

bool epilogue_input(const tir::Program& p, const tir::Stmt& x, const tir::Stmt& y, const std::set<std::string>& cut) {
  const tir::Tensor* t = p.find(y.name);
  if (tir::has_reduce(x.value) || !tir::has_reduce(y.value) || !t || !t->record.empty() ||
      !reads_at_point(x.value, y.name, x.vars))
    return false;
  std::set<std::string> inputs;
  tir::add_reads(y.value, inputs);
  return std::none_of(inputs.begin(), inputs.end(),
                      [&](const std::string& r) { return is_intermediate(p, r) && !cut.count(r); });
}

bool proved_foldable(const algebra::DiscoveredChain& chain) {
  auto named = [&](const char* prefix) { return chain.monoid.name.rfind(prefix, 0) == 0; };
  return (named("online(") || named("argmax(") || named("welford(")) &&
         missing_laws(monoid_laws(chain.laws), Regroup::Tree).empty() &&
         chain.laws.identity.outcome == algebra::Outcome::Proved;
}

Placement decide_placement(const tir::Program& p, const Knobs& knobs,
                           const std::vector<algebra::DiscoveredChain>& chains) {
  Placement out;
  const Reads reads = reads_by_stmt(p);
  cut_seams(p, knobs, reads, out);
  cut_per_element_recomputes(p, knobs, chains, out);
  materialize_what_cuts_read(p, reads, out);
  return out;
}

}  // namespace emmy::lower
