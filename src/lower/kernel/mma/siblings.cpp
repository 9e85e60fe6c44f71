// Sibling folds: register tiles of one kernel folding the same keys at the same rows (dk and dv
// over a key block of attention's backward), planned as one fold whose key loop computes each
// block's contractions once, then each tile's weights and P @ value into its own accumulator.
#include "lower/kernel/mma/tier.hpp"
#include "lower/term_expr.hpp"

namespace emmy::lower::detail {

std::vector<const lir::Stmt*> MmaTier::sibling_loops(const std::vector<lir::Stmt>& body) {
  std::vector<const lir::Stmt*> loops;
  for (const lir::Stmt& s : body) {
    if (s.kind != lir::Stmt::Kind::Loop || s.body.empty() || s.body[0].kind != lir::Stmt::Kind::Fold) return {};
    const lir::Stmt &f = s.body[0], &first = body[0].body[0];
    auto text = [](const std::vector<Expr>& v) {
      std::vector<std::string> t;
      for (const Expr& e : v) t.push_back(tir::print_expr(e));
      return t;
    };
    if (f.axis.name != first.axis.name || text(f.where) != text(first.where) || text(f.range) != text(first.range))
      return {};
    loops.push_back(&s);
  }
  return loops.size() >= 2 ? loops : std::vector<const lir::Stmt*>{};
}

bool MmaTier::plan_siblings(const std::vector<const lir::Stmt*>& loops) {
  // The kernel's contractions so far (the first register tile's), by their text with the axis
  // renamed to the first's: dv's k . q over d_1 is dk's k . q over d_2.
  auto same = [](const Contraction& a, const Contraction& b) {
    const std::vector<std::pair<std::string, Expr>> by{{b.axis.name, index_expr(a.axis.name)}};
    return a.axis.size == b.axis.size && tir::print_expr(a.row) == tir::print_expr(tir::substitute(b.row, by)) &&
           tir::print_expr(a.col) == tir::print_expr(tir::substitute(b.col, by));
  };
  for (size_t i = 1; i < loops.size(); ++i) {
    const lir::Stmt &loop = *loops[i], &fold = loop.body[0];
    const std::string name = fold.fields.empty() ? fold.monoid : fold.fields[0].name;
    if (!summed_ || fold.fields.size() != 1 || !fold.fields[0].per_tile || fold.monoid != fold_->monoid)
      return reject(
          fmt::format("the register tiles of {} and {} fold the same keys, which the tier shares between plain sums "
                      "of a weight times a {} input only",
                      tile_loop_->axis.name, loop.axis.name, kir::type_name(t_.operand)));
    if (wgmma() && !kir::wgmma_of(loop.tile, true))
      return reject(fmt::format("the register tile of {} ({}) is P @ V's N, which no wgmma atom issues", loop.axis.name,
                                loop.tile));
    if (loop.tile % kAtomN != 0)
      return reject(
          fmt::format("the register tile of {} ({}) is not a multiple of the atom's n = 8", loop.axis.name, loop.tile));
    for (size_t st = 1; st < loop.body.size(); ++st)
      if (loop.body[st].kind != lir::Stmt::Kind::Store && loop.body[st].kind != lir::Stmt::Kind::Compute)
        return reject("the register tile holds statements other than the fold, its results and stores");
    require_reorder(fold.terms, fmt::format("folds the reduction over {} a key block at a time, in trees across lanes",
                                            fold.axis.name));
    std::optional<SummedParts> parts = summed_parts(fold.fields[0].lift, fold.axis.name, loop.axis.name);
    if (!parts)
      return reject(
          fmt::format("the vector field {} of the register tile of {} lifts {}, not a weight of the "
                      "kernel's contractions times a {} input",
                      name, loop.axis.name, tir::print_expr(fold.fields[0].lift), kir::type_name(t_.operand)));
    std::map<std::string, std::string> rename;  // its contraction registers -> the kernel's
    for (size_t c = 0; c < parts->contractions.size(); ++c) {
      const Contraction& x = parts->contractions[c];
      size_t at = same(first_, x) ? 0 : second_ && same(*second_, x) ? 1 : 2;
      if (at == 2 && !second_) {
        if (wgmma() && innermost_is(x.row, row_axis_.name))
          return reject(fmt::format("{}'s contiguous axis is not {}: wgmma reads it K-major", x.row.name, x.axis.name));
        second_ = x;
        at = 1;
      }
      if (at == 2)
        return reject(
            fmt::format("the register tiles' weights hold three contractions or more ({} * {} over {} "
                        "besides two); the tier computes two a key block",
                        tir::print_expr(x.row), tir::print_expr(x.col), x.axis.name));
      rename[std::string(contracted_reg(c))] = std::string(contracted_reg(at));
    }
    std::function<Expr(const Expr&)> to_kernel = [&](const Expr& e) -> Expr {
      if (e.kind == Expr::Kind::Reg)
        if (auto it = rename.find(e.name); it != rename.end()) {
          Expr r = e;
          r.name = it->second;
          return r;
        }
      return tir::map_children(e, to_kernel);
    };
    siblings_.push_back({&loop, &fold, to_kernel(parts->contractions[0].around), parts->value, std::nullopt});
  }
  return true;
}

bool MmaTier::siblings_in_one_pass(int bound) const {
  auto covered = [&](const lir::Stmt& loop) {
    for (const Contraction* c : {&first_, second_ ? &*second_ : nullptr})
      if (c && c->axis.size == loop.axis.size && loop.tile >= bound) return true;
    return false;
  };
  return covered(*tile_loop_) &&
         std::all_of(siblings_.begin(), siblings_.end(), [&](const Sibling& s) { return covered(*s.loop); });
}

std::vector<std::string> MmaTier::sibling_carriers(int fm) {
  std::vector<std::string> accs;
  for (const Sibling& s : siblings_) {
    accs.push_back(b_.fresh("run_" + s.fold->fields[0].name));
    emit(kir::decl(accs.back(), F32, kir::cf(0, F32), fm * (s.loop->tile / kAtomN) * 4));
  }
  return accs;
}

void MmaTier::emit_sibling_updates(const std::vector<std::string>& accs, const std::vector<K>& tile0, int fm, int fn,
                                   const std::string& sc, const std::string& sc2, const std::string& pf,
                                   const std::string& vf, const K& j0, const K& keys, const K& buf, bool masked) {
  for (size_t i = 0; i < siblings_.size(); ++i) {
    const Sibling& s = siblings_[i];
    const std::string p = b_.fresh("p_" + s.loop->axis.name);
    emit(kir::comment(fmt::format("{}'s P = {} from the block's scores{}", s.fold->fields[0].name,
                                  tir::print_expr(s.weight),
                                  masked ? ", 0 past the keys and outside the fold's predicate" : "")));
    emit(kir::decl(p, F32, fm * fn * 4));
    for_each_c(
        fm, fn,
        [&](int a, int n, int e, const K& row, const K& col) {
          enter_score(row, col, elem(sc, c_index(a, n, e, fn), F32));
          if (second_) b_.scope().regs[std::string(contracted_reg(1))] = elem(sc2, c_index(a, n, e, fn), F32);
          K w = per_score(as(b_.lower(s.weight), F32));
          K ok = counted(col, keys);
          b_.pop_scope();
          emit(kir::assign({p, c_index(a, n, e, fn)}, masked ? kir::select(ok, w, kir::cf(0, F32)) : w));
        },
        j0);
    emit_pv(accs[i], fm, fn, s.loop->tile / kAtomN, p, pf, vf, j0, tile0[i], buf, &s);
  }
}

void MmaTier::emit_sibling_results(const std::vector<std::string>& accs, const std::vector<K>& tile0, int fm,
                                   const K& rows) {
  for (size_t i = 0; i < siblings_.size(); ++i) {
    const Sibling& s = siblings_[i];
    const tir::Axis& axis = s.loop->axis;
    const int ne = s.loop->tile / kAtomN;
    const std::vector<lir::Stmt> stores(s.loop->body.begin() + 1, s.loop->body.end());
    const K size = KernelBuilder::size_value(axis.size);
    emit(kir::comment(fmt::format("{}'s results and stores", s.fold->fields[0].name)));
    // With producer warps the ring's slabs may already hold the next tile's keys: stored from registers.
    const std::optional<StagedOut> staged =
        plan_.producer_threads > 0 ? std::nullopt
                                   : staged_out(stores, axis.name, ne * kAtomN, {s.slab ? &*s.slab : nullptr});
    // The tile before it may have staged through the same buffers (a shared slab): its reads first.
    if (staged) emit(kir::barrier());
    const bool guarded = !staged || reads_tensor(s.fold->results) || reads_tensor(stores);
    emit_tile_elements(fm, ne, tile0[i], rows, axis, s.fold->results, stores, staged, guarded,
                       [&](int a, int n, int e) {
                         b_.scope().regs["run_" + s.fold->fields[0].name] = elem(accs[i], c_index(a, n, e, ne), F32);
                       });
    if (staged) write_out(*staged, tile0[i], rows, size);
  }
}

}  // namespace emmy::lower::detail
