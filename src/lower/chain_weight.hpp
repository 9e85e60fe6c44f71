// The weight of an online chain's sum: its body as w · exp(c·(x − m)), x the max's body and
// m the max, read on linear normal forms (the discoverer's reading, on the tensor IR).
#pragma once

#include <optional>
#include <string>

#include "algebra/term.hpp"
#include "ir/tensor_ir.hpp"

namespace emmy::lower {

// diff as c·(x − m), c > 0, on linear forms over the leaves, m the pivot statement read at its
// own variables (no other read of it): c; else nullopt. The discoverer's test, on the tensor IR
// (a deviation from a mean is c = 1).
std::optional<algebra::Rational> pivot_scale_of(const tir::Expr& diff, const tir::Expr& x, const tir::Stmt& pivot);

// w (1 when the body is the exp alone), or nullopt when the body has no factor exp(c·(x − m))
// (exp2 of it in base 2) with exactly the discovered scale c, or w still reads m.
std::optional<tir::Expr> chain_weight(const tir::Expr& body, const tir::Expr& x, const tir::Stmt& pivot,
                                      algebra::Rational scale);

}  // namespace emmy::lower
