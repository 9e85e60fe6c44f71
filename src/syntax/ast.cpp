// Small helpers on AST nodes.
#include "syntax/ast.hpp"

namespace emmy::ast {

std::string ImportDecl::dotted() const {
  std::string s;
  for (const Ident& p : path) s += (s.empty() ? "" : ".") + p.name;
  return s;
}

}  // namespace emmy::ast
