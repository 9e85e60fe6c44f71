// The intrinsic table, one row per IntrinsicId in enum order: types, scope, the CUDA helper
// (inline PTX, calling convention of intrinsics.hpp) and the CPU semantics.
#include "ir/intrinsics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>

#include <stdexcept>
#include <utility>

namespace emmy::kir {
namespace {

constexpr ScalarType U = ScalarType::U32, I = ScalarType::I32, L = ScalarType::I64, F = ScalarType::F32;
constexpr ScalarType D = ScalarType::F64;

// ---- CUDA helpers: outputs by reference, inputs by value, then immediates ----------------------

constexpr std::string_view kMmaF16F32 =
    R"(__device__ __forceinline__ void emmy_mma_m16n8k16_f16_f32(
    float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
    unsigned b0, unsigned b1, float c0, float c1, float c2, float c3) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
}
)";

constexpr std::string_view kMmaBf16F32 =
    R"(__device__ __forceinline__ void emmy_mma_m16n8k16_bf16_f32(
    float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
    unsigned b0, unsigned b1, float c0, float c1, float c2, float c3) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
}
)";

constexpr std::string_view kMmaF16F16 =
    R"(__device__ __forceinline__ void emmy_mma_m16n8k16_f16_f16(
    unsigned& d0, unsigned& d1, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
    unsigned b0, unsigned b1, unsigned c0, unsigned c1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"
               : "=r"(d0), "=r"(d1)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c0), "r"(c1));
}
)";

constexpr std::string_view kLdmatrixX1 =
    R"(__device__ __forceinline__ void emmy_ldmatrix_x1(unsigned& d0, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(d0) : "r"(addr));
}
)";

constexpr std::string_view kLdmatrixX2 =
    R"(__device__ __forceinline__ void emmy_ldmatrix_x2(unsigned& d0, unsigned& d1, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(d0), "=r"(d1) : "r"(addr));
}
)";

constexpr std::string_view kLdmatrixX4 =
    R"(__device__ __forceinline__ void emmy_ldmatrix_x4(
    unsigned& d0, unsigned& d1, unsigned& d2, unsigned& d3, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(addr));
}
)";

constexpr std::string_view kLdmatrixX1Trans =
    R"(__device__ __forceinline__ void emmy_ldmatrix_x1_trans(unsigned& d0, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(d0) : "r"(addr));
}
)";

constexpr std::string_view kLdmatrixX2Trans =
    R"(__device__ __forceinline__ void emmy_ldmatrix_x2_trans(unsigned& d0, unsigned& d1, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(d0), "=r"(d1) : "r"(addr));
}
)";

constexpr std::string_view kLdmatrixX4Trans =
    R"(__device__ __forceinline__ void emmy_ldmatrix_x4_trans(
    unsigned& d0, unsigned& d1, unsigned& d2, unsigned& d3, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3) : "r"(addr));
}
)";

constexpr std::string_view kCvtF16x2 =
    R"(__device__ __forceinline__ void emmy_cvt_rn_f16x2_f32(unsigned& d, float a, float b) {
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(a), "f"(b));  // a -> upper half
}
)";

constexpr std::string_view kCvtBf16x2 =
    R"(__device__ __forceinline__ void emmy_cvt_rn_bf16x2_f32(unsigned& d, float a, float b) {
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(a), "f"(b));  // a -> upper half
}
)";

constexpr std::string_view kShflBfly =
    R"(__device__ __forceinline__ void emmy_shfl_bfly(float& d, float v, int lane_mask) {
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=f"(d) : "f"(v), "r"(lane_mask));
}
)";

constexpr std::string_view kShflIdx =
    R"(__device__ __forceinline__ void emmy_shfl_idx(float& d, float v, int src_lane) {
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=f"(d) : "f"(v), "r"(src_lane));
}
)";

constexpr std::string_view kShflBflyI32 =
    R"(__device__ __forceinline__ void emmy_shfl_bfly_i32(int& d, int v, int lane_mask) {
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=r"(d) : "r"(v), "r"(lane_mask));
}
)";

