// Turns a checked monoid's identity and combine into terms for the prover.
#pragma once

#include <optional>
#include <string>

#include "algebra/laws.hpp"
#include "syntax/ast.hpp"

namespace emmy::algebra {

// nullopt (with the reason in `why`) when the monoid uses something outside the
// fragment the prover decides (tanh, erf, ...). Integer `/` and `%` become IDiv and Mod,
// casts to integer types Cast terms, as the reference evaluator applies them.
std::optional<MonoidTerms> monoid_terms(const ast::MonoidDecl& m, std::string& why);

}  // namespace emmy::algebra
