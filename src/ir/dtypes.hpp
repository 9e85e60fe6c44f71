// The language's dtypes and the kernel IR's scalar types, one table each way.
#pragma once

#include "ir/kernel.hpp"
#include "sema/types.hpp"

namespace emmy::kir {

ScalarType scalar_of(DType dtype);  // bool -> pred, the rest alike
DType dtype_of(ScalarType type);    // pred -> bool, u32 -> i64 (a host tensor holds it exactly)

}  // namespace emmy::kir
