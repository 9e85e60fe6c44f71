// Unit tests of the host <-> device value encodings of ir/dtypes (what the GPU launcher and the
// API copy): exact round trips per type, and a pred byte that no kernel stores reads as NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ir/dtypes.hpp"

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
