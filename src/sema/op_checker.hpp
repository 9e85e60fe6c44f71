// The op checker of check_op.cpp and check_call.cpp: one class whose passes over an op's
// declarations, statements, index variables and expressions (check_op.cpp) and its calls and
// reductions (check_call.cpp) share the op's tensors, index bindings and diagnostics.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sema/expr_typer.hpp"
#include "sema/passes.hpp"

namespace emmy::sema::op_check {

std::string sizes_str(const std::vector<Size>& s);
// A shape whose literal dims alone hold more than kMaxElements (2^60) is refused (E049).
bool literal_elements_fit(const std::vector<Size>& shape);
inline constexpr const char* kElementsHint =
    "a tensor or a loop nest holds at most 2^60 elements (indices are 64-bit); use smaller dims";
// The size of an index variable whose size an earlier error left unknown: it matches
// every size, so one mistake is reported once and not again at every use.
inline const Size kUnknownSize{"<unknown>", -1};
// A parameter's declared type as written: "f16[S, D]", or "f32" for a scalar.
std::string declared_type(const ast::Param& p);
std::string param_names(const std::vector<ast::Param>& params);
// "y" for a scalar, "y[i, j]" for two dims: how a statement defining `name` starts.
std::string lhs_example(const std::string& name, size_t dims);

// Where an index variable got its size, for the note of a mismatch.
struct Binding {
  Size size;
  SourceRange at;
  std::string origin;  // "dim 3 of k"
};

// A tensor-valued expression: a named tensor, an op call's output, or a vector field.
struct TensorView {
  std::string name;
  Type elem;
  std::vector<Size> shape;
};

class OpChecker : public ExprTyper {
 public:
  OpChecker(const ast::OpDecl& op, const Globals& globals, const std::map<std::string, CheckedMonoid>& monoids,
            Diagnostics& diags, CheckedOp& out)
      : ExprTyper(diags, out.expr_types), op_(op), globals_(globals), monoids_(monoids), out_(out) {}
  void run();

 private:
  // ---- declarations -------------------------------------------------------------------
  void declare_params(const std::vector<ast::Param>& params, TensorInfo::Role role);

  // An output's dim computed from the inputs' sizes (`T - K + 1`): integers, the sizes the
  // inputs' shapes bind, `+ - * / %` and unary `-` (E065); an input's dims bind sizes instead.
  void check_computed_dim(const ast::Param& p, const ast::Dim& d, TensorInfo::Role role);
  bool add_tensor(TensorInfo t, const ast::Ident& at);
  const TensorInfo* tensor(const std::string& name) const;

  // ---- statements -----------------------------------------------------------------------
  void begin_statement();
  void check_let(const ast::LetStmt& let);
  void check_assign(const ast::AssignStmt& a);
  void declare_lhs(const ast::AssignStmt& a, const TensorInfo* output);
  void adopt_names(const ast::Expr& e);

  // ---- index variables -------------------------------------------------------------------
  bool is_index_var(const std::string& n) const;
  void bind(const std::string& var, const Size& size, SourceRange at, std::string origin);

  // ---- expressions ------------------------------------------------------------------------
  Type name(const ast::Expr& e) override;
  bool usable(const ast::Expr& e, const TensorInfo& t);

  // A bare tensor name stands for the tensor indexed by its own left-hand index names.
  Type bare_tensor(const ast::Expr& e, const TensorInfo& t);
  std::optional<TensorView> tensor_view(const ast::Expr& base);
  Type index(const ast::Expr& e) override;

  // A literal index (x[n, 3], x[-1]) must lie inside a dim whose size is known.
  void check_constant_index(const ast::Expr& ix, const Size& dim, const std::string& tensor_name);
  void check_index_expr(const ast::Expr& ix);

  // f(x, y) or f(x, y).out: unify the callee's dims with the arguments' sizes.
  std::optional<TensorView> op_call(const ast::Expr& call, const ast::Expr* field);
  Type call_other(const ast::Expr& e) override;
  const CheckedMonoid* monoid_of(const Type& t) const override;
  Type reduce(const ast::Expr& e) override;
  static bool uses(const ast::Expr& e, const std::string& var);
  Type builtin_reduce(const ast::Expr& e, const BuiltinReduction& r);
  Type monoid_reduce(const ast::Expr& e, const CheckedMonoid& m);
  const ast::OpDecl& op_;
  const Globals& globals_;
  const std::map<std::string, CheckedMonoid>& monoids_;
  CheckedOp& out_;
  std::map<std::string, SourceRange> dims_;
  std::map<std::string, size_t> tensor_index_;
  std::set<std::string> defined_;
  std::map<std::string, SourceRange> later_;  // every statement's name, for "used before defined"
  std::vector<std::string> lhs_vars_;
  std::vector<SourceRange> lhs_ranges_;
  bool lhs_rejected_ = false;               // an index on the left was reported (E029)
  std::set<std::string> free_reported_;     // E021 names of this statement
  std::set<std::string> duplicate_params_;  // parameters declared twice (E013)
  std::vector<std::set<std::string>> scopes_;
  std::map<std::string, Binding> bindings_;
  int index_depth_ = 0;
  bool allow_slice_ = false;
};

}  // namespace emmy::sema::op_check
