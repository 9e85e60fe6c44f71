// Integer expressions over an op's sizes, evaluated at a run's sizes: schedule guards and
// computed dims (`T - K + 1`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sema/sema.hpp"

namespace emmy {

// The value of `e` (sema checked it: sizes, integers, arithmetic, comparisons and logic, both
// as i64) at `sizes`; nullopt where a size is unbound, the arithmetic overflows or divides by zero.
std::optional<int64_t> eval_size_expr(const ast::Expr& e, const std::map<std::string, int64_t>& sizes);

// Adds each size `op`'s outputs compute from the inputs' (`y: f32[B, C, T - K + 1]`: y_dim2) to
// `sizes` (the inputs' bound); why one cannot be computed or is not positive, or nullopt. A size
// already in `sizes` (an output passed in) must equal its computed value.
std::optional<std::string> bind_computed_sizes(const ast::OpDecl& op, std::map<std::string, int64_t>& sizes);

}  // namespace emmy
