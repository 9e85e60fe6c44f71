// A tensor-core fold of a proved monoid that is not a max-rescaled sum and has no vector field
// (a max, argmax, a user's monoid over q . k): each score element through the monoid's combine
// into its lane's carrier, the lanes sharing a row combined once after the last block.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

MmaTier::LaneCarrier MmaTier::general_carrier(int fm) {
  const lir::Stmt& fold = *fold_;
  LaneCarrier c;
  for (const lir::CarrierField& f : fold.fields) {
    c.spec.fields.push_back(f.name);
    c.spec.types.push_back(scalar_of(f.dtype));
  }
  c.spec.identity = fold.terms.identity;
  c.spec.combine = fold.terms.combine;
  emit(
      kir::comment(fmt::format("carrier ({}) through the proved monoid {}, per row slot of the lane: each score "
                               "through its combine, the lanes of a row combined after the last block",
                               field_names(), fold.monoid)));
  const std::map<std::string, K> none;
  for (size_t f = 0; f < c.spec.fields.size(); ++f) {
    const ScalarType t = c.spec.types[f];
    c.regs.push_back(b_.fresh("run_" + c.spec.fields[f]));
    emit(kir::decl(c.regs[f], t, as(b_.term_value(c.spec.identity[f], none, t), t), fm * 2));
  }
  // Where the identity must not meet a value (online softmax's -inf - -inf), a slot starts from
  // its first element instead.
  if (algebra::identity_unsafe(fold.terms)) {
    c.has = b_.fresh("has");
    emit(kir::decl(c.has, ScalarType::Pred, kir::ci(0, ScalarType::Pred), fm * 2));
  }
  return c;
}

void MmaTier::emit_general_update(const LaneCarrier& c, int fm, int fn, const std::string& sc, const K& j0,
                                  const std::function<std::optional<K>(int a, int n, int e, const K& col)>& ok) {
  const lir::Stmt& fold = *fold_;
  std::vector<std::string> lifts;
  for (const Expr& l : general_lifts_) lifts.push_back(tir::print_expr(l));
  emit(kir::comment(fmt::format("each score of the block lifted to ({}), through {}'s combine", fmt::join(lifts, ", "),
                                fold.monoid)));
  const size_t nf = c.regs.size();
  for_each_c(
      fm, fn,
      [&](int a, int n, int e, const K& row, const K& col) {
        const int slot = a * 2 + slot_of(e);
        enter_score(row, col, elem(sc, c_index(a, n, e, fn), F32));
        const std::optional<K> keep = ok(a, n, e, col);
        std::vector<K> mine, lifted;
        for (size_t f = 0; f < nf; ++f) {
          const ScalarType t = c.spec.types[f];
          mine.push_back(kir::var({c.regs[f], slot}, t));
          lifted.push_back(let(b_.fresh("lift_" + c.spec.fields[f]), per_score(as(b_.lower(general_lifts_[f]), t))));
        }
        std::vector<K> next = b_.combine_pair(c.spec, mine, lifted);
        std::optional<K> has;
        if (!c.has.empty()) has = kir::var({c.has, slot}, ScalarType::Pred);
        for (size_t f = 0; f < nf; ++f) {
          K v = has ? kir::select(*has, next[f], lifted[f]) : next[f];
          emit(kir::assign(mine[f].reg, keep ? kir::select(*keep, v, mine[f]) : v));
        }
        if (has)
          emit(kir::assign(has->reg, keep ? kir::binary(kir::BinOp::Or, *has, *keep) : kir::ci(1, ScalarType::Pred)));
        b_.pop_scope();
      },
      j0);
}

void MmaTier::emit_general_results(const LaneCarrier& c, int fm, const K& rows) {
  emit(
      kir::comment(fmt::format("the lanes sharing a row combine their carriers (butterflies xor {}: {}'s proved "
                               "laws allow any order)",
                               fmt::join(masks_, ", "), fold_->monoid)));
  const size_t nf = c.regs.size();
  for (int slot = 0; slot < fm * 2; ++slot)
    for (int mask : masks_) {
      std::vector<K> mine, other;
      for (size_t f = 0; f < nf; ++f) {
        mine.push_back(kir::var({c.regs[f], slot}, c.spec.types[f]));
        other.push_back(b_.shuffle_xor(mine.back(), mask));
      }
      if (c.has.empty()) {
        std::vector<K> next = b_.combine_pair(c.spec, mine, other);
        for (size_t f = 0; f < nf; ++f) emit(kir::assign(mine[f].reg, next[f]));
        continue;
      }
      K has = kir::var({c.has, slot}, ScalarType::Pred);
      std::vector<K> next = b_.combine_shares(c.spec, mine, has, other, b_.shuffle_xor(has, mask));
      for (size_t f = 0; f < nf; ++f) emit(kir::assign(mine[f].reg, next[f]));
      emit(kir::assign(has.reg, next.back()));
    }
  emit_row_results(fm, rows, {kernel_body_.begin() + 1, kernel_body_.end()}, [&](int a, int r) {
    for (size_t f = 0; f < nf; ++f)
      b_.scope().regs["run_" + c.spec.fields[f]] = kir::var({c.regs[f], a * 2 + r}, c.spec.types[f]);
    for (const lir::Stmt& s : fold_->results) b_.stmt(s);
  });
}

}  // namespace emmy::lower::detail