// A double moves as two shfl.sync.bfly.b32, low word then high word.
constexpr std::string_view kShflBflyF64 =
    R"(__device__ __forceinline__ void emmy_shfl_bfly_f64(double& d, double v, int lane_mask) {
  int lo, hi;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=r"(lo) : "r"(__double2loint(v)), "r"(lane_mask));
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=r"(hi) : "r"(__double2hiint(v)), "r"(lane_mask));
  d = __hiloint2double(hi, lo);
}
)";

constexpr std::string_view kEx2 =
    R"(__device__ __forceinline__ void emmy_ex2_approx(float& d, float a) {
  asm("ex2.approx.f32 %0, %1;\n" : "=f"(d) : "f"(a));
}
)";

constexpr std::string_view kCpAsync16 =
    R"(__device__ __forceinline__ void emmy_cp_async_16(unsigned smem_addr, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(smem_addr), "l"(src) : "memory");
}
)";

constexpr std::string_view kCpAsyncCommit =
    R"(__device__ __forceinline__ void emmy_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
)";

// An instruction with no operands, ordered with the memory operations around it (fences,
// commits).
std::string ordering_source(std::string_view helper, std::string_view instruction) {
  return fmt::format("__device__ __forceinline__ void {}() {{\n  asm volatile(\"{};\\n\" ::: \"memory\");\n}}\n",
                     helper, instruction);
}

// wait_group takes an immediate: the literal argument selects its case once inlined. `cases`
// explicit counts, then `fallback` (cp.async: wait for all; wgmma: the deepest case, which waits
// at least as long as asked).
std::string wait_group_source(std::string_view helper, std::string_view instruction, int cases,
                              std::string_view fallback) {
  std::string out = fmt::format("__device__ __forceinline__ void {}(int pending) {{\n  switch (pending) {{\n", helper);
  for (int n = 0; n < cases; ++n)
    out += fmt::format("    case {0}: asm volatile(\"{1} {0};\\n\" ::: \"memory\"); break;\n", n, instruction);
  return out + fmt::format("    default: asm volatile(\"{};\\n\" ::: \"memory\"); break;\n  }}\n}}\n", fallback);
}

constexpr std::string_view kMbarrierInit =
    R"(__device__ __forceinline__ void emmy_mbarrier_init(unsigned bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
)";

constexpr std::string_view kMbarrierExpectTx =
    R"(__device__ __forceinline__ void emmy_mbarrier_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
)";

constexpr std::string_view kMbarrierArrive =
    R"(__device__ __forceinline__ void emmy_mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
)";

constexpr std::string_view kMbarrierArrivePeer =
    R"(__device__ __forceinline__ void emmy_mbarrier_arrive_peer(unsigned bar, unsigned cta) {
  asm volatile("{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
               " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
               :: "r"(bar), "r"(cta) : "memory");
}
)";

// ld.shared::cluster of the value at `addr` in CTA `cta` of the cluster: one helper a type.
std::string dsmem_load_source(std::string_view helper, std::string_view type, std::string_view ptx,
                              std::string_view constraint) {
  return fmt::format(R"(__device__ __forceinline__ void {0}({1}& d, unsigned addr, unsigned cta) {{
  asm volatile("{{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %1, %2;\n"
               " ld.shared::cluster.{2} %0, [remote];\n}}\n" : "={3}"(d) : "r"(addr), "r"(cta) : "memory");
}}
)",
                     helper, type, ptx, constraint);
}

constexpr std::string_view kClusterSync =
    R"(__device__ __forceinline__ void emmy_cluster_sync() {
  asm volatile("fence.mbarrier_init.release.cluster;\nbarrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n"
               ::: "memory");
}
)";

constexpr std::string_view kMbarrierTryWait =
    R"(__device__ __forceinline__ void emmy_mbarrier_try_wait(unsigned bar, unsigned phase) {
  unsigned done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(phase) : "memory");
  } while (!done);
}
)";

