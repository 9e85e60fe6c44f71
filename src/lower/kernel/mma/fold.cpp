// A fold of a max-rescaled sum whose key is a contraction (the online softmax): scores on the
// tensor cores, key bounds and masks, the per-tile update, and the fold's results.
#include "lower/kernel/mma/tier.hpp"
#include "lower/linear_expr.hpp"

namespace emmy::lower::detail {

void MmaTier::fold_limits(kir::Program& program) const {
  const int ks = std::max(1, t_.k_chunk), bound = ks * kAtomK;
  program.limits.push_back({first_.axis.size, bound,
                            fmt::format("{}'s fragments are kept in registers, {} k-steps of 16 deep (k{} of TILE); "
                                        "raise k to cover {} (k{} covers {})",
                                        first_.row.name, ks, ks, first_.axis.size, 2 * ks, 2 * bound)});
  if (second_)
    program.limits.push_back({second_->axis.size, bound,
                              fmt::format("{}'s fragments are kept {} k-steps of 16 deep (k{} of TILE); raise k to "
                                          "cover {} (k{} covers {})",
                                          second_->row.name, ks, ks, second_->axis.size, 2 * ks, 2 * bound)});
}

void MmaTier::emit_fold() {
  const lir::Stmt& fold = *fold_;
  const int fm = t_.frag_m, fn = t_.frag_n, ks = std::max(1, t_.k_chunk);
  const int bound = ks * kAtomK;  // the contracted size the fragments cover (fold_limits)
  const std::string qf = b_.fresh("row_frag"), kf = b_.fresh("col_frag"), vf = b_.fresh("val_frag"),
                    pf = b_.fresh("p_frag"), sc = b_.fresh("score");
  // A second contraction in the weight (plan_summed): its row fragments and scores beside the first's.
  const std::string qf2 = second_ ? b_.fresh("row_frag") : "", sc2 = second_ ? b_.fresh("score") : "";
  const K rows = KernelBuilder::size_value(row_axis_.size);
  // The keys this block folds: the whole axis, or a split's range (REDUCE), uniform per block.
  K keys_lo = fold.range.empty() ? i64(0) : let(b_.fresh("keys_lo"), as(b_.lower(fold.range[0]), I64));
  K keys = fold.range.empty() ? KernelBuilder::size_value(fold.axis.size)
                              : let(b_.fresh("keys_hi"), as(b_.lower(fold.range[1]), I64));
  // A predicate comparing the key with the row (causal: j <= i) bounds the keys any row of
  // this block folds: blocks of keys masked for every row are never loaded nor computed.
  const std::optional<KeyBound>& key_limit = key_limit_;
  if (key_limit)
    emit(kir::comment(
        fmt::format("the fold's predicate {} bounds the keys of this block's rows", tir::print_expr(fold.where[0]))));
  for (const std::optional<KeyBound>& bound : {key_limit_, key_other_}) {
    if (!bound) continue;
    const int64_t rows_per_block = int64_t{t_.warps_m} * rows_per_warp_;
    K first_row = row_block0_, last_row = add(row_block0_, i64(rows_per_block - 1));
    K edge = add(bound->upper ? last_row : first_row, i64(bound->offset));
    if (bound->upper)
      keys = let(b_.fresh("keys_hi"), kir::binary(kir::BinOp::Min, keys, edge));
    else
      keys_lo = let(b_.fresh("keys_lo"), kir::binary(kir::BinOp::Max, keys_lo, edge));
  }
  scale_ = general_ || summed_ ? std::nullopt : key_scale(fold);
  const int ne = tile_loop_ ? tile_loop_->tile / kAtomN : 0;  // the vector field's n-atoms a tile
  // The loop-invariant operand (Q): in registers, or in a shared slab (plan_staging decides).
  const bool q_regs = plan_.row_fragments_in_registers;
  std::optional<Slab> qslab, qslab2;
  if (q_regs) {
    emit(kir::comment(fmt::format("{}'s fragments are loop-invariant over {}: loaded once ({} k-steps)",
                                  first_.row.name, fold.axis.name, ks)));
    emit(kir::decl(qf, U32, fm * ks * 4));
    for (int a = 0; a < fm; ++a)
      for (int s = 0; s < ks; ++s)
        load_fragment(first_.row, kir::mma_a_coord, 4, qf, (a * ks + s) * 4,
                      axis_at(row_axis_, add(row0_, i64(a * kAtomM)), false),
                      axis_at(first_.axis, i64(s * kAtomK), true));
    if (second_) {
      emit(kir::decl(qf2, U32, fm * ks * 4));
      for (int a = 0; a < fm; ++a)
        for (int s = 0; s < ks; ++s)
          load_fragment(second_->row, kir::mma_a_coord, 4, qf2, (a * ks + s) * 4,
                        axis_at(row_axis_, add(row0_, i64(a * kAtomM)), false),
                        axis_at(second_->axis, i64(s * kAtomK), true));
    }
  } else {
    if (wgmma())
      emit(
          kir::comment(fmt::format("{}'s block is loop-invariant over {}: copied to shared memory once, read by the "
                                   "scores' wgmma through descriptors",
                                   first_.row.name, fold.axis.name)));
    else
      emit(kir::comment(fmt::format(
          "{}'s block is loop-invariant over {}: copied to shared memory once, its "
          "fragments re-read each block (registers: {} with them kept, over {})",
          first_.row.name, fold.axis.name, fold_fragment_regs(fm, fn, ks, ne, true), b_.knobs().fold_fragment_regs)));
    qslab = make_slab(b_.fresh("row_tile"), "row", axis_at(row_axis_, row_block0_, false),
                      axis_at(first_.axis, i64(0), true));
    EMMY_INTERNAL_ASSERT(!wgmma() || qslab->inner.name == first_.axis.name,
                         "the row slab is not K-major (the plan checks it)");
    if (!wgmma()) emit(kir::decl(qf, U32, fm * 4));
    if (second_)
      qslab2 = make_slab(b_.fresh("row_tile"), "row2", axis_at(row_axis_, row_block0_, false),
                         axis_at(second_->axis, i64(0), true));
  }
  // With producer warps the ring may already hold the next tile's keys when the results are
  // stored, so they are staged through the row slab instead, which the consumers refill each pass.
  const bool rows_stage_out = qslab && plan_.producer_threads > 0;
  // Taking turns (a ring wholly by TMA), each warpgroup fills, reads and stages through its own
  // rows of the slab alone: no barrier of all the consumers, and one warpgroup's stores and next
  // tile's rows go under the others' key blocks.
  std::optional<Crew> crew;
  if (plan_.crews) {
    EMMY_INTERNAL_ASSERT(rows_stage_out && qslab->swizzled, "crews without a swizzled row slab (the plan checks it)");
    crew = warpgroup_crew();
  }
  auto fill_rows = [&] {
    for (const std::optional<Slab>& r : {qslab, qslab2})
      if (r)
        fill(*r, i64(0), r->outer.name == row_axis_.name ? row_block0_ : i64(0),
             r->inner.name == row_axis_.name ? row_block0_ : i64(0), crew ? &*crew : nullptr);
    commit();
  };
  if (qslab && !rows_stage_out) fill_rows();
  auto tile_body = [&](const K& tile0) {
    if (rows_stage_out) fill_rows();
    // Carriers: per m-atom, one value per row slot of C (rows g and g + 8), and the vector
    // field as C fragments over the tile.
    std::optional<LaneCarrier> lanes;
    if (general_)
      lanes = general_carrier(fm);
    else
      emit(kir::comment(fmt::format("carrier ({}) through the proved monoid {}, per row of the warp's {} rows",
                                    field_names(), fold.monoid, rows_per_warp_)));
    std::vector<std::string> carrier(fold.fields.size());
    for (size_t f = 0; f < fold.fields.size() && !general_; ++f) {
      carrier[f] = b_.fresh("run_" + fold.fields[f].name);
      ScalarType t = scalar_of(fold.fields[f].dtype);
      if (f == value_field_ && value_read_) {
        emit(kir::decl(carrier[f], F32, kir::cf(0, F32), fm * ne * 4));
        continue;
      }
      if (is_flag(f)) continue;
      double init = f == rescaled_.key ? -std::numeric_limits<double>::infinity() : 0.0;
      EMMY_INTERNAL_ASSERT(t == F32, "a carrier field that is not f32 (the plan checks it)");
      emit(kir::decl(carrier[f], F32, kir::cf(init, F32), fm * 2));
    }
    // wgmma reads B from shared memory, and every P fragment of the block stays live until
    // the batch of P @ V completes.
    if (!wgmma()) emit(kir::decl(kf, U32, fn * 2));
    if (!general_) emit(kir::decl(pf, U32, wgmma() ? fm * 4 * (fn / 2) : fm * 4));
    int widest = ne;  // the value fragments of the widest register tile
    for (const Sibling& s : siblings_) widest = std::max(widest, s.loop->tile / kAtomN);
    if (value_read_ && !wgmma()) emit(kir::decl(vf, U32, 2 * widest));
    const std::vector<std::string> sibling_accs = sibling_carriers(fm);
    std::vector<K> sibling_tile0;  // each sibling's first column this pass: the pass times its tile
    for (const Sibling& s : siblings_)
      sibling_tile0.push_back(s.loop->tile == tile_loop_->tile
                                  ? tile0
                                  : mul(kir::binary(kir::BinOp::Div, tile0, i64(tile_loop_->tile)), i64(s.loop->tile)));
    const std::string jv = b_.fresh(fold.axis.name + "0");
    const int chunk = fn * kAtomN;
    std::vector<const Slab*> slabs;
    if (stage_) {
      kslab_ =
          make_slab(b_.fresh("col_tile"), "col", axis_at(fold.axis, i64(0), false), axis_at(first_.axis, i64(0), true));
      kslab_->stream = fold.axis.name;
      slabs.push_back(&*kslab_);
      if (second_) {
        kslab2_ = make_slab(b_.fresh("col_tile"), "col2", axis_at(fold.axis, i64(0), false),
                            axis_at(second_->axis, i64(0), true));
        kslab2_->stream = fold.axis.name;
        slabs.push_back(&*kslab2_);
      }
      // A value slab holding a column slab's tile reads that slab's buffers (filled once).
      auto value_slab = [&](const std::string& role, const AxisAt& tile_at) {
        const AxisAt keys = axis_at(fold.axis, i64(0), true);
        std::optional<Slab> s = sharing_slab(role, keys, tile_at);
        const bool own = !s;
        if (own) s = make_slab(b_.fresh("val_tile"), role, keys, tile_at);
        s->stream = fold.axis.name;
        return std::pair{*s, own};
      };
      std::vector<bool> own;
      if (value_read_) {
        auto [s, mine] = value_slab("value", axis_at(tile_loop_->axis, tile0, false));
        vslab_ = s;
        own.push_back(mine);
      }
      for (size_t i = 0; i < siblings_.size(); ++i) {
        auto [s, mine] = value_slab(sibling_role(i), axis_at(siblings_[i].loop->axis, sibling_tile0[i], false));
        siblings_[i].slab = s;
        own.push_back(mine);
      }
      if (value_read_ && own[0]) slabs.push_back(&*vslab_);
      for (size_t i = 0; i < siblings_.size(); ++i)
        if (own[i + (value_read_ ? 1 : 0)]) slabs.push_back(&*siblings_[i].slab);
    }
    const std::string orun = value_read_ ? carrier[value_field_] : std::string();
    auto block_math = [&](const K& j0, const K& buf, const Issue& issue, bool masked, const std::optional<K>& pending) {
      emit(kir::comment(fmt::format("scores of {} keys: {} on the tensor cores", chunk,
                                    general_ ? plan_.contraction : tir::print_expr(first_.around))));
      // With wgmma the block's first k-step writes the scores (scale-d false): nothing to zero first.
      emit(wgmma() ? kir::decl(sc, F32, fm * fn * 4) : kir::decl(sc, F32, kir::cf(0, F32), fm * fn * 4));
      if (wgmma()) {
        if (plan_.turns > 0) {  // this warpgroup's turn at the tensor cores
          emit(kir::comment("ping-pong: wait for this warpgroup's turn to issue"));
          emit(kir::intrinsic(kir::IntrinsicId::BarSync, {}, {turn_barrier(false)}, {kTurnThreads}));
        }
        wgmma_fence();
        for (int s = 0; s < ks; ++s) {
          BOperand b = b_operand(*kslab_, buf, first_.axis.name, s);
          wgmma_step(sc, chunk, a_operand(*qslab, s, i64(0)), b, s > 0);
        }
        if (!plan_.overlap) {
          wgmma_done(sc, fm * fn * 4, issue);  // the next tile's copies issued under the scores' wgmma
          if (second_) {
            emit(kir::comment(fmt::format("the weight's second contraction, {} * {} over {}",
                                          tir::print_expr(second_->row), tir::print_expr(second_->col),
                                          second_->axis.name)));
            emit(kir::decl(sc2, F32, fm * fn * 4));
            wgmma_fence();
            for (int s = 0; s < ks; ++s)
              wgmma_step(sc2, chunk, a_operand(*qslab2, s, i64(0)), b_operand(*kslab2_, buf, second_->axis.name, s),
                         s > 0);
            wgmma_done(sc2, fm * fn * 4);
          }
        } else {
          wgmma_commit();
          if (pending) {  // the previous block's P @ V runs under this block's softmax
            emit(kir::comment("the previous block's P @ V, in flight under this block's softmax"));
            issue_pv(orun, fn, ne, pf, *pending, *vslab_);
            wgmma_commit();
          }
          if (plan_.turns > 0) {  // the next warpgroup's turn while this one's softmax runs
            emit(kir::comment("ping-pong: the next warpgroup's turn"));
            emit(kir::intrinsic(kir::IntrinsicId::BarArrive, {}, {turn_barrier(true)}, {kTurnThreads}));
          }
          wgmma_wait(pending ? 1 : 0, sc, fm * fn * 4);
        }
      }
      // mma.sync: every k-step, past D too (zero padding, as in a contraction), of each contraction.
      auto scores = [&](const Contraction& c, const std::string& acc, const std::optional<Slab>& cols,
                        const std::optional<Slab>& rows, const std::string& row_frags) {
        for (int s = 0; s < ks; ++s) {
          if (stage_)
            drain_fragments(
                *cols, buf, kir::mma_b_coord, 2, fn, kf, 0, ci32(0), ci32(0),
                [&](int n) {
                  return std::pair{s * kAtomK, n * kAtomN};
                },
                cols->outer.name == c.axis.name);
          else
            for (int n = 0; n < fn; ++n)
              load_fragment(c.col, kir::mma_b_coord, 2, kf, n * 2, axis_at(c.axis, i64(s * kAtomK), true),
                            axis_at(fold.axis, add(j0, i64(n * kAtomN)), false));
          if (rows)
            drain_fragments(
                *rows, i64(0), kir::mma_a_coord, 4, fm, qf, 0, warp_rows32_, ci32(0),
                [&](int a) {
                  return std::pair{a * kAtomM, s * kAtomK};
                },
                rows->outer.name == row_axis_.name);
          for (int a = 0; a < fm; ++a)
            for (int n = 0; n < fn; ++n)
              mma(acc, c_index(a, n, 0, fn), rows ? qf : row_frags, (rows ? a : a * ks + s) * 4, kf, n * 2);
        }
      };
      if (!wgmma()) {
        scores(first_, sc, kslab_, qslab, qf);
        if (second_) {
          emit(kir::comment(fmt::format("the weight's second contraction, {} * {} over {}",
                                        tir::print_expr(second_->row), tir::print_expr(second_->col),
                                        second_->axis.name)));
          emit(kir::decl(sc2, F32, kir::cf(0, F32), fm * fn * 4));
          scores(*second_, sc2, kslab2_, qslab2, qf2);
        }
      }
      if (!wgmma()) issue();
      // With wgmma, masks in 32-bit offsets from the block's corner where the predicate is
      // absent or the key bound (col - row against a constant): per block two differences, per
      // element two compares with constants, not each element's 64-bit indices. (The mma.sync
      // folds keep the indices: f2x8 has no register left for the lane parts.)
      auto lane_mask = [&]() -> std::optional<BlockMask> {
        if (wgmma() && masked && (fold.where.empty() || (key_limit && key_exact_ && !key_other_)))
          return block_mask(j0, keys, chunk, key_limit);
        return std::nullopt;
      };
      if (summed_) {
        emit_sibling_updates(sibling_accs, sibling_tile0, fm, fn, sc, sc2, pf, vf, j0, keys, buf, masked);
        emit(kir::comment(fmt::format("P = {} in place{}", tir::print_expr(first_.around),
                                      masked ? ", 0 past the keys and outside the fold's predicate" : "")));
        for_each_c(
            fm, fn,
            [&](int a, int n, int e, const K& row, const K& col) {
              K slot = elem(sc, c_index(a, n, e, fn), F32);
              enter_score(row, col, slot);
              if (second_) b_.scope().regs[std::string(contracted_reg(1))] = elem(sc2, c_index(a, n, e, fn), F32);
              K w = per_score(as(b_.lower(first_.around), F32));
              K ok = counted(col, keys);
              b_.pop_scope();
              emit(kir::assign(slot.reg, masked ? kir::select(ok, w, kir::cf(0, F32)) : w));
            },
            j0);
        retire_pv(orun, fm, ne, pending);
        return emit_pv(orun, fm, fn, ne, sc, pf, vf, j0, tile0, buf);
      }
      if (general_) {
        const std::optional<BlockMask> bm = lane_mask();
        return emit_general_update(*lanes, fm, fn, sc, j0, [&](int a, int n, int e, const K& col) -> std::optional<K> {
          if (!masked) return std::nullopt;
          if (bm) return element_mask(*bm, a, n, e, key_limit);
          return counted(col, keys);
        });
      }
      // Each score element: the key field's lift around the contraction, -inf where the
      // key is past the end or the fold's predicate excludes it.
      emit(kir::comment(fmt::format(
          "lift {}: {}{}{}", fold.fields[rescaled_.key].name, tir::print_expr(first_.around),
          masked ? fmt::format(", masked to -inf past {} and outside the fold's predicate", fold.axis.size) : "",
          scale_ ? "; its positive scale waits for the row max and the exponential" : "")));
      const std::optional<BlockMask> bm = lane_mask();
      if (!(scale_ && !masked))  // unmasked raw scores are the lift, up to the positive scale
        for_each_c(
            fm, fn,
            [&](int a, int n, int e, const K& row, const K& col) {
              K slot = elem(sc, c_index(a, n, e, fn), F32);
              enter_score(row, col, slot);
              K v = scale_ ? slot : per_score(as(b_.lower(first_.around), F32));
              K ok = bm ? element_mask(*bm, a, n, e, key_limit) : counted(col, keys);
              b_.pop_scope();
              emit(kir::assign(
                  slot.reg, masked ? kir::select(ok, v, kir::cf(-std::numeric_limits<double>::infinity(), F32)) : v));
            },
            j0);
      emit_online_update(carrier, fm, fn, ne, sc, pf, vf, j0, tile0, buf, pending);
    };
    if (plan_.overlap)
      emit_overlapped_keys(
          jv, keys_lo, keys, chunk, slabs,
          [&](const K& j0, const K& buf, bool masked, const std::optional<K>& pending) {
            block_math(
                j0, buf, [] {}, masked, pending);
          },
          [&](const K& buf) {
            wgmma_fence();
            issue_pv(orun, fn, ne, pf, buf, *vslab_);
            wgmma_commit();
            wgmma_wait(0, orun, fm * ne * 4);
          },
          crew ? &*crew : nullptr);
    if (!plan_.overlap)
      stream_loop(jv, keys_lo, keys, chunk, slabs, true, [&](const K& j0, const K& buf, const Issue& issue) {
        // A block of keys inside the axis, and (under a key bound) wholly visible to this warp's
        // rows, needs no mask: only the ragged last block and the diagonal ones do.
        std::optional<K> interior;
        if (fold.where.empty()) interior = kir::binary(kir::BinOp::Le, add(j0, i64(chunk)), keys);
        if (key_limit && key_exact_) {  // the predicate is the bounds alone
          // Per warp, or per warpgroup with wgmma (whose warps must take the same branch).
          const K& rows0 = wgmma() ? group_row0_ : row0_;
          const int64_t span = wgmma() ? 4 * rows_per_warp_ : rows_per_warp_;
          interior = kir::binary(kir::BinOp::Le, add(j0, i64(chunk)), keys);
          for (const std::optional<KeyBound>& bound : {key_limit_, key_other_}) {
            if (!bound) continue;
            K visible = bound->upper ? kir::binary(kir::BinOp::Le, add(j0, i64(chunk)), add(rows0, i64(bound->offset)))
                                     : kir::binary(kir::BinOp::Ge, j0, add(rows0, i64(span - 1 + bound->offset)));
            interior = kir::binary(kir::BinOp::And, *interior, visible);
          }
        }
        // The interior blocks (all but the ragged last and the diagonal ones) run a straight-line
        // copy of the block's math without the mask: one basic block the compiler schedules whole.
        if (interior) {
          std::vector<kir::Stmt> masked = b_.nested([&] { block_math(j0, buf, issue, true, {}); });
          LaneFloats lf = lane_floats(j0);
          lane_floats_ = &lf;
          std::vector<kir::Stmt> fast = b_.nested([&] { block_math(j0, buf, issue, false, {}); });
          lane_floats_ = nullptr;
          K test = *interior;
          if (std::optional<K> exact = lane_floats_exact(lf)) test = kir::binary(kir::BinOp::And, *exact, test);
          emit(kir::if_then(test, std::move(fast), std::move(masked)));
        } else
          block_math(j0, buf, issue, true, {});
      });
    if (general_) return emit_general_results(*lanes, fm, rows);
    emit_fold_results(carrier, fm, ne, tile0, rows, rows_stage_out ? &*qslab : nullptr, crew ? &*crew : nullptr);
    emit_sibling_results(sibling_accs, sibling_tile0, fm, rows);
  };
  // A persistent kernel's turns go round all its tiles (kernel.cpp); a tile's, its passes.
  if (!plan_.persistent) turns_begin();
  if (!tile_loop_) {
    tile_body(i64(0));
  } else if (!siblings_.empty() && siblings_in_one_pass(bound)) {
    tile_body(i64(0));
  } else if (!siblings_.empty()) {
    // Sibling register tiles in step: pass t folds tile t of each (a tile past its axis's end
    // computes columns nothing stores), so each pass over the keys serves every tile once.
    K passes = ceil_div(KernelBuilder::size_value(tile_loop_->axis.size), tile_loop_->tile);
    for (const Sibling& s : siblings_)
      passes =
          kir::binary(kir::BinOp::Max, passes, ceil_div(KernelBuilder::size_value(s.loop->axis.size), s.loop->tile));
    const std::string tv = b_.fresh("tile");
    std::vector<kir::Stmt> tiles = b_.nested([&] { tile_body(mul(kir::var({tv}, I64), i64(tile_loop_->tile))); });
    emit(kir::comment("the sibling register tiles in step, one pass over the keys a tile of each"));
    emit(kir::for_loop(tv, I64, i64(0), passes, std::move(tiles)));
  } else {
    const std::string ev = b_.fresh(tile_loop_->axis.name + "0");
    std::vector<kir::Stmt> tiles = b_.nested([&] { tile_body(kir::var({ev}, I64)); });
    kir::Stmt f = kir::for_loop(ev, I64, i64(0), KernelBuilder::size_value(tile_loop_->axis.size), std::move(tiles));
    f.step = tile_loop_->tile;
    emit(kir::comment(fmt::format("{} in register tiles of {}", tile_loop_->axis.name, tile_loop_->tile)));
    emit(std::move(f));
  }
  if (!plan_.persistent) turns_end();
}

void MmaTier::turns_begin() {
  if (plan_.turns == 0) return;
  emit(kir::comment("ping-pong: the last warpgroup gives the first its first turn"));
  emit(kir::if_then(kir::binary(kir::BinOp::Eq, warpgroup(), i64(plan_.turns - 1)),
                    {kir::intrinsic(kir::IntrinsicId::BarArrive, {}, {ci32(kTurnBarrier0)}, {kTurnThreads})}));
}

void MmaTier::turns_end() {
  if (plan_.turns == 0) return;
  emit(kir::comment("ping-pong: the first warpgroup takes the last hand-over"));
  emit(kir::if_then(kir::binary(kir::BinOp::Eq, warpgroup(), i64(0)),
                    {kir::intrinsic(kir::IntrinsicId::BarSync, {}, {ci32(kTurnBarrier0)}, {kTurnThreads})}));
}

int MmaTier::fold_fragment_regs(int fm, int fn, int ks, int ne, bool keep_rows) {
  return fm * 4 * (keep_rows ? ks : 1) + fm * fn * 4 + fm * ne * 4 + 2 * fn + fm * 4 + 2 * ne;
}

void MmaTier::enter_score(const K& row, const K& col, const K& score) {
  b_.push_scope();
  bind(axis_at(row_axis_, {}, false), row);
  bind(axis_at(fold_->axis, {}, false), col);
  // In arithmetic the indices are exact: a key past the end is masked and a row past it is
  // never stored, so only addresses need the clamp.
  b_.scope().value[row_axis_.name] = row;
  b_.scope().value[fold_->axis.name] = col;
  b_.scope().regs[std::string(kContracted)] = score;
}

K MmaTier::counted(const K& col, const K& keys) {
  K ok = lt(col, keys);
  if (!fold_->where.empty()) ok = kir::binary(kir::BinOp::And, ok, as(b_.lower(fold_->where[0]), ScalarType::Pred));
  return ok;
}

std::vector<MmaTier::KeyBound> MmaTier::key_bounds(const Expr& w, const lir::Stmt& fold) const {
  if (w.kind == Expr::Kind::Binary && w.op == "&&" && w.args.size() == 2) {
    std::vector<KeyBound> both = key_bounds(w.args[0], fold), right = key_bounds(w.args[1], fold);
    both.insert(both.end(), right.begin(), right.end());
    return both;
  }
  if (std::optional<KeyBound> b = comparison_bound(w, fold)) return {*b};
  return {};
}

// A comparison of the key with the row in any linear form whose key and row coefficients are
// opposite (j <= i, i - j < 8, j + 16 > i, 2 * j > 2 * i - 17, ...): key < row + offset, or
// key >= row + offset.
std::optional<MmaTier::KeyBound> MmaTier::comparison_bound(const Expr& w, const lir::Stmt& fold) const {
  using algebra::Rational;
  static const std::map<std::string, std::string> flip{{"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}};
  if (w.kind != Expr::Kind::Binary || w.args.size() != 2 || !flip.count(w.op)) return std::nullopt;
  auto index = [](const Expr& e) -> std::optional<std::string> {  // the only leaves: index variables
    if (e.kind == Expr::Kind::Index) return e.name;
    return std::nullopt;
  };
  std::optional<algebra::LinearForm> lhs = linear_form(w.args[0], index), rhs = linear_form(w.args[1], index);
  if (!lhs || !rhs) return std::nullopt;
  std::optional<algebra::LinearForm> d;  // lhs - rhs OP 0
  try {
    d = linear_combine("-", *lhs, *rhs);
  } catch (const algebra::Overflow&) {
    return std::nullopt;
  }
  const std::string &key = fold.axis.name, &row = row_axis_.name;
  if (!d || d->coef.size() != 2 || !d->coef.count(key) || !d->coef.count(row) || d->coef[row] != -d->coef[key])
    return std::nullopt;
  // g·(key - row) + C OP 0 with g > 0: key - row OP q = -C / g, rounded to the integers.
  const Rational g = d->coef[key];
  std::string op = g.sign() < 0 ? flip.at(w.op) : w.op;
  try {
    const Rational q = -d->constant / g;
    const int64_t floor_q = algebra::floor_of(q), ceil_q = -algebra::floor_of(-q);
    if (op == "<=") return KeyBound{true, floor_q + 1};
    if (op == "<") return KeyBound{true, ceil_q};
    if (op == ">=") return KeyBound{false, ceil_q};
    return KeyBound{false, floor_q + 1};  // >
  } catch (const algebra::Overflow&) {
    return std::nullopt;
  }
}

std::string MmaTier::field_names() const {
  std::vector<std::string> n;
  for (const lir::CarrierField& f : fold_->fields) n.push_back(f.name);
  return fmt::format("{}", fmt::join(n, ", "));
}

MmaTier::BlockMask MmaTier::block_mask(const K& j0, const K& keys, int chunk, const std::optional<KeyBound>& bound) {
  constexpr int64_t kClamp = int64_t{1} << 30;
  K room =
      let(b_.fresh("key_room"), i32(kir::binary(kir::BinOp::Min, kir::binary(kir::BinOp::Sub, keys, j0), i64(chunk))));
  K diag = ci32(0);
  if (bound) {
    K d = kir::binary(kir::BinOp::Sub, kir::binary(kir::BinOp::Sub, j0, row0_), i64(bound->offset));
    d = kir::binary(kir::BinOp::Max, kir::binary(kir::BinOp::Min, d, i64(kClamp)), i64(-kClamp));
    diag = let(b_.fresh("key_diag"), i32(d));
  }
  return {room, diag};
}

K MmaTier::element_mask(const BlockMask& m, int a, int n, int e, const std::optional<KeyBound>& bound) {
  const LaneAffine& c = c_aff_[e];
  auto lane_part = [&](const char* name, int g, int t) {
    K v = ci32(0);
    if (g) v = add(v, mul(i32(grp_), ci32(g)));
    if (t) v = add(v, mul(i32(tig_), ci32(t)));
    return g || t ? hoisted(name, v) : v;
  };
  K dcol = add(lane_part("lane_col", c.col_g, c.col_t), ci32(n * kAtomN + c.col0));
  K ok = lt(dcol, m.room);
  if (!bound) return ok;
  K drow = add(lane_part("lane_row", c.row_g, c.row_t), ci32(int64_t{a} * kAtomM + c.row0));
  K side = add(kir::binary(kir::BinOp::Sub, dcol, drow), m.diag);
  K kept = bound->upper ? lt(side, ci32(0)) : kir::binary(kir::BinOp::Ge, side, ci32(0));
  return kir::binary(kir::BinOp::And, ok, kept);
}

K MmaTier::tree(std::vector<K> v, kir::BinOp op) {
  while (v.size() > 1) {
    std::vector<K> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(kir::binary(op, v[i], v[i + 1]));
    if (v.size() % 2) next.push_back(v.back());
    v = std::move(next);
  }
  return v.front();
}

std::optional<K> MmaTier::key_scale(const lir::Stmt& fold) {
  b_.push_scope();
  bind(axis_at(row_axis_, {}, false), i64(0));
  bind(axis_at(fold.axis, {}, false), i64(0));
  K raw = kir::var({std::string(kContracted)}, F32);
  b_.scope().regs[std::string(kContracted)] = raw;
  K v = as(b_.lower(first_.around), F32);
  b_.pop_scope();
  auto is_raw = [&](const K& x) { return x.kind == K::Kind::Var && x.reg == raw.reg; };
  auto scale_ok = [&](const K& x) {
    return kir::launch_invariant(x) && kir::positive_for_every_launch(x, b_.loops().tensors.sizes);
  };
  if (v.kind != K::Kind::Binary) return std::nullopt;
  if (v.bin == kir::BinOp::Div && is_raw(v.args[0]) && scale_ok(v.args[1]))  // raw / s = raw * (1 / s)
    return hoist_invariants(kir::binary(kir::BinOp::Div, kir::cf(1, F32), v.args[1]));
  if (v.bin != kir::BinOp::Mul) return std::nullopt;
  for (int side = 0; side < 2; ++side)
    if (is_raw(v.args[side]) && scale_ok(v.args[1 - side])) return hoist_invariants(v.args[1 - side]);
  return std::nullopt;
}

void MmaTier::emit_online_update(const std::vector<std::string>& carrier, int fm, int fn, int ne, const std::string& sc,
                                 const std::string& pf, const std::string& vf, const K& j0, const K& tile0,
                                 const K& buf, const std::optional<K>& pending) {
  const lir::Stmt& fold = *fold_;
  const std::string& mrun = carrier[rescaled_.key];
  const double ninf = -std::numeric_limits<double>::infinity();
  emit(kir::comment("row maxima of the block, across the lanes sharing a row; the carrier's new key"));
  std::vector<K> alpha(fm * 2), use(fm * 2);
  const K exp_scale = kir::cf(rescaled_.scale, F32);
  // The scores' factor before the exp: the key's positive scale, the monoid's, log2(e) for exp2.
  std::optional<K> factor = scale_;
  if (rescaled_.scale != 1) factor = factor ? hoisted("exp_scale", mul(*factor, exp_scale)) : exp_scale;
  for (int a = 0; a < fm; ++a)
    for (int r = 0; r < 2; ++r) {
      std::vector<K> row;
      for (int n = 0; n < fn; ++n)
        for (int e = 0; e < 4; ++e)
          if (slot_of(e) == r) row.push_back(elem(sc, c_index(a, n, e, fn), F32));
      K mx = let(b_.fresh("row_max"), tree(std::move(row), kir::BinOp::Max));
      row_allreduce(mx, kir::BinOp::Max);
      if (scale_) emit(kir::assign(mx.reg, mul(mx, *scale_)));
      K old = elem(mrun, a * 2 + r, F32);
      K mnew = let(b_.fresh("key_new"), kir::binary(kir::BinOp::Max, old, mx));
      // A row with no key yet keeps -inf; subtracting 0 instead keeps exp(-inf - -inf) out.
      use[a * 2 + r] = let(b_.fresh("key_use"),
                           kir::select(kir::binary(kir::BinOp::Eq, mnew, kir::cf(ninf, F32)), kir::cf(0, F32), mnew));
      // exp(c·(x - key)) as exp(c·x - c·key): the monoid's scale c multiplies both (1: nothing).
      K cold = rescaled_.scale == 1 ? old : mul(old, exp_scale);
      if (rescaled_.scale != 1) use[a * 2 + r] = let(b_.fresh("key_scaled"), mul(use[a * 2 + r], exp_scale));
      alpha[a * 2 + r] = let(b_.fresh("rescale"), exp_of_difference(cold, use[a * 2 + r]));
      if (fast_exp()) use[a * 2 + r] = let(b_.fresh("key_log2"), mul(use[a * 2 + r], kir::cf(kLog2e, F32)));
      emit(kir::assign({mrun, a * 2 + r}, mnew));
    }
  emit(kir::comment("p = exp(score - key) in place"));
  for (int a = 0; a < fm; ++a)
    for (int n = 0; n < fn; ++n)
      for (int e = 0; e < 4; ++e) {
        K s = elem(sc, c_index(a, n, e, fn), F32);
        K x = fast_exp()
                  ? mul(s, factor ? hoisted("scale_log2", mul(*factor, kir::cf(kLog2e, F32))) : kir::cf(kLog2e, F32))
              : factor ? mul(s, *factor)
                       : s;
        K p = kir::unary(fast_exp() ? kir::UnOp::Exp2Ftz : kir::UnOp::Exp,
                         kir::binary(kir::BinOp::Sub, x, use[a * 2 + slot_of(e)]));
        emit(kir::assign(s.reg, p));
      }
  for (size_t f : rescaled_.weighted) {
    if (f == value_field_ && value_read_) continue;
    const lir::CarrierField& field = fold.fields[f];
    emit(kir::comment(
        fmt::format("{} <- {} * rescale + sum of p * {}", field.name, field.name, tir::print_expr(field.lift))));
    std::vector<std::vector<K>> terms(fm * 2);
    for_each_c(
        fm, fn,
        [&](int a, int n, int e, const K& row, const K& col) {
          b_.push_scope();
          bind(axis_at(row_axis_, {}, false), row);
          bind(axis_at(fold.axis, {}, false), col);
          K w = as(b_.lower(field.lift), F32);
          b_.pop_scope();
          K p = elem(sc, c_index(a, n, e, fn), F32);
          terms[a * 2 + slot_of(e)].push_back(w.kind == K::Kind::Const && w.fval == 1.0 ? p : mul(p, w));
        },
        j0);
    std::vector<K> sums(fm * 2);
    for (size_t i = 0; i < sums.size(); ++i)
      sums[i] = let(b_.fresh("row_sum"), tree(std::move(terms[i]), kir::BinOp::Add));
    // Each lane keeps its own part of the row's sum: the rescale factors are the same on the
    // lanes sharing a row, so the parts add up across them once, after the last block.
    for (int a = 0; a < fm; ++a)
      for (int r = 0; r < 2; ++r) {
        K run = elem(carrier[f], a * 2 + r, F32);
        emit(kir::assign(run.reg, add(mul(run, alpha[a * 2 + r]), sums[a * 2 + r])));
      }
  }
  if (!value_read_) return;
  const lir::CarrierField& field = fold.fields[value_field_];
  const std::string& orun = carrier[value_field_];
  emit(kir::comment(fmt::format("{} <- {} * rescale + P @ {}: P repacked from C to A fragments in registers",
                                field.name, field.name, value_read_->name)));
  auto rescale_o = [&] {
    for (int a = 0; a < fm; ++a)
      for (int n = 0; n < ne; ++n)
        for (int e = 0; e < 4; ++e) {
          K o = elem(orun, c_index(a, n, e, ne), F32);
          emit(kir::assign(o.reg, mul(o, alpha[a * 2 + slot_of(e)])));
        }
  };
  // Once a row's max settles its rescale is exactly 1: past the target's ratio of o's elements
  // a thread to the block's keys, the multiplies are skipped unless a row of the thread moved.
  retire_pv(orun, fm, ne, pending);
  const int skip = b_.knobs().rescale_skip_per_key;
  if (skip > 0 && fm * ne * 4 > skip * fn * kAtomN && !key_limit_) {
    std::optional<K> moved;
    for (const K& al : alpha) {
      K changed = kir::binary(kir::BinOp::Ne, al, kir::cf(1, F32));
      moved = moved ? kir::binary(kir::BinOp::Or, *moved, changed) : changed;
    }
    emit(kir::if_then(*moved, b_.nested(rescale_o)));
  } else {
    rescale_o();
  }
  emit_pv(orun, fm, fn, ne, sc, pf, vf, j0, tile0, buf);
}

void MmaTier::emit_row_results(int fm, const K& rows, const std::vector<lir::Stmt>& stores,
                               const std::function<void(int a, int r)>& bind) {
  // Lane group g holds rows g and g + 8 of each atom; one thread of the lanes sharing a row stores.
  for (int a = 0; a < fm; ++a)
    for (int r = 0; r < 2; ++r) {
      const LaneAffine& c = c_aff_[r == 0 ? 0 : 2];
      K row = lane_coord(add(row0_, i64(a * kAtomM)), c.row0, c.row_g, c.row_t);
      std::vector<kir::Stmt> one = b_.nested([&] {
        b_.scope().index[row_axis_.name] = row;
        bind(a, r);
        for (const lir::Stmt& s : stores) b_.stmt(s);
      });
      emit(kir::if_then(kir::binary(kir::BinOp::And, lt(row, rows), kir::binary(kir::BinOp::Eq, tig_, i64(0))),
                        std::move(one)));
    }
}

void MmaTier::emit_tile_elements(int fm, int ne, const K& tile0, const K& rows, const tir::Axis& axis,
                                 const std::vector<lir::Stmt>& results, const std::vector<lir::Stmt>& stores,
                                 const std::optional<StagedOut>& staged, bool guarded,
                                 const std::function<void(int a, int n, int e)>& bind,
                                 const std::function<void()>& after_results) {
  const K size = KernelBuilder::size_value(axis.size);
  std::optional<K> held;  // unguarded: an element waiting for its row neighbour (stage_element)
  for_each_c(
      fm, ne,
      [&](int a, int n, int e, const K& row, const K& col) {
        std::vector<kir::Stmt> one = b_.nested([&] {
          b_.scope().index[row_axis_.name] = row;
          b_.scope().index[axis.name] = col;
          bind(a, n, e);
          for (const lir::Stmt& s : results) element_stmt(s, !guarded);
          if (after_results) after_results();
          if (staged) return stage_element(*staged, b_.lower(stores.back().value), a, n, e, guarded ? nullptr : &held);
          for (const lir::Stmt& s : stores) b_.stmt(s);
        });
        emit_element(guarded, kir::binary(kir::BinOp::And, lt(row, rows), lt(col, size)), std::move(one));
      },
      tile0);
}

void MmaTier::emit_fold_results(const std::vector<std::string>& carrier, int fm, int ne, const K& tile0, const K& rows,
                                const Slab* row_slab, const Crew* crew) {
  const lir::Stmt& fold = *fold_;
  emit(kir::comment("the weighted sums' lane parts added across the lanes sharing a row"));
  for (size_t f : rescaled_.weighted)
    if (!(f == value_field_ && value_read_))
      for (int a = 0; a < fm; ++a)
        for (int r = 0; r < 2; ++r) row_allreduce(elem(carrier[f], a * 2 + r, F32), kir::BinOp::Add);
  emit(kir::comment("the fold's results and stores"));
  auto bind_carrier = [&](int a, int r) {
    K key = elem(carrier[rescaled_.key], a * 2 + r, F32);
    for (size_t f = 0; f < fold.fields.size(); ++f) {
      std::string reg = "run_" + fold.fields[f].name;
      if (is_flag(f))
        b_.scope().regs[reg] = kir::binary(kir::BinOp::Ne, key, kir::cf(-std::numeric_limits<double>::infinity(), F32));
      else if (!(f == value_field_ && value_read_))
        b_.scope().regs[reg] = elem(carrier[f], a * 2 + r, F32);
    }
  };
  std::vector<lir::Stmt> stores;
  if (tile_loop_)
    for (size_t i = 1; i < tile_loop_->body.size(); ++i) stores.push_back(tile_loop_->body[i]);
  else  // the fold is the body's first statement (plan)
    stores.assign(kernel_body_.begin() + 1, kernel_body_.end());
  if (!value_read_) {
    emit_row_results(fm, rows, stores, [&](int a, int r) {
      bind_carrier(a, r);
      for (const lir::Stmt& s : fold.results) b_.stmt(s);
    });
    return;
  }
  const tir::Axis& tile_axis = tile_loop_->axis;
  K tsize = KernelBuilder::size_value(tile_axis.size);
  // Statements of the row (not reading the tile's axis: a log-sum-exp beside o) run once a row,
  // in the first tile; the others once an element.
  std::vector<lir::Stmt> row_stmts, element_stmts;
  for (const lir::Stmt& s : stores)
    (tir::uses_index(s.value, tile_axis.name) ||
             std::any_of(s.vars.begin(), s.vars.end(), [&](const tir::Axis& a) { return a.name == tile_axis.name; })
         ? element_stmts
         : row_stmts)
        .push_back(s);
  stores = element_stmts;
  // Each row's scalar sums inverted once (FA-2's 1 / l): a result dividing the vector field by
  // one (or by the result register holding it) multiplies by the reciprocal instead.
  std::map<std::string, K> inverse;  // a sum's element (rendered) -> 1 / it
  for (size_t f : rescaled_.weighted)
    if (!(f == value_field_ && value_read_))
      for (int slot = 0; slot < fm * 2; ++slot) {
        K sum = elem(carrier[f], slot, F32);
        inverse[KernelBuilder::render_key(sum)] =
            let(b_.fresh("inv_" + fold.fields[f].name), kir::binary(kir::BinOp::Div, kir::cf(1, F32), sum));
      }
  auto invert_copies = [&] {  // the results' registers that copy a sum share its reciprocal
    for (const kir::Stmt& d : b_.block())
      if (d.kind == kir::Stmt::Kind::Decl && d.args.size() == 1 && d.count == 1)
        if (auto it = inverse.find(KernelBuilder::render_key(d.args[0])); it != inverse.end())
          b_.scope().reciprocal[KernelBuilder::render_key(kir::var({d.reg.name}, d.type))] = it->second;
  };
  // Staged through a ring's slab, or with producer warps (which may already refill the ring for the
  // next register tile or the next tile) through the row slab.
  const std::optional<StagedOut> staged =
      plan_.producer_threads > 0
          ? staged_out(stores, tile_axis.name, ne * kAtomN, {row_slab}, crew != nullptr)
          : staged_out(stores, tile_axis.name, ne * kAtomN, {kslab_ ? &*kslab_ : nullptr, vslab_ ? &*vslab_ : nullptr});
  const bool guarded = !staged || reads_tensor(fold.results) || reads_tensor(stores);
  emit_tile_elements(
      fm, ne, tile0, rows, tile_axis, fold.results, stores, staged, guarded,
      [&](int a, int n, int e) {
        bind_carrier(a, slot_of(e));
        b_.scope().regs["run_" + fold.fields[value_field_].name] =
            elem(carrier[value_field_], c_index(a, n, e, ne), F32);
      },
      invert_copies);
  if (staged) write_out(*staged, tile0, rows, tsize, crew);
  if (row_stmts.empty()) return;
  emit(kir::if_then(kir::binary(kir::BinOp::Eq, tile0, i64(0)), b_.nested([&] {
    emit_row_results(fm, rows, row_stmts, [&](int a, int r) {
      bind_carrier(a, r);
      for (const lir::Stmt& s : fold.results) b_.stmt(s);
    });
  })));
}

}  // namespace emmy::lower::detail
