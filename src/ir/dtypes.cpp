// Conversions between dtypes and kernel-IR scalar types, and of host values to device bytes.
#include "ir/dtypes.hpp"

#include <cstddef>
#include <cstring>
#include <limits>

#include "ir/numeric.hpp"
#include "support/parallel_chunks.hpp"

namespace emmy::kir {

ScalarType scalar_of(DType d) {
  constexpr ScalarType kByDType[] = {ScalarType::Pred, ScalarType::I32, ScalarType::I64, ScalarType::F16,
                                     ScalarType::BF16, ScalarType::F32, ScalarType::F64};
  return kByDType[static_cast<size_t>(d)];  // DType's order: Bool, I32, I64, F16, BF16, F32, F64
}

DType dtype_of(ScalarType t) {
  constexpr DType kByType[] = {DType::Bool, DType::I32,  DType::I64, DType::I64,
                               DType::F16,  DType::BF16, DType::F32, DType::F64};
  return kByType[static_cast<size_t>(t)];  // ScalarType's order: Pred, I32, I64, U32, F16, BF16, F32, F64
}

namespace {

// An integer truncated to the width of `type`, as the interpreter binds it.
int64_t wrap(ScalarType type, int64_t v) {
  switch (type) {
    case ScalarType::Pred: return v != 0 ? 1 : 0;
    case ScalarType::I32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    case ScalarType::U32: return static_cast<uint32_t>(static_cast<uint64_t>(v));
    default: return v;
  }
}

template <class T>
void put(T value, uint8_t* at) {
  std::memcpy(at, &value, sizeof value);
}

template <class T>
T get(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

void encode(ScalarType type, double v, uint8_t* at) {
  switch (type) {
    case ScalarType::Pred: return put<uint8_t>(v != 0 ? 1 : 0, at);
    case ScalarType::I32: return put(static_cast<int32_t>(wrap(type, static_cast<int64_t>(v))), at);
    case ScalarType::U32: return put(static_cast<uint32_t>(wrap(type, static_cast<int64_t>(v))), at);
    case ScalarType::I64: return put(static_cast<int64_t>(v), at);
    case ScalarType::F16: return put(f32_to_f16_bits(static_cast<float>(v)), at);
    case ScalarType::BF16: return put(f32_to_bf16_bits(static_cast<float>(v)), at);
    case ScalarType::F32: return put(static_cast<float>(v), at);
    case ScalarType::F64: return put(v, at);
  }
}

double decode(ScalarType type, const uint8_t* at) {
  switch (type) {
    // Kernels store bools as 0 or 1; any other byte (the 0xff poison of an output the kernels
    // never wrote) decodes as NaN so that a comparison reports it.
    case ScalarType::Pred: {
      const uint8_t b = get<uint8_t>(at);
      return b <= 1 ? b : std::numeric_limits<double>::quiet_NaN();
    }
    case ScalarType::I32: return get<int32_t>(at);
    case ScalarType::U32: return get<uint32_t>(at);
    case ScalarType::I64: return static_cast<double>(get<int64_t>(at));
    case ScalarType::F16: return f16_bits_to_f32(get<uint16_t>(at));
    case ScalarType::BF16: return bf16_bits_to_f32(get<uint16_t>(at));
    case ScalarType::F32: return get<float>(at);
    case ScalarType::F64: return get<double>(at);
  }
  return 0;
}

}  // namespace

std::vector<uint8_t> encode_values(ScalarType type, const std::vector<double>& values) {
  const auto bytes = static_cast<size_t>(type_bytes(type));
  std::vector<uint8_t> out(values.size() * bytes);
  for (size_t k = 0; k < values.size(); ++k) encode(type, values[k], out.data() + k * bytes);
  return out;
}

std::vector<double> decode_values(ScalarType type, const uint8_t* bytes, size_t count) {
  const auto size = static_cast<size_t>(type_bytes(type));
  std::vector<double> out(count);
  parallel_chunks(count, [&](size_t, size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) out[k] = decode(type, bytes + k * size);
  });
  return out;
}

}  // namespace emmy::kir
