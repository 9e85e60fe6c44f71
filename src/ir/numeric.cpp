// Bit-exact float conversions: every 16-bit format is reached from a double by ONE
// round-to-nearest-even, so f32 -> f16 and f64 -> f16 share the same code and never round twice.
#include "ir/numeric.hpp"

#include <array>
#include <bit>
#include <cmath>

namespace emmy::kir {
namespace {

// A binary floating-point format of 16 bits: sign, exp_bits exponent, man_bits fraction.
struct Format16 {
  int exp_bits, man_bits;
  bool quiet_nans;       // a NaN is made quiet (bf16); else its payload is kept as it is (f16)
  float subnormal_unit;  // the value of fraction 1 with exponent field 0: 2^(1 - bias - man_bits)
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  uint32_t inf_bits() const { return ((1u << exp_bits) - 1) << man_bits; }
  uint32_t quiet_bit() const { return 1u << (man_bits - 1); }
};
constexpr Format16 kF16{5, 10, false, 0x1p-24f};
constexpr Format16 kBF16{8, 7, true, 0x1p-133f};

constexpr int kDoubleManBits = 52;
constexpr uint64_t kDoubleManMask = (uint64_t{1} << kDoubleManBits) - 1;
constexpr int kFloatManBits = 23;
constexpr uint32_t kFloatManMask = (1u << kFloatManBits) - 1;

// `sig >> shift`, rounded to nearest, ties to even (shift in 1..63).
uint64_t shift_rne(uint64_t sig, int shift) {
  uint64_t kept = sig >> shift;
  uint64_t rest = sig & ((uint64_t{1} << shift) - 1);
  uint64_t half = uint64_t{1} << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

// A NaN of format `f` with the top fraction bits `payload` of the source NaN (quiet if the
// format asks for it, or if the payload would otherwise read as infinity).
uint16_t nan16(bool negative, uint32_t payload, const Format16& f) {
  uint32_t quiet = (f.quiet_nans || payload == 0) ? f.quiet_bit() : 0;
  return static_cast<uint16_t>((negative ? f.sign_bit() : 0) | f.inf_bits() | quiet | payload);
}

// The nearest value of format `f` to the non-NaN `value` (ties to even), overflowing to infinity.
uint16_t encode(double value, const Format16& f) {
  uint64_t bits = std::bit_cast<uint64_t>(value);
  uint32_t sign = (bits >> 63) ? f.sign_bit() : 0;
  int biased = static_cast<int>((bits >> kDoubleManBits) & 0x7ff);
  if (biased == 0x7ff) return static_cast<uint16_t>(sign | f.inf_bits());
  // A double subnormal is far below half the format's smallest subnormal: it rounds to zero.
  if (biased == 0) return static_cast<uint16_t>(sign);
  int exponent = biased - 1023;
  uint64_t sig = (bits & kDoubleManMask) | (uint64_t{1} << kDoubleManBits);
  int emin = 1 - f.bias();
  int shift = kDoubleManBits - f.man_bits + (exponent < emin ? emin - exponent : 0);
  uint64_t rounded = shift_rne(sig, shift > 63 ? 63 : shift);
  // Normal: the implicit bit of `rounded` carries into the exponent field (a rounding carry
  // moves to the next binade); subnormal: `rounded` is the fraction (1 << man_bits = min normal).
  uint64_t magnitude =
      exponent < emin ? rounded : (static_cast<uint64_t>(exponent + f.bias() - 1) << f.man_bits) + rounded;
  if (magnitude > f.inf_bits()) magnitude = f.inf_bits();
  return static_cast<uint16_t>(sign | magnitude);
}

uint16_t encode_f32(float value, const Format16& f) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (!std::isnan(value)) return encode(value, f);  // float -> double is exact: one rounding
  return nan16(bits >> 31, (bits & kFloatManMask) >> (kFloatManBits - f.man_bits), f);
}

uint16_t encode_f64(double value, const Format16& f) {
  uint64_t bits = std::bit_cast<uint64_t>(value);
  if (!std::isnan(value)) return encode(value, f);
  return nan16(bits >> 63, static_cast<uint32_t>((bits & kDoubleManMask) >> (kDoubleManBits - f.man_bits)), f);
}

// The exact float of a 16-bit pattern of format `f`, by bits (the interpreter decodes every f16
// it loads and rounds to): a normal value moves its exponent and fraction into place; a
// subnormal is its fraction times the unit (exact: at most 10 significant bits); a NaN keeps
// its sign and payload bit for bit.
float decode_f32(uint16_t bits, const Format16& f) {
  uint32_t sign = (bits & f.sign_bit()) ? 0x80000000u : 0;
  uint32_t field = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  uint32_t man = bits & ((1u << f.man_bits) - 1);
  uint32_t fraction = man << (kFloatManBits - f.man_bits);
  if (field == (1u << f.exp_bits) - 1) return std::bit_cast<float>(sign | 0x7f800000u | fraction);  // inf, NaN
  if (field == 0) {
    float magnitude = static_cast<float>(man) * f.subnormal_unit;
    return sign ? -magnitude : magnitude;
  }
  uint32_t exponent = field - static_cast<uint32_t>(f.bias()) + 127;  // f32's bias
  return std::bit_cast<float>(sign | (exponent << kFloatManBits) | fraction);
}

double decode_f64(uint16_t bits, const Format16& f) { return static_cast<double>(decode_f32(bits, f)); }

// `value` truncated toward zero and wrapped to `bits` bits (NaN and infinities give 0,
// as cvt.rzi does for NaN).
double wrap_integer(double value, int bits, bool is_signed) {
  if (!std::isfinite(value)) return 0;
  double modulus = std::ldexp(1.0, bits);
  double r = std::fmod(std::trunc(value), modulus);  // exact, in (-modulus, modulus)
  if (!is_signed) return r < 0 ? r + modulus : r;
  if (r >= modulus / 2) return r - modulus;  // exact: both within a factor of two
  if (r < -modulus / 2) return r + modulus;
  return r;
}

using Rounder = double (*)(double);
constexpr std::array<Rounder, 8> kRounders{{
    [](double v) { return v != 0 ? 1.0 : 0.0; },                          // Pred
    [](double v) { return wrap_integer(v, 32, true); },                   // I32
    [](double v) { return wrap_integer(v, 64, true); },                   // I64
    [](double v) { return wrap_integer(v, 32, false); },                  // U32
    [](double v) { return decode_f64(encode_f64(v, kF16), kF16); },       // F16
    [](double v) { return decode_f64(encode_f64(v, kBF16), kBF16); },     // BF16
    [](double v) { return static_cast<double>(static_cast<float>(v)); },  // F32
    [](double v) { return v; },                                           // F64
}};

}  // namespace

uint16_t f32_to_f16_bits(float value) { return encode_f32(value, kF16); }
float f16_bits_to_f32(uint16_t bits) { return decode_f32(bits, kF16); }
uint16_t f32_to_bf16_bits(float value) { return encode_f32(value, kBF16); }
float bf16_bits_to_f32(uint16_t bits) { return decode_f32(bits, kBF16); }
uint32_t f32_bits(float value) { return std::bit_cast<uint32_t>(value); }
float bits_f32(uint32_t bits) { return std::bit_cast<float>(bits); }

double round_to(ScalarType type, double value) { return kRounders[static_cast<size_t>(type)](value); }

}  // namespace emmy::kir
