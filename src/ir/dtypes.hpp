// The language's dtypes and the kernel IR's scalar types, one table each way.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/kernel.hpp"
#include "sema/types.hpp"

namespace emmy::kir {

ScalarType scalar_of(DType dtype);  // bool -> pred, the rest alike
DType dtype_of(ScalarType type);    // pred -> bool, u32 -> i64 (a host tensor holds it exactly)

// Host values (as double, already rounded to the type) in the device's little-endian
// representation of `type` (pred: one byte, 0 or 1), and back (a pred byte other than 0 or 1
// comes back as NaN: not a value any kernel stores).
std::vector<uint8_t> encode_values(ScalarType type, const std::vector<double>& values);
std::vector<double> decode_values(ScalarType type, const uint8_t* bytes, size_t count);

}  // namespace emmy::kir
