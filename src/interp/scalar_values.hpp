// --set W=3,eps=0.5: values for an op's scalar parameters (a window size, a scale), which
// otherwise get seeded random values like every other input.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "interp/tensor_data.hpp"
#include "sema/sema.hpp"

namespace emmy {

using ScalarValues = std::map<std::string, double>;  // "W" -> 3, already in its dtype

// Binds the lists of every --set ("W=3,eps=0.5" each) to the op's scalar parameters. Each value
// must be a finite number in its parameter's dtype (an integer for i32, i64 and bool, within the
// dtype's range); f16, bf16 and f32 values are rounded to the dtype as the inputs are. Errors
// are one line naming the entry and how to write it: an unknown name (with the nearest one), a
// tensor or a size instead of a scalar, a malformed entry, a name set twice.
std::variant<ScalarValues, std::string> bind_scalars(const CheckedOp& op, const std::vector<std::string>& lists);

// `inputs` (from random_inputs) with the set values in place of the random ones.
void set_scalars(TensorMap& inputs, const ScalarValues& values);

// "W=3,eps=0.5": the values as --set takes them back ("" when none).
std::string scalars_text(const ScalarValues& values);

}  // namespace emmy
