// Monoid terms as tensor-IR expressions: a lift or identity of a proved monoid over the
// reduction's arguments (to_loops' record folds, split_reduce's partial carriers).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "algebra/term.hpp"
#include "ir/tensor_ir.hpp"

namespace emmy::lower {

tir::Expr const_expr(double value, DType dtype);
tir::Expr index_expr(const std::string& name);             // an index variable's value (i64)
tir::Expr reg_expr(const std::string& name, DType dtype);  // a value the loop IR keeps in a register
tir::Expr binary_expr(const std::string& op, tir::Expr a, tir::Expr b, DType dtype);   // a op b of `dtype`
tir::Expr call_expr(const std::string& fn, std::vector<tir::Expr> args, DType dtype);  // fn(args...)
// `params` binds the term's variables; constants and infinities get `dtype`.
tir::Expr term_expr(const algebra::Term& t, const std::map<std::string, tir::Expr>& params, DType dtype);

}  // namespace emmy::lower
