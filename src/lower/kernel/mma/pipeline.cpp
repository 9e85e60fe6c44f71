// The multi-stage pipeline over the reduced axis: the stream loop that keeps STAGE's buffers in
// flight, its drain, and launch-invariant values hoisted out of it.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

K MmaTier::stream_loop(const std::string& var, const K& lo, const K& size, int chunk,
                       const std::vector<const Slab*>& slabs, bool late_issue,
                       const std::function<void(const K&, const K&, const Issue&)>& compute, bool barrier_free,
                       bool overlapped) {
  const int depth = stage_ ? stage_->depth : 1, dist = stage_ && stage_->ring ? depth - (overlapped ? 2 : 1) : 0;
  // With `barrier_free`, a ring whose every tile comes by TMA synchronises through the
  // mbarriers alone (the contraction, and any ring a producer warp fills; the fold otherwise
  // keeps its barrier a tile). Measurements:
  // tests/bench/RESULTS.md, "Measurements that were code comments".
  const bool boxes_only = (barrier_free || plan_.producer_threads > 0) && dist > 0 && !slabs.empty() &&
                          std::all_of(slabs.begin(), slabs.end(), [](const Slab* s) { return !s->map.empty(); });
  if (boxes_only && tma_free_.empty()) tma_free_setup();
  if (stage_ && dist > 0) ring_prologue(lo, size, chunk, slabs, dist, boxes_only);
  K v = kir::var({var}, I64);
  // The tile's buffer, counted round the ring in a small register (not divided out of v).
  const std::string bv = b_.fresh("buf");
  K buf = kir::var({bv}, ScalarType::I32);
  if (stage_) emit(kir::decl(bv, ScalarType::I32, ci32(0)));
  std::vector<kir::Stmt> body = b_.nested([&] {
    if (!stage_) return compute(v, i64(0), [] {});
    Issue issue = [] {};
    if (dist > 0) {
      // One barrier a tile: past it this tile has landed for every thread, and every warp has
      // finished the previous tile, whose buffer the copy issued next overwrites. A ring of
      // boxes only waits on the tile's full mbarrier instead, and its issuer on the free one.
      wait(dist - 1, buf, boxes_only);
      K ahead = add(v, i64(int64_t{dist} * chunk));
      K nb = let(b_.fresh("ahead_buf"), ring_wrap(add(buf, ci32(dist))));
      issue = [this, ahead, nb, size, dist, &slabs, boxes_only] {
        ring_issue(ahead, nb, size, dist, slabs, boxes_only);
      };
      if (!late_issue) {
        issue();
        issue = [] {};
      }
    } else {
      fill_stage(slabs, buf, v, boxes_only);
      commit();
      wait(0, buf);
    }
    compute(v, buf, issue);
    if (boxes_only && !overlapped) release(buf);  // this thread is done with the buffer
    // Without the ring, a single buffer is refilled by the next trip: wait for every warp.
    if (dist == 0 && depth == 1) emit(kir::barrier());
    emit(kir::assign({bv}, ring_wrap(add(buf, ci32(1)))));
  });
  kir::Stmt f = kir::for_loop(var, I64, lo, size, std::move(body));
  f.step = chunk;
  emit(std::move(f));
  // The slabs are free for whatever fills them next (another register tile's prologue).
  if (stage_ && !(dist == 0 && depth == 1)) emit(kir::barrier());
  return buf;
}

void MmaTier::ring_prologue(const K& lo, const K& size, int chunk, const std::vector<const Slab*>& slabs, int dist,
                            bool boxes_only, const Crew* crew) {
  emit(kir::comment(fmt::format("prologue: the first {} tiles' copies in flight", dist)));
  for (int p = 0; p < dist; ++p) {
    K origin = add(lo, i64(int64_t{p} * chunk));
    emit(kir::if_then(lt(origin, size), b_.nested([&] { fill_stage(slabs, i64(p), origin, boxes_only); })));
    commit();
  }
  if (boxes_only) {
    // What came by cp.async before the loop (a row tile's slab) lands and is published
    // here: the loop's tiles have no block barrier.
    emit(kir::intrinsic(kir::IntrinsicId::CpAsyncWait, {}, {}, {0}));
    if (wgmma()) emit(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));
    emit(crew_barrier(crew));
  }
}

