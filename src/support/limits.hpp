// Size limits shared by the layers that enforce them.
#pragma once

#include <cstdint>

namespace emmy {

// The most elements a tensor, or steps a loop nest, may have: indices are 64-bit and sizes are
// in bytes, so 2^60 leaves room for any element size. Sema refuses literal shapes past it
// (E049), the reference and the interpreter bound --shape sizes, the C ABI its tensors.
constexpr int64_t kMaxElements = int64_t{1} << 60;

}  // namespace emmy
