// wgmma: shared-memory matrix descriptors for the A and B operands, one warpgroup MMA step,
// and the fences and waits around it.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

int64_t MmaTier::k_major_step_bytes(const Slab& s, int step) {
  return step * kAtomK / 64 * (int64_t{s.rows} * 128) + step * kAtomK % 64 * 2;
}

MmaTier::BOperand MmaTier::b_operand(const Slab& s, const K& buf, const std::string& k_axis, int step) {
  const bool n_major = s.inner.name != k_axis;
  const int64_t panel_bytes = int64_t{s.rows} * 128;
  const int64_t byte_off = n_major ? int64_t{step} * kAtomK * 128 : k_major_step_bytes(s, step);
  return {descriptor_words(b_.shared(kir::shared_addr(s.array, s.buffer_start(buf))), byte_off,
                           kir::wgmma_descriptor(0, n_major ? static_cast<uint32_t>(panel_bytes) : 16, 1024, 1)),
          n_major};
}

std::pair<K, K> MmaTier::descriptor_words(const K& base, int64_t byte_off, uint64_t fixed) {
  auto u32 = [](uint64_t v) { return kir::ci(static_cast<int64_t>(v & 0xffffffffu), U32); };
  // The slab's descriptor once (shared by every step that reads it), each step's a constant added to
  // its 14-bit start field: the slabs are 1024-byte aligned and the offsets multiples of 16 bytes, and
  // shared addresses stay below 256 KB, so the field never carries into the bits above it.
  EMMY_INTERNAL_ASSERT(byte_off % 16 == 0 && byte_off >= 0, "a wgmma operand step not a multiple of 16 bytes");
  K field = kir::binary(kir::BinOp::BitAnd, kir::binary(kir::BinOp::Shr, base, u32(4)), u32(0x3FFF));
  K desc = b_.shared(kir::binary(kir::BinOp::BitOr, field, u32(fixed)));
  return {byte_off == 0 ? desc : add(desc, u32(static_cast<uint64_t>(byte_off / 16))), u32(fixed >> 32)};
}

MmaTier::AOperand MmaTier::a_operand(const Slab& s, int step, const K& buf) {
  K group = hoisted("group_rows", as(mul(warpgroup(), i64(4 * rows_per_warp_ * 128)), U32));
  return {{},
          0,
          descriptor_words(b_.shared(add(kir::shared_addr(s.array, s.buffer_start(buf)), group)),
                           k_major_step_bytes(s, step), kir::wgmma_descriptor(0, 16, 1024, 1))};
}

void MmaTier::wgmma_step(const std::string& acc, int n, const AOperand& a, const BOperand& b, bool accumulate) {
  const std::optional<kir::IntrinsicId> id = kir::wgmma_of(n, !a.desc, accumulate);
  EMMY_INTERNAL_ASSERT(
      id, fmt::format("a wgmma of N = {}{} (the plan admits only the table's)", n, accumulate ? "" : " without C"));
  std::vector<kir::Reg> outs;
  std::vector<K> ins;
  for (int i = 0; i < n / 2; ++i) outs.push_back({acc, i});
  if (a.desc) {
    ins.push_back(a.desc->first);
    ins.push_back(a.desc->second);
  } else {
    for (int i = 0; i < 4; ++i) ins.push_back(elem(a.regs, a.off + i, U32));
  }
  ins.push_back(b.desc.first);
  ins.push_back(b.desc.second);
  for (int i = 0; i < n / 2 && accumulate; ++i) ins.push_back(elem(acc, i, F32));
  emit(kir::intrinsic(*id, std::move(outs), std::move(ins),
                      {t_.operand == ScalarType::BF16 ? 1 : 0, b.n_major ? 1 : 0}));
}

void MmaTier::wgmma_done(const std::string& acc, int regs, const std::function<void()>& under) {
  wgmma_commit();
  if (under) under();
  wgmma_wait(0, acc, regs);
}

void MmaTier::wgmma_commit() { emit(kir::intrinsic(kir::IntrinsicId::WgmmaCommit, {}, {})); }

void MmaTier::wgmma_wait(int pending, const std::string& acc, int regs) {
  emit(kir::intrinsic(kir::IntrinsicId::WgmmaWait, {}, {}, {pending}));
  for (int i = 0; i < regs; ++i) emit(kir::intrinsic(kir::IntrinsicId::RegFence, {{acc, i}}, {elem(acc, i, F32)}));
}

}  // namespace emmy::lower::detail
