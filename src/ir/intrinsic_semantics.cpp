// The CPU semantics of every intrinsic on raw 32-bit registers (bit for bit against the
// recorded vectors of shared/data/ptx); the fragment maps they share are exported.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"

namespace emmy::kir {

FragmentCoord mma_a_coord(int lane, int elem) {
  int g = lane >> 2, t = lane & 3, r = elem >> 1;
  return {g + 8 * (r & 1), 2 * t + (elem & 1) + 8 * ((r >> 1) & 1)};
}

FragmentCoord mma_b_coord(int lane, int elem) {
  int g = lane >> 2, t = lane & 3, r = elem >> 1;
  return {2 * t + (elem & 1) + 8 * r, g};
}

FragmentCoord mma_c_coord(int lane, int elem) {
  int g = lane >> 2, t = lane & 3;
  return {g + 8 * (elem >= 2 ? 1 : 0), 2 * t + (elem & 1)};
}

namespace {

constexpr int kWarp = 32;

// Operand `o` of lane `lane` (IntrinsicCall's lane-major layout).
uint32_t in_word(const IntrinsicCall& call, int o, int lane) { return call.in[o * call.lanes + lane]; }
uint32_t& out_word(const IntrinsicCall& call, int o, int lane) { return call.out[o * call.lanes + lane]; }

uint16_t half_of(uint32_t reg, int half) { return static_cast<uint16_t>(half ? reg >> 16 : reg & 0xffff); }
uint32_t pack(uint16_t lo, uint16_t hi) { return lo | static_cast<uint32_t>(hi) << 16; }

int64_t in_i64(const IntrinsicCall& call, int o, int lane) {
  uint64_t lo = in_word(call, o, lane), hi = in_word(call, o + 1, lane);
  return static_cast<int64_t>(lo | hi << 32);
}

MemoryPort& memory_of(const IntrinsicCall& call) {
  if (call.memory == nullptr) throw std::invalid_argument("intrinsic: IntrinsicCall::memory is not set");
  return *call.memory;
}

// ---- mma.sync.m16n8k16 -----------------------------------------------------------------------
// A (row) 16x16, B (col) 16x8, C/D 16x8, lane maps as in mma_*_coord. Operands: a = words 0-3,
// b = 4-5, c = 6-9 (f32) or 6-7 (packed f16); results d = words 0-3 or 0-1.
// Arithmetic: every product of two f16/bf16 values is exact in float; each D element is
// c + a[m][0]*b[0][n] + a[m][1]*b[1][n] + ... + a[m][15]*b[15][n], added left to right in
// float (round to nearest even at each addition), then rounded once to f16 for the packed
// accumulator. The recorded vectors are exact in any order; the hardware's own order for
// inexact sums is not modelled.
using Decode16 = float (*)(uint16_t);

struct MmaTiles {
  std::array<std::array<float, 16>, 16> a{};
  std::array<std::array<float, 8>, 16> b{};
  std::array<std::array<float, 8>, 16> acc{};
};

MmaTiles gather_mma(const IntrinsicCall& call, int base, Decode16 decode, bool packed_acc) {
  MmaTiles tiles;
  for (int lane = 0; lane < kWarp; ++lane) {
    for (int e = 0; e < 8; ++e) {
      FragmentCoord p = mma_a_coord(lane, e);
      tiles.a[p.row][p.col] = decode(half_of(in_word(call, e >> 1, base + lane), e & 1));
    }
    for (int e = 0; e < 4; ++e) {
      FragmentCoord p = mma_b_coord(lane, e);
      tiles.b[p.row][p.col] = decode(half_of(in_word(call, 4 + (e >> 1), base + lane), e & 1));
      FragmentCoord q = mma_c_coord(lane, e);
      tiles.acc[q.row][q.col] = packed_acc ? f16_bits_to_f32(half_of(in_word(call, 6 + (e >> 1), base + lane), e & 1))
                                           : bits_f32(in_word(call, 6 + e, base + lane));
    }
  }
  return tiles;
}

float acc_at(const MmaTiles& t, int lane, int elem) {
  FragmentCoord q = mma_c_coord(lane, elem);
  return t.acc[q.row][q.col];
}

void scatter_mma(const IntrinsicCall& call, int base, const MmaTiles& t, bool packed_acc) {
  for (int lane = 0; lane < kWarp; ++lane) {
    if (!packed_acc) {
      for (int e = 0; e < 4; ++e) out_word(call, e, base + lane) = f32_bits(acc_at(t, lane, e));
      continue;
    }
    for (int r = 0; r < 2; ++r)
      out_word(call, r, base + lane) =
          pack(f32_to_f16_bits(acc_at(t, lane, 2 * r)), f32_to_f16_bits(acc_at(t, lane, 2 * r + 1)));
  }
}

void mma_m16n8k16(const IntrinsicCall& call, Decode16 decode, bool packed_acc) {
  for (int base = 0; base < call.lanes; base += kWarp) {
    MmaTiles t = gather_mma(call, base, decode, packed_acc);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < 16; ++k) t.acc[m][n] += t.a[m][k] * t.b[k][n];
    scatter_mma(call, base, t, packed_acc);
  }
}

// ---- ldmatrix.m8n8 ----------------------------------------------------------------------------
// Lanes 8m..8m+7 give the shared byte addresses of rows 0-7 of matrix m; register m of lane l
// holds (row l/4, cols 2(l%4), 2(l%4)+1) of matrix m, low half first, or with .trans
// (rows 2(l%4), 2(l%4)+1, col l/4).
void ldmatrix(const IntrinsicCall& call, int matrices, bool trans) {
  MemoryPort& memory = memory_of(call);
  for (int base = 0; base < call.lanes; base += kWarp) {
    for (int m = 0; m < matrices; ++m) {
      for (int lane = 0; lane < kWarp; ++lane) {
        std::array<uint16_t, 2> halves{};
        for (int h = 0; h < 2; ++h) {
          int row = trans ? 2 * (lane % 4) + h : lane / 4;
          int col = trans ? lane / 4 : 2 * (lane % 4) + h;
          uint32_t addr = in_word(call, 0, base + 8 * m + row) + 2 * static_cast<uint32_t>(col);
          memory.read_shared(addr, &halves[h], 2);
        }
        out_word(call, m, base + lane) = pack(halves[0], halves[1]);
      }
    }
  }
}

// ---- thread-scope arithmetic ------------------------------------------------------------------
// cvt.rn.{f16,bf16}x2.f32 d, a, b: a (word 0) goes to the UPPER half, b (word 1) to the lower.
using Encode16 = uint16_t (*)(float);
void cvt_x2(const IntrinsicCall& call, Encode16 encode) {
  for (int l = 0; l < call.lanes; ++l)
    out_word(call, 0, l) = pack(encode(bits_f32(in_word(call, 1, l))), encode(bits_f32(in_word(call, 0, l))));
}

// ex2.approx.f32 is within 2 ulp on the GPU; the CPU gives exp2 computed in double and rounded
// once to float (correctly rounded but for the rare hard cases), so results may differ from
// the hardware by an ulp or two. Subnormal results are kept (no .ftz); NaN stays NaN.
void ex2_approx(const IntrinsicCall& call) {
  for (int l = 0; l < call.lanes; ++l)
    out_word(call, 0, l) = f32_bits(static_cast<float>(std::exp2(static_cast<double>(bits_f32(in_word(call, 0, l))))));
}

// ---- shfl.sync with c = 0x1f and every lane a member -----------------------------------------
// bfly: lane l reads lane l ^ (imm[0] & 31); idx: lane l reads lane (word 1) & 31 of its warp.
// `words` 32-bit words per value (2 for i64 and f64: each word moves as its own shfl).
void shfl_bfly_words(const IntrinsicCall& call, int words) {
  uint32_t mask = static_cast<uint32_t>(call.imm[0]) & 31;
  for (int w = 0; w < words; ++w)
    for (int l = 0; l < call.lanes; ++l) out_word(call, w, l) = in_word(call, w, (l & ~31) | ((l & 31) ^ mask));
}

void shfl_bfly(const IntrinsicCall& call) { shfl_bfly_words(call, 1); }

void shfl_idx(const IntrinsicCall& call) {
  for (int l = 0; l < call.lanes; ++l)
    out_word(call, 0, l) = in_word(call, 0, (l & ~31) | static_cast<int>(in_word(call, 1, l) & 31));
}

// ---- distributed shared memory ----------------------------------------------------------------
// ld.shared::cluster: word 0 = shared byte address, word 1 = the cluster's CTA; `words` 32-bit
// words a value, little-endian (the low word first, as the registers of an f64 or i64 are).
void dsmem_load(const IntrinsicCall& call, int words) {
  MemoryPort& memory = memory_of(call);
  for (int l = 0; l < call.lanes; ++l) {
    std::array<uint32_t, 2> value{};
    memory.read_cluster_shared(in_word(call, 1, l), in_word(call, 0, l), value.data(),
                               static_cast<uint32_t>(4 * words));
    for (int w = 0; w < words; ++w) out_word(call, w, l) = value[static_cast<size_t>(w)];
  }
}

// ---- asynchronous copies ----------------------------------------------------------------------
// cp.async 16 B: word 0 = shared byte address, words 1-2 = the element index (I64) into
// call.buffer. The copy happens when this runs: the interpreter queues the call until the
// thread's cp.async.wait_group lets the group land.
void cp_async_16(const IntrinsicCall& call) {
  if (call.elem_bytes == 0) throw std::invalid_argument("cp.async: IntrinsicCall::elem_bytes is not set");
  MemoryPort& memory = memory_of(call);
  for (int l = 0; l < call.lanes; ++l) {
    std::array<uint8_t, 16> bytes{};
    uint64_t offset = static_cast<uint64_t>(in_i64(call, 1, l)) * call.elem_bytes;
    memory.read_global(call.buffer, offset, bytes.data(), 16);
    memory.write_shared(in_word(call, 0, l), bytes.data(), 16);
  }
}

// TMA load: word 0 = shared destination, 1 = mbarrier (unused here), then one coordinate per
// dimension of the map (innermost first, signed). The box lands when this runs: the interpreter
// queues the call until the mbarrier phase that counts its bytes completes.
void tma_load(const IntrinsicCall& call) {
  if (call.tensor_map == nullptr) throw std::invalid_argument("TMA: IntrinsicCall::tensor_map is not set");
  MemoryPort& memory = memory_of(call);
  const size_t coords = call.in.size() / static_cast<size_t>(call.lanes) - 2;
  std::vector<int64_t> at(coords);
  for (int l = 0; l < call.lanes; ++l) {
    for (size_t d = 0; d < coords; ++d) at[d] = static_cast<int32_t>(in_word(call, static_cast<int>(d) + 2, l));
    tma_box_copy(*call.tensor_map, at, in_word(call, 0, l), memory);
  }
}

// ---- atomics ------------------------------------------------------------------------------------
// Words 0-1 = the element index (I64) into call.buffer, then the value (one word, two for f64).
// Lanes apply one after another, as the hardware serializes them on one address.
template <class T, class Combine>
void atomic_rmw(const IntrinsicCall& call, Combine combine) {
  if (call.elem_bytes != sizeof(T)) throw std::invalid_argument("atomic: IntrinsicCall::elem_bytes does not match");
  MemoryPort& memory = memory_of(call);
  for (int l = 0; l < call.lanes; ++l) {
    uint64_t offset = static_cast<uint64_t>(in_i64(call, 0, l)) * sizeof(T);
    uint64_t bits = in_word(call, 2, l);
    if constexpr (sizeof(T) == 8) bits |= static_cast<uint64_t>(in_word(call, 3, l)) << 32;
    T value, old;
    std::memcpy(&value, &bits, sizeof(T));
    memory.read_global(call.buffer, offset, &old, sizeof(T));
    T next = combine(old, value);
    memory.write_global(call.buffer, offset, &next, sizeof(T));
  }
}

// The CUDA helpers' float max/min: an integer atomic on the bits (see intrinsics.cpp), a NaN
// first made the bits that win (0x7fffffff for max, 0xffffffff for min), so it propagates.
float float_extreme(float old, float v, bool max) {
  int32_t ov, vv;
  std::memcpy(&ov, &old, 4);
  std::memcpy(&vv, &v, 4);
  if (v != v) vv = max ? 0x7fffffff : -1;
  uint32_t ou = static_cast<uint32_t>(ov), vu = static_cast<uint32_t>(vv);
  int32_t r = vv >= 0 ? (max ? std::max(ov, vv) : std::min(ov, vv))
                      : static_cast<int32_t>(max ? std::min(ou, vu) : std::max(ou, vu));
  float out;
  std::memcpy(&out, &r, 4);
  return out;
}

// commit_group, wait_group, the mbarrier operations, the named barriers and setmaxnreg order
// the copies and warps around them; they compute nothing. The interpreter gives them their
// meaning (groups, arrival counts, phases, transaction bytes, register budgets), so their
// semantics here do nothing.
void ordering_only(const IntrinsicCall&) {}

constexpr std::array<IntrinsicSemantics, static_cast<size_t>(IntrinsicId::Count)> kSemantics{{
    [](const IntrinsicCall& c) { mma_m16n8k16(c, f16_bits_to_f32, false); },                       // MmaF16F32
    [](const IntrinsicCall& c) { mma_m16n8k16(c, bf16_bits_to_f32, false); },                      // MmaBf16F32
    [](const IntrinsicCall& c) { mma_m16n8k16(c, f16_bits_to_f32, true); },                        // MmaF16F16
    [](const IntrinsicCall& c) { ldmatrix(c, 1, false); },                                         // LdmatrixX1
    [](const IntrinsicCall& c) { ldmatrix(c, 2, false); },                                         // LdmatrixX2
    [](const IntrinsicCall& c) { ldmatrix(c, 4, false); },                                         // LdmatrixX4
    [](const IntrinsicCall& c) { ldmatrix(c, 1, true); },                                          // LdmatrixX1Trans
    [](const IntrinsicCall& c) { ldmatrix(c, 2, true); },                                          // LdmatrixX2Trans
    [](const IntrinsicCall& c) { ldmatrix(c, 4, true); },                                          // LdmatrixX4Trans
    [](const IntrinsicCall& c) { cvt_x2(c, f32_to_f16_bits); },                                    // CvtRnF16x2F32
    [](const IntrinsicCall& c) { cvt_x2(c, f32_to_bf16_bits); },                                   // CvtRnBf16x2F32
    shfl_bfly,                                                                                     // ShflBfly
    shfl_idx,                                                                                      // ShflIdx
    ex2_approx,                                                                                    // Ex2Approx
    cp_async_16,                                                                                   // CpAsync16
    ordering_only,                                                                                 // CpAsyncCommit
    ordering_only,                                                                                 // CpAsyncWait
    ordering_only,                                                                                 // MbarrierInit
    ordering_only,                                                                                 // MbarrierExpectTx
    ordering_only,                                                                                 // MbarrierTryWait
    ordering_only,                                                                                 // MbarrierArrive
    tma_load,                                                                                      // TmaLoad2d
    tma_load,                                                                                      // TmaLoad3d
    tma_load,                                                                                      // TmaLoad4d
    tma_load,                                                                                      // TmaLoad5d
    [](const IntrinsicCall& c) { atomic_rmw<float>(c, [](float a, float b) { return a + b; }); },  // AtomicAddF32
    [](const IntrinsicCall& c) { atomic_rmw<double>(c, [](double a, double b) { return a + b; }); },  // AtomicAddF64
    [](const IntrinsicCall& c) {                                                                      // AtomicAddI32
      atomic_rmw<int32_t>(c, [](int32_t a, int32_t b) {
        return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps, as on the GPU
      });
    },
    [](const IntrinsicCall& c) { atomic_rmw<float>(c, [](float a, float b) { return float_extreme(a, b, true); }); },
    [](const IntrinsicCall& c) { atomic_rmw<float>(c, [](float a, float b) { return float_extreme(a, b, false); }); },
    [](const IntrinsicCall& c) { atomic_rmw<int32_t>(c, [](int32_t a, int32_t b) { return std::max(a, b); }); },
    [](const IntrinsicCall& c) { atomic_rmw<int32_t>(c, [](int32_t a, int32_t b) { return std::min(a, b); }); },
    shfl_bfly,                                              // ShflBflyI32
    [](const IntrinsicCall& c) { shfl_bfly_words(c, 2); },  // ShflBflyF64
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN64); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN128); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN64); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN128); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN256); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN256); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN80); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN80); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN96); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN96); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN144); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN144); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN176); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN176); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaRsN192); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN192); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN64Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN80Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN96Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN128Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN144Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN176Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN192Z); },
    [](const IntrinsicCall& c) { wgmma_semantics(c, IntrinsicId::WgmmaSsN256Z); },
    ordering_only,                // WgmmaFence
    ordering_only,                // WgmmaCommit
    ordering_only,                // WgmmaWait
    ordering_only,                // FenceProxyAsync
    [](const IntrinsicCall& c) {  // RegFence
      for (int l = 0; l < c.lanes; ++l) c.out[static_cast<size_t>(l)] = c.in[static_cast<size_t>(l)];
    },
    ordering_only,                                     // BarSync
    ordering_only,                                     // BarArrive
    ordering_only,                                     // SetmaxnregInc
    ordering_only,                                     // SetmaxnregDec
    ordering_only,                                     // MbarrierArrivePeer
    ordering_only,                                     // ClusterSync
    [](const IntrinsicCall& c) { dsmem_load(c, 1); },  // DsmemLdF32
    [](const IntrinsicCall& c) { dsmem_load(c, 1); },  // DsmemLdI32
    [](const IntrinsicCall& c) { dsmem_load(c, 2); },  // DsmemLdF64
    [](const IntrinsicCall& c) { dsmem_load(c, 2); },  // DsmemLdI64
}};

}  // namespace

IntrinsicSemantics intrinsic_semantics(IntrinsicId id) { return kSemantics.at(static_cast<size_t>(id)); }

}  // namespace emmy::kir
