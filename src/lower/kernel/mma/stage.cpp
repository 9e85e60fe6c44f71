// Shared-memory staging: an operand's slab (its box, order and swizzle), filled by cp.async
// or by plain loads, and read back through the swizzle.
#include "lower/kernel/mma/tier.hpp"
#include "lower/term_expr.hpp"

namespace emmy::lower::detail {

bool MmaTier::plan_slab(const std::string& role, const Expr& read, const tir::Axis& x, int x_extent, const tir::Axis& y,
                        int y_extent, int depth, bool swizzled) {
  SlabChoice c;
  c.read = read;
  c.y_inner = innermost_is(read, y.name);
  if (!c.y_inner && !innermost_is(read, x.name))
    return reject(
        fmt::format("STAGE: {}'s innermost index is neither {} nor {}, so its tile has no contiguous rows to copy",
                    tir::print_expr(read), x.name, y.name));
  const tir::Axis &outer = c.y_inner ? x : y, &inner = c.y_inner ? y : x;
  c.rows = c.y_inner ? x_extent : y_extent;
  c.cols = c.y_inner ? y_extent : x_extent;
  c.depth = depth;
  // Rows at a constant element stride: each axis a bare index of exactly one subscript.
  auto bare_once = [&](const std::string& axis) {
    int uses = 0, bare = 0;
    for (const Expr& a : read.args) {
      uses += tir::uses_index(a, axis);
      bare += a.kind == Expr::Kind::Index && a.name == axis;
    }
    return uses == 1 && bare == 1;
  };
  c.strided = bare_once(outer.name) && bare_once(inner.name);
  // Streamed tiles (depth 0: the stage's) by TMA where the tile is a box of the tensor.
  if (depth == 0 && stage_->tma) {
    c.no_tma = tma_refusal(c);
    c.tma = c.no_tma.empty();
    swizzled = swizzled || c.tma;
  }
  c.swizzled = swizzled;
  if (swizzled && (c.cols % 64 != 0 || c.rows % 8 != 0))
    return reject(
        fmt::format("wgmma reads {}'s tile ({} rows of {}) from 128-byte swizzled rows: it needs a multiple of "
                    "64 columns and of 8 rows",
                    read.name, c.rows, c.cols));
  const int buffers = depth > 0 ? depth : stage_->depth;
  plan_.slabs.push_back({role, tir::print_expr(read), outer.name, inner.name, c.rows, c.cols, buffers, c.swizzled,
                         c.tma           ? "tma"
                         : stage_->async ? "cp.async"
                                         : "registers",
                         c.no_tma, ""});
  slab_choices_[role] = std::move(c);
  return true;
}

Slab MmaTier::make_slab(const std::string& name, const std::string& role, const AxisAt& x, const AxisAt& y) {
  auto it = slab_choices_.find(role);
  EMMY_INTERNAL_ASSERT(it != slab_choices_.end(), "a slab the plan did not make");
  const SlabChoice& c = it->second;
  const int buffers = slab_buffers(c);
  Slab s{name, c.read, c.y_inner ? x : y, c.y_inner ? y : x, c.rows, c.cols, 0, {}, c.strided, c.swizzled, {}, buffers};
  if (c.tma)
    s.map = tensor_map_param(s);
  else
    note_no_tma(c);
  s.pitch = slab_pitch(c);
  out_->shared.push_back({name, t_.operand, s.elems() * buffers, c.swizzled ? 1024 : 16});
  return s;
}

void MmaTier::note_no_tma(const SlabChoice& c) {
  if (c.no_tma.empty()) return;
  Warning w{"W055", fmt::format("STAGE with tma: {}'s tiles are copied with cp.async: {}", c.read.name, c.no_tma)};
  if (std::find(program_->warnings.begin(), program_->warnings.end(), w) == program_->warnings.end())
    program_->warnings.push_back(std::move(w));
}

int64_t MmaTier::planned_slab_bytes() const {
  int64_t bytes = 0;
  for (const auto& [role, c] : slab_choices_)
    if (!slab_shares_.count(role))
      bytes += int64_t{c.rows} * slab_pitch(c) * slab_buffers(c) * kir::type_bytes(t_.operand);
  return bytes;
}

bool MmaTier::plan_value_slab(const std::string& role, const Expr& read, const tir::Axis& keys, int chunk,
                              const tir::Axis& tile_axis, int tile) {
  if (!plan_slab(role, read, keys, chunk, tile_axis, tile, 0, wgmma())) return false;
  // The same tensor's tile as a contraction's column slab, its contracted axis read as the tile's
  // (attention backward's dk folds q[i, d] beside the scores' q[i, d_2] over d_2): the tile covers
  // what the k-steps cover, so the contraction's limit keeps it one tile at 0 (in a later pass of
  // sibling tiles in step its columns are past its axis: nothing stores them). Only where both
  // come by TMA, which zero-fills past every edge alike (cp.async clamps one axis, zeroes the other).
  const SlabChoice& mine = slab_choices_.at(role);
  for (const auto& [other, contraction] :
       {std::pair{"col", &first_}, std::pair{"col2", second_ ? &*second_ : nullptr}}) {
    auto it = slab_choices_.find(other);
    if (!contraction || it == slab_choices_.end()) continue;
    const SlabChoice& c = it->second;
    const Expr as_tile = tir::substitute(c.read, {{contraction->axis.name, index_expr(tile_axis.name)}});
    if (tir::print_expr(as_tile) != tir::print_expr(read) || !c.tma || !mine.tma || c.y_inner != mine.y_inner ||
        c.rows != mine.rows || c.cols != mine.cols || c.swizzled != mine.swizzled || c.depth != mine.depth)
      continue;
    slab_shares_[role] = other;
    plan_.slabs.back().shares = other;
    return true;
  }
  return true;
}

std::optional<Slab> MmaTier::sharing_slab(const std::string& role, const AxisAt& x, const AxisAt& y) const {
  auto it = slab_shares_.find(role);
  if (it == slab_shares_.end()) return std::nullopt;
  const std::optional<Slab>& of = it->second == "col" ? kslab_ : kslab2_;
  EMMY_INTERNAL_ASSERT(of.has_value(), "a value slab shares a column slab not made yet");
  const SlabChoice& c = slab_choices_.at(role);
  Slab s = *of;
  s.read = c.read;
  s.outer = c.y_inner ? x : y;
  s.inner = c.y_inner ? y : x;
  return s;
}

K MmaTier::element_index(const Slab& s, const K& outer, const K& inner) {
  b_.push_scope();
  b_.scope().index[s.outer.name] = outer;
  b_.scope().index[s.inner.name] = inner;
  K load = b_.lower(s.read);
  b_.pop_scope();
  return load.args[0];
}

MmaTier::Crew MmaTier::warpgroup_crew() {
  const int rows = 4 * rows_per_warp_;
  K group = i32(warpgroup());
  return Crew{
      .tid = hoisted("crew_tid", kir::binary(kir::BinOp::Rem, kir::special(kir::Special::ThreadIdx), ci32(4 * kWarp))),
      .threads = 4 * kWarp,
      .row0 = hoisted("crew_row0", mul(group, ci32(rows))),
      .rows = rows,
      .barrier = hoisted("crew_barrier", add(group, ci32(kCrewBarrier0)))};
}

kir::Stmt MmaTier::crew_barrier(const Crew* crew) {
  if (!crew) return kir::barrier();
  return kir::intrinsic(kir::IntrinsicId::BarSync, {}, {crew->barrier}, {crew->threads});
}

int MmaTier::crew_threads(const Crew* crew) const { return crew ? crew->threads : out_->block_threads; }

K MmaTier::crew_tid(const Crew* crew) { return crew ? crew->tid : kir::special(kir::Special::ThreadIdx); }

K MmaTier::crew_row(const Crew* crew, K r) { return crew ? add(crew->row0, std::move(r)) : r; }

void MmaTier::fill(const Slab& s, const K& buf, const K& outer_base, const K& inner_base, const Crew* crew) {
  if (!stage_->async || !s.strided) return fill_by_chunks(s, buf, outer_base, inner_base, crew);
  // A tile wholly inside the tensor whose every chunk is 16-byte aligned (the first element
  // and the row stride multiples of 8) copies with one cp.async a chunk and no tests; only
  // the ragged edges and odd strides take the checked path.
  K first = let(b_.fresh("tile_src"), element_index(s, outer_base, inner_base));
  K stride = let(b_.fresh("row_stride"),
                 kir::binary(kir::BinOp::Sub, element_index(s, add(outer_base, i64(1)), inner_base), first));
  K inside = kir::binary(kir::BinOp::And, kir::binary(kir::BinOp::Le, add(outer_base, i64(s.rows)), s.outer.size),
                         kir::binary(kir::BinOp::Le, add(inner_base, i64(s.cols)), s.inner.size));
  auto multiple_of_8 = [](const K& v) {
    return kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, v, i64(8)), i64(0));
  };
  K whole =
      kir::binary(kir::BinOp::And, inside, kir::binary(kir::BinOp::And, multiple_of_8(first), multiple_of_8(stride)));
  const int per_row = s.cols / 8, chunks = (crew ? crew->rows : s.rows) * per_row;
  const std::string cv = b_.fresh("chunk");
  K c32 = kir::var({cv}, ScalarType::I32);
  const int threads = crew_threads(crew);
  const K tid = crew_tid(crew);
  std::vector<kir::Stmt> fast = b_.nested([&] {
    if (threads % per_row == 0 && chunks % threads == 0 && (!s.swizzled || (threads / per_row) % 8 == 0)) {
      // The thread's chunks are rows apart by threads / per_row, in one column: one address
      // pair per tile, then a constant step each (unrolled: the copies issue back to back).
      const int row_step = threads / per_row;
      K r0 = hoisted("fill_row", crew_row(crew, kir::binary(kir::BinOp::Div, tid, ci32(per_row))));
      K q0 = hoisted("fill_col", mul(kir::binary(kir::BinOp::Rem, tid, ci32(per_row)), ci32(8)));
      K src0 = let(b_.fresh("fill_src"), add(first, add(mul(as(r0, I64), stride), as(q0, I64))));
      K src_step = let(b_.fresh("fill_step"), mul(stride, i64(row_step)));
      K dst0 = let(b_.fresh("fill_at"), add(s.buffer_start(buf), s.offset(r0, q0)));
      const int64_t row_elems = s.swizzled ? 64 : s.pitch;  // swizzled: rows 8k apart keep their chunk order
      for (int i = 0; i < chunks / threads; ++i) {
        K dst = i ? add(dst0, ci32(int64_t{i} * row_step * row_elems)) : dst0;
        K src = i ? add(src0, mul(src_step, i64(i))) : src0;
        emit(kir::intrinsic(kir::IntrinsicId::CpAsync16, {}, {kir::shared_addr(s.array, dst), src}, {}, s.read.name));
      }
      return;
    }
    std::vector<kir::Stmt> chunk = b_.nested([&] {
      K r32 = crew_row(crew, kir::binary(kir::BinOp::Div, c32, ci32(per_row)));
      K q32 = mul(kir::binary(kir::BinOp::Rem, c32, ci32(per_row)), ci32(8));
      K dst = add(s.buffer_start(buf), s.offset(r32, q32));
      K src = add(first, add(mul(as(r32, I64), stride), as(q32, I64)));
      emit(kir::intrinsic(kir::IntrinsicId::CpAsync16, {}, {kir::shared_addr(s.array, dst), src}, {}, s.read.name));
    });
    kir::Stmt loop = kir::for_loop(cv, ScalarType::I32, tid, ci32(chunks), std::move(chunk));
    loop.step = threads;
    emit(std::move(loop));
  });
  emit(kir::if_then(whole, std::move(fast), b_.nested([&] { fill_by_chunks(s, buf, outer_base, inner_base, crew); })));
}

