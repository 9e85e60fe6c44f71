#include "sema/print_checked.hpp"

#include <fmt/format.h>

#include "syntax/print_ast.hpp"

namespace emmy {
namespace {

class CheckedAnnotator : public AstAnnotator {
 public:
  // Expression ids are unique within a module: index that module's reductions.
  CheckedAnnotator(const CheckedProgram& p, size_t module) : p_(p) {
    for (const auto& [_, op] : p.ops)
      for (const ReductionInfo& r : op.reductions)
        if (op.decl_module == module && op.expr_types.count(r.expr_id))
          reductions_[r.expr_id] = {&r, &op.expr_types.at(r.expr_id)};
  }

  std::string on_assign(const ast::OpDecl& op, const ast::AssignStmt& a) const override {
    return tensor_note(op, a.target.name);
  }
  std::string on_let(const ast::OpDecl& op, const ast::LetStmt& l) const override {
    return tensor_note(op, l.name.name);
  }
  std::string on_grad(const ast::GradDecl& g) const override {
    auto it = p_.ops.find(g.name.name);
    if (it == p_.ops.end()) return "";
    return print_op_decl(*it->second.decl, this);
  }
  std::string on_reduce(const ast::Expr& e) const override {
    auto it = reductions_.find(e.id);
    if (it == reductions_.end()) return "";
    const ReductionInfo& r = *it->second.first;
    std::string sizes;
    for (size_t i = 0; i < r.axes.size(); ++i)
      sizes += fmt::format("{}{}={}", i ? ", " : "", r.axes[i], r.axis_sizes[i].str());
    return fmt::format(" {{{}}} -> {}", sizes, it->second.second->str());
  }

 private:
  std::string tensor_note(const ast::OpDecl& op, const std::string& name) const {
    auto it = p_.ops.find(op.name.name);
    if (it == p_.ops.end() || it->second.decl != &op) return "";
    const TensorInfo* t = it->second.find(name);
    return t ? fmt::format(" : {}{}", t->elem.str(), shape_text(t->shape)) : "";
  }
  const CheckedProgram& p_;
  std::map<uint32_t, std::pair<const ReductionInfo*, const Type*>> reductions_;
};

}  // namespace

std::string print_checked(const CheckedProgram& program, size_t module) {
  CheckedAnnotator note(program, module);
  std::string out = fmt::format("module {}\n", program.modules.at(module).name);
  return out + print_module(program.modules.at(module).ast, &note);
}

}  // namespace emmy
