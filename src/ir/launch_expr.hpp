// Evaluates a kernel's launch expressions (grid_x) on the host: integer arithmetic, comparisons
// and logic over constants and the kernel's scalar parameters, exactly as both launchers must
// agree on it (and a test of sizes alone, for lower::specialize_sizes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "ir/kernel.hpp"

namespace emmy::kir {

// The value, or what is wrong with the expression ("divides by zero", "uses x, not a
// scalar parameter"...), for the caller to prefix with the kernel's name.
std::variant<int64_t, std::string> evaluate_launch_expr(const Expr& e, const std::map<std::string, int64_t>& scalars);

// The CTAs kernel `k` launches at `sizes` (its grid_x), at least one; one where grid_x does not
// evaluate there (an estimate's count, not a launch's: the launchers report the error).
int64_t ctas_at(const Kernel& k, const std::map<std::string, int64_t>& sizes);

// An integer division or remainder in a kernel of `p` whose divisor is computed from constants
// and scalar parameters alone (a size, `H / KH`) and is 0 at `scalars`: the first such divisor,
// printed; nullopt where there is none. Of an `if` on sizes only the branch it takes counts (both of one on data: a
// thread's guard), of a `select` on sizes the operand it picks (neither of one on data: a guard
// the op wrote), of `&&` and `||` what their short circuit evaluates. (Without this the GPU
// divides by zero silently and the interpreter stops; the launchers refuse the sizes instead.)
std::optional<std::string> zero_size_divisor(const Program& p, const std::map<std::string, int64_t>& scalars);

}  // namespace emmy::kir
