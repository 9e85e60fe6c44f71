// The loop IR verifier: one walk of each kernel's loop nest with the index variables in scope.
#include "ir/verify_loop.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ir/verify_tensor.hpp"

namespace emmy::lir {
namespace {

using tir::Expr;

const char* kind_name(Stmt::Kind k) {
  switch (k) {
    case Stmt::Kind::Loop: return "loop";
    case Stmt::Kind::Compute: return "compute";
    case Stmt::Kind::Store: return "store";
    case Stmt::Kind::Fold: return "fold";
  }
  return "?";
}

struct Checker {
  const Program& program;
  std::vector<std::string> problems;
  std::string kernel;
  std::vector<std::string> scope;  // index variables bound here

  void fail(const Stmt& s, const std::string& what) {
    const std::string& name = !s.reg.empty() ? s.reg : !s.tensor.empty() ? s.tensor : s.axis.name;
    problems.push_back(fmt::format("{}: `{} {}`: {}", kernel, kind_name(s.kind), name, what));
  }

  bool bound(const std::string& name) const { return std::find(scope.begin(), scope.end(), name) != scope.end(); }

  void expr(const Stmt& s, const Expr& e) {
    if (e.kind == Expr::Kind::Index && !bound(e.name))
      fail(s, fmt::format("index variable '{}' is not bound here", e.name));
    if (e.kind == Expr::Kind::Read && !program.tensors.find(e.name))
      fail(s, fmt::format("reads '{}', which is no tensor of the op", e.name));
    const size_t outer = scope.size();
    if (e.kind == Expr::Kind::Reduce)
      for (const tir::Axis& a : e.axes) scope.push_back(a.name);
    for (const Expr& a : e.args) expr(s, a);
    for (const Expr& w : e.where) expr(s, w);
    scope.resize(outer);
  }

  void store(const Stmt& s) {
    const tir::Tensor* t = program.tensors.find(s.tensor);
    if (!t) return fail(s, "stores to a tensor the op does not declare");
    if (t->role == tir::Tensor::Role::Input) fail(s, "stores to an input");
    if (t->role == tir::Tensor::Role::Intermediate &&
        std::find(program.materialized.begin(), program.materialized.end(), s.tensor) == program.materialized.end())
      fail(s, "stores to an intermediate that is not materialized");
    if (s.vars.size() != t->dims.size())
      fail(s, fmt::format("stores with {} index variables; the tensor has rank {}", s.vars.size(), t->dims.size()));
    static const std::set<std::string> kAtomics = {"", "sum", "max", "min"};
    if (!kAtomics.count(s.atomic)) fail(s, fmt::format("no atomic combines with '{}'", s.atomic));
    expr(s, s.value);
  }

  void fold(const Stmt& s) {
    if (s.monoid.empty()) fail(s, "a fold without a monoid");
    if (s.fields.empty()) fail(s, "a fold without carrier fields");
    if (s.where.size() > 1) fail(s, fmt::format("a fold with {} predicates", s.where.size()));
    if (!s.range.empty() && s.range.size() != 2) fail(s, fmt::format("a fold range of {} bounds", s.range.size()));
    for (const Expr& r : s.range) expr(s, r);
    scope.push_back(s.axis.name);
    for (const CarrierField& f : s.fields) expr(s, f.lift);
    for (const Expr& w : s.where) expr(s, w);
    scope.pop_back();
    for (const Stmt& r : s.results) {
      if (r.kind != Stmt::Kind::Compute) fail(r, "a fold's result that is not a compute");
      stmt(r);
    }
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::Loop: {
        if (s.tile < 1) fail(s, fmt::format("a tile of {}", s.tile));
        scope.push_back(s.axis.name);
        for (const Stmt& b : s.body) stmt(b);
        scope.pop_back();
        break;
      }
      case Stmt::Kind::Compute:
        if (s.reg.empty()) fail(s, "a compute without a register");
        expr(s, s.value);
        break;
      case Stmt::Kind::Store: store(s); break;
      case Stmt::Kind::Fold: fold(s); break;
    }
  }
};

}  // namespace

std::vector<std::string> verify_program(const Program& program) {
  Checker c{program, tir::verify_program(program.tensors), "", {}};
  std::set<std::string> names;
  for (const Kernel& k : program.kernels) {
    c.kernel = k.name;
    if (!names.insert(k.name).second)  // "" is the main kernel's (named after the op)
      c.problems.push_back(fmt::format("{}: two kernels of this name", k.name.empty() ? "(the main kernel)" : k.name));
    c.scope.clear();
    for (const tir::Axis& t : k.threads) c.scope.push_back(t.name);
    for (const Stmt& s : k.body) c.stmt(s);
  }
  return c.problems;
}

}  // namespace emmy::lir
