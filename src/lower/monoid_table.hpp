// How a reduction's monoid lowers: carrier fields and their types, identity, combine
// (over a.<field> and b.<field>) and lift terms — for built-in reductions from a table,
// for user monoids from their proved definition.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algebra/laws.hpp"
#include "ir/dtypes.hpp"
#include "ir/kernel.hpp"
#include "sema/types.hpp"
#include "syntax/ast.hpp"

namespace emmy::lower {

using kir::scalar_of;

struct MonoidLowering {
  std::vector<std::string> fields;
  std::vector<kir::ScalarType> types;
  std::vector<algebra::Term> identity, combine;
  std::vector<algebra::Term> lift;        // per field, over lift_params (and axis_param)
  std::vector<std::string> lift_params;   // bound to the reduction's arguments, in order
  std::optional<std::string> axis_param;  // bound to the reduction's axis index (argmax)
};

struct BuiltinMonoid {
  std::string_view name;
  std::string_view result;  // the field the reduction's value is
  // Builds the lowering for a reduction whose value has type `result` and args `args`.
  MonoidLowering (*lowering)(kir::ScalarType result, const std::vector<kir::ScalarType>& args);
};

const BuiltinMonoid* builtin_monoid(std::string_view name);  // nullptr: a user monoid
std::vector<std::string_view> builtin_monoid_names();        // the table's rows, in order
// A lowering as the prover's monoid terms (bool fields marked), named `name`.
algebra::MonoidTerms terms_of(std::string_view name, const MonoidLowering& m);
MonoidLowering user_monoid(const ast::MonoidDecl& decl);  // throws LowerError

}  // namespace emmy::lower
