// Conversions between dtypes and kernel-IR scalar types.
#include "ir/dtypes.hpp"

#include <cstddef>

namespace emmy::kir {

ScalarType scalar_of(DType d) {
  constexpr ScalarType kByDType[] = {ScalarType::Pred, ScalarType::I32,  ScalarType::I64, ScalarType::F16,
                                     ScalarType::BF16, ScalarType::F32, ScalarType::F64};
  return kByDType[static_cast<size_t>(d)];  // DType's order: Bool, I32, I64, F16, BF16, F32, F64
}

DType dtype_of(ScalarType t) {
  constexpr DType kByType[] = {DType::Bool, DType::I32, DType::I64, DType::I64,
                               DType::F16,  DType::BF16, DType::F32, DType::F64};
  return kByType[static_cast<size_t>(t)];  // ScalarType's order: Pred, I32, I64, U32, F16, BF16, F32, F64
}

}  // namespace emmy::kir