void MmaTier::fill_by_chunks(const Slab& s, const K& buf, const K& outer_base, const K& inner_base, const Crew* crew) {
  const int per_row = s.cols / 8, chunks = (crew ? crew->rows : s.rows) * per_row;
  const int threads = crew_threads(crew);
  // A real loop over the thread's chunks (not unrolled): unrolled, the compiler hoists each
  // chunk's addresses out of the key loop and the fragments spill.
  const std::string cv = b_.fresh("chunk");
  K c32 = kir::var({cv}, ScalarType::I32);
  std::vector<kir::Stmt> chunk = b_.nested([&] {
    K r32 = crew_row(crew, kir::binary(kir::BinOp::Div, c32, ci32(per_row)));
    K q32 = mul(kir::binary(kir::BinOp::Rem, c32, ci32(per_row)), ci32(8));
    K at32 = s.offset(r32, q32);
    K r = let(b_.fresh("fill_row"), as(r32, I64)), q = let(b_.fresh("fill_col"), as(q32, I64));
    K orow = add(outer_base, r), icol = add(inner_base, q);
    K dst = let(b_.fresh("fill_at"), as(add(s.buffer_start(buf), at32), I64));
    auto element = [&](int u) {
      b_.push_scope();
      bind(s.outer, orow);
      bind(s.inner, add(icol, i64(u)));
      K v = b_.lower(s.read);
      b_.pop_scope();
      return v;
    };
    std::vector<kir::Stmt> by_elements = b_.nested([&] {
      for (int u = 0; u < 8; ++u) {
        K ok = kir::binary(kir::BinOp::And, lt(orow, s.outer.size), lt(add(icol, i64(u)), s.inner.size));
        emit(kir::store(kir::Space::Shared, s.array, i32(add(dst, i64(u))),
                        kir::select(ok, as(element(u), t_.operand), kir::cf(0, t_.operand))));
      }
    });
    if (!stage_->async) {
      for (kir::Stmt& x : by_elements) emit(std::move(x));
      return;
    }
    // The chunk's first element: the copy only runs when it is inside.
    K index = let(b_.fresh("fill_src"), element_index(s, orow, icol));
    K whole = kir::binary(kir::BinOp::And, lt(orow, s.outer.size),
                          kir::binary(kir::BinOp::Le, add(icol, i64(8)), s.inner.size));
    whole = kir::binary(kir::BinOp::And, whole,
                        kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, index, i64(8)), i64(0)));
    std::vector<kir::Stmt> copy;
    copy.push_back(
        kir::intrinsic(kir::IntrinsicId::CpAsync16, {}, {kir::shared_addr(s.array, i32(dst)), index}, {}, s.read.name));
    emit(kir::if_then(whole, std::move(copy), std::move(by_elements)));
  });
  kir::Stmt loop = kir::for_loop(cv, ScalarType::I32, crew_tid(crew), ci32(chunks), std::move(chunk));
  loop.step = threads;
  emit(std::move(loop));
}