void MmaTier::ring_issue(const K& origin, const K& buf, const K& size, int dist, const std::vector<const Slab*>& slabs,
                         bool boxes_only) {
  emit(kir::comment(fmt::format("ring: copy tile +{} while this one computes", dist)));
  emit(kir::if_then(lt(origin, size), b_.nested([&] { fill_stage(slabs, buf, origin, boxes_only); })));
  if (!boxes_only) commit();  // (boxes only: no cp.async group, wait() waits for none)
}

K MmaTier::ring_wrap(const K& x) const {
  const int depth = stage_->depth;
  return kir::select(kir::binary(kir::BinOp::Ge, x, ci32(depth)), kir::binary(kir::BinOp::Sub, x, ci32(depth)), x);
}

void MmaTier::release(const K& buf) {
  for (kir::Stmt& s : arrive_free(buf)) emit(std::move(s));
}

void MmaTier::fill_stage(const std::vector<const Slab*>& slabs, const K& buf, const K& flat, bool wait_free) {
  const K origin = outer_point(flat);
  std::vector<const Slab*> boxes;
  for (const Slab* sl : slabs)
    if (sl->map.empty())
      fill_tile(*sl, buf, origin);
    else
      boxes.push_back(sl);
  if (!boxes.empty()) tma_fill(boxes, buf, origin, wait_free);
  b_.pop_scope();
}

K MmaTier::outer_point(const K& flat) {
  b_.push_scope();
  if (!outer_span_) return flat;
  K rest = kir::binary(kir::BinOp::Div, flat, *outer_span_);
  for (size_t a = first_.outer.size(); a-- > 0;) {
    const tir::Axis& axis = first_.outer[a];
    b_.scope().index[axis.name] =
        a == 0 ? rest : kir::binary(kir::BinOp::Rem, rest, KernelBuilder::size_value(axis.size));
    if (a > 0) rest = kir::binary(kir::BinOp::Div, rest, KernelBuilder::size_value(axis.size));
  }
  return kir::binary(kir::BinOp::Rem, flat, *outer_span_);
}

void MmaTier::drain(const Slab& s, const K& buf, const std::vector<Piece>& pieces, const K& row_dyn, const K& col_dyn,
                    bool row_is_outer) {
  std::optional<bool> trans;
  std::vector<std::pair<int, int>> at;  // each piece's 8x8 block origin: (outer, inner)
  for (const Piece& p : pieces) {
    int row = 1 << 20, col = 1 << 20;
    for (int lane = 0; lane < kWarp; ++lane)
      for (int h = 0; h < 2; ++h) {
        kir::FragmentCoord c = p.fn(lane, 2 * p.reg + h);
        row = std::min(row, c.row);
        col = std::min(col, c.col);
      }
    kir::FragmentCoord lo = p.fn(0, 2 * p.reg), hi = p.fn(0, 2 * p.reg + 1);
    bool pair_along_rows = hi.row == lo.row + 1;
    bool t = pair_along_rows == row_is_outer;  // the register pairs run along the slab's rows
    EMMY_INTERNAL_ASSERT(!trans || *trans == t, "one ldmatrix cannot mix transposed and plain pieces");
    trans = t;
    row += p.row;
    col += p.col;
    at.emplace_back(row_is_outer ? row : col, row_is_outer ? col : row);
  }
  EMMY_INTERNAL_ASSERT(pieces.size() == 1 || pieces.size() == 2 || pieces.size() == 4,
                       "ldmatrix takes 1, 2 or 4 matrices");
  // Lanes 8m..8m+7 address the rows of matrix m (lanes past the pieces repeat them): the
  // lane's offset from piece 0, a constant per lane, hoisted out of every loop.
  const int n = static_cast<int>(pieces.size());
  K m = kir::binary(kir::BinOp::Rem, kir::binary(kir::BinOp::Div, lane32_, ci32(8)), ci32(n));
  K delta = ci32(0);
  for (int i = n - 1; i > 0; --i)
    delta = kir::select(kir::binary(kir::BinOp::Eq, m, ci32(i)),
                        ci32((at[i].first - at[0].first) * s.pitch + at[i].second - at[0].second), delta);
  K outer_dyn = row_is_outer ? row_dyn : col_dyn, inner_dyn = row_is_outer ? col_dyn : row_dyn;
  K addr = s.swizzled ? swizzled_row_address(s, buf, at, m, outer_dyn, inner_dyn) : K{};
  if (!s.swizzled) {
    K lane_off = hoisted("ldm_off", add(mul(kir::binary(kir::BinOp::Rem, lane32_, ci32(8)), ci32(s.pitch)), delta));
    // The run-time part once per tile (shared by every ldmatrix of the slab), plus a constant:
    // the constant becomes the instruction's immediate offset.
    K dynamic = b_.shared(add(add(add(s.buffer_start(buf), mul(outer_dyn, ci32(s.pitch))), inner_dyn), lane_off));
    addr = add(dynamic, ci32(at[0].first * s.pitch + at[0].second));
  }
  using enum kir::IntrinsicId;
  static constexpr kir::IntrinsicId kPlain[] = {LdmatrixX1, LdmatrixX2, LdmatrixX4, LdmatrixX4};
  static constexpr kir::IntrinsicId kTrans[] = {LdmatrixX1Trans, LdmatrixX2Trans, LdmatrixX4Trans, LdmatrixX4Trans};
  std::vector<kir::Reg> outs;
  for (const Piece& p : pieces) outs.push_back(p.dest);
  emit(kir::intrinsic((*trans ? kTrans : kPlain)[pieces.size() - 1], std::move(outs),
                      {kir::shared_addr(s.array, addr)}));
}

