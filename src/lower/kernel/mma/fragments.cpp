// Fragments: lane coordinates from the intrinsic table's lane maps, operand loads into
// registers, one mma.sync, and the row reductions across the lanes sharing a row.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

K MmaTier::ceil_div_by(K a, K b) {  // b > 0
  return kir::binary(kir::BinOp::Div, add(std::move(a), kir::binary(kir::BinOp::Sub, b, i64(1))), b);
}

K MmaTier::lane_coord(K base, int off, int g, int t) const {
  K v = add(std::move(base), i64(off));
  if (g) v = add(v, mul(grp_, i64(g)));
  if (t) v = add(v, mul(tig_, i64(t)));
  return v;
}

void MmaTier::bind(const AxisAt& at, const K& index) {
  K last = kir::binary(kir::BinOp::Sub, at.size, i64(1));
  b_.scope().index[at.name] = kir::binary(kir::BinOp::Min, index, last);
}

K MmaTier::operand_value(const Expr& read, const AxisAt& r, const K& ri, const AxisAt& c, const K& ci) {
  b_.push_scope();
  bind(r, ri);
  bind(c, ci);
  K v = as(b_.lower(read), F32);
  b_.pop_scope();
  std::optional<K> ok;
  for (const auto& [at, idx] : {std::pair{&r, &ri}, std::pair{&c, &ci}})
    if (at->zero_past_end) ok = ok ? kir::binary(kir::BinOp::And, *ok, lt(*idx, at->size)) : lt(*idx, at->size);
  return ok ? kir::select(*ok, v, kir::cf(0, F32)) : v;
}

void MmaTier::load_fragment(const Expr& read, CoordFn fn, int regs, const std::string& array, int off, const AxisAt& r,
                            const AxisAt& c) {
  for (int reg = 0; reg < regs; ++reg) {
    K half[2];
    for (int h = 0; h < 2; ++h) {
      LaneAffine a = lane_affine(fn, 2 * reg + h);
      K ri = lane_coord(r.base, a.row0, a.row_g, a.row_t), ci = lane_coord(c.base, a.col0, a.col_g, a.col_t);
      half[h] = operand_value(read, r, ri, c, ci);
    }
    // The element with the higher index goes to the upper half (cvt's first operand).
    kir::IntrinsicId cvt =
        t_.operand == ScalarType::BF16 ? kir::IntrinsicId::CvtRnBf16x2F32 : kir::IntrinsicId::CvtRnF16x2F32;
    emit(kir::intrinsic(cvt, {{array, off + reg}}, {half[1], half[0]}));
  }
}

void MmaTier::mma(const std::string& acc, int acc_off, const std::string& a, int a_off, const std::string& b,
                  int b_off) {
  kir::IntrinsicId id = t_.operand == ScalarType::BF16 ? kir::IntrinsicId::MmaBf16F32 : kir::IntrinsicId::MmaF16F32;
  std::vector<kir::Reg> outs;
  std::vector<K> ins;
  for (int i = 0; i < 4; ++i) outs.push_back({acc, acc_off + i});
  for (int i = 0; i < 4; ++i) ins.push_back(elem(a, a_off + i, U32));
  for (int i = 0; i < 2; ++i) ins.push_back(elem(b, b_off + i, U32));
  for (int i = 0; i < 4; ++i) ins.push_back(elem(acc, acc_off + i, F32));
  emit(kir::intrinsic(id, std::move(outs), std::move(ins)));
}

void MmaTier::row_allreduce(const K& v, kir::BinOp op) {
  for (int mask : masks_) {
    std::string other = b_.fresh("shfl");
    emit(kir::decl(other, F32));
    emit(kir::intrinsic(kir::IntrinsicId::ShflBfly, {{other}}, {v}, {mask}));
    emit(kir::assign(v.reg, kir::binary(op, v, kir::var({other}, F32))));
  }
}

}  // namespace emmy::lower::detail
