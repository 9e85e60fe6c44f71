// Integer division and remainder without ptxas's subroutine calls: shifts, magic numbers, and a
// 32-bit path for 64-bit operands that fit.
#include "codegen/ptx/ptx_divide.hpp"

#include <bit>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace emmy::ptx {
namespace {

using kir::BinOp;
using ST = kir::ScalarType;

// The constant of an immediate operand, if it is one.
std::optional<int64_t> immediate(const Val& v) {
  if (v.text.empty() || v.text[0] == '%') return std::nullopt;
  try {
    size_t used = 0;
    const int64_t x = std::stoll(v.text, &used, 10);
    if (used == v.text.size()) return x;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

struct Spelling {
  int width;
  std::string s, u, b;  // "s64", "u64", "b64"
};

Spelling spelling(ST t) {
  const int w = 8 * kir::type_bytes(t);
  return {w, fmt::format("s{}", w), fmt::format("u{}", w), fmt::format("b{}", w)};
}

std::string emit(Emitter& em, ST t, std::string_view insn, const std::string& a, const std::string& b) {
  return op2(em, insn, t, a, b).text;
}

// x / 2^k (rounding toward zero: a negative x biased by 2^k - 1 first).
std::string quotient_by_shift(Emitter& em, ST t, const std::string& x, int k) {
  const Spelling sp = spelling(t);
  if (t == ST::U32) return emit(em, t, "shr.u32", x, std::to_string(k));
  if (k == 0) return x;
  const std::string sign = emit(em, t, "shr." + sp.s, x, std::to_string(sp.width - 1));
  const std::string bias = emit(em, t, "shr." + sp.u, sign, std::to_string(sp.width - k));
  const std::string biased = emit(em, t, "add." + sp.s, x, bias);
  return emit(em, t, "shr." + sp.s, biased, std::to_string(k));
}

std::string quotient_by_signed_magic(Emitter& em, ST t, const std::string& x, int64_t d) {
  const Spelling sp = spelling(t);
  const SignedMagic m = signed_magic(d, sp.width);
  std::string q = emit(em, t, "mul.hi." + sp.s, x, std::to_string(m.multiplier));
  if (d > 0 && m.multiplier < 0) q = emit(em, t, "add." + sp.s, q, x);
  if (d < 0 && m.multiplier > 0) q = emit(em, t, "sub." + sp.s, q, x);
  if (m.shift > 0) q = emit(em, t, "shr." + sp.s, q, std::to_string(m.shift));
  const std::string negative = emit(em, t, "shr." + sp.u, q, std::to_string(sp.width - 1));
  return emit(em, t, "add." + sp.s, q, negative);
}

std::string quotient_by_unsigned_magic(Emitter& em, ST t, const std::string& x, uint64_t d) {
  const Spelling sp = spelling(t);
  const UnsignedMagic m = unsigned_magic(d, sp.width);
  const std::string hi = emit(em, t, "mul.hi." + sp.u, x, std::to_string(m.multiplier));
  if (!m.add) return m.shift ? emit(em, t, "shr." + sp.u, hi, std::to_string(m.shift)) : hi;
  const std::string diff = emit(em, t, "sub." + sp.u, x, hi);
  const std::string half = emit(em, t, "shr." + sp.u, diff, "1");
  const std::string sum = emit(em, t, "add." + sp.u, half, hi);
  return m.shift > 1 ? emit(em, t, "shr." + sp.u, sum, std::to_string(m.shift - 1)) : sum;
}

// x - q * d: the remainder from the quotient (u32's spelled unsigned: its divisor may pass 2^31).
std::string remainder_of(Emitter& em, ST t, const std::string& x, const std::string& q, const std::string& d) {
  const Spelling sp = spelling(t);
  const std::string& sign = t == ST::U32 ? sp.u : sp.s;
  const std::string back = emit(em, t, "mul.lo." + sign, q, d);
  return emit(em, t, "sub." + sign, x, back);
}

// A 64-bit a / b (or a % b) of registers: div.u32 when both lie in [0, 2^31), else div.s64.
std::string through_32_bits(Emitter& em, BinOp op, const std::string& a, const std::string& b) {
  const std::string insn = op == BinOp::Div ? "div" : "rem";
  const std::string both = emit(em, ST::I64, "or.b64", a, b);
  const std::string high = emit(em, ST::I64, "and.b64", both, "-2147483648");
  const std::string fits = em.temp(ST::Pred);
  em.line(fmt::format("setp.eq.s64 {}, {}, 0;", fits, high));
  const std::string result = em.temp(ST::I64), wide = em.label(), done = em.label();
  em.line(fmt::format("@!{} bra {};", fits, wide));
  const std::string a32 = em.temp(ST::U32), b32 = em.temp(ST::U32), r32 = em.temp(ST::U32);
  em.line(fmt::format("cvt.u32.u64 {}, {};", a32, a));
  em.line(fmt::format("cvt.u32.u64 {}, {};", b32, b));
  em.line(fmt::format("{}.u32 {}, {}, {};", insn, r32, a32, b32));
  em.line(fmt::format("cvt.u64.u32 {}, {};", result, r32));
  em.line(fmt::format("bra {};", done));
  em.place(wide);
  em.line(fmt::format("{}.s64 {}, {}, {};", insn, result, a, b));
  em.place(done);
  return result;
}

}  // namespace

SignedMagic signed_magic(int64_t d, int width) {
  if (d == 0 || d == 1 || d == -1 || (width != 32 && width != 64))
    throw std::invalid_argument("signed_magic: no magic number for this divisor or width");
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  const uint64_t two = uint64_t{1} << (width - 1);
  const uint64_t ad = (d < 0 ? uint64_t{0} - static_cast<uint64_t>(d) : static_cast<uint64_t>(d)) & mask;
  const uint64_t t = two + ((static_cast<uint64_t>(d) & mask) >> (width - 1));
  const uint64_t anc = t - 1 - t % ad;
  int p = width - 1;
  uint64_t q1 = two / anc, r1 = two - q1 * anc, q2 = two / ad, r2 = two - q2 * ad, delta = 0;
  do {
    ++p;
    q1 = (2 * q1) & mask;
    r1 = (2 * r1) & mask;
    if (r1 >= anc) q1 = (q1 + 1) & mask, r1 = (r1 - anc) & mask;
    q2 = (2 * q2) & mask;
    r2 = (2 * r2) & mask;
    if (r2 >= ad) q2 = (q2 + 1) & mask, r2 = (r2 - ad) & mask;
    delta = ad - r2;
  } while (q1 < delta || (q1 == delta && r1 == 0));
  uint64_t m = (q2 + 1) & mask;
  if (d < 0) m = (uint64_t{0} - m) & mask;
  // As a signed width-bit value.
  const int64_t multiplier = width == 64 ? static_cast<int64_t>(m) : static_cast<int64_t>(static_cast<int32_t>(m));
  return {multiplier, p - width};
}

UnsignedMagic unsigned_magic(uint64_t d, int width) {
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  if (d < 2 || d > mask || (width != 32 && width != 64))
    throw std::invalid_argument("unsigned_magic: no magic number for this divisor or width");
  const uint64_t two = uint64_t{1} << (width - 1);
  const uint64_t nc = (mask - ((uint64_t{0} - d) & mask) % d) & mask;
  int p = width - 1;
  bool add = false;
  uint64_t q1 = two / nc, r1 = two - q1 * nc, q2 = (two - 1) / d, r2 = (two - 1) - q2 * d, delta = 0;
  do {
    ++p;
    if (r1 >= ((nc - r1) & mask)) {
      q1 = (2 * q1 + 1) & mask;
      r1 = (2 * r1 - nc) & mask;
    } else {
      q1 = (2 * q1) & mask;
      r1 = (2 * r1) & mask;
    }
    if (((r2 + 1) & mask) >= ((d - r2) & mask)) {
      if (q2 >= two - 1) add = true;
      q2 = (2 * q2 + 1) & mask;
      r2 = (2 * r2 + 1 - d) & mask;
    } else {
      if (q2 >= two) add = true;
      q2 = (2 * q2) & mask;
      r2 = (2 * r2 + 1) & mask;
    }
    delta = (d - 1 - r2) & mask;
  } while (p < 2 * width && (q1 < delta || (q1 == delta && r1 == 0)));
  return {(q2 + 1) & mask, p - width, add};
}

std::optional<Val> divide(Emitter& em, BinOp op, const Val& a, const Val& b) {
  const ST t = a.type;
  if ((op != BinOp::Div && op != BinOp::Rem) || (t != ST::I32 && t != ST::I64 && t != ST::U32)) return std::nullopt;
  const std::optional<int64_t> constant = immediate(b);
  if (!constant) {
    if (t != ST::I64) return std::nullopt;  // ptxas inlines a 32-bit division
    return Val{through_32_bits(em, op, materialize(em, a).text, materialize(em, b).text), t};
  }
  const int64_t d = *constant;
  const bool is_unsigned = t == ST::U32;
  const uint64_t ud = static_cast<uint64_t>(d) & 0xffffffffu;
  if (d == 0 || (is_unsigned ? ud <= 1 : (d == 1 || d == -1))) return std::nullopt;  // left to div/rem
  const std::string x = materialize(em, a).text;
  std::string q;
  if (!is_unsigned && d > 0 && std::has_single_bit(static_cast<uint64_t>(d)))
    q = quotient_by_shift(em, t, x, std::countr_zero(static_cast<uint64_t>(d)));
  else if (is_unsigned && std::has_single_bit(ud))
    q = quotient_by_shift(em, t, x, std::countr_zero(ud));
  else if (is_unsigned)
    q = quotient_by_unsigned_magic(em, t, x, ud);
  else
    q = quotient_by_signed_magic(em, t, x, d);
  if (op == BinOp::Div) return Val{q, t};
  return Val{remainder_of(em, t, x, q, std::to_string(is_unsigned ? static_cast<int64_t>(ud) : d)), t};
}

}  // namespace emmy::ptx
