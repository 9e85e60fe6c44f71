// The reference evaluator: computes an op's outputs straight from its definition, in
// float64, independent of every lowering decision. It is the oracle of all correctness tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "interp/tensor_data.hpp"
#include "sema/sema.hpp"

namespace emmy {

// Binds every size symbol of the op's parameters from "B=1,H=2,S=64,D=16". Sizes of the
// op that the text does not bind, unknown names, non-positive or malformed values are
// errors (a one-line message naming the size and the legal form).
// With `defaulted`, a size left out takes the value of the size at the same position of another
// input of the same rank (T of k[B, H, T, D] from S of q[B, H, S, D]); each such default is
// described in `defaulted`, e.g. "T=4096 (as S of q)".
std::variant<SizeBindings, std::string> bind_sizes(const CheckedOp& op, std::string_view text,
                                                   std::vector<std::string>* defaulted = nullptr);

// The shape of a parameter or output under the bindings.
std::vector<int64_t> tensor_shape(const TensorInfo& tensor, const SizeBindings& sizes);

// Random inputs for every parameter: seeded, never zero (|x| in [0.1, 1], random sign for
// floats, rounded to the dtype; integers in the range their use allows, e.g. class indices
// in [0, C)), deterministic for a seed.
TensorMap random_inputs(const CheckedOp& op, const SizeBindings& sizes, uint64_t seed);

// Evaluates every output of `op` (op calls inlined, user monoids through their combine,
// `where` masks, lets, dims as values) in float64. Casts to float types do not round
// (the reference is exact math); casts to integer types truncate.
TensorMap evaluate_reference(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes,
                             const TensorMap& inputs);

// Compares a computed tensor with the reference: every element, relative L2 error
// ||got - ref|| / max(||ref||, tiny); any NaN or Inf where the reference is finite fails.
struct Comparison {
  double rel_l2 = 0;
  double max_abs = 0;
  size_t worst = 0;        // index of the largest absolute error
  size_t non_finite = 0;   // NaN/Inf in `got` where the reference is finite
  bool ok = false;         // rel_l2 <= tolerance and non_finite == 0 and shapes equal
  std::string shape_error; // non-empty when shapes differ
};
Comparison compare(const HostTensor& got, const HostTensor& ref, double tolerance);

// The relative L2 tolerance for an output of `dtype` (f16 5e-3, bf16 3e-2, f32 1e-5,
// f64 1e-12, integers and bool exact).
double tolerance_for(DType dtype);
// The tolerance for an output of `op`: that of the least precise float among the op's
// tensors, since a value rounded to f16 on the way (x + r of two f16 tensors is an f16)
// carries f16's error into an f32 output.
double tolerance_for(const CheckedOp& op, DType output);

}  // namespace emmy