void MmaTier::drain_fragments(const Slab& s, const K& buf, CoordFn fn, int regs, int n_frags, const std::string& array,
                              int off, const K& row_dyn, const K& col_dyn,
                              const std::function<std::pair<int, int>(int)>& origin, bool row_is_outer) {
  std::vector<Piece> all;
  for (int f = 0; f < n_frags; ++f) {
    auto [r, c] = origin(f);
    for (int g = 0; g < regs; ++g) all.push_back({{array, off + f * regs + g}, fn, g, r, c});
  }
  for (size_t i = 0; i < all.size();) {
    size_t n = all.size() - i >= 4 ? 4 : all.size() - i >= 2 ? 2 : 1;
    drain(s, buf,
          std::vector<Piece>(all.begin() + static_cast<std::ptrdiff_t>(i),
                             all.begin() + static_cast<std::ptrdiff_t>(i + n)),
          row_dyn, col_dyn, row_is_outer);
    i += n;
  }
}

K MmaTier::hoisted(const std::string& base, K value) {
  std::string key = KernelBuilder::render_key(value);
  if (auto it = hoisted_.find(key); it != hoisted_.end()) return it->second;
  std::string name = b_.fresh(base);
  top_->insert(top_->begin() + static_cast<std::ptrdiff_t>(hoist_at_++), kir::decl(name, value.type, value));
  return hoisted_[key] = kir::var({name}, value.type);
}

K MmaTier::hoist_invariants(K e) {
  if (kir::launch_invariant(e)) {
    bool leaf = e.kind == K::Kind::Const || e.kind == K::Kind::Param ||
                (e.kind == K::Kind::Cast && e.args[0].kind != K::Kind::Unary && e.args[0].kind != K::Kind::Binary);
    return leaf ? e : hoisted("invariant", std::move(e));
  }
  for (K& a : e.args.mut()) a = hoist_invariants(std::move(a));
  return e;
}

K MmaTier::per_score(K e) {
  if (e.kind == K::Kind::Binary && e.bin == kir::BinOp::Div && kir::is_float(e.type) && !kir::launch_invariant(e) &&
      kir::launch_invariant(e.args[1]))
    return mul(per_score(std::move(e.args[0])),
               hoisted("inverse", kir::binary(kir::BinOp::Div, kir::cf(1, e.type), std::move(e.args[1]))));
  if (kir::launch_invariant(e)) return hoist_invariants(std::move(e));
  if (lane_floats_ && e.kind == K::Kind::Cast && e.type == F32 && !kir::is_float(e.args[0].type))
    if (std::optional<K> f = lane_float(e.args[0])) return *f;
  if (lane_floats_ && e.kind == K::Kind::Binary && kir::is_comparison(e.bin) && !kir::is_float(e.args[0].type) &&
      !kir::is_float(e.args[1].type) && e.args[0].type != ScalarType::Pred)
    if (std::optional<K> c = lane_compare(e)) return *c;
  for (K& a : e.args.mut()) a = per_score(std::move(a));
  return e;
}

}  // namespace emmy::lower::detail
