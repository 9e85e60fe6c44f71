#include "sema/print_checked.hpp"

#include <fmt/format.h>

#include "syntax/print_ast.hpp"

namespace emmy {
namespace {

std::string shape_str(const std::vector<Size>& shape) {
  std::string s;
  for (const Size& x : shape) s += (s.empty() ? "" : ", ") + x.str();
  return shape.empty() ? "" : "[" + s + "]";
}

class CheckedAnnotator : public AstAnnotator {
public:
  explicit CheckedAnnotator(const CheckedProgram& p) : p_(p) {}

  std::string on_assign(const ast::OpDecl& op, const ast::AssignStmt& a) const override {
    return tensor_note(op, a.target.name);
  }
  std::string on_let(const ast::OpDecl& op, const ast::LetStmt& l) const override { return tensor_note(op, l.name.name); }
  std::string on_reduce(const ast::Expr& e) const override {
    for (const auto& [_, op] : p_.ops)
      for (const ReductionInfo& r : op.reductions)
        if (r.expr_id == e.id && op.expr_types.count(e.id)) {
          std::string sizes;
          for (size_t i = 0; i < r.axes.size(); ++i)
            sizes += fmt::format("{}{}={}", i ? ", " : "", r.axes[i], r.axis_sizes[i].str());
          return fmt::format(" {{{}}} -> {}", sizes, op.expr_types.at(e.id).str());
        }
    return "";
  }

private:
  std::string tensor_note(const ast::OpDecl& op, const std::string& name) const {
    auto it = p_.ops.find(op.name.name);
    if (it == p_.ops.end() || it->second.decl != &op) return "";
    const TensorInfo* t = it->second.find(name);
    return t ? fmt::format(" : {}{}", t->elem.str(), shape_str(t->shape)) : "";
  }
  const CheckedProgram& p_;
};

}  // namespace

std::string print_checked(const CheckedProgram& program) {
  CheckedAnnotator note(program);
  std::string out = fmt::format("module {}\n", program.modules.front().name);
  return out + print_module(program.modules.front().ast, &note);
}

}  // namespace emmy
