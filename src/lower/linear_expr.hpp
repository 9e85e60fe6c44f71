// Tensor-IR expressions as linear forms over their leaves (the algebra layer's LinearForm): what
// the chain lowering and the tensor-core fold's key bounds read instead of printed text.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "algebra/normal_form.hpp"
#include "ir/tensor_ir.hpp"

namespace emmy::lower {

// A leaf's variable name, or nullopt when a leaf of that kind makes the form fail.
using LeafName = std::function<std::optional<std::string>(const tir::Expr&)>;

// Sums, differences, negations, float casts, products by constants and real quotients by
// constants unfold; any other node (a product of two non-constants, an integer `/`, which
// truncates) is a leaf named by `leaf`.
std::optional<algebra::LinearForm> linear_form(const tir::Expr& e, const LeafName& leaf);

}  // namespace emmy::lower
