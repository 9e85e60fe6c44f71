// The tuner's correctness gate: a candidate's outputs against the reference, every element.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "interp/compare.hpp"

namespace emmy::tune {

// "" when every output of `op` in `got` matches `want` within the op's tolerance, element by
// element and in L2, or, off elementwise, is within what the op's own roundings make (`peers`,
// where given: called for the reference's cast_jittered_references on the first such output);
// else what is wrong with the first output that does not ("o: 3 of 512 elements off, worst
// o[0, 7]: got 0.51, want 0.49 (bound ...)", "o: the reference is NaN in 100% of the elements ...").
using Peers = std::function<const std::vector<TensorMap>&()>;
inline std::string first_wrong_output(const CheckedOp& op, const TensorMap& got, const TensorMap& want,
                                      const Peers& peers = {}) {
  for (const auto& [name, ref] : want) {
    auto it = got.find(name);
    if (it == got.end()) return name + ": never written";
    const Tolerance tolerance = tolerance_for(op, ref.dtype);
    const Comparison c = compare(it->second, ref, tolerance);
    if (c.ok || (peers && within_peers(c, peer_comparisons(name, ref, peers(), tolerance), tolerance))) continue;
    return name + ": " + failure_reason(name, c, tolerance, ref.shape);
  }
  return "";
}

}  // namespace emmy::tune
