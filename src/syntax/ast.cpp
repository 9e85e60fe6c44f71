// Small helpers on AST nodes.
#include "syntax/ast.hpp"

namespace emmy::ast {

std::string ImportDecl::dotted() const {
  std::string s;
  for (const Ident& p : path) s += (s.empty() ? "" : ".") + p.name;
  return s;
}

Expr node_of(const Expr& e) {
  Expr out;
  out.kind = e.kind;
  out.range = e.range;
  out.id = e.id;
  out.text = e.text;
  out.int_value = e.int_value;
  out.float_value = e.float_value;
  out.axes = e.axes;
  out.callee_range = e.callee_range;
  return out;
}

}  // namespace emmy::ast
