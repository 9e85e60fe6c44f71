// Unit tests of the host <-> device value encodings of ir/dtypes (what the GPU launcher and the
// API copy): exact round trips per type, and a pred byte that no kernel stores reads as NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ir/dtypes.hpp"
#include "ir/numeric.hpp"

using namespace emmy;
using kir::ScalarType;

TEST_CASE("dtypes: encode_values and decode_values round-trip every type exactly") {
  const std::vector<double> floats = {0.5, -1.25, 3.0, -0.099609375};  // exact in f16, bf16, f32
  for (ScalarType t : {ScalarType::F16, ScalarType::BF16, ScalarType::F32, ScalarType::F64}) {
    std::vector<uint8_t> bytes = kir::encode_values(t, floats);
    CHECK(bytes.size() == floats.size() * static_cast<size_t>(kir::type_bytes(t)));
    CHECK(kir::decode_values(t, bytes.data(), floats.size()) == floats);
  }
  const std::vector<double> ints = {0, -7, 123456, -2147483648.0};
  for (ScalarType t : {ScalarType::I32, ScalarType::I64})
    CHECK(kir::decode_values(t, kir::encode_values(t, ints).data(), ints.size()) == ints);
  const std::vector<double> bools = {1, 0, 1};
  std::vector<uint8_t> b = kir::encode_values(ScalarType::Pred, bools);
  CHECK(b == std::vector<uint8_t>{1, 0, 1});
  CHECK(kir::decode_values(ScalarType::Pred, b.data(), 3) == bools);
}

TEST_CASE("dtypes: a pred byte other than 0 or 1 (the 0xff poison of an unwritten output) decodes as NaN") {
  const uint8_t bytes[] = {0xff, 1, 2};
  std::vector<double> v = kir::decode_values(ScalarType::Pred, bytes, 3);
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == 1);
  CHECK(std::isnan(v[2]));
}

namespace {

// The value of a 16-bit pattern from its definition: (-1)^s * 2^(e - bias) * 1.f, or
// 2^(1 - bias) * 0.f for exponent field 0.
double value_of(uint16_t bits, int exp_bits, int man_bits) {
  int bias = (1 << (exp_bits - 1)) - 1;
  int field = (bits >> man_bits) & ((1 << exp_bits) - 1);
  int man = bits & ((1 << man_bits) - 1);
  double sign = (bits >> (exp_bits + man_bits)) ? -1.0 : 1.0;
  if (field == 0) return sign * std::ldexp(man, 1 - bias - man_bits);
  return sign * std::ldexp(man + (1 << man_bits), field - bias - man_bits);
}

}  // namespace

TEST_CASE("dtypes: every f16 and bf16 pattern decodes to its exact value; NaNs keep sign and payload") {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    for (bool bf16 : {false, true}) {
      const int exp_bits = bf16 ? 8 : 5, man_bits = bf16 ? 7 : 10;
      const float got = bf16 ? kir::bf16_bits_to_f32(bits) : kir::f16_bits_to_f32(bits);
      const int field = (bits >> man_bits) & ((1 << exp_bits) - 1);
      const int man = bits & ((1 << man_bits) - 1);
      const bool sign = bits >> 15;
      if (field == (1 << exp_bits) - 1) {
        const uint32_t want = (sign ? 0x80000000u : 0) | 0x7f800000u | (static_cast<uint32_t>(man) << (23 - man_bits));
        CHECK(kir::f32_bits(got) == want);  // infinity, or a NaN with the same payload
        continue;
      }
      CHECK(static_cast<double>(got) == value_of(bits, exp_bits, man_bits));
      CHECK(std::signbit(got) == sign);
      // Decoding is exact, so encoding the decoded value gives the pattern back.
      CHECK((bf16 ? kir::f32_to_bf16_bits(got) : kir::f32_to_f16_bits(got)) == bits);
    }
  }
}
