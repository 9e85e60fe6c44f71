// The intrinsic table's instructions as PTX: each row's helper (ir/intrinsics.cpp) spelled with
// the printer's registers in place of its inline-asm operands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/ptx/ptx_math.hpp"
#include "ir/intrinsics.hpp"

namespace emmy::ptx {

// Registers (or immediates) of one intrinsic statement: results, operands in the table's order
// (a buffer element's operand already its global address), immediates.
struct IntrinsicOperands {
  std::vector<std::string> outs, ins;
  std::vector<int64_t> imms;
};

// Every row of the table (ir/intrinsics.hpp); Unsupported for an id outside it.
void print_intrinsic(Emitter& em, kir::IntrinsicId id, const IntrinsicOperands& ops);

}  // namespace emmy::ptx
