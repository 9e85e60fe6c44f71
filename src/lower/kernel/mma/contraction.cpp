// A contraction and its epilogue (matmul): accumulators over the reduced axis, then the
// expression around the contraction at every C element.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

std::vector<kir::Stmt> MmaTier::arrive_free(const K& buf) const {
  std::vector<kir::Stmt> out{
      kir::intrinsic(kir::IntrinsicId::MbarrierArrive, {}, {kir::shared_addr(tma_free_, i32(buf))})};
  for (kir::Stmt& s : peer_arrivals(buf)) out.push_back(std::move(s));
  return out;
}

// OVERLAP: the chunk's batch stays in flight while the previous one retires (wait_group 1: the
// accumulator chain orders them), then the ring's copy ahead and the previous chunk's buffer
// released, without a branch between the batches (the first chunk arrives on the spare
// mbarrier nobody waits for).
void MmaTier::overlap_chunk(const K& k0, const K& buf, const std::function<void()>& issue) {
  wgmma_commit();
  emit(kir::intrinsic(kir::IntrinsicId::WgmmaWait, {}, {}, {1}));
  issue();
  K prev = ring_wrap(add(buf, ci32(stage_->depth - 1)));
  for (kir::Stmt& s : arrive_free(kir::select(lt(i64(0), k0), prev, ci32(stage_->depth)))) emit(std::move(s));
}

