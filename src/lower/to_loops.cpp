// The loop nests: given PLACE's decisions (placement.hpp), turns discovered chains into folds
// (one loop carrying the proved monoid), and gives each kernel its thread space and the ordered
// loop nest every thread runs.
#include "lower/chain_fold.hpp"
#include "lower/chain_weight.hpp"
#include "lower/kernel_groups.hpp"
#include "lower/monoid_table.hpp"
#include "lower/passes.hpp"
#include "lower/placement.hpp"
#include "lower/term_expr.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "algebra/discover.hpp"
#include "algebra/from_ast.hpp"

namespace emmy::lower {
namespace {

using tir::Expr;

bool has_var(const std::vector<tir::Axis>& vars, const std::string& name) {
  return std::any_of(vars.begin(), vars.end(), [&](const tir::Axis& a) { return a.name == name; });
}

// Replaces the reads of register statements (indexed by their own variables) by Reg nodes.
Expr to_regs(const Expr& e, const std::map<std::string, const tir::Stmt*>& regs) {
  Expr out = tir::map_children(e, [&](const Expr& x) { return to_regs(x, regs); });
  if (out.kind != Expr::Kind::Read) return out;
  auto it = regs.find(out.name);
  if (it == regs.end()) return out;
  const tir::Stmt& def = *it->second;
  for (size_t k = 0; k < out.args.size(); ++k)
    if (out.args[k].kind != Expr::Kind::Index || out.args[k].name != def.vars[k].name) return out;
  Expr r;
  r.kind = Expr::Kind::Reg;
  r.name = out.name;
  r.dtype = out.dtype;
  return r;
}

bool mentions_reg(const Expr& e, const std::string& name) {
  if (e.kind == Expr::Kind::Reg && e.name == name) return true;
  return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return mentions_reg(a, name); });
}

// The one single-axis sum (or min, for argmax) of `e` over an axis of `size`.
Expr* find_reduce(Expr& e, const std::string& monoid, const std::string& size) {
  if (e.kind == Expr::Kind::Reduce && e.op == monoid && e.axes.size() == 1 && e.axes[0].size == size) return &e;
  for (Expr& a : e.args)
    if (Expr* r = find_reduce(a, monoid, size)) return r;
  return nullptr;
}

Expr rename_axis(const Expr& e, const std::string& from, const std::string& to) {
  return tir::substitute(e, {{from, index_expr(to)}});
}

class LoopBuilder {
 public:
  LoopBuilder(const tir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
              const std::vector<algebra::DiscoveredChain>& chains)
      : p_(program), checked_(checked), knobs_(knobs), chains_(chains) {}

