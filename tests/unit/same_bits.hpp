// Two lowerings of one op run on the interpreter on the same inputs, an output compared bit for
// bit: a move that only reorders issue (or shares tiles between CTAs) changes nothing. Shared by
// test_tensor_core.cpp and test_cluster.cpp.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "interp/simt.hpp"

namespace emmy::test {

// (The second lowering's blocks shuffled if asked.)
inline void check_same_bits(const kir::Program& a, const kir::Program& b, const SizeBindings& sizes,
                            const TensorMap& inputs, const std::string& out, bool shuffle_b = false) {
  TensorMap x = inputs, y = inputs;
  run_simt(a, sizes, x, {});
  SimtOptions o;
  o.shuffle_blocks = shuffle_b;
  run_simt(b, sizes, y, o);
  const std::vector<double>&xo = x.at(out).data, &yo = y.at(out).data;
  REQUIRE(xo.size() == yo.size());
  size_t differ = 0;
  for (size_t i = 0; i < xo.size(); ++i)
    if (std::memcmp(&xo[i], &yo[i], sizeof(double)) != 0) ++differ;
  CHECK_MESSAGE(differ == 0, differ << " of " << xo.size() << " outputs differ");
}

}  // namespace emmy::test
