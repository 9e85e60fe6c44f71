// A fold's vector field's product, o += P @ V: P repacked from the scores' C fragments to A
// fragments in registers, V's fragments from its slab (mma.sync) or read in place (wgmma).
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

void MmaTier::issue_pv(const std::string& orun, int fn, int ne, const std::string& pf, const K& buf, const Slab& vs) {
  for (int step = 0; step < fn / 2; ++step)
    wgmma_step(orun, ne * kAtomN, {pf, step * 4, {}}, b_operand(vs, buf, fold_->axis.name, step));
}

void MmaTier::retire_pv(const std::string& orun, int fm, int ne, const std::optional<K>& pending) {
  if (!pending) return;
  emit(kir::comment("the previous block's P @ V completes: o in this block's frame, its P registers free"));
  wgmma_wait(0, orun, fm * ne * 4);
  if (!tma_free_.empty()) release(*pending);  // a ring of boxes only: the buffer is free
}

void MmaTier::emit_pv(const std::string& orun, int fm, int fn, int ne, const std::string& sc, const std::string& pf,
                      const std::string& vf, const K& j0, const K& tile0, const K& buf, const Sibling* sib) {
  const lir::Stmt& fold = *fold_;
  const Slab* vslab = sib ? (sib->slab ? &*sib->slab : nullptr) : vslab_ ? &*vslab_ : nullptr;
  const Expr& value = sib ? sib->value : *value_read_;
  const std::vector<RepackSource> repack = c_to_a_map();
  kir::IntrinsicId cvt =
      t_.operand == ScalarType::BF16 ? kir::IntrinsicId::CvtRnBf16x2F32 : kir::IntrinsicId::CvtRnF16x2F32;
  const tir::Axis& tile_axis = sib ? sib->loop->axis : tile_loop_->axis;
  if (wgmma()) {  // every k16 step's P repacked, then one batch of wgmma reading V in place
    for (int step = 0; step < fn / 2; ++step)
      for (int r = 0; r < 4; ++r) {
        const RepackSource &lo = repack[2 * r], &hi = repack[2 * r + 1];
        emit(kir::intrinsic(cvt, {{pf, step * 4 + r}},
                            {elem(sc, c_index(0, 2 * step + hi.atom, hi.elem, fn), F32),
                             elem(sc, c_index(0, 2 * step + lo.atom, lo.elem, fn), F32)}));
      }
    if (plan_.overlap) return;  // issued after the next block's scores, or after the last block
    wgmma_fence();
    issue_pv(orun, fn, ne, pf, buf, *vslab);
    wgmma_done(orun, ne * 4);
    return;
  }
  for (int step = 0; step < fn / 2; ++step) {  // keys past the end too: p = 0 against zero rows
    K kb = add(j0, i64(step * kAtomK));
    {
      for (int a = 0; a < fm; ++a)
        for (int r = 0; r < 4; ++r) {
          const RepackSource &lo = repack[2 * r], &hi = repack[2 * r + 1];
          emit(kir::intrinsic(cvt, {{pf, a * 4 + r}},
                              {elem(sc, c_index(a, 2 * step + hi.atom, hi.elem, fn), F32),
                               elem(sc, c_index(a, 2 * step + lo.atom, lo.elem, fn), F32)}));
        }
      if (stage_)
        drain_fragments(
            *vslab, buf, kir::mma_b_coord, 2, ne, vf, 0, ci32(0), ci32(0),
            [&](int n) {
              return std::pair{step * kAtomK, n * kAtomN};
            },
            vslab->outer.name == fold.axis.name);
      for (int n = 0; n < ne; ++n) {
        if (!stage_)
          load_fragment(value, kir::mma_b_coord, 2, vf, n * 2, axis_at(fold.axis, kb, true),
                        axis_at(tile_axis, add(tile0, i64(n * kAtomN)), false));
        for (int a = 0; a < fm; ++a) mma(orun, c_index(a, n, 0, ne), pf, a * 4, vf, n * 2);
      }
    }
  }
}

}  // namespace emmy::lower::detail
