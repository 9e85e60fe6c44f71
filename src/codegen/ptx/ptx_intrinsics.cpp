// The intrinsic table's rows as PTX: a template a row where the helper is one instruction
// (`$o<k>` result k, `$i<k>` operand k, `$m<k>` immediate k), a few lines of code where it is more.
#include "codegen/ptx/ptx_intrinsics.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <string_view>

namespace emmy::ptx {
namespace {
using kir::IntrinsicId;
using ST = kir::ScalarType;

struct Template {
  IntrinsicId id;
  std::string_view ptx;
};
constexpr std::array kTemplates{
    Template{IntrinsicId::MmaF16F32,
             "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$o0, $o1, $o2, $o3}, {$i0, $i1, $i2, $i3}, "
             "{$i4, $i5}, {$i6, $i7, $i8, $i9};"},
    Template{IntrinsicId::MmaBf16F32,
             "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$o0, $o1, $o2, $o3}, {$i0, $i1, $i2, $i3}, "
             "{$i4, $i5}, {$i6, $i7, $i8, $i9};"},
    Template{IntrinsicId::LdmatrixX1, "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {$o0}, [$i0];"},
    Template{IntrinsicId::LdmatrixX2, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {$o0, $o1}, [$i0];"},
    Template{IntrinsicId::LdmatrixX4, "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$o0, $o1, $o2, $o3}, [$i0];"},
    Template{IntrinsicId::LdmatrixX1Trans, "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {$o0}, [$i0];"},
    Template{IntrinsicId::LdmatrixX2Trans, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$o0, $o1}, [$i0];"},
    Template{IntrinsicId::LdmatrixX4Trans,
             "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$o0, $o1, $o2, $o3}, [$i0];"},
    Template{IntrinsicId::MmaF16F16,
             "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {$o0, $o1}, {$i0, $i1, $i2, $i3}, {$i4, $i5}, "
             "{$i6, $i7};"},
    Template{IntrinsicId::CvtRnF16x2F32, "cvt.rn.f16x2.f32 $o0, $i0, $i1;"},
    Template{IntrinsicId::CvtRnBf16x2F32, "cvt.rn.bf16x2.f32 $o0, $i0, $i1;"},
    Template{IntrinsicId::ShflBfly, "shfl.sync.bfly.b32 $o0, $i0, $m0, 0x1f, 0xffffffff;"},
    Template{IntrinsicId::ShflBflyI32, "shfl.sync.bfly.b32 $o0, $i0, $m0, 0x1f, 0xffffffff;"},
    Template{IntrinsicId::ShflIdx, "shfl.sync.idx.b32 $o0, $i0, $i1, 0x1f, 0xffffffff;"},
    Template{IntrinsicId::Ex2Approx, "ex2.approx.f32 $o0, $i0;"},
    Template{IntrinsicId::CpAsync16, "cp.async.cg.shared.global [$i0], [$i1], 16;"},
    Template{IntrinsicId::CpAsyncCommit, "cp.async.commit_group;"},
    Template{IntrinsicId::MbarrierInit, "mbarrier.init.shared::cta.b64 [$i0], $m0;"},
    Template{IntrinsicId::MbarrierExpectTx, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$i0], $i1;"},
    Template{IntrinsicId::MbarrierArrive, "mbarrier.arrive.shared::cta.b64 _, [$i0];"},
    Template{IntrinsicId::AtomicAddF32, "red.global.add.f32 [$i0], $i1;"},
    Template{IntrinsicId::AtomicAddF64, "red.global.add.f64 [$i0], $i1;"},
    Template{IntrinsicId::AtomicAddI32, "red.global.add.s32 [$i0], $i1;"},
    Template{IntrinsicId::AtomicMaxI32, "red.global.max.s32 [$i0], $i1;"},
    Template{IntrinsicId::AtomicMinI32, "red.global.min.s32 [$i0], $i1;"},
    Template{IntrinsicId::WgmmaFence, "wgmma.fence.sync.aligned;"},
    Template{IntrinsicId::WgmmaCommit, "wgmma.commit_group.sync.aligned;"},
    Template{IntrinsicId::FenceProxyAsync, "fence.proxy.async.shared::cta;"},
    Template{IntrinsicId::BarSync, "bar.sync $i0, $m0;"},
    Template{IntrinsicId::BarArrive, "bar.arrive $i0, $m0;"},
    Template{IntrinsicId::ClusterSync,
             "fence.mbarrier_init.release.cluster;\nbarrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;"},
};

std::string expand(std::string_view tpl, const IntrinsicOperands& ops) {
  std::string out;
  for (size_t i = 0; i < tpl.size(); ++i) {
    const char kind = i + 1 < tpl.size() && tpl[i] == '$' ? tpl[i + 1] : 0;
    if (kind != 'o' && kind != 'i' && kind != 'm') {
      out += tpl[i];
      continue;
    }
    size_t j = i + 2, n = 0;
    for (; j < tpl.size() && std::isdigit(static_cast<unsigned char>(tpl[j])); ++j) n = n * 10 + (tpl[j] - '0');
    const auto& list = kind == 'o' ? ops.outs : ops.ins;
    if (kind == 'm') {
      if (n >= ops.imms.size()) throw Unsupported{"an intrinsic without its immediate"};
      out += std::to_string(ops.imms[n]);
    } else {
      if (n >= list.size()) throw Unsupported{"an intrinsic without its operands"};
      out += list[n];
    }
    i = j - 1;
  }
  return out;
}

void emit_lines(Emitter& em, const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    em.line(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

// A float's max or min as one integer atomic (emmy_atomic_max_f32 / _min_f32): NaN as the
// value that wins and stays, non-negative bits ordered as int, negative ones reversed as unsigned.
void atomic_minmax_f32(Emitter& em, bool is_max, const IntrinsicOperands& ops) {
  const std::string bits = em.temp(ST::I32), nan = em.temp(ST::Pred), b = em.temp(ST::I32), pos = em.temp(ST::Pred);
  em.line(fmt::format("mov.b32 {}, {};", bits, ops.ins[1]));
  em.line(fmt::format("setp.nan.f32 {}, {}, {};", nan, ops.ins[1], ops.ins[1]));
  em.line(fmt::format("selp.b32 {}, {}, {}, {};", b, is_max ? "2147483647" : "-1", bits, nan));
  em.line(fmt::format("setp.ge.s32 {}, {}, 0;", pos, b));
  em.line(fmt::format("@{} red.global.{}.s32 [{}], {};", pos, is_max ? "max" : "min", ops.ins[0], b));
  em.line(fmt::format("@!{} red.global.{}.u32 [{}], {};", pos, is_max ? "min" : "max", ops.ins[0], b));
}

// A double through two 32-bit butterflies, low word then high word.
void shfl_bfly_f64(Emitter& em, const IntrinsicOperands& ops) {
  const std::string lo = em.temp(ST::U32), hi = em.temp(ST::U32), lo2 = em.temp(ST::U32), hi2 = em.temp(ST::U32);
  em.line(fmt::format("mov.b64 {{{}, {}}}, {};", lo, hi, ops.ins[0]));
  em.line(fmt::format("shfl.sync.bfly.b32 {}, {}, {}, 0x1f, 0xffffffff;", lo2, lo, ops.imms.at(0)));
  em.line(fmt::format("shfl.sync.bfly.b32 {}, {}, {}, 0x1f, 0xffffffff;", hi2, hi, ops.imms.at(0)));
  em.line(fmt::format("mov.b64 {}, {{{}, {}}};", ops.outs[0], lo2, hi2));
}

void mbarrier_try_wait(Emitter& em, const IntrinsicOperands& ops) {
  const std::string again = em.label(), done = em.temp(ST::Pred);
  em.place(again);
  em.line(fmt::format("mbarrier.try_wait.parity.shared::cta.b64 {}, [{}], {};", done, ops.ins[0], ops.ins[1]));
  em.line(fmt::format("@!{} bra {};", done, again));
}

// The address, in CTA `cta` (operand 1) of the cluster, of shared address operand 0 (mapa).
std::string peer_address(Emitter& em, const IntrinsicOperands& ops) {
  const std::string remote = em.temp(ST::U32);
  em.line(fmt::format("mapa.shared::cluster.u32 {}, {}, {};", remote, ops.ins.at(0), ops.ins.at(1)));
  return remote;
}

// ld.shared::cluster of CTA `cta`'s word at the same shared address (emmy_dsmem_ld_*).
void dsmem_load(Emitter& em, std::string_view type, const IntrinsicOperands& ops) {
  em.line(fmt::format("ld.shared::cluster.{} {}, [{}];", type, ops.outs.at(0), peer_address(em, ops)));
}

// wgmma.mma_async (emmy_wgmma_{rs,ss}_n<N>): D = A B (+ C) on the warpgroup's accumulators;
// descriptors arrive as two words each (low, high); C copied into D first where they differ.
void wgmma(Emitter& em, IntrinsicId id, const IntrinsicOperands& ops) {
  const bool a_regs = kir::wgmma_a_in_registers(id), accumulate = kir::wgmma_accumulates(id);
  const int n = kir::wgmma_n(id), regs = n / 2;
  const size_t b_at = a_regs ? 4 : 2, c_at = b_at + 2;
  auto descriptor = [&](size_t lo) {
    const std::string d = em.temp(ST::I64);
    em.line(fmt::format("mov.b64 {}, {{{}, {}}};", d, ops.ins.at(lo), ops.ins.at(lo + 1)));
    return d;
  };
  const std::string a =
      a_regs ? fmt::format("{{{}, {}, {}, {}}}", ops.ins.at(0), ops.ins.at(1), ops.ins.at(2), ops.ins.at(3))
             : descriptor(0);
  const std::string b = descriptor(b_at);
  std::string d;
  for (int i = 0; i < regs; ++i) {
    d += (i ? ", " : "") + ops.outs.at(static_cast<size_t>(i));
    if (accumulate && ops.ins.at(c_at + static_cast<size_t>(i)) != ops.outs[static_cast<size_t>(i)])
      em.line(fmt::format("mov.f32 {}, {};", ops.outs[static_cast<size_t>(i)], ops.ins[c_at + static_cast<size_t>(i)]));
  }
  const std::string scale_d = em.temp(ST::Pred);
  em.line(fmt::format("mov.pred {}, {};", scale_d, accumulate ? 1 : 0));
  const std::string_view type = ops.imms.at(0) ? "bf16" : "f16";
  const int64_t n_major = ops.imms.at(1);
  const std::string trans = a_regs ? fmt::format("1, 1, {}", n_major) : fmt::format("1, 1, 0, {}", n_major);
  em.line(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, {}, {}, {}, {};", n, type, type, d, a,
                      b, scale_d, trans));
}

// cp.async.bulk.tensor (emmy_tma_load_<r>d): operand 0 the tensor map's address, then the shared
// destination, the mbarrier and one coordinate a dimension; imm 0 the cluster's CTAs to multicast to.
void tma_load(Emitter& em, int rank, const IntrinsicOperands& ops) {
  std::string coords;
  for (int d = 0; d < rank; ++d) coords += (d ? ", " : "") + ops.ins.at(3 + static_cast<size_t>(d));
  const std::string head =
      fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.mbarrier::complete_tx::bytes", rank);
  if (ops.imms.at(0) == 0)
    return em.line(fmt::format("{} [{}], [{}, {{{}}}], [{}];", head, ops.ins[1], ops.ins[0], coords, ops.ins[2]));
  const std::string mask = em.temp(ST::F16);  // a 16-bit register
  em.line(fmt::format("mov.b16 {}, {};", mask, ops.imms[0]));
  em.line(fmt::format("{}.multicast::cluster [{}], [{}, {{{}}}], [{}], {};", head, ops.ins[1], ops.ins[0], coords,
                      ops.ins[2], mask));
}

}  // namespace

void print_intrinsic(Emitter& em, IntrinsicId id, const IntrinsicOperands& ops) {
  for (const Template& t : kTemplates)
    if (t.id == id) return emit_lines(em, expand(t.ptx, ops));
  switch (id) {
    case IntrinsicId::CpAsyncWait:  // deeper than 7 pending groups waits for all, as the helper does
      return em.line(ops.imms.at(0) <= 7 ? fmt::format("cp.async.wait_group {};", ops.imms[0])
                                         : std::string("cp.async.wait_all;"));
    case IntrinsicId::WgmmaWait:  // the helper's deepest case is 3 pending groups
      return em.line(fmt::format("wgmma.wait_group.sync.aligned {};", std::min<int64_t>(ops.imms.at(0), 3)));
    case IntrinsicId::MbarrierTryWait: return mbarrier_try_wait(em, ops);
    case IntrinsicId::AtomicMaxF32: return atomic_minmax_f32(em, true, ops);
    case IntrinsicId::AtomicMinF32: return atomic_minmax_f32(em, false, ops);
    case IntrinsicId::ShflBflyF64: return shfl_bfly_f64(em, ops);
    case IntrinsicId::SetmaxnregInc:
    case IntrinsicId::SetmaxnregDec: {
      const int64_t r = ops.imms.at(0);
      if (r < 24 || r > 256 || r % 8 != 0) return;  // the helper's switch has no case for it: nothing
      return em.line(
          fmt::format("setmaxnreg.{}.sync.aligned.u32 {};", id == IntrinsicId::SetmaxnregInc ? "inc" : "dec", r));
    }
    case IntrinsicId::MbarrierArrivePeer:
      return em.line(fmt::format("mbarrier.arrive.shared::cluster.b64 _, [{}];", peer_address(em, ops)));
    case IntrinsicId::RegFence:  // ptxas orders a wgmma result's reads after its wait itself
      if (ops.outs.at(0) != ops.ins.at(0)) em.line(fmt::format("mov.f32 {}, {};", ops.outs[0], ops.ins[0]));
      return;
    case IntrinsicId::DsmemLdF32: return dsmem_load(em, "f32", ops);
    case IntrinsicId::DsmemLdI32: return dsmem_load(em, "b32", ops);
    case IntrinsicId::DsmemLdF64: return dsmem_load(em, "f64", ops);
    case IntrinsicId::DsmemLdI64: return dsmem_load(em, "b64", ops);
    default: break;
  }
  if (kir::wgmma_n(id) > 0) return wgmma(em, id, ops);
  if (kir::tma_rank(id) > 0) return tma_load(em, kir::tma_rank(id), ops);
  throw Unsupported{fmt::format("intrinsic {}", kir::intrinsic_info(id).name)};
}

}  // namespace emmy::ptx
