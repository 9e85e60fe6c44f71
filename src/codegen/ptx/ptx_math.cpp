// The kernel IR's operators, conversions and math functions as PTX: one table row an instruction,
// sequences where CUDA's math library has a function (expf, logf).
#include "codegen/ptx/ptx_math.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <optional>
#include <stdexcept>

#include "codegen/ptx/ptx_divide.hpp"
#include "ir/numeric.hpp"

namespace emmy::ptx {
namespace {
using kir::BinOp;
using kir::UnOp;
using ST = kir::ScalarType;

using TypeSet = uint16_t;
constexpr TypeSet bit(ST t) { return static_cast<TypeSet>(1u << static_cast<unsigned>(t)); }
constexpr TypeSet kPred = bit(ST::Pred), kF32 = bit(ST::F32), kF64 = bit(ST::F64);
constexpr TypeSet kFloats = kF32 | kF64;
constexpr TypeSet kSigned = bit(ST::I32) | bit(ST::I64);
constexpr TypeSet kInts = kSigned | bit(ST::U32);
constexpr TypeSet kNumbers = kInts | kFloats;

struct TypeRow {
  ST type;
  std::string_view reg, prefix, ld, mov;
};
constexpr std::array kTypes{
    TypeRow{ST::Pred, ".pred", "p", "u8", "pred"}, TypeRow{ST::I32, ".b32", "r", "s32", "b32"},
    TypeRow{ST::I64, ".b64", "rd", "s64", "b64"},  TypeRow{ST::U32, ".b32", "r", "u32", "b32"},
    TypeRow{ST::F16, ".b16", "h", "b16", "b16"},   TypeRow{ST::BF16, ".b16", "h", "b16", "b16"},
    TypeRow{ST::F32, ".f32", "f", "f32", "f32"},   TypeRow{ST::F64, ".f64", "fd", "f64", "f64"},
};
const TypeRow& row_of(ST t) { return kTypes[static_cast<size_t>(t)]; }

// One instruction `insn d, a[, b]`: `{t}` is the operand type's suffix, `{b}` its bit width.
struct UnRow {
  UnOp op;
  TypeSet types;
  std::string_view insn;
};
constexpr std::array kUnary{
    UnRow{UnOp::Neg, kSigned | kFloats, "neg.{t}"},   UnRow{UnOp::Not, kPred, "not.pred"},
    UnRow{UnOp::Abs, kSigned | kFloats, "abs.{t}"},   UnRow{UnOp::Exp2, kF32, "ex2.approx.f32"},
    UnRow{UnOp::Exp2Ftz, kF32, "ex2.approx.ftz.f32"}, UnRow{UnOp::Sqrt, kFloats, "sqrt.rn.{t}"},
    UnRow{UnOp::Rsqrt, kF32, "rsqrt.approx.f32"},     UnRow{UnOp::Floor, kFloats, "cvt.rmi.{t}.{t}"},
    UnRow{UnOp::Ceil, kFloats, "cvt.rpi.{t}.{t}"},
};

// max and min propagate NaN (ir/ieee_rules.hpp): f32 as max.NaN / min.NaN, f64 by a compare below.
// C's != is true for NaN operands (setp.neu); the other comparisons are ordered.
struct BinRow {
  BinOp op;
  TypeSet types;
  std::string_view insn;
};
constexpr std::array kBinary{
    BinRow{BinOp::Add, kNumbers, "add.{t}"},
    BinRow{BinOp::Sub, kNumbers, "sub.{t}"},
    BinRow{BinOp::Mul, kInts, "mul.lo.{t}"},
    BinRow{BinOp::Mul, kFloats, "mul.{t}"},
    BinRow{BinOp::Div, kInts, "div.{t}"},
    BinRow{BinOp::Div, kFloats, "div.rn.{t}"},
    BinRow{BinOp::Rem, kInts, "rem.{t}"},
    BinRow{BinOp::Min, kInts, "min.{t}"},
    BinRow{BinOp::Min, kF32, "min.NaN.f32"},
    BinRow{BinOp::Max, kInts, "max.{t}"},
    BinRow{BinOp::Max, kF32, "max.NaN.f32"},
    BinRow{BinOp::Lt, kNumbers, "setp.lt.{t}"},
    BinRow{BinOp::Le, kNumbers, "setp.le.{t}"},
    BinRow{BinOp::Gt, kNumbers, "setp.gt.{t}"},
    BinRow{BinOp::Ge, kNumbers, "setp.ge.{t}"},
    BinRow{BinOp::Eq, kNumbers, "setp.eq.{t}"},
    BinRow{BinOp::Ne, kInts, "setp.ne.{t}"},
    BinRow{BinOp::Ne, kFloats, "setp.neu.{t}"},
    BinRow{BinOp::Ne, kPred, "xor.pred"},
    BinRow{BinOp::And, kPred, "and.pred"},
    BinRow{BinOp::Or, kPred, "or.pred"},
    BinRow{BinOp::Shl, kInts, "shl.{b}"},
    BinRow{BinOp::Shr, kSigned, "shr.{t}"},
    BinRow{BinOp::Shr, bit(ST::U32), "shr.u32"},
    BinRow{BinOp::BitAnd, kInts | kPred, "and.{b}"},
    BinRow{BinOp::BitOr, kInts | kPred, "or.{b}"},
    BinRow{BinOp::BitXor, kInts | kPred, "xor.{b}"},
};

std::string spell(std::string_view insn, ST t) {
  std::string out;
  for (size_t i = 0; i < insn.size(); ++i) {
    if (insn.compare(i, 3, "{t}") == 0) {
      out += row_of(t).ld, i += 2;
    } else if (insn.compare(i, 3, "{b}") == 0) {
      out += t == ST::Pred ? "pred" : (kir::type_bytes(t) == 8 ? "b64" : "b32"), i += 2;
    } else {
      out += insn[i];
    }
  }
  return out;
}

std::string f32_bits(float v) { return fmt::format("0f{:08X}", std::bit_cast<uint32_t>(v)); }

Val op1(Emitter& em, std::string_view insn, ST type, const std::string& a) {
  const std::string r = em.temp(type);
  em.line(fmt::format("{} {}, {};", insn, r, a));
  return {r, type};
}
Val op3(Emitter& em, std::string_view insn, ST type, const std::string& a, const std::string& b, const std::string& c) {
  const std::string r = em.temp(type);
  em.line(fmt::format("{} {}, {}, {}, {};", insn, r, a, b, c));
  return {r, type};
}

// 2^j for an integer j in [-126, 127], by its exponent bits.
Val pow2(Emitter& em, const std::string& j) {
  Val e = op2(em, "add.s32", ST::I32, j, "127");
  Val bits = op2(em, "shl.b32", ST::I32, e.text, "23");
  return op1(em, "mov.b32", ST::F32, bits.text);
}

// expf: x = j ln2 + r (Cody and Waite, |r| <= ln2 / 2), 2^(r log2 e) by ex2.approx, times 2^j
// in two halves (so that subnormal results round once); j clamped to [-150, 128], where the
// result is 0 or inf anyway, which also keeps r finite for x = +-inf. About 2 ulp, as CUDA's.
Val exp_f32(Emitter& em, const Val& x) {
  Val t = op2(em, "mul.f32", ST::F32, x.text, f32_bits(1.44269504f));
  Val j = op1(em, "cvt.rni.f32.f32", ST::F32, t.text);
  j = op2(em, "max.f32", ST::F32, j.text, f32_bits(-150.0f));
  j = op2(em, "min.f32", ST::F32, j.text, f32_bits(128.0f));
  Val r = op3(em, "fma.rn.f32", ST::F32, j.text, f32_bits(-0.693145751953125f), x.text);
  r = op3(em, "fma.rn.f32", ST::F32, j.text, f32_bits(-1.42860677e-6f), r.text);
  Val u = op2(em, "mul.f32", ST::F32, r.text, f32_bits(1.44269504f));
  Val e = op1(em, "ex2.approx.ftz.f32", ST::F32, u.text);
  Val ji = op1(em, "cvt.rzi.s32.f32", ST::I32, j.text);
  Val j1 = op2(em, "shr.s32", ST::I32, ji.text, "1");
  Val j2 = op2(em, "sub.s32", ST::I32, ji.text, j1.text);
  Val y = op2(em, "mul.rn.f32", ST::F32, e.text, pow2(em, j1.text).text);
  return op2(em, "mul.rn.f32", ST::F32, y.text, pow2(em, j2.text).text);
}

// logf (fdlibm's reduction and polynomial): x = m 2^k with m in [sqrt(1/2), sqrt(2)),
// log m = f - (f^2 / 2 - s (f^2 / 2 + R(s^2))) with f = m - 1, s = f / (2 + f); subnormals
// scaled by 2^23 first; NaN and negatives give NaN, zeros -inf, +inf itself. Under 1 ulp.
Val log_f32(Emitter& em, const Val& x) {
  Val tiny = op2(em, "setp.lt.f32", ST::Pred, x.text, f32_bits(1.17549435e-38f));
  Val scaled = op2(em, "mul.rn.f32", ST::F32, x.text, f32_bits(8388608.0f));
  Val xs = op3(em, "selp.f32", ST::F32, scaled.text, x.text, tiny.text);
  Val k0 = op3(em, "selp.s32", ST::I32, "-23", "0", tiny.text);
  Val ix = op1(em, "mov.b32", ST::I32, xs.text);
  Val d = op2(em, "sub.s32", ST::I32, ix.text, "1060439283");  // 0x3f3504f3: sqrt(1/2)'s bits
  Val k = op2(em, "shr.s32", ST::I32, d.text, "23");
  k = op2(em, "add.s32", ST::I32, k.text, k0.text);
  Val mb = op2(em, "and.b32", ST::I32, d.text, "8388607");
  mb = op2(em, "add.s32", ST::I32, mb.text, "1060439283");
  Val m = op1(em, "mov.b32", ST::F32, mb.text);
  Val f = op2(em, "sub.f32", ST::F32, m.text, f32_bits(1.0f));
  Val s = op2(em, "div.rn.f32", ST::F32, f.text, op2(em, "add.f32", ST::F32, f.text, f32_bits(2.0f)).text);
  Val z = op2(em, "mul.f32", ST::F32, s.text, s.text);
  Val w = op2(em, "mul.f32", ST::F32, z.text, z.text);
  Val t1 = op3(em, "fma.rn.f32", ST::F32, w.text, f32_bits(0.24279078841f), f32_bits(0.40000972152f));
  t1 = op2(em, "mul.f32", ST::F32, w.text, t1.text);
  Val t2 = op3(em, "fma.rn.f32", ST::F32, w.text, f32_bits(0.28498786688f), f32_bits(0.66666662693f));
  t2 = op2(em, "mul.f32", ST::F32, z.text, t2.text);
  Val R = op2(em, "add.f32", ST::F32, t2.text, t1.text);
  Val hf = op2(em, "mul.f32", ST::F32, op2(em, "mul.f32", ST::F32, f.text, f32_bits(0.5f)).text, f.text);
  Val kf = op1(em, "cvt.rn.f32.s32", ST::F32, k.text);
  // k ln2_hi - ((hf - (s (hf + R) + k ln2_lo)) - f)
  Val inner = op3(em, "fma.rn.f32", ST::F32, s.text, op2(em, "add.f32", ST::F32, hf.text, R.text).text,
                  op2(em, "mul.f32", ST::F32, kf.text, f32_bits(9.0580006145e-06f)).text);
  Val y = op2(em, "sub.f32", ST::F32, op2(em, "sub.f32", ST::F32, hf.text, inner.text).text, f.text);
  y = op2(em, "sub.f32", ST::F32, op2(em, "mul.f32", ST::F32, kf.text, f32_bits(6.9313812256e-01f)).text, y.text);
  // The edges: +inf itself, zeros -inf, NaN and negatives NaN.
  Val inf = op2(em, "setp.eq.f32", ST::Pred, x.text, f32_bits(std::bit_cast<float>(0x7f800000u)));
  y = op3(em, "selp.f32", ST::F32, x.text, y.text, inf.text);
  Val zero = op2(em, "setp.eq.f32", ST::Pred, x.text, f32_bits(0.0f));
  y = op3(em, "selp.f32", ST::F32, f32_bits(-std::bit_cast<float>(0x7f800000u)), y.text, zero.text);
  Val bad = op2(em, "setp.ltu.f32", ST::Pred, x.text, f32_bits(0.0f));  // unordered: NaN too
  return op3(em, "selp.f32", ST::F32, f32_bits(std::bit_cast<float>(0x7fffffffu)), y.text, bad.text);
}

// tanhf: for |x| < 1/4 the odd series to x^11 (truncation under 0.2 ulp there), above it
// (e - 1) / (e + 1) as e' / (e' + 2) with e' = exp(2|x|) - 1, 1 past |x| = 9 (where tanh rounds to
// 1 and e' overflows), the sign of x put back. Within 3.1 ulp of tanh in a CPU emulation with an
// exact 2^x; ex2.approx adds its own error in the exp branch (CUDA's tanhf: 2 ulp).
Val tanh_f32(Emitter& em, const Val& x) {
  Val a = op1(em, "abs.f32", ST::F32, x.text);
  Val e = op2(em, "sub.f32", ST::F32, exp_f32(em, op2(em, "add.f32", ST::F32, a.text, a.text)).text, f32_bits(1.0f));
  Val t = op2(em, "div.rn.f32", ST::F32, e.text, op2(em, "add.f32", ST::F32, e.text, f32_bits(2.0f)).text);
  Val z = op2(em, "mul.f32", ST::F32, a.text, a.text);
  Val q = op3(em, "fma.rn.f32", ST::F32, z.text, f32_bits(static_cast<float>(-1382.0 / 155925)),
              f32_bits(static_cast<float>(62.0 / 2835)));
  q = op3(em, "fma.rn.f32", ST::F32, z.text, q.text, f32_bits(static_cast<float>(-17.0 / 315)));
  q = op3(em, "fma.rn.f32", ST::F32, z.text, q.text, f32_bits(static_cast<float>(2.0 / 15)));
  q = op3(em, "fma.rn.f32", ST::F32, z.text, q.text, f32_bits(static_cast<float>(-1.0 / 3)));
  q = op2(em, "mul.f32", ST::F32, q.text, z.text);
  Val series = op3(em, "fma.rn.f32", ST::F32, a.text, q.text, a.text);
  Val small = op2(em, "setp.lt.f32", ST::Pred, a.text, f32_bits(0.25f));
  t = op3(em, "selp.f32", ST::F32, series.text, t.text, small.text);
  Val big = op2(em, "setp.gt.f32", ST::Pred, a.text, f32_bits(9.0f));
  t = op3(em, "selp.f32", ST::F32, f32_bits(1.0f), t.text, big.text);
  Val sign = op2(em, "and.b32", ST::U32, op1(em, "mov.b32", ST::U32, x.text).text, "0x80000000");
  Val bits = op2(em, "or.b32", ST::U32, op1(em, "mov.b32", ST::U32, t.text).text, sign.text);
  return op1(em, "mov.b32", ST::F32, bits.text);
}

// 1 / (1 + exp(-x)), as the CUDA printer spells sigmoid.
Val sigmoid_f32(Emitter& em, const Val& x) {
  Val e = exp_f32(em, op1(em, "neg.f32", ST::F32, x.text));
  Val d = op2(em, "add.f32", ST::F32, e.text, f32_bits(1.0f));
  return op2(em, "div.rn.f32", ST::F32, f32_bits(1.0f), d.text);
}

// max and min of doubles: a when a is NaN or wins, else b (emmy_fmax / emmy_fmin).
Val minmax_f64(Emitter& em, bool is_max, const Val& a, const Val& b) {
  Val nan = op2(em, "setp.nan.f64", ST::Pred, a.text, a.text);
  Val wins = op2(em, is_max ? "setp.gt.f64" : "setp.lt.f64", ST::Pred, a.text, b.text);
  Val take = op2(em, "or.pred", ST::Pred, nan.text, wins.text);
  return op3(em, "selp.f64", ST::F64, a.text, b.text, take.text);
}

}  // namespace

Val op2(Emitter& em, std::string_view insn, ST type, const std::string& a, const std::string& b) {
  const std::string r = em.temp(type);
  em.line(fmt::format("{} {}, {}, {};", insn, r, a, b));
  return {r, type};
}

std::string_view reg_type(ST t) { return row_of(t).reg; }
std::string_view reg_prefix(ST t) { return row_of(t).prefix; }
std::string_view ld_type(ST t) { return row_of(t).ld; }
std::string_view mov_type(ST t) { return row_of(t).mov; }

Val materialize(Emitter& em, const Val& v) {
  if (!v.text.empty() && v.text[0] == '%') return v;
  return op1(em, fmt::format("mov.{}", row_of(v.type).mov), v.type, v.text);
}

uint16_t half_bits(ST t, double v) {
  const float f = static_cast<float>(v);
  return t == ST::BF16 ? kir::f32_to_bf16_bits(f) : kir::f32_to_f16_bits(f);
}

Val math_unary(Emitter& em, UnOp op, const Val& a) {
  for (const UnRow& r : kUnary)
    if (r.op == op && (r.types & bit(a.type))) return op1(em, spell(r.insn, a.type), a.type, materialize(em, a).text);
  if (a.type == ST::F32) {
    const Val x{materialize(em, a).text, a.type};  // the sequences reinterpret its bits (mov.b32)
    if (op == UnOp::Exp) return exp_f32(em, x);
    if (op == UnOp::Log) return log_f32(em, x);
    if (op == UnOp::Sigmoid) return sigmoid_f32(em, x);
    if (op == UnOp::Tanh) return tanh_f32(em, x);
  }
  throw Unsupported{fmt::format("{} of {}", kir::unop_name(op), kir::type_name(a.type))};
}

Val math_binary(Emitter& em, BinOp op, const Val& a, const Val& b) {
  const ST t = a.type;
  if (t == ST::F64 && (op == BinOp::Max || op == BinOp::Min)) return minmax_f64(em, op == BinOp::Max, a, b);
  if (std::optional<Val> divided = divide(em, op, a, b)) return *divided;
  if (t == ST::Pred && op == BinOp::Eq) {
    Val x = op2(em, "xor.pred", ST::Pred, materialize(em, a).text, materialize(em, b).text);
    return op1(em, "not.pred", ST::Pred, x.text);
  }
  for (const BinRow& r : kBinary) {
    if (r.op != op || !(r.types & bit(t))) continue;
    const ST result = kir::is_comparison(op) ? ST::Pred : t;
    std::string rhs = b.text;
    if ((op == BinOp::Shl || op == BinOp::Shr) && b.type == ST::I64)
      rhs = op1(em, "cvt.u32.u64", ST::U32, materialize(em, b).text).text;  // a shift's amount is 32-bit
    return op2(em, spell(r.insn, t), result, materialize(em, a).text, rhs);
  }
  throw Unsupported{fmt::format("{} of {}", kir::binop_name(op), kir::type_name(t))};
}

Val math_convert(Emitter& em, const Val& a, ST from, ST to) {
  if (from == to) return a;
  const auto is_int = [](ST t) { return t == ST::I32 || t == ST::I64 || t == ST::U32; };
  const std::string x = materialize(em, a).text;
  if (to == ST::Pred) {
    if (is_half(from)) return math_convert(em, math_convert(em, a, from, ST::F32), ST::F32, to);
    if (from == ST::F32) return op2(em, "setp.neu.f32", to, x, "0f00000000");
    if (from == ST::F64) return op2(em, "setp.neu.f64", to, x, "0d0000000000000000");
    return op2(em, spell("setp.ne.{t}", from), to, x, "0");
  }
  if (from == ST::Pred) {
    std::string one = "1", zero = "0";
    if (to == ST::F32) one = "0f3F800000", zero = "0f00000000";
    if (to == ST::F64) one = "0d3FF0000000000000", zero = "0d0000000000000000";
    if (to == ST::F16) one = "0x3C00", zero = "0x0000";
    if (to == ST::BF16) one = "0x3F80", zero = "0x0000";
    return op3(em, fmt::format("selp.{}", row_of(to).mov), to, one, zero, x);
  }
  if (from == ST::BF16 && to == ST::F32) {  // exact: the bits shifted up
    Val w = op1(em, "cvt.u32.u16", ST::U32, x);
    Val s = op2(em, "shl.b32", ST::U32, w.text, "16");
    return op1(em, "mov.b32", ST::F32, s.text);
  }
  if ((from == ST::BF16 && to != ST::F32) || (is_half(from) && is_half(to)))
    return math_convert(em, math_convert(em, a, from, ST::F32), ST::F32, to);
  if (to == ST::BF16) {
    if (from == ST::F32) return op1(em, "cvt.rn.bf16.f32", to, x);
    throw Unsupported{fmt::format("a conversion from {} to bf16", kir::type_name(from))};
  }
  if (is_int(from) && is_int(to)) {
    if (kir::type_bytes(from) == kir::type_bytes(to)) return op1(em, "mov.b32", to, x);
    if (to == ST::I64) return op1(em, from == ST::U32 ? "cvt.u64.u32" : "cvt.s64.s32", to, x);
    return op1(em, "cvt.u32.u64", to, x);
  }
  const std::string f = std::string(to == ST::F16 ? "f16" : ld_type(to));
  const std::string s = std::string(from == ST::F16 ? "f16" : ld_type(from));
  if (kir::is_float(from) && is_int(to)) return op1(em, fmt::format("cvt.rzi.{}.{}", f, s), to, x);
  // Widening float conversions are exact and take no rounding modifier.
  const bool widening = !is_int(from) && kir::type_bytes(to) > kir::type_bytes(from);
  return op1(em, widening ? fmt::format("cvt.{}.{}", f, s) : fmt::format("cvt.rn.{}.{}", f, s), to, x);
}

}  // namespace emmy::ptx
