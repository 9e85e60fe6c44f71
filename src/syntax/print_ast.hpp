// The AST printer behind `emmyc compile --ir ast`: a stable, line-per-node dump.
#pragma once

#include <string>

#include "syntax/ast.hpp"

namespace emmy {

// Extra text after a declaration line, supplied by later layers (sema adds dtypes,
// shapes and reduction sizes). Every method may return "".
class AstAnnotator {
 public:
  virtual ~AstAnnotator() = default;
  virtual std::string on_assign(const ast::OpDecl&, const ast::AssignStmt&) const { return ""; }
  virtual std::string on_let(const ast::OpDecl&, const ast::LetStmt&) const { return ""; }
  virtual std::string on_reduce(const ast::Expr&) const { return ""; }
  // After `op NAME = grad(...)`: the derived op, printed (sema derives it).
  virtual std::string on_grad(const ast::GradDecl&) const { return ""; }
};

// S-expression for operators, source form for names and indexing:
// (* (sum [d] (* q[b, h, i, d] k[b, h, j, d])) scale)
std::string print_expr(const ast::Expr& e, const AstAnnotator* note = nullptr);
std::string print_module(const ast::Module& m, const AstAnnotator* note = nullptr);
std::string print_op_decl(const ast::OpDecl& op, const AstAnnotator* note = nullptr);

}  // namespace emmy