// cp.async.bulk.tensor of `rank` coordinates (innermost first) into shared memory, completing
// on the mbarrier at `bar`.
std::string tma_load_source(int rank) {
  std::string params, regs, operands;
  for (int d = 0; d < rank; ++d) {
    params += fmt::format(", int c{}", d);
    regs += fmt::format("{}%{}", d ? ", " : "", d + 3);
    operands += fmt::format(", \"r\"(c{})", d);
  }
  return fmt::format(R"(__device__ __forceinline__ void emmy_tma_load_{0}d(
    const void* tensor_map, unsigned smem_addr, unsigned bar{1}, int ctas) {{
  if (ctas == 0)
    asm volatile("cp.async.bulk.tensor.{0}d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {{{2}}}], [%2];\n"
                 :: "r"(smem_addr), "l"(reinterpret_cast<unsigned long long>(tensor_map)), "r"(bar){3}
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.{0}d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {{{2}}}], [%2], %{4};\n"
                 :: "r"(smem_addr), "l"(reinterpret_cast<unsigned long long>(tensor_map)), "r"(bar){3},
                    "h"((unsigned short)ctas)
                 : "memory");
}}
)",
                     rank, params, regs, operands, rank + 3);
}

// Atomics (red: the atomic without its return value): p is &buffer[index], a generic address.
// Floats order like their bits read as int when non-negative and reversed as unsigned when
// the sign bit is set (-0 included), so max/min of floats are one integer atomic each (NaN is
// not ordered: not supported).
constexpr std::string_view kAtomicAddF32 =
    R"(__device__ __forceinline__ void emmy_atomic_add_f32(float* p, float v) {
  asm volatile("red.add.f32 [%0], %1;\n" :: "l"(p), "f"(v) : "memory");
}
)";
constexpr std::string_view kAtomicAddF64 =
    R"(__device__ __forceinline__ void emmy_atomic_add_f64(double* p, double v) {
  asm volatile("red.add.f64 [%0], %1;\n" :: "l"(p), "d"(v) : "memory");
}
)";
constexpr std::string_view kAtomicAddI32 =
    R"(__device__ __forceinline__ void emmy_atomic_add_i32(int* p, int v) {
  asm volatile("red.add.s32 [%0], %1;\n" :: "l"(p), "r"(v) : "memory");
}
)";
constexpr std::string_view kAtomicMaxF32 =
    R"(__device__ __forceinline__ void emmy_atomic_max_f32(float* p, float v) {
  int b = v != v ? 0x7fffffff : __float_as_int(v);  // NaN as the largest int: it wins and stays
  if (b >= 0) asm volatile("red.max.s32 [%0], %1;\n" :: "l"(p), "r"(b) : "memory");
  else asm volatile("red.min.u32 [%0], %1;\n" :: "l"(p), "r"(b) : "memory");
}
)";
constexpr std::string_view kAtomicMinF32 =
    R"(__device__ __forceinline__ void emmy_atomic_min_f32(float* p, float v) {
  int b = v != v ? -1 : __float_as_int(v);  // NaN as 0xffffffff: the largest unsigned, below every int
  if (b >= 0) asm volatile("red.min.s32 [%0], %1;\n" :: "l"(p), "r"(b) : "memory");
  else asm volatile("red.max.u32 [%0], %1;\n" :: "l"(p), "r"(b) : "memory");
}
)";
constexpr std::string_view kAtomicMaxI32 =
    R"(__device__ __forceinline__ void emmy_atomic_max_i32(int* p, int v) {
  asm volatile("red.max.s32 [%0], %1;\n" :: "l"(p), "r"(v) : "memory");
}
)";
constexpr std::string_view kAtomicMinI32 =
    R"(__device__ __forceinline__ void emmy_atomic_min_i32(int* p, int v) {
  asm volatile("red.min.s32 [%0], %1;\n" :: "l"(p), "r"(v) : "memory");
}
)";

// bar.sync / bar.arrive: the barrier (an operand, the same for every thread of a warp) and the
// thread count (an immediate).
std::string bar_source(std::string_view helper, std::string_view instruction) {
  return fmt::format(
      "__device__ __forceinline__ void {}(int id, int count) {{\n"
      "  asm volatile(\"{} %0, %1;\\n\" :: \"r\"(id), \"r\"(count) : \"memory\");\n}}\n",
      helper, instruction);
}