void MmaTier::emit_contraction() {
  const int fm = t_.frag_m, fn = t_.frag_n, steps = std::max(1, t_.k_chunk);
  // Fresh names: the op's own registers (an epilogue's `acc`) must not shadow them.
  const std::string acc = b_.fresh("acc"), af = b_.fresh("a_frag"), bf = b_.fresh("b_frag");
  emit(kir::comment(fmt::format("C tile in registers: {} x {} atoms per warp", fm, fn)));
  emit(kir::decl(acc, F32, kir::cf(0, F32), fm * fn * 4));
  if (!wgmma()) {
    emit(kir::decl(af, U32, fm * 4));
    emit(kir::decl(bf, U32, fn * 2));
  }
  const std::string kv = b_.fresh("k0");
  K ksize = KernelBuilder::size_value(first_.axis.size);
  const int chunk = steps * kAtomK;
  if (!first_.outer.empty()) {
    // Over outer axes too (sum(h, d: ...)): the loop streams their points one after another, at
    // each the chunked axis in whole chunks (those past its end read zeros).
    outer_span_ = let(b_.fresh("k_span"), mul(ceil_div(ksize, chunk), i64(chunk)));
    ksize = *outer_span_;
    for (const tir::Axis& a : first_.outer) ksize = mul(ksize, KernelBuilder::size_value(a.size));
  }
  std::optional<Slab> sa, sb;
  if (stage_) {
    sa = make_slab(b_.fresh("a_tile"), "row", axis_at(row_axis_, row_block0_, false),
                   axis_at(first_.axis, i64(0), true));
    sb = make_slab(b_.fresh("b_tile"), "col", axis_at(first_.axis, i64(0), true),
                   axis_at(col_axis_, col_block0_, false));
    sa->stream = sb->stream = first_.axis.name;
    EMMY_INTERNAL_ASSERT(!wgmma() || sa->inner.name == first_.axis.name,
                         "A's slab is not K-major (the plan checks it)");
  }
  std::vector<const Slab*> slabs;
  if (stage_) slabs = {&*sa, &*sb};
  if (stage_ && plan_.cluster > 1) cluster_slab_ = (plan_.cluster_axis == 'm' ? sb : sa)->array;
  // wgmma by TMA: the next tile's boxes go under this tile's wgmma batch (the issuing thread
  // waits for every warp to release the buffer meanwhile); mma.sync issues them first, which
  // measured faster there (tests/bench/RESULTS.md, "Measurements that were code comments").
  const bool late = wgmma() && sa && !sa->map.empty() && sb && !sb->map.empty();
  const int regs = fm * fn * 4;
  const K buf_after = stream_loop(
      kv, i64(0), ksize, chunk, slabs, late,
      [&](const K& k0, const K& buf, const Issue& issue) {
        if (wgmma()) {  // the chunk's k16 steps, one wgmma each a warpgroup, A and B by descriptor
          emit(kir::comment(fmt::format("{} k16 steps: one wgmma each, A and B read from shared memory", steps)));
          wgmma_fence();
          for (int s = 0; s < steps; ++s) {  // B's address before A's: one emission order on every compiler
            BOperand b = b_operand(*sb, buf, first_.axis.name, s);
            wgmma_step(acc, t_.wgmma_n, a_operand(*sa, s, buf), b);
          }
          if (plan_.overlap) return overlap_chunk(k0, buf, issue);
          wgmma_done(acc, regs, issue);
          return;
        }
        for (int s = 0; s < steps; ++s) {
          K kb = add(k0, i64(s * kAtomK));
          emit(kir::comment(fmt::format("K step {}: fragments from {}, then {} mma", s,
                                        stage_ ? "shared memory (ldmatrix)" : "global memory", fm * fn)));
          {  // in the tile's scope: the slabs' per-tile address parts are shared by every step
            if (stage_) {
              drain_fragments(
                  *sa, buf, kir::mma_a_coord, 4, fm, af, 0, warp_rows32_, ci32(0),
                  [&](int a) {
                    return std::pair{a * kAtomM, s * kAtomK};
                  },
                  sa->outer.name == row_axis_.name);
              drain_fragments(
                  *sb, buf, kir::mma_b_coord, 2, fn, bf, 0, ci32(0), warp_cols32_,
                  [&](int n) {
                    return std::pair{s * kAtomK, n * kAtomN};
                  },
                  sb->outer.name == first_.axis.name);
            } else {
              const K at = outer_point(kb);
              for (int a = 0; a < fm; ++a)
                load_fragment(first_.row, kir::mma_a_coord, 4, af, a * 4,
                              axis_at(row_axis_, add(row0_, i64(a * kAtomM)), false), axis_at(first_.axis, at, true));
              for (int n = 0; n < fn; ++n)
                load_fragment(first_.col, kir::mma_b_coord, 2, bf, n * 2, axis_at(first_.axis, at, true),
                              axis_at(col_axis_, add(col0_, i64(n * kAtomN)), false));
              b_.pop_scope();
            }
            for (int a = 0; a < fm; ++a)
              for (int n = 0; n < fn; ++n) mma(acc, c_index(a, n, 0, fn), af, a * 4, bf, n * 2);
          }
          // Unguarded: a step past the end multiplies zero padding, and straight-line steps let
          // the compiler load step s + 1's fragments under step s's mma.
        }
      },
      /*barrier_free=*/true, plan_.overlap);
  if (plan_.overlap) {
    emit(kir::comment("the last chunk's wgmma; its buffer released"));
    wgmma_wait(0, acc, regs);
    emit(kir::if_then(lt(i64(0), ksize), arrive_free(ring_wrap(add(buf_after, ci32(stage_->depth - 1))))));
  }
  emit(kir::comment("epilogue: each C element at its row and column"));
  const K rows = KernelBuilder::size_value(row_axis_.size), cols = KernelBuilder::size_value(col_axis_.size);
  // Staged through a ring's slab, or where the ring may already be refilled for the next tile
  // (a persistent kernel's producers, or another CTA of its cluster), through a buffer of its own:
  // the whole tile, or where shared memory holds only part of it beside the ring, the tile in
  // passes of its columns (a warp's columns all in each pass: one warp across the tile).
  const int cols_per_block = static_cast<int>(cols_per_block_);
  const bool ring_refilled = ring_refilled_under_epilogue();
  std::optional<StagedOut> staged;
  int passes = 1;
  if (!ring_refilled)
    staged = staged_out(kernel_body_, col_axis_.name, cols_per_block, {sa ? &*sa : nullptr, sb ? &*sb : nullptr});
  if (ring_refilled)
    if (const std::optional<std::pair<Slab, int>> own = own_epilogue()) {
      staged = staged_out(kernel_body_, col_axis_.name, cols_per_block / own->second, {&own->first});
      out_->shared.push_back({own->first.array, t_.operand, own->first.elems(), 16});
      passes = own->second;
    }
  std::vector<lir::Stmt> epilogue_body = kernel_body_;  // what each element computes
  if (contraction_stmt_ >= 0) epilogue_body[static_cast<size_t>(contraction_stmt_)].value = first_.around;
  const bool guarded = !staged || reads_tensor(epilogue_body);
  std::optional<K> held;             // unguarded: an element waiting for its row neighbour (stage_element)
  const int per_pass = fn / passes;  // n-atoms a pass
  for (int pass = 0; pass < passes; ++pass) {
    if (passes > 1)
      emit(kir::comment(
          fmt::format("columns {} .. {} of the tile", pass * per_pass * kAtomN, (pass + 1) * per_pass * kAtomN - 1)));
    for_each_c(
        fm, fn,
        [&](int a, int n, int e, const K& row, const K& col) {
          if (n / per_pass != pass) return;
          std::vector<kir::Stmt> one = b_.nested([&] {
            b_.scope().index[row_axis_.name] = row;
            b_.scope().index[col_axis_.name] = col;
            b_.scope().regs[std::string(kContracted)] = elem(acc, c_index(a, n, e, fn), F32);
            for (size_t i = 0; i < epilogue_body.size(); ++i) {
              const lir::Stmt& st = epilogue_body[i];
              if (staged && i + 1 == epilogue_body.size())
                return stage_element(*staged, b_.lower(st.value), a, n - pass * per_pass, e, guarded ? nullptr : &held);
              element_stmt(st, !guarded);
            }
          });
          emit_element(guarded, kir::binary(kir::BinOp::And, lt(row, rows), lt(col, cols)), std::move(one));
        },
        col0_);
    if (staged) write_out(*staged, add(col_block0_, i64(int64_t{pass} * per_pass * kAtomN)), rows, cols);
  }
}

}  // namespace emmy::lower::detail
