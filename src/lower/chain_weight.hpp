// The weight of an online chain's sum: its body as w · exp(c·(x − m)), x the max's body and
// m the max, read on linear normal forms (the discoverer's reading, on the tensor IR).
#pragma once

#include <optional>
#include <string>

#include "algebra/term.hpp"
#include "ir/tensor_ir.hpp"

namespace emmy::lower {

// w (1 when the body is the exp alone), or nullopt when the body has no factor exp(c·(x − m))
// (exp2 of it in base 2) with exactly the discovered scale c, or w still reads m.
std::optional<tir::Expr> chain_weight(const tir::Expr& body, const tir::Expr& x, const std::string& m,
                                      algebra::Rational scale);

}  // namespace emmy::lower
