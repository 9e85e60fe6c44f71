// wgmma.mma_async (sm_90a): the warpgroup accumulator map, the shared-memory matrix descriptor
// and the operand layouts it describes (no swizzle and 128-byte swizzle, K- and N-major), the
// CPU semantics (checked against shared/data/ptx/wgmma_m64n64k16_f32_f16_f16.json) and the
// CUDA helpers, generated per N.
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"

namespace emmy::kir {
namespace {

constexpr int kWarpgroup = 128, kWarp = 32, kM = 64, kK = 16;
constexpr uint32_t kField = 0x3FFF;  // 14-bit address fields, in units of 16 bytes

struct WgmmaRow {
  IntrinsicId id;
  bool a_in_registers;
  int n;
  bool accumulate = true;
};
constexpr WgmmaRow kRows[] = {
    {IntrinsicId::WgmmaRsN64, true, 64},
    {IntrinsicId::WgmmaRsN128, true, 128},
    {IntrinsicId::WgmmaSsN64, false, 64},
    {IntrinsicId::WgmmaSsN128, false, 128},
    {IntrinsicId::WgmmaRsN256, true, 256},
    {IntrinsicId::WgmmaSsN256, false, 256},
    {IntrinsicId::WgmmaRsN80, true, 80},
    {IntrinsicId::WgmmaSsN80, false, 80},
    {IntrinsicId::WgmmaRsN96, true, 96},
    {IntrinsicId::WgmmaSsN96, false, 96},
    {IntrinsicId::WgmmaRsN144, true, 144},
    {IntrinsicId::WgmmaSsN144, false, 144},
    {IntrinsicId::WgmmaRsN176, true, 176},
    {IntrinsicId::WgmmaSsN176, false, 176},
    {IntrinsicId::WgmmaRsN192, true, 192},
    {IntrinsicId::WgmmaSsN192, false, 192},
    {IntrinsicId::WgmmaSsN64Z, false, 64, false},
    {IntrinsicId::WgmmaSsN80Z, false, 80, false},
    {IntrinsicId::WgmmaSsN96Z, false, 96, false},
    {IntrinsicId::WgmmaSsN128Z, false, 128, false},
    {IntrinsicId::WgmmaSsN144Z, false, 144, false},
    {IntrinsicId::WgmmaSsN176Z, false, 176, false},
    {IntrinsicId::WgmmaSsN192Z, false, 192, false},
    {IntrinsicId::WgmmaSsN256Z, false, 256, false},
};

const WgmmaRow* row_of(IntrinsicId id) {
  for (const WgmmaRow& r : kRows)
    if (r.id == id) return &r;
  return nullptr;
}

uint32_t word(const IntrinsicCall& call, int o, int lane) { return call.in[o * call.lanes + lane]; }

uint64_t descriptor_at(const IntrinsicCall& call, int o, int base) {
  uint64_t d = word(call, o, base) | uint64_t{word(call, o + 1, base)} << 32;
  for (int t = 1; t < kWarpgroup; ++t)
    if ((word(call, o, base + t) | uint64_t{word(call, o + 1, base + t)} << 32) != d)
      throw std::invalid_argument("wgmma: a matrix descriptor differs between the threads of the warpgroup");
  return d;
}

float read16(MemoryPort& memory, uint32_t addr, bool bf16) {
  uint16_t h = 0;
  memory.read_shared(addr, &h, 2);
  return bf16 ? bf16_bits_to_f32(h) : f16_bits_to_f32(h);
}

uint16_t half_of(uint32_t reg, int half) { return static_cast<uint16_t>(half ? reg >> 16 : reg & 0xffff); }

}  // namespace

FragmentCoord wgmma_c_coord(int thread, int reg) {
  int w = thread / kWarp, l = thread % kWarp;
  return {16 * w + l / 4 + 8 * ((reg >> 1) & 1), 8 * (reg >> 2) + 2 * (l & 3) + (reg & 1)};
}

uint64_t wgmma_descriptor(uint32_t start, uint32_t lbo, uint32_t sbo, int swizzle) {
  return uint64_t{(start >> 4) & kField} | uint64_t{(lbo >> 4) & kField} << 16 | uint64_t{(sbo >> 4) & kField} << 32 |
         uint64_t(swizzle & 3) << 62;
}

// Canonical layouts (T = 8 16-bit elements = 16 bytes). No swizzle: 8 x 16-byte core matrices
// stored whole, LBO between core matrices along K, SBO along M/N (N-major: the roles swap).
// 128-byte swizzle: rows of 128 bytes, eight of them an atom of 1024 bytes, SBO between atoms
// along the strided dimension, LBO (N-major only) between 64-element panels along N; the 16-byte
// chunk index is XORed with address bits 7..9, which is why atoms must sit 1024-byte aligned.
uint32_t wgmma_operand_byte(uint64_t desc, int mn, int k, bool mn_major) {
  const uint32_t start = static_cast<uint32_t>(desc & kField) << 4;
  const uint32_t lbo = static_cast<uint32_t>((desc >> 16) & kField) << 4;
  const uint32_t sbo = static_cast<uint32_t>((desc >> 32) & kField) << 4;
  const auto m = static_cast<uint32_t>(mn), kk = static_cast<uint32_t>(k);
  switch (desc >> 62) {
    case 0:
      return mn_major ? start + m / 8 * sbo + m % 8 * 2 + kk / 8 * lbo + kk % 8 * 16
                      : start + m / 8 * sbo + m % 8 * 16 + kk / 8 * lbo + kk % 8 * 2;
    case 1: {
      uint32_t a = mn_major ? start + m / 64 * lbo + kk / 8 * sbo + kk % 8 * 128 + m % 64 * 2
                            : start + m / 8 * sbo + m % 8 * 128 + kk * 2;
      return a ^ (((a >> 7) & 7) << 4);
    }
    default: throw std::invalid_argument("wgmma: the 32- and 64-byte swizzles are not modelled");
  }
}

std::vector<IntrinsicId> wgmma_ids() {
  std::vector<IntrinsicId> ids;
  for (const WgmmaRow& r : kRows) ids.push_back(r.id);
  return ids;
}

std::string wgmma_helper_name(IntrinsicId id) {
  return fmt::format("emmy_wgmma_{}_n{}{}", wgmma_a_in_registers(id) ? "rs" : "ss", wgmma_n(id),
                     wgmma_accumulates(id) ? "" : "_z");
}

int wgmma_n(IntrinsicId id) {
  const WgmmaRow* r = row_of(id);
  return r ? r->n : 0;
}

bool wgmma_a_in_registers(IntrinsicId id) {
  const WgmmaRow* r = row_of(id);
  return r && r->a_in_registers;
}

bool wgmma_accumulates(IntrinsicId id) {
  const WgmmaRow* r = row_of(id);
  return r && r->accumulate;
}

std::optional<IntrinsicId> wgmma_of(int n, bool a_in_registers, bool accumulate) {
  for (const WgmmaRow& r : kRows)
    if (r.n == n && r.a_in_registers == a_in_registers && r.accumulate == accumulate) return r.id;
  return std::nullopt;
}

// Operand words: A's four registers (Rs) or its descriptor (Ss: low word, high word), B's descriptor, then
// the n / 2 accumulators (none for the rows that do not accumulate). Products of two 16-bit values are
// exact in float; each D element is c (0 without C) + the 16 products added left to right in float (the
// vectors are exact in any order).
void wgmma_semantics(const IntrinsicCall& call, IntrinsicId id) {
  const bool a_in_registers = wgmma_a_in_registers(id), accumulate = wgmma_accumulates(id);
  const int n = wgmma_n(id);
  if (call.lanes % kWarpgroup != 0) throw std::invalid_argument("wgmma: called on a partial warpgroup");
  if (call.memory == nullptr) throw std::invalid_argument("wgmma: IntrinsicCall::memory is not set");
  const bool bf16 = call.imm.size() > 0 && call.imm[0] != 0, n_major = call.imm.size() > 1 && call.imm[1] != 0;
  const int b_word = a_in_registers ? 4 : 2, c_word = b_word + 2, regs = n / 2;
  for (int base = 0; base < call.lanes; base += kWarpgroup) {
    std::vector<std::array<float, kK>> a(kM);
    if (a_in_registers) {
      for (int t = 0; t < kWarpgroup; ++t)
        for (int e = 0; e < 8; ++e) {
          FragmentCoord p = mma_a_coord(t % kWarp, e);
          uint16_t h = half_of(word(call, e >> 1, base + t), e & 1);
          a[static_cast<size_t>(16 * (t / kWarp) + p.row)][static_cast<size_t>(p.col)] =
              bf16 ? bf16_bits_to_f32(h) : f16_bits_to_f32(h);
        }
    } else {
      uint64_t da = descriptor_at(call, 0, base);
      for (int m = 0; m < kM; ++m)
        for (int k = 0; k < kK; ++k)
          a[static_cast<size_t>(m)][static_cast<size_t>(k)] =
              read16(*call.memory, wgmma_operand_byte(da, m, k, false), bf16);
    }
    uint64_t db = descriptor_at(call, b_word, base);
    std::vector<std::array<float, kK>> b(static_cast<size_t>(n));  // b[n][k]
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < kK; ++k)
        b[static_cast<size_t>(j)][static_cast<size_t>(k)] =
            read16(*call.memory, wgmma_operand_byte(db, j, k, n_major), bf16);
    for (int t = 0; t < kWarpgroup; ++t)
      for (int i = 0; i < regs; ++i) {
        FragmentCoord q = wgmma_c_coord(t, i);
        float d = accumulate ? bits_f32(word(call, c_word + i, base + t)) : 0.0f;
        for (int k = 0; k < kK; ++k)
          d += a[static_cast<size_t>(q.row)][static_cast<size_t>(k)] *
               b[static_cast<size_t>(q.col)][static_cast<size_t>(k)];
        call.out[static_cast<size_t>(i * call.lanes + base + t)] = f32_bits(d);
      }
  }
}