// setmaxnreg takes an immediate (24 to 256, a multiple of 8): the literal argument selects its
// case once inlined.
std::string setmaxnreg_source(std::string_view helper, std::string_view direction) {
  std::string out = fmt::format("__device__ __forceinline__ void {}(int regs) {{\n  switch (regs) {{\n", helper);
  for (int r = 24; r <= 256; r += 8)
    out +=
        fmt::format("    case {0}: asm volatile(\"setmaxnreg.{1}.sync.aligned.u32 {0};\\n\"); break;\n", r, direction);
  return out + "    default: break;\n  }\n}\n";
}

constexpr std::string_view kRegFence =
    R"(__device__ __forceinline__ void emmy_reg_fence(float& d, float v) {
  d = v;
  asm volatile("" : "+f"(d) :: "memory");
}
)";

struct AtomicRow {
  std::string_view monoid;
  ScalarType type;
  IntrinsicId id;
};
constexpr AtomicRow kAtomics[] = {
    {"sum", ScalarType::F32, IntrinsicId::AtomicAddF32}, {"sum", ScalarType::F64, IntrinsicId::AtomicAddF64},
    {"sum", ScalarType::I32, IntrinsicId::AtomicAddI32}, {"max", ScalarType::F32, IntrinsicId::AtomicMaxF32},
    {"max", ScalarType::I32, IntrinsicId::AtomicMaxI32}, {"min", ScalarType::F32, IntrinsicId::AtomicMinF32},
    {"min", ScalarType::I32, IntrinsicId::AtomicMinI32},
};

// name is the helper without its "emmy_" prefix.
IntrinsicInfo row(IntrinsicId id, std::string_view helper, Scope scope, std::vector<ScalarType> outs,
                  std::vector<ScalarType> ins, int imms, int min_sm, std::string_view source) {
  return {id,   helper.substr(5), scope,  std::move(outs), std::move(ins),
          imms, min_sm,           helper, source,          intrinsic_semantics(id)};
}

