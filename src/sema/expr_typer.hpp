// Types expressions; ops and monoids supply how names, indexing and reductions resolve.
#pragma once

#include <unordered_map>

#include "sema/sema.hpp"

namespace emmy::sema {

class ExprTyper {
 public:
  ExprTyper(Diagnostics& diags, std::unordered_map<uint32_t, Type>& types) : diags_(diags), types_(types) {}
  virtual ~ExprTyper() = default;

  // Types `e` and records the type under e.id.
  Type check(const ast::Expr& e);

 protected:
  virtual Type name(const ast::Expr& e) = 0;
  virtual Type index(const ast::Expr& e) = 0;
  virtual Type reduce(const ast::Expr& e) = 0;
  virtual Type call_other(const ast::Expr& e);  // a call that is not a built-in function
  virtual Type tuple(const ast::Expr& e);
  virtual const CheckedMonoid* monoid_of(const Type&) const { return nullptr; }
  virtual Size resolve_dim(const Type& record, const ast::Dim& d) const;
  Type field(const ast::Expr& e);
  Type unary(const ast::Expr& e);
  Type binary(const ast::Expr& e);
  Type call(const ast::Expr& e);
  // "select one of its fields with '.': m, d, o" for a monoid carrier.
  std::string fields_hint(const Type& record) const;
  // A scalar (not a tuple, record or vector) is needed here.
  bool require_value(const ast::Expr& e, const Type& t, const char* where);

  Diagnostics& diags_;
  std::unordered_map<uint32_t, Type>& types_;

 private:
  // Integer literal arithmetic (`2 * 3`, `-(1 << 62)` written out): its value, by expr id, so an
  // operation on two constants that overflows i64 (or divides by zero) is reported here, not
  // emitted as undefined CUDA.
  void fold_int(const ast::Expr& e);
  std::unordered_map<uint32_t, int64_t> int_constants_;
};

}  // namespace emmy::sema