// emmy_wgmma_{rs,ss}_n<N>(d..., a or desc_a, desc_b, c..., bf16, n_major): the accumulators are
// copied in and updated in place; the two immediates pick one of four spellings once inlined. The
// rows without C (emmy_wgmma_ss_n<N>_z) write d alone, scale-d false: nothing is read into them.
std::string wgmma_helper_source(IntrinsicId id) {
  const bool a_in_registers = wgmma_a_in_registers(id), accumulate = wgmma_accumulates(id);
  const int n = wgmma_n(id), regs = n / 2;
  std::vector<std::string> params, copies, operands, constraints;
  for (int i = 0; i < regs; ++i) {
    params.push_back(fmt::format("float& d{}", i));
    if (accumulate) copies.push_back(fmt::format("d{0} = c{0};", i));
    operands.push_back(fmt::format("%{}", i));
    constraints.push_back(fmt::format("\"{}f\"(d{})", accumulate ? '+' : '=', i));
  }
  std::string a_operand, inputs;
  int next = regs;
  if (a_in_registers) {
    for (int i = 0; i < 4; ++i) params.push_back(fmt::format("unsigned a{}", i));
    a_operand = fmt::format("{{%{}, %{}, %{}, %{}}}", next, next + 1, next + 2, next + 3);
    inputs = "\"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), ";
    next += 4;
  } else {
    params.push_back("unsigned desc_a_lo, unsigned desc_a_hi");
    a_operand = fmt::format("%{}", next++);
    inputs = "\"l\"(desc_a), ";
  }
  params.push_back("unsigned desc_b_lo, unsigned desc_b_hi");
  const int b_at = next++, one_at = next;
  inputs += fmt::format("\"l\"(desc_b), \"r\"({})", accumulate ? 1 : 0);
  for (int i = 0; i < regs && accumulate; ++i) params.push_back(fmt::format("float c{}", i));
  params.push_back("int bf16");
  params.push_back("int n_major");
  auto spelling = [&](std::string_view type, int n_major) {
    std::string trans = a_in_registers ? fmt::format("1, 1, {}", n_major) : fmt::format("1, 1, 0, {}", n_major);
    return fmt::format(
        "asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{}, 0;\\n"
        " wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, {}, %{}, p, {};\\n}}\\n\"\n"
        "                 : {}\n                 : {} : \"memory\");",
        one_at, n, type, type, fmt::join(operands, ", "), a_operand, b_at, trans, fmt::join(constraints, ", "), inputs);
  };
  std::string descs =
      a_in_registers ? "" : "const unsigned long long desc_a = (unsigned long long)desc_a_hi << 32 | desc_a_lo;\n  ";
  descs += "const unsigned long long desc_b = (unsigned long long)desc_b_hi << 32 | desc_b_lo;";
  return fmt::format(
      "__device__ __forceinline__ void {}(\n    {}) {{\n  {}\n  {}\n"
      "  if (bf16) {{\n    if (n_major) {}\n    else {}\n  }} else {{\n    if (n_major) {}\n    else {}\n  }}\n}}\n",
      wgmma_helper_name(id), fmt::join(params, ", "), descs, fmt::join(copies, " "), spelling("bf16", 1),
      spelling("bf16", 0), spelling("f16", 1), spelling("f16", 0));
}

}  // namespace emmy::kir
