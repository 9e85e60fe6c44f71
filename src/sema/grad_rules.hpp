// Reverse mode's local rules (grad_rules.cpp): one table row a built-in function or operator.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sema/grad.hpp"

namespace emmy::sema::grad {

// The adjoint each operand of `fn` (a built-in function, or an operator's spelling) receives when
// the node receives `g`; nullopt at an operand no adjoint flows to (a condition, an integer cast).
// `node` is the node's value (its statement's tensor where the node is the statement's whole
// value). nullopt for a function without a rule (`%`).
std::optional<std::vector<std::optional<ast::Expr>>> operand_adjoints(const std::string& fn, const ast::Expr& g,
                                                                      const std::vector<ast::Expr>& args,
                                                                      const ast::Expr& node);

}  // namespace emmy::sema::grad