std::vector<IntrinsicInfo> build_table() {
  using enum IntrinsicId;
  constexpr Scope T = Scope::Thread, W = Scope::Warp;
  const std::vector<ScalarType> mma_f32_in{U, U, U, U, U, U, F, F, F, F}, f32x4{F, F, F, F};
  // Deeper pipelines than 7 pending cp.async groups wait for all (correct, only less overlap).
  static const std::array<std::string, 2> wait_sources{
      wait_group_source("emmy_cp_async_wait", "cp.async.wait_group", 8, "cp.async.wait_all"),
      wait_group_source("emmy_wgmma_wait", "wgmma.wait_group.sync.aligned", 3, "wgmma.wait_group.sync.aligned 3")};
  std::vector<IntrinsicInfo> t{
      // Fragments: a[4] and b[2] are packed 16-bit pairs (low half = lower column/k index).
      row(MmaF16F32, "emmy_mma_m16n8k16_f16_f32", W, f32x4, mma_f32_in, 0, 80, kMmaF16F32),
      row(MmaBf16F32, "emmy_mma_m16n8k16_bf16_f32", W, f32x4, mma_f32_in, 0, 80, kMmaBf16F32),
      row(MmaF16F16, "emmy_mma_m16n8k16_f16_f16", W, {U, U}, {U, U, U, U, U, U, U, U}, 0, 80, kMmaF16F16),
      // The input is each lane's shared byte address (lanes 8m..8m+7: rows of matrix m).
      row(LdmatrixX1, "emmy_ldmatrix_x1", W, {U}, {U}, 0, 80, kLdmatrixX1),
      row(LdmatrixX2, "emmy_ldmatrix_x2", W, {U, U}, {U}, 0, 80, kLdmatrixX2),
      row(LdmatrixX4, "emmy_ldmatrix_x4", W, {U, U, U, U}, {U}, 0, 80, kLdmatrixX4),
      row(LdmatrixX1Trans, "emmy_ldmatrix_x1_trans", W, {U}, {U}, 0, 80, kLdmatrixX1Trans),
      row(LdmatrixX2Trans, "emmy_ldmatrix_x2_trans", W, {U, U}, {U}, 0, 80, kLdmatrixX2Trans),
      row(LdmatrixX4Trans, "emmy_ldmatrix_x4_trans", W, {U, U, U, U}, {U}, 0, 80, kLdmatrixX4Trans),
      row(CvtRnF16x2F32, "emmy_cvt_rn_f16x2_f32", T, {U}, {F, F}, 0, 80, kCvtF16x2),
      row(CvtRnBf16x2F32, "emmy_cvt_rn_bf16x2_f32", T, {U}, {F, F}, 0, 80, kCvtBf16x2),
      row(ShflBfly, "emmy_shfl_bfly", W, {F}, {F}, 1, 80, kShflBfly),
      row(ShflIdx, "emmy_shfl_idx", W, {F}, {F, I}, 0, 80, kShflIdx),
      row(Ex2Approx, "emmy_ex2_approx", T, {F}, {F}, 0, 80, kEx2),
      // Shared byte address, element index into the Stmt's global buffer (printed &buffer[index]).
      row(CpAsync16, "emmy_cp_async_16", T, {}, {U, L}, 0, 80, kCpAsync16),
      row(CpAsyncCommit, "emmy_cp_async_commit", T, {}, {}, 0, 80, kCpAsyncCommit),
      row(CpAsyncWait, "emmy_cp_async_wait", T, {}, {}, 1, 80, wait_sources[0]),
      // Mbarrier operands are shared byte addresses of a 64-bit mbarrier.
      row(MbarrierInit, "emmy_mbarrier_init", T, {}, {U}, 1, 90, kMbarrierInit),
      row(MbarrierExpectTx, "emmy_mbarrier_expect_tx", T, {}, {U, U}, 0, 90, kMbarrierExpectTx),
      row(MbarrierTryWait, "emmy_mbarrier_try_wait", T, {}, {U, U}, 0, 90, kMbarrierTryWait),
      row(MbarrierArrive, "emmy_mbarrier_arrive", T, {}, {U}, 0, 90, kMbarrierArrive),
      // Element index into the Stmt's global buffer (printed &buffer[index]), value.
      row(AtomicAddF32, "emmy_atomic_add_f32", T, {}, {L, F}, 0, 80, kAtomicAddF32),
      row(AtomicAddF64, "emmy_atomic_add_f64", T, {}, {L, ScalarType::F64}, 0, 80, kAtomicAddF64),
      row(AtomicAddI32, "emmy_atomic_add_i32", T, {}, {L, I}, 0, 80, kAtomicAddI32),
      row(AtomicMaxF32, "emmy_atomic_max_f32", T, {}, {L, F}, 0, 80, kAtomicMaxF32),
      row(AtomicMinF32, "emmy_atomic_min_f32", T, {}, {L, F}, 0, 80, kAtomicMinF32),
      row(AtomicMaxI32, "emmy_atomic_max_i32", T, {}, {L, I}, 0, 80, kAtomicMaxI32),
      row(AtomicMinI32, "emmy_atomic_min_i32", T, {}, {L, I}, 0, 80, kAtomicMinI32),
      // The butterflies of other carrier types (COOP's cross-lane combines): same lane map as f32.
      row(ShflBflyI32, "emmy_shfl_bfly_i32", W, {I}, {I}, 1, 80, kShflBflyI32),
      row(ShflBflyF64, "emmy_shfl_bfly_f64", W, {D}, {D}, 1, 80, kShflBflyF64),
  };
  // The wgmma rows: operand lists and helpers generated per row (the sources live as long as
  // the table).
  static const std::vector<IntrinsicId> wgmma_rows = wgmma_ids();  // in enum order
  static const std::vector<std::pair<std::string, std::string>> wgmma_helpers = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (IntrinsicId id : wgmma_rows) out.emplace_back(wgmma_helper_name(id), wgmma_helper_source(id));
    return out;
  }();
  for (size_t i = 0; i < wgmma_rows.size(); ++i) {
    const IntrinsicId id = wgmma_rows[i];
    const auto& [helper, source] = wgmma_helpers[i];
    const auto accumulators = static_cast<size_t>(wgmma_n(id) / 2);
    // Descriptors travel as two words (low, high): an I64 operand means a global index.
    std::vector<ScalarType> ins =
        wgmma_a_in_registers(id) ? std::vector<ScalarType>{U, U, U, U, U, U} : std::vector<ScalarType>{U, U, U, U};
    if (wgmma_accumulates(id)) ins.insert(ins.end(), accumulators, F);
    t.push_back(
        row(id, helper, Scope::Warpgroup, std::vector<ScalarType>(accumulators, F), std::move(ins), 2, 90, source));
  }
  // TMA loads of 2 to 5 dimensions: shared destination, mbarrier, one coordinate per dimension
  // (innermost first); printed after &tensor_map.
  static const std::array<std::pair<std::string, std::string>, kTmaMaxRank - 1> tma_rows = [] {
    std::array<std::pair<std::string, std::string>, kTmaMaxRank - 1> out;
    for (int rank = 2; rank <= kTmaMaxRank; ++rank)
      out[static_cast<size_t>(rank - 2)] = {fmt::format("emmy_tma_load_{}d", rank), tma_load_source(rank)};
    return out;
  }();
  for (int rank = 2; rank <= kTmaMaxRank; ++rank) {
    std::vector<ScalarType> ins{U, U};
    ins.insert(ins.end(), static_cast<size_t>(rank), I);
    // Inserted in enum order: the TMA rows follow MbarrierArrive.
    auto at = t.begin() + static_cast<std::ptrdiff_t>(IntrinsicId::TmaLoad2d) + rank - 2;
    const auto& [helper, source] = tma_rows[static_cast<size_t>(rank - 2)];
    t.insert(at, row(tma_load_of_rank(rank), helper, T, {}, std::move(ins), 1, 90, source));
  }
  static const std::array<std::string, 3> ordering_sources{
      ordering_source("emmy_wgmma_fence", "wgmma.fence.sync.aligned"),
      ordering_source("emmy_wgmma_commit", "wgmma.commit_group.sync.aligned"),
      ordering_source("emmy_fence_proxy_async", "fence.proxy.async.shared::cta")};
  t.push_back(row(WgmmaFence, "emmy_wgmma_fence", W, {}, {}, 0, 90, ordering_sources[0]));
  t.push_back(row(WgmmaCommit, "emmy_wgmma_commit", W, {}, {}, 0, 90, ordering_sources[1]));
  t.push_back(row(WgmmaWait, "emmy_wgmma_wait", W, {}, {}, 1, 90, wait_sources[1]));
  t.push_back(row(FenceProxyAsync, "emmy_fence_proxy_async", T, {}, {}, 0, 90, ordering_sources[2]));
  t.push_back(row(RegFence, "emmy_reg_fence", T, {F}, {F}, 0, 80, kRegFence));
  static const std::array<std::string, 4> sync_sources{
      bar_source("emmy_bar_sync", "bar.sync"), bar_source("emmy_bar_arrive", "bar.arrive"),
      setmaxnreg_source("emmy_setmaxnreg_inc", "inc"), setmaxnreg_source("emmy_setmaxnreg_dec", "dec")};
  t.push_back(row(BarSync, "emmy_bar_sync", W, {}, {I}, 1, 80, sync_sources[0]));
  t.push_back(row(BarArrive, "emmy_bar_arrive", W, {}, {I}, 1, 80, sync_sources[1]));
  t.push_back(row(SetmaxnregInc, "emmy_setmaxnreg_inc", Scope::Warpgroup, {}, {}, 1, 90, sync_sources[2]));
  t.push_back(row(SetmaxnregDec, "emmy_setmaxnreg_dec", Scope::Warpgroup, {}, {}, 1, 90, sync_sources[3]));
  t.push_back(row(MbarrierArrivePeer, "emmy_mbarrier_arrive_peer", T, {}, {U, U}, 0, 90, kMbarrierArrivePeer));
  t.push_back(row(ClusterSync, "emmy_cluster_sync", T, {}, {}, 0, 90, kClusterSync));
  static const std::array<std::string, 4> dsmem_sources{
      dsmem_load_source("emmy_dsmem_ld_f32", "float", "f32", "f"),
      dsmem_load_source("emmy_dsmem_ld_i32", "int", "b32", "r"),
      dsmem_load_source("emmy_dsmem_ld_f64", "double", "f64", "d"),
      dsmem_load_source("emmy_dsmem_ld_i64", "long long", "b64", "l")};
  t.push_back(row(DsmemLdF32, "emmy_dsmem_ld_f32", T, {F}, {U, U}, 0, 90, dsmem_sources[0]));
  t.push_back(row(DsmemLdI32, "emmy_dsmem_ld_i32", T, {I}, {U, U}, 0, 90, dsmem_sources[1]));
  t.push_back(row(DsmemLdF64, "emmy_dsmem_ld_f64", T, {D}, {U, U}, 0, 90, dsmem_sources[2]));
  t.push_back(row(DsmemLdI64, "emmy_dsmem_ld_i64", T, {L}, {U, U}, 0, 90, dsmem_sources[3]));
  for (size_t i = 0; i < t.size(); ++i)
    if (static_cast<size_t>(t[i].id) != i) throw std::logic_error("intrinsic table out of enum order");
  if (t.size() != static_cast<size_t>(IntrinsicId::Count)) throw std::logic_error("intrinsic table incomplete");
  return t;
}

}  // namespace

