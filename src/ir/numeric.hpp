// Bit-exact conversions between float and the 16-bit float formats (round to nearest
// even, as cvt.rn and __float2half do), shared by the interpreter and the intrinsics.
#pragma once

#include <cstdint>

#include "ir/kernel.hpp"

namespace emmy::kir {

uint16_t f32_to_f16_bits(float value);  // round to nearest even; overflow to inf; NaN kept
float f16_bits_to_f32(uint16_t bits);
uint16_t f32_to_bf16_bits(float value);  // round to nearest even; NaN kept quiet
float bf16_bits_to_f32(uint16_t bits);
uint32_t f32_bits(float value);
float bits_f32(uint32_t bits);

// The value a register of `type` holds after an assignment of `value` (held as double):
// rounded to f16/bf16/f32 precision, truncated to the integer type's width; f64 unchanged.
double round_to(ScalarType type, double value);

}  // namespace emmy::kir
