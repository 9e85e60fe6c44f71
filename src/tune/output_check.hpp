// The tuner's correctness gate: a candidate's outputs against the reference, every element.
#pragma once

#include <string>

#include <fmt/format.h>

#include "interp/reference.hpp"

namespace emmy::tune {

// "" when every output of `op` in `got` matches `want` within the op's tolerance; else what is
// wrong with the first output that does not ("o: rel L2 3.1e-01 (tolerance 1.0e-02)").
inline std::string first_wrong_output(const CheckedOp& op, const TensorMap& got, const TensorMap& want) {
  for (const auto& [name, ref] : want) {
    auto it = got.find(name);
    if (it == got.end()) return name + ": never written";
    const double tolerance = tolerance_for(op, ref.dtype);
    const Comparison c = compare(it->second, ref, tolerance);
    if (!c.ok)
      return fmt::format("{}: rel L2 {:.2e}, max |err| {:.2e}, {} non-finite (tolerance {:.1e})", name, c.rel_l2,
                         c.max_abs, c.non_finite, tolerance);
  }
  return "";
}

}  // namespace emmy::tune