const std::vector<IntrinsicInfo>& intrinsic_table() {
  static const std::vector<IntrinsicInfo> table = build_table();
  return table;
}

const IntrinsicInfo& intrinsic_info(IntrinsicId id) { return intrinsic_table().at(static_cast<size_t>(id)); }

std::optional<IntrinsicId> atomic_intrinsic(std::string_view monoid, ScalarType type) {
  for (const AtomicRow& r : kAtomics)
    if (r.monoid == monoid && r.type == type) return r.id;
  return std::nullopt;
}

bool is_atomic(int intrinsic) {
  return std::any_of(std::begin(kAtomics), std::end(kAtomics),
                     [&](const AtomicRow& r) { return static_cast<int>(r.id) == intrinsic; });
}

std::string atomic_forms() {
  std::string out;
  for (std::string_view m : {"sum", "max", "min"}) {
    std::string types;
    for (const AtomicRow& r : kAtomics)
      if (r.monoid == m) types += (types.empty() ? "" : ", ") + std::string(type_name(r.type));
    out += (out.empty() ? "" : "; ") + std::string(m) + " of " + types;
  }
  return out;
}

Stmt intrinsic(IntrinsicId id, std::vector<Reg> outs, std::vector<Expr> ins, std::vector<int64_t> imm,
               std::string name) {
  Stmt s;
  s.kind = Stmt::Kind::Intrinsic;
  s.intrinsic = static_cast<int>(id);
  s.outs = std::move(outs);
  s.args = std::move(ins);
  s.imm = std::move(imm);
  s.name = std::move(name);
  return s;
}

namespace {
void collect_wide(const std::vector<Stmt>& body, std::vector<std::string>& out) {
  for (const Stmt& s : body) {
    bool wide = ((s.kind == Stmt::Kind::VecLoad || s.kind == Stmt::Kind::VecStore) && s.space == Space::Global) ||
                (s.kind == Stmt::Kind::Intrinsic && s.intrinsic == static_cast<int>(IntrinsicId::CpAsync16));
    if (wide && !s.name.empty() && std::find(out.begin(), out.end(), s.name) == out.end()) out.push_back(s.name);
    collect_wide(s.body, out);
    collect_wide(s.orelse, out);
  }
}
}  // namespace

std::vector<std::string> wide_access_buffers(const Kernel& kernel) {
  std::vector<std::string> out;
  collect_wide(kernel.body, out);
  return out;
}

}  // namespace emmy::kir