  lir::Program run() {
    lir::Program out;
    out.tensors = p_;
    Placement placed = decide_placement(p_, knobs_, chains_);
    out.materialized = std::move(placed.materialized);
    group_results_ = std::move(placed.group_results);
    fold_head_ = std::move(placed.fold_head);
    decisions_ = std::move(placed.decisions);
    // The kernels in the order of the statements they write (each reads only earlier ones): a
    // kernel of its own at its statement, a group's at its last; a single group last.
    std::map<std::string, size_t> at;
    for (size_t i = 0; i < p_.stmts.size(); ++i) at[p_.stmts[i].name] = i;
    std::vector<std::pair<size_t, lir::Kernel>> kernels;
    for (const std::string& name : out.materialized)
      if (!group_results_.count(name)) kernels.emplace_back(at.at(name), temp_kernel(name));
    const std::vector<std::vector<const tir::Stmt*>> groups = output_groups(out);
    for (const std::vector<const tir::Stmt*>& g : groups) {
      size_t last = 0;
      for (const tir::Stmt* s : g)
        if (!is_intermediate(s->name)) last = std::max(last, at.at(s->name));
      std::vector<std::string> written;  // a group's kernel is named by the outputs it writes
      for (const tir::Stmt* s : g)
        if (!is_intermediate(s->name)) written.push_back(s->name);
      kernels.emplace_back(groups.size() == 1 ? p_.stmts.size() : last,
                           main_kernel(out, g, groups.size() == 1 ? "" : fmt::format("{}", fmt::join(written, "_"))));
    }
    std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [index, k] : kernels) out.kernels.push_back(std::move(k));
    out.decisions = decisions_;
    out.warnings = unused_cuts(out);
    return out;
  }

  // PLACE@x=cut where x has no seam to cut: say so rather than ignore it silently.
  std::vector<Warning> unused_cuts(const lir::Program& out) const {
    std::vector<Warning> w;
    for (const auto& [site, fuse] : knobs_.place_at) {
      if (fuse || std::count(out.materialized.begin(), out.materialized.end(), site) || chain_heads_.count(site))
        continue;
      const tir::Tensor* t = p_.find(site);
      if (!t)
        w.push_back({"W050", fmt::format("PLACE@{}=cut has no effect: {} names no intermediate statement of {}", site,
                                         site, p_.op)});
      else if (t->role != tir::Tensor::Role::Intermediate)
        w.push_back({"W050", fmt::format("PLACE@{}=cut has no effect: {} is an output, always written to global memory",
                                         site, site)});
      else
        w.push_back(
            {"W050", fmt::format("PLACE@{}=cut has no effect: every reader of {} runs on {}'s own row, so nothing "
                                 "is recomputed and there is no seam to cut",
                                 site, site, site)});
    }
    return w;
  }

 private:
  // An intermediate of the main kernels: not an output, nor a result a kernel of its own group
  // writes (group_results_).
  bool is_intermediate(const std::string& name) const {
    const tir::Tensor* t = p_.find(name);
    return t && t->role == tir::Tensor::Role::Intermediate && !group_results_.count(name);
  }

  lir::Kernel temp_kernel(const std::string& name) {
    const tir::Stmt& s = *p_.def(name);
    lir::Kernel k;
    k.name = name;
    k.threads = s.vars;
    k.doc.push_back(
        fmt::format("{}[{}] for every point, written to global memory{}.", name, vars_text(s.vars),
                    is_intermediate(name) ? " (PLACE cut)" : " before the statements that read it across rows"));
    k.doc.push_back(fmt::format("One thread computes one element of {}.", name));
    lir::Stmt st;
    st.kind = lir::Stmt::Kind::Store;
    st.tensor = name;
    st.vars = s.vars;
    st.value = s.value;
    k.body.push_back(std::move(st));
    return k;
  }

  // Whether `e` holds a reduction (its intermediates inlined at their reads) whose elements read
  // index `j`: a score s[i, j] = q[i] . k[j], not a row statistic that j does not change.
  bool reduces_along(const Expr& e, const std::string& j) const {
    if (e.kind == Expr::Kind::Reduce) {
      // Its own axis named j is another variable: ms[n] = sum(c: x[n, c]^2) does not vary along c.
      if (std::any_of(e.axes.begin(), e.axes.end(), [&](const tir::Axis& a) { return a.name == j; })) return false;
      if (std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return tir::uses_index(a, j); })) return true;
    }
    if (e.kind == Expr::Kind::Read && is_intermediate(e.name))
      if (const tir::Stmt* def = p_.def(e.name)) {
        std::vector<std::pair<std::string, Expr>> by;
        for (size_t k = 0; k < def->vars.size() && k < e.args.size(); ++k)
          by.emplace_back(def->vars[k].name, e.args[k]);
        if (reduces_along(tir::substitute(def->value, by), j)) return true;
      }
    return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return reduces_along(a, j); });
  }

  // An output y[..., e] = sum(j: w * x) whose weight w reduces along j (a score of q . k^T) and
  // does not read e, and x reads e: a fold over j whose one field is a vector over e (register
  // tiles of e), so that each weight is computed once for every e — sigmoid attention's
  // sum(j: sigmoid(s) * v). The statement's element axis e, else nullopt.
  std::optional<tir::Axis> vector_sum(const tir::Stmt& s) const {
    const Expr& r = s.value;
    if (is_intermediate(s.name) || s.vars.size() < 2 || r.kind != Expr::Kind::Reduce || r.op != "sum" ||
        r.axes.size() != 1 || r.args.size() != 1 || r.where.size() > 1)
      return std::nullopt;
    const Expr& prod = r.args[0];
    const tir::Axis& e = s.vars.back();
    const std::string& j = r.axes[0].name;
    if (prod.kind != Expr::Kind::Binary || prod.op != "*" || prod.args.size() != 2) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const Expr &w = prod.args[side], &x = prod.args[1 - side];
      if (!tir::uses_index(w, e.name) && tir::uses_index(x, e.name) && !tir::has_reduce(x) && reduces_along(w, j))
        return e;
    }
    return std::nullopt;
  }

  std::optional<Fold> sum_fold(const tir::Stmt& s) const {
    if (!vector_sum(s)) return std::nullopt;
    const Expr& r = s.value;
    Fold f;
    f.axis = r.axes[0];
    f.where = r.where;
    const BuiltinMonoid* sum = builtin_monoid("sum");
    const DType acc = r.dtype == DType::F64 ? DType::F64 : DType::F32;  // (an f64 sum keeps f64)
    f.terms = terms_of("sum", sum->lowering(scalar_of(acc), {scalar_of(acc)}));
    f.summary =
        fmt::format("{} = sum({}: w * x) with w reading a reduction along {}: one register a tile element of {}",
                    s.name, f.axis.name, f.axis.name, s.vars.back().name);
    tir::Stmt result = s;
    result.value = reg_expr("run_" + f.terms.fields[0], acc);
    lir::CarrierField field{f.terms.fields[0], acc, r.args[0], true};
    f.members.push_back({&s, field, std::move(result)});
    return f;
  }

  // The thread space: the index variables every output and every row statistic share.
  std::vector<tir::Axis> thread_space(const std::vector<const tir::Stmt*>& stmts) {
    std::vector<const tir::Stmt*> shapers;
    std::vector<tir::Axis> output_vars;
    for (const tir::Stmt* s : stmts)
      if (!is_intermediate(s->name)) {
        shapers.push_back(s);
        for (const tir::Axis& a : s->vars)
          if (!has_var(output_vars, a.name)) output_vars.push_back(a);
      }
    for (const tir::Stmt* s : stmts)
      if (is_intermediate(s->name) && (p_.find(s->name)->record.empty() || s->value.kind == Expr::Kind::Reduce) &&
          std::all_of(s->vars.begin(), s->vars.end(), [&](const tir::Axis& a) { return has_var(output_vars, a.name); }))
        shapers.push_back(s);
    std::vector<tir::Axis> t;
    for (const tir::Axis& a : output_vars)
      if (std::all_of(shapers.begin(), shapers.end(), [&](const tir::Stmt* s) {
            std::optional<tir::Axis> e = vector_sum(*s);
            return has_var(s->vars, a.name) && !(e && e->name == a.name);
          }))
        t.push_back(a);
    return t;
  }

  std::optional<Fold> make_fold(const algebra::DiscoveredChain& chain, std::vector<std::string> materialized) {
    // A group result is written by its group's kernel, which may fold it (Placement::fold_head).
    std::erase_if(materialized, [&](const std::string& name) { return group_results_.count(name) > 0; });
    // An unproved chain stays as separate passes.
    if (!proved_foldable(chain)) return std::nullopt;
    auto named = [&](const char* prefix) { return chain.monoid.name.rfind(prefix, 0) == 0; };
    const bool online = named("online("), welford = named("welford(");
    chain_heads_.insert(chain.max_stmt);
    if (!knobs_.fuses(chain.max_stmt)) {
      decisions_.push_back(fmt::format("PLACE {}: cut — {} and {} run as separate passes over {}", chain.max_stmt,
                                       chain.max_stmt, fmt::join(chain.sum_stmts, ", "), chain.axis));
      return std::nullopt;
    }
    if (welford) return welford_fold(p_, chain, materialized);
    const tir::Stmt* head = p_.def(chain.max_stmt);
    if (!head || std::count(materialized.begin(), materialized.end(), chain.max_stmt) ||
        head->value.kind != Expr::Kind::Reduce || head->value.op != "max" || head->value.axes.size() != 1 ||
        head->value.args.size() != 1)
      return std::nullopt;
    Fold f;
    f.axis = head->value.axes[0];
    f.where = head->value.where;
    f.terms = chain.monoid;
    f.summary = chain.summary;
    const Expr& x = head->value.args[0];
    Member hm{head, {chain.max_stmt, head->value.dtype, x, false}, *head};
    hm.result.value = reg_expr("run_" + chain.max_stmt, head->value.dtype);
    f.members.push_back(hm);
    for (size_t k = 0; k < chain.sum_stmts.size(); ++k) {
      const std::string& name = chain.sum_stmts[k];
      // A second sum of one statement is field l_2 of statement l: that member's result
      // carries both registers, the first member's result none.
      bool shares = !p_.def(name) && f.members.size() > 1 && name.rfind(f.members.back().field.name + "_", 0) == 0;
      const tir::Stmt* s = shares ? f.members.back().stmt : p_.def(name);
      if (!s || std::count(materialized.begin(), materialized.end(), s->name)) return std::nullopt;
      tir::Stmt result = shares ? f.members.back().result : *s;
      Expr* r = find_reduce(result.value, online ? "sum" : "min", f.axis.size);
      if (!r) return std::nullopt;
      std::string from = r->axes[0].name;
      Expr lift;
      if (online) {
        if (r->args.size() != 1) return std::nullopt;
        std::vector<Expr> where;
        for (const Expr& w : r->where) where.push_back(rename_axis(w, from, f.axis.name));
        if (where.size() != f.where.size() ||
            (!where.empty() && tir::print_expr(where[0]) != tir::print_expr(f.where[0])))
          return std::nullopt;
        algebra::Rational scale = k < chain.sum_scales.size() ? chain.sum_scales[k] : algebra::Rational::of(1);
        std::optional<Expr> weight = chain_weight(rename_axis(r->args[0], from, f.axis.name), x, *head, scale);
        if (!weight) return std::nullopt;
        lift = *weight;
      } else {
        lift = index_expr(f.axis.name);
      }
      DType dtype = r->dtype;
      *r = reg_expr("run_" + name, dtype);
      if (shares) f.members.back().result = tir::Stmt{};
      f.members.push_back({s, {name, dtype, lift, false}, std::move(result)});
    }
    return f;
  }

  // r[I] = monoid(j: args) read only by one statement y[I, e] through r.field[e]: one
  // fold over j at y's place, the vector fields one register per element of y's tile.
  std::optional<Fold> record_fold(const tir::Stmt& r, const std::vector<const tir::Stmt*>& stmts) {
    const Expr& red = r.value;
    auto monoid = checked_.monoids.find(red.op);
    if (red.kind != Expr::Kind::Reduce || red.axes.size() != 1 || monoid == checked_.monoids.end()) return std::nullopt;
    const tir::Stmt* reader = nullptr;
    for (const tir::Stmt* s : stmts)
      if (s != &r && tir::reads(s->value, r.name)) {
        if (reader) return std::nullopt;
        reader = s;
      }
    if (!reader || !reads_row_local(reader->value, r.name, reader->vars)) return std::nullopt;
    std::string why;
    std::optional<algebra::MonoidTerms> terms = algebra::monoid_terms(*monoid->second.decl, why);
    if (!terms) return std::nullopt;
    const ast::MonoidDecl& decl = *monoid->second.decl;
    // The element index of the vector fields: the reader's one extra variable.
    std::vector<tir::Axis> extra;
    for (const tir::Axis& a : reader->vars)
      if (!has_var(r.vars, a.name)) extra.push_back(a);
    std::optional<Expr> elem;
    if (extra.size() == 1) elem = index_expr(extra[0].name);
    // (An element index named as the folded axis would be captured by it in the lifted slices.)
    if (elem && extra[0].name == red.axes[0].name) return std::nullopt;
    std::vector<std::pair<std::string, Expr>> params;
    for (size_t i = 0; i < red.args.size(); ++i) {
      std::string name = decl.lift_params ? (*decl.lift_params)[i].name.name : terms->fields[i];
      Expr arg = red.args[i];
      if (!replace_slices(arg, elem)) return std::nullopt;
      params.emplace_back(name, arg);
    }
    Fold f;
    f.axis = red.axes[0];
    f.where = red.where;
    f.terms = *terms;
    f.summary = fmt::format("{} = {}({}: ...) is folded where {} reads it", r.name, red.op, f.axis.name, reader->name);
    // The carrier's registers are run_<field>: a field whose name another fold of the kernel (a
    // statement's name, or the same monoid's field) already has is named after the statement.
    std::vector<std::pair<std::string, algebra::Term>> rename;
    for (std::string& name : f.terms.fields) {
      const std::string field = name;
      if (carrier_names_.count(name)) name = r.name + "_" + field;
      while (carrier_names_.count(name)) name += "_";
      carrier_names_.insert(name);
      if (name == field) continue;
      for (const char* side : {"a.", "b."}) rename.emplace_back(side + field, algebra::Term::var(side + name));
    }
    if (!rename.empty())
      for (algebra::Term& c : f.terms.combine) c = algebra::substitute(c, rename);
    tir::Stmt result = *reader;
    for (size_t i = 0; i < terms->fields.size(); ++i) {
      const ast::Field& field = decl.fields[i];
      const std::string& carrier = f.terms.fields[i];
      bool vector = field.vector_dim.has_value();
      if (vector && !elem) return std::nullopt;
      Expr lift =
          decl.lift_params ? term_expr(terms->lift[i], {params.begin(), params.end()}, DType::F32) : params[i].second;
      DType dtype = parse_dtype(field.dtype.name).value_or(DType::F32);
      if (!replace_field_reads(result.value, r.name, field.name.name, vector, elem, "run_" + carrier, dtype))
        return std::nullopt;
      f.members.push_back({&r, {carrier, dtype, lift, vector}, tir::Stmt{}});
    }
    bool any_vector = std::any_of(f.members.begin(), f.members.end(), [](const Member& m) { return m.field.per_tile; });
    if (!any_vector) {
      f.rewritten_reader = reader;
      f.rewritten_value = result.value;
      return f;
    }
    // The reader closes the fold: it runs inside the reader's loops, one register per
    // element of the tile for each vector field, and the reader is stored from the carrier.
    f.members.back().stmt = reader;
    f.members.back().result = result;
    return f;
  }

  // v[b, h, j, :] -> v[b, h, j, e]; false if there is a slice but no element index.
  static bool replace_slices(Expr& e, const std::optional<Expr>& elem) {
    if (e.kind == Expr::Kind::Slice) {
      if (!elem) return false;
      e = *elem;
      return true;
    }
    for (Expr& a : e.args)
      if (!replace_slices(a, elem)) return false;
    return true;
  }

  // r.field (or r.field[e], e the tile's index) -> the carrier register.
  static bool replace_field_reads(Expr& e, const std::string& record, const std::string& field, bool vector,
                                  const std::optional<Expr>& elem, const std::string& reg, DType dtype) {
    if (e.kind == Expr::Kind::Field && e.name == field && e.args[0].kind == Expr::Kind::Read &&
        e.args[0].name == record) {
      if (vector && (e.args.size() < 2 || tir::print_expr(e.args[1]) != tir::print_expr(*elem))) return false;
      e = reg_expr(reg, dtype);
      return true;
    }
    for (Expr& a : e.args)
      if (!replace_field_reads(a, record, field, vector, elem, reg, dtype)) return false;
    return true;
  }

  lir::Stmt store_of(const tir::Stmt& s, Expr value) {
    lir::Stmt st;
    st.kind = lir::Stmt::Kind::Store;
    st.tensor = s.name;
    st.vars = s.vars;
    st.value = std::move(value);
    return st;
  }

  static lir::Stmt compute(const std::string& reg, Expr value) {
    lir::Stmt c;
    c.kind = lir::Stmt::Kind::Compute;
    c.reg = reg;
    c.value = std::move(value);
    return c;
  }

  // Loops over the variables of `s` that the threads do not own, innermost tiled.
  lir::Stmt wrap_in_loops(const tir::Stmt& s, const std::vector<tir::Axis>& threads, std::vector<lir::Stmt> body) {
    std::vector<tir::Axis> extra;
    for (const tir::Axis& a : s.vars)
      if (!has_var(threads, a.name)) extra.push_back(a);
    for (size_t k = extra.size(); k-- > 0;) {
      lir::Stmt loop;
      loop.kind = lir::Stmt::Kind::Loop;
      loop.axis = extra[k];
      if (k + 1 == extra.size()) {
        if (auto it = knobs_.scalar_tile.find(extra[k].name); it != knobs_.scalar_tile.end()) {
          loop.tile = it->second;
          decisions_.push_back(fmt::format("TILE@{}=f{}: each thread keeps {} elements of {} in registers",
                                           extra[k].name, it->second, it->second, extra[k].name));
        } else if (carries_per_element(body)) {
          // Without a tile the fold would run once per element of the axis (the whole reduction
          // again for each output channel).
          // The target's default width (the target table says why).
          loop.tile = knobs_.carrier_tile;
          decisions_.push_back(
              fmt::format("TILE@{}=f{} (the target's default for a per-element carrier; set TILE@{} "
                          "to change): each thread keeps {} elements of {} in registers",
                          extra[k].name, knobs_.carrier_tile, extra[k].name, knobs_.carrier_tile, extra[k].name));
        }
      }
      loop.body = std::move(body);
      body = {std::move(loop)};
    }
    return std::move(body.front());
  }

  // Whether `body` folds a carrier with a register per element of the enclosing tile.
  static bool carries_per_element(const std::vector<lir::Stmt>& body) {
    bool found = false;
    lir::visit(body, [&](const lir::Stmt& st) {
      found = found ||
              (st.kind == lir::Stmt::Kind::Fold &&
               std::any_of(st.fields.begin(), st.fields.end(), [](const lir::CarrierField& f) { return f.per_tile; }));
    });
    return found;
  }

  static lir::Stmt fold_stmt(const Fold& f) {
    lir::Stmt st;
    st.kind = lir::Stmt::Kind::Fold;
    st.axis = f.axis;
    st.where = f.where;
    st.monoid = f.terms.name;
    st.terms = f.terms;
    for (const Member& m : f.members) st.fields.push_back(m.field);
    return st;
  }

  // Two vector sums y[..., e] = sum(i: w * x) and z[..., f] = sum(i: w' * x') over the same
  // key axis, predicate and rows (dk[b, h, j, d] and dv[b, h, j, e], both over i): in one kernel
  // their register tiles fold the same keys, so what their weights share (the scores, P) is
  // computed once a key, not once a kernel. Both written by a group of their own, or neither.
  bool sibling_sums(const tir::Stmt& a, const tir::Stmt& b) const {
    if (group_results_.count(a.name) != group_results_.count(b.name) || a.vars.size() != b.vars.size() ||
        !vector_sum(a) || !vector_sum(b))
      return false;
    for (size_t k = 0; k + 1 < a.vars.size(); ++k)
      if (a.vars[k].name != b.vars[k].name) return false;
    const Expr &x = a.value, &y = b.value;
    auto where = [](const Expr& r) {
      std::vector<std::string> w;
      for (const Expr& e : r.where) w.push_back(tir::print_expr(e));
      return w;
    };
    return x.axes[0].name == y.axes[0].name && x.axes[0].size == y.axes[0].size && where(x) == where(y) &&
           a.vars.back().name != b.vars.back().name;
  }

  // The kernel groups (kernel_groups.hpp), their decisions said.
  std::vector<std::vector<const tir::Stmt*>> output_groups(const lir::Program& out) {
    OutputGroups g = group_outputs(
        p_, out.materialized, group_results_,
        [&](const tir::Stmt& a, const tir::Stmt& b) { return sibling_sums(a, b); },
        [&](const tir::Stmt& a, const tir::Stmt& b) {
          auto x = fold_head_.find(a.name), y = fold_head_.find(b.name);
          return x != fold_head_.end() && y != fold_head_.end() && x->second == y->second;
        });
    decisions_.insert(decisions_.end(), g.decisions.begin(), g.decisions.end());
    return std::move(g.groups);
  }

  lir::Kernel main_kernel(const lir::Program& out, const std::vector<const tir::Stmt*>& stmts,
                          const std::string& name) {
    // The statements that may read this kernel's: its own and the materialized ones.
    std::vector<const tir::Stmt*> scope = stmts;
    for (const tir::Stmt& s : p_.stmts)
      if (std::count(out.materialized.begin(), out.materialized.end(), s.name)) scope.push_back(&s);
    lir::Kernel k;
    k.name = name;
    k.threads = thread_space(stmts);
    decisions_.push_back(fmt::format("threads: one per ({}) of the outputs", vars_text(k.threads)));

    std::map<std::string, const tir::Stmt*> regs;  // register statements, by name
    auto is_reg = [&](const tir::Stmt& s) {
      return is_intermediate(s.name) && p_.find(s.name)->record.empty() && s.vars.size() == k.threads.size() &&
             std::all_of(s.vars.begin(), s.vars.end(), [&](const tir::Axis& a) { return has_var(k.threads, a.name); });
    };
    auto read_by_any = [&](const std::string& name) {
      return std::any_of(scope.begin(), scope.end(), [&](const tir::Stmt* o) { return tir::reads(o->value, name); });
    };
    std::vector<Fold> folds;
    std::set<std::string> folded;
    carrier_names_.clear();  // a reduction's fold carries run_<its name>
    for (const tir::Stmt& st : p_.stmts)
      if (tir::has_reduce(st.value)) carrier_names_.insert(st.name);
    std::vector<Fold> candidates;
    for (const algebra::DiscoveredChain& c : chains_)
      if (std::optional<Fold> f = make_fold(c, out.materialized)) {
        if (std::any_of(f->members.begin(), f->members.end(),
                        [&](const Member& m) { return !std::count(stmts.begin(), stmts.end(), m.stmt); }))
          continue;  // another kernel's chain
        // The chain's last statement, when wider than the row, keeps one register per tile
        // element for each of its sums whose lift reads the wider index.
        const tir::Stmt* last = f->members.back().stmt;
        for (Member& m : f->members)
          if (m.stmt == last && last->vars.size() != k.threads.size())
            m.field.per_tile = std::any_of(last->vars.begin(), last->vars.end(), [&](const tir::Axis& a) {
              return !has_var(k.threads, a.name) && tir::uses_index(m.field.lift, a.name);
            });
        candidates.push_back(std::move(*f));
      }
    for (const tir::Stmt* s : stmts)
      if (is_intermediate(s->name) && !p_.find(s->name)->record.empty() && s->vars.size() == k.threads.size())
        if (std::optional<Fold> f = record_fold(*s, stmts)) candidates.push_back(std::move(*f));
    for (const tir::Stmt* s : stmts)
      if (s->vars.size() == k.threads.size() + 1)  // its element axis left the thread space
        if (std::optional<Fold> f = sum_fold(*s)) candidates.push_back(std::move(*f));
    for (std::optional<Fold> f : candidates) {
      {
        bool fits = true;
        int wide = 0;
        for (size_t i = 0; i < f->members.size(); ++i) {
          const tir::Stmt& s = *f->members[i].stmt;
          if (folded.count(s.name)) fits = false;
          bool row = s.vars.size() == k.threads.size();
          if (!row) ++wide;
          if (!row && &s != f->members.back().stmt) fits = false;  // only the last statement may be wider
        }
        // The narrow members then live inside the wide one's loop: only the fold, and row-wide
        // outputs that reduce nothing and that nothing reads (they move into that loop), read them.
        // They read no intermediate but the fold's members, which the loop has by then.
        auto absorbable = [&](const tir::Stmt* s) {
          std::set<std::string> read;
          tir::add_reads(s->value, read);
          for (const std::string& t : read)
            if (is_intermediate(t) &&
                std::none_of(f->members.begin(), f->members.end(), [&](const Member& m) { return m.stmt->name == t; }))
              return false;
          return !is_intermediate(s->name) && s->vars.size() == k.threads.size() && !tir::has_reduce(s->value) &&
                 p_.find(s->name)->record.empty() && !read_by_any(s->name);
        };
        if (wide)
          for (size_t i = 0; f->members[i].stmt != f->members.back().stmt; ++i) {
            const std::string& n = f->members[i].stmt->name;  // an output is stored after the fold
            for (const tir::Stmt* s : stmts)
              if (tir::reads(s->value, n) &&
                  std::none_of(f->members.begin(), f->members.end(), [&](const Member& m) { return m.stmt == s; })) {
                if (!absorbable(s))
                  fits = false;
                else if (!std::count(f->absorbed.begin(), f->absorbed.end(), s))
                  f->absorbed.push_back(s);
              }
          }
        if (fits)
          for (const Fold& g : folds)  // a statement moves into one fold's loop at most
            for (const tir::Stmt* s : f->absorbed)
              if (std::count(g.absorbed.begin(), g.absorbed.end(), s)) fits = false;
        if (!fits) continue;
        for (const Member& m : f->members) folded.insert(m.stmt->name);
        decisions_.push_back(fmt::format("fold over {}: {}", f->axis.name, f->summary));
        folds.push_back(std::move(*f));
      }
    }

    std::map<std::string, Expr> rewritten;
    for (const Fold& f : folds)
      if (f.rewritten_reader) rewritten[f.rewritten_reader->name] = f.rewritten_value;
    auto value_of = [&](const tir::Stmt& s) { return rewritten.count(s.name) ? rewritten.at(s.name) : s.value; };
    for (const tir::Stmt* s : stmts) {
      if (is_reg(*s) || (!is_intermediate(s->name) && s->vars.size() == k.threads.size() && !s->vars.empty() &&
                         p_.find(s->name)->record.empty()))
        regs[s->name] = s;
    }
    for (const tir::Stmt* s : stmts) {
      const Fold* fold = nullptr;
      bool moved = false;
      for (const Fold& f : folds) {
        for (const Member& m : f.members)
          if (m.stmt == s) fold = &f;
        moved = moved || std::count(f.absorbed.begin(), f.absorbed.end(), s);
      }
      if (moved) continue;  // emitted inside its fold's loop
      if (fold) {
        emit_fold_member(k, *fold, *s, regs);
        continue;
      }
      bool output = !is_intermediate(s->name);
      if (!output && !read_by_any(s->name)) continue;  // dead: nothing reads it
      Expr value = to_regs(value_of(*s), regs);
      if (regs.count(s->name)) {
        k.body.push_back(compute(s->name, value));
        if (output) k.body.push_back(store_of(*s, reg_expr(s->name, p_.find(s->name)->dtype)));
      } else if (output) {
        if (s->vars.size() == k.threads.size() && p_.find(s->name)->record.empty())
          k.body.push_back(store_of(*s, value));
        else
          k.body.push_back(wrap_in_loops(*s, k.threads, {store_of(*s, value)}));
      }
    }
    k.doc.push_back(fmt::format("One thread per ({}): {}.", vars_text(k.threads),
                                folds.empty() ? "each reduction a serial loop" : "reductions folded into one pass"));
    return k;
  }

  // A fold is emitted at its first row-wide member, or with its wide member inside that
  // member's loops; the other members only read the carrier afterwards.
  void emit_fold_member(lir::Kernel& k, const Fold& f, const tir::Stmt& s,
                        const std::map<std::string, const tir::Stmt*>& regs) {
    const Member& last = f.members.back();
    bool wide = last.stmt->vars.size() != k.threads.size();
    // A member's register is kept only if something reads it: an output, another member's
    // result, or a statement outside the fold.
    auto needed = [&](size_t i) {
      const std::string& n = f.members[i].stmt->name;
      if (!is_intermediate(n)) return true;
      for (const Member& m : f.members)
        if (&m != &f.members[i] && mentions_reg(to_regs(m.result.value, regs), n)) return true;
      for (const tir::Stmt& other : p_.stmts)
        if (tir::reads(other.value, n) &&
            std::none_of(f.members.begin(), f.members.end(), [&](const Member& m) { return m.stmt == &other; }))
          return true;
      return false;
    };
    auto results = [&](size_t upto) {
      std::vector<lir::Stmt> rs;
      for (size_t i = 0; i < upto; ++i)
        // internal: Welford's count; no name: a shared statement's result is in its last member
        if (!f.members[i].internal && needed(i) && !f.members[i].result.name.empty())
          rs.push_back(compute(f.members[i].stmt->name, to_regs(f.members[i].result.value, regs)));
      return rs;
    };
    if (!wide) {
      if (&s != f.members.front().stmt) {
        if (!is_intermediate(s.name)) k.body.push_back(store_of(s, reg_expr(s.name, p_.find(s.name)->dtype)));
        return;
      }
      lir::Stmt fs = fold_stmt(f);
      if (!f.rewritten_reader) fs.results = results(f.members.size());  // else the reader reads the carrier
      k.body.push_back(std::move(fs));
      if (!is_intermediate(s.name)) k.body.push_back(store_of(s, reg_expr(s.name, p_.find(s.name)->dtype)));
      return;
    }
    if (&s != last.stmt) return;
    lir::Stmt fs = fold_stmt(f);
    fs.results = results(f.members.size() - 1);
    std::vector<lir::Stmt> body;
    body.push_back(std::move(fs));
    if (!is_intermediate(s.name)) body.push_back(store_of(s, to_regs(last.result.value, regs)));
    for (size_t i = 0; i + 1 < f.members.size(); ++i)  // narrow members that are outputs (a row's m and l)
      if (const tir::Stmt& n = *f.members[i].stmt;
          &n != last.stmt && !is_intermediate(n.name) && !f.members[i].internal && !f.members[i].result.name.empty())
        body.push_back(store_of(n, reg_expr(n.name, p_.find(n.name)->dtype)));
    for (const tir::Stmt* a : f.absorbed) {
      body.push_back(compute(a->name, to_regs(a->value, regs)));
      body.push_back(store_of(*a, reg_expr(a->name, p_.find(a->name)->dtype)));
    }
    k.body.push_back(wrap_in_loops(s, k.threads, std::move(body)));
  }

  const tir::Program& p_;
  const CheckedProgram& checked_;
  const Knobs& knobs_;
  const std::vector<algebra::DiscoveredChain>& chains_;
  std::vector<std::string> decisions_;
  std::set<std::string> chain_heads_;
  std::set<std::string> carrier_names_;           // the kernel's carrier fields so far (registers run_<name>)
  std::set<std::string> group_results_;           // intermediates a kernel of their own group writes (cut per element)
  std::map<std::string, std::string> fold_head_;  // of those, a chain's statements one kernel folds -> its head
};

}  // namespace

lir::Program to_loops(const tir::Program& program, const CheckedProgram& checked, const CheckedOp& /*op*/,
                      const Knobs& knobs, const std::vector<algebra::DiscoveredChain>& chains) {
  return LoopBuilder(program, checked, knobs, chains).run();
}

}  // namespace emmy::lower
