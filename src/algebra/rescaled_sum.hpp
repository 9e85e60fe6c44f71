// Recognizes a max-rescaled sum (the online softmax's carrier class): one key field combined
// by max, every other field by a.f * exp(a.k - M) + b.f * exp(b.k - M) with M the new key,
// identity (-inf, 0, ...). A chunk of elements x_j with weights w_j then reduces at once to
// (max x, sum exp(x_j - max) * w_j): what the tensor-core tier computes per key block.
#pragma once

#include <optional>
#include <vector>

#include "algebra/laws.hpp"

namespace emmy::algebra {

struct RescaledSum {
  size_t key = 0;                // the max field
  std::vector<size_t> weighted;  // every other field, in field order
};

// Decided on normal forms in every case (not by evaluation); nullopt when any field differs.
std::optional<RescaledSum> as_rescaled_sum(const MonoidTerms& m);

}  // namespace emmy::algebra
