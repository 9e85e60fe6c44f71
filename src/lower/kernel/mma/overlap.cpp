// OVERLAP on a fold: the key blocks as straight-line loops over the ring, each block's scores
// issued while the previous block's P @ V is still on the tensor cores.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

std::pair<K, K> MmaTier::interior_range(const K& lo, const K& keys, int chunk) {
  using kir::BinOp;
  K begin = lo, end = keys;
  const int64_t rows_per_block = int64_t{t_.warps_m} * rows_per_warp_;
  for (const std::optional<KeyBound>& bound : {key_limit_, key_other_}) {
    if (!bound) continue;
    if (bound->upper)  // the block's first row folds the keys below its row + offset
      end = kir::binary(BinOp::Min, end, add(row_block0_, i64(bound->offset)));
    else  // its last row those from its row + offset on
      begin = kir::binary(BinOp::Max, begin, add(row_block0_, i64(rows_per_block - 1 + bound->offset)));
  }
  auto from_lo = [&](const K& x) { return kir::binary(BinOp::Max, kir::binary(BinOp::Sub, x, lo), i64(0)); };
  K e = let(b_.fresh("interior_end"), add(lo, mul(kir::binary(BinOp::Div, from_lo(end), i64(chunk)), i64(chunk))));
  K b = add(lo, mul(ceil_div(from_lo(begin), chunk), i64(chunk)));
  return {let(b_.fresh("interior_begin"), kir::binary(BinOp::Min, b, e)), e};
}

void MmaTier::emit_overlapped_keys(const std::string& var, const K& lo, const K& keys, int chunk,
                                   const std::vector<const Slab*>& slabs, const BlockMath& math,
                                   const std::function<void(const K& buf)>& last_pv, const Crew* crew) {
  using kir::BinOp;
  const int depth = stage_->depth, ahead = depth - 2;
  EMMY_INTERNAL_ASSERT(ahead >= 1 && stage_->ring, "OVERLAP without a ring of three buffers (the plan checks it)");
  // Every tile by TMA: the ring synchronises through its mbarriers alone, a buffer released (its
  // free mbarrier) once the P @ V that read it completes; the warpgroups need not meet each block.
  const bool boxes_only = std::all_of(slabs.begin(), slabs.end(), [](const Slab* s) { return !s->map.empty(); });
  if (boxes_only && tma_free_.empty()) tma_free_setup();
  emit(
      kir::comment(fmt::format("overlap: each block's scores issued before the previous block's P @ V completes; "
                               "the ring {} tile{} ahead (one buffer stays with the pending P @ V){}",
                               ahead, ahead == 1 ? "" : "s", boxes_only ? ", no block barrier a tile" : "")));
  EMMY_INTERNAL_ASSERT(!crew || boxes_only, "a crew's barrier over a ring not wholly by TMA");
  ring_prologue(lo, keys, chunk, slabs, ahead, boxes_only, crew);
  const std::string bv = b_.fresh("buf");
  K buf = kir::var({bv}, ScalarType::I32);
  emit(kir::decl(bv, ScalarType::I32, ci32(0)));
  // One trip: past the barrier every warp is done with the block before the previous one, whose
  // buffer the copy issued next overwrites; then the block's math; then the next buffer.
  auto body = [&](const std::string& name, bool masked, bool first) {
    return b_.nested([&] {
      K v = kir::var({name}, I64);
      wait(ahead - 1, buf, boxes_only);
      K nb = let(b_.fresh("ahead_buf"), ring_wrap(add(buf, ci32(ahead))));
      ring_issue(add(v, i64(int64_t{ahead} * chunk)), nb, keys, ahead, slabs, boxes_only);
      std::optional<K> pending;
      if (!first) pending = let(b_.fresh("pending_buf"), ring_wrap(add(buf, ci32(depth - 1))));
      math(v, buf, masked, pending);
      emit(kir::assign({bv}, ring_wrap(add(buf, ci32(1)))));
    });
  };
  struct Segment {
    std::string var;
    std::vector<kir::Stmt> body;
    K end;
  };
  std::vector<Segment> segments(1);
  segments[0].var = b_.fresh(var);
  segments[0].body = body(segments[0].var, true, true);
  const K after_first = let(b_.fresh("keys_first"), kir::binary(BinOp::Min, add(lo, i64(chunk)), keys));
  segments[0].end = after_first;
  // Interior blocks exist where the predicate is absent or is the key bounds alone; masked ones
  // before them only under a lower bound (a window's).
  if (fold_->where.empty() || (key_limit_ && key_exact_)) {
    const bool lower = (key_limit_ && !key_limit_->upper) || (key_other_ && !key_other_->upper);
    Segment before{b_.fresh(var), {}, {}}, inner{b_.fresh(var), {}, {}};
    if (lower) before.body = body(before.var, true, false);
    LaneFloats lf = lane_floats(kir::var({inner.var}, I64));
    lane_floats_ = &lf;
    inner.body = body(inner.var, false, false);
    lane_floats_ = nullptr;
    auto [ib, ie] = interior_range(lo, keys, chunk);
    // Where a lane form could leave its exact range, every block takes the masked path.
    if (std::optional<K> exact = lane_floats_exact(lf)) ie = let(b_.fresh("interior_end"), kir::select(*exact, ie, ib));
    auto clamp = [&](const K& x, const K& below) {
      return kir::binary(BinOp::Min, kir::binary(BinOp::Max, x, below), keys);
    };
    before.end = lower ? let(b_.fresh("keys_masked"), clamp(ib, after_first)) : after_first;
    inner.end = let(b_.fresh("keys_interior"), clamp(ie, before.end));
    if (lower) segments.push_back(std::move(before));
    segments.push_back(std::move(inner));
  }
  Segment rest{b_.fresh(var), {}, keys};
  rest.body = body(rest.var, true, false);
  segments.push_back(std::move(rest));
  K begin = lo;
  for (Segment& s : segments) {
    kir::Stmt f = kir::for_loop(s.var, I64, begin, s.end, std::move(s.body));
    f.step = chunk;
    emit(std::move(f));
    begin = s.end;
  }
  emit(kir::comment("the last block's P @ V"));
  emit(kir::if_then(lt(lo, keys), b_.nested([&] {
    K last = let(b_.fresh("last_buf"), ring_wrap(add(buf, ci32(depth - 1))));
    last_pv(last);
    if (boxes_only) release(last);
  })));
  // The slabs are free for whatever fills them next (another register tile's prologue).
  emit(crew_barrier(crew));
}

}  // namespace emmy::lower::detail