void MmaTier::commit() {
  if (stage_->async) emit(kir::intrinsic(kir::IntrinsicId::CpAsyncCommit, {}, {}));
}

void MmaTier::wait(int pending, const std::optional<K>& tma_buf, bool boxes_only) {
  // A ring of boxes only has no cp.async group to wait for, and nothing written through the
  // generic proxy for wgmma to read: a tile's zeros (a tensor without elements) are fenced by
  // the thread that writes them, before its mbarrier arrival (tma_fill).
  if (stage_->async && !boxes_only) emit(kir::intrinsic(kir::IntrinsicId::CpAsyncWait, {}, {}, {pending}));
  if (tma_buf && !tma_bars_.empty()) wait_phase(tma_bars_, tma_phase_, *tma_buf);
  if (wgmma() && !boxes_only) emit(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));
  if (!boxes_only) emit(kir::barrier());
}

K MmaTier::swizzled_row_address(const Slab& s, const K& buf, const std::vector<std::pair<int, int>>& at, const K& m,
                                const K& outer_dyn, const K& inner_dyn) {
  for (auto [r, c] : at) EMMY_INTERNAL_ASSERT(r % 8 == 0 && c % 8 == 0, "ldmatrix blocks off the swizzle's 8 x 8 grid");
  K drow = ci32(0), dcol = ci32(0);
  for (size_t i = at.size(); i-- > 1;) {
    K is_i = kir::binary(kir::BinOp::Eq, m, ci32(static_cast<int64_t>(i)));
    drow = kir::select(is_i, ci32(at[i].first - at[0].first), drow);
    dcol = kir::select(is_i, ci32(at[i].second - at[0].second), dcol);
  }
  using kir::BinOp;  // columns >= 0: shifts and masks, not signed division
  K phase = hoisted("ldm_phase", kir::binary(BinOp::Rem, lane32_, ci32(8)));
  // The common case in one register a lane: the matrices' columns within one panel and their
  // chunk offsets (0 or 1 chunk) on bits the constant chunk leaves clear, so that
  // (c + d) ^ phase = c ^ (d ^ phase); with the row (a multiple of 64 elements) or-ed in, the
  // address is the tile's base plus that register XOR a constant, plus an immediate.
  const int c0 = at[0].second;
  int spread = 0, delta_bits = 0;
  for (auto [r, c] : at) {
    spread = std::max(spread, c - c0);
    delta_bits |= (c - c0) / 8;
  }
  // A warp's column offset in whole panels (f..x8 warps: 64 columns each) moves whole panels,
  // once per kernel; the chunk then depends on constants and the lane only.
  const bool panels = whole_panels(inner_dyn);
  auto panel_offset = [&] {
    return !panels || inner_dyn.kind == K::Kind::Const
               ? ci32(0)
               : hoisted("ldm_panel", mul(kir::binary(BinOp::Shr, inner_dyn, ci32(6)), ci32(int64_t{s.rows} * 64)));
  };
  K row = mul(add(phase, drow), ci32(64));
  if (panels && c0 % 64 + spread < 64 && ((c0 % 64 / 8) & delta_bits) == 0) {
    K lane_chunk =
        kir::binary(BinOp::Shl, kir::binary(BinOp::BitXor, kir::binary(BinOp::Shr, dcol, ci32(3)), phase), ci32(3));
    K lane = hoisted("ldm_swz", kir::binary(BinOp::BitOr, row, lane_chunk));
    K tile = b_.shared(add(add(s.buffer_start(buf), mul(outer_dyn, ci32(64))), panel_offset()));
    return add(add(tile, kir::binary(BinOp::BitXor, lane, ci32(c0 % 64 / 8 * 8))),
               ci32(int64_t{at[0].first} * 64 + int64_t{c0 / 64} * s.rows * 64));
  }
  K row_part = hoisted("ldm_row", row);
  K col = add(hoisted("ldm_col", dcol), ci32(at[0].second));
  K panel_dyn = panel_offset();
  if (!panels) col = add(inner_dyn, col);
  K chunk =
      kir::binary(BinOp::BitXor, kir::binary(BinOp::BitAnd, kir::binary(BinOp::Shr, col, ci32(3)), ci32(7)), phase);
  K within = kir::binary(BinOp::Shl, chunk, ci32(3));
  if (s.cols > 64) within = add(within, mul(kir::binary(BinOp::Shr, col, ci32(6)), ci32(int64_t{s.rows} * 64)));
  K tile = b_.shared(add(add(add(s.buffer_start(buf), mul(outer_dyn, ci32(64))), row_part), panel_dyn));
  return add(add(tile, within), ci32(int64_t{at[0].first} * 64));
}

bool MmaTier::whole_panels(const K& dyn) const {
  auto is = [&](const K& v) { return dyn.kind == K::Kind::Var && v.kind == K::Kind::Var && dyn.reg == v.reg; };
  if (dyn.kind == K::Kind::Const) return dyn.ival == 0;
  return (is(warp_cols32_) && cols_per_warp_ % 64 == 0) || (is(warp_rows32_) && rows_per_warp_ % 64 == 0);
}

std::pair<K, K> MmaTier::tile_base(const Slab& s, const K& origin) {
  return {s.outer.name == s.stream ? origin : s.outer.base, s.inner.name == s.stream ? origin : s.inner.base};
}

void MmaTier::fill_tile(const Slab& s, const K& buf, const K& origin) {
  auto [outer, inner] = tile_base(s, origin);
  fill(s, buf, outer, inner);
}

}  // namespace emmy::lower::detail
