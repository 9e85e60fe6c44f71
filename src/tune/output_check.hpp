// The tuner's correctness gate: a candidate's outputs against the reference, every element.
#pragma once

#include <string>

#include "interp/compare.hpp"

namespace emmy::tune {

// "" when every output of `op` in `got` matches `want` within the op's tolerance, element by
// element and in L2; else what is wrong with the first output that does not ("o: 3 of 512
// elements off, worst o[0, 7]: got 0.51, want 0.49 (bound ...)", "o: the reference is NaN in
// 100% of the elements ...").
inline std::string first_wrong_output(const CheckedOp& op, const TensorMap& got, const TensorMap& want) {
  for (const auto& [name, ref] : want) {
    auto it = got.find(name);
    if (it == got.end()) return name + ": never written";
    const Tolerance tolerance = tolerance_for(op, ref.dtype);
    const Comparison c = compare(it->second, ref, tolerance);
    if (!c.ok) return name + ": " + failure_reason(name, c, tolerance, ref.shape);
  }
  return "";
}

}  // namespace emmy::tune
