// Host tensors and size bindings: what the reference evaluator, the interpreter and the
// runtime read and write. Values are held as double, already rounded to the dtype.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sema/types.hpp"

namespace emmy {

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first; empty = a scalar
  std::vector<double> data;    // row-major
  size_t size() const { return data.size(); }
};

using SizeBindings = std::map<std::string, int64_t>;  // "S" -> 64
using TensorMap = std::map<std::string, HostTensor>;  // by parameter / output name

}  // namespace emmy
