// The tensor IR verifier: one walk of each statement's value with the index variables in scope.
#include "ir/verify_tensor.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

namespace emmy::tir {
namespace {

bool literal(const std::string& size) {
  return !size.empty() && std::all_of(size.begin(), size.end(), [](unsigned char c) { return std::isdigit(c); });
}

struct Checker {
  const Program& program;
  std::set<std::string> sizes;
  std::set<std::string> written;  // intermediates and outputs written so far
  std::vector<std::string> problems;
  std::string where;  // the statement, for messages

  void fail(const std::string& what) { problems.push_back(fmt::format("{}: `{}`: {}", program.op, where, what)); }

  void size(const std::string& s) {
    if (!literal(s) && !sizes.count(s)) fail(fmt::format("size '{}' is not one of the op's", s));
  }

  void arity(const Expr& e, size_t want) {
    if (e.args.size() != want) fail(fmt::format("'{}' has {} operands, not {}", print_expr(e), e.args.size(), want));
  }

  // `scope`: the index variables bound here (the statement's and enclosing reductions').
  void expr(const Expr& e, std::vector<std::string>& scope) {
    switch (e.kind) {
      case Expr::Kind::Const:
      case Expr::Kind::Slice: break;
      case Expr::Kind::Size: size(e.name); break;
      case Expr::Kind::Index:
        if (std::find(scope.begin(), scope.end(), e.name) == scope.end())
          fail(fmt::format("index variable '{}' is not bound here", e.name));
        break;
      case Expr::Kind::Read: {
        const Tensor* t = program.find(e.name);
        if (!t) {
          fail(fmt::format("reads '{}', which is no tensor of the op", e.name));
        } else {
          if (e.args.size() != t->dims.size())
            fail(fmt::format("reads '{}' with {} indices; it has rank {}", e.name, e.args.size(), t->dims.size()));
          if (t->role == Tensor::Role::Intermediate && !written.count(e.name))
            fail(fmt::format("reads intermediate '{}' before a statement writes it", e.name));
        }
        break;
      }
      case Expr::Kind::Unary: arity(e, 1); break;
      case Expr::Kind::Binary: arity(e, 2); break;
      case Expr::Kind::Reg:
        fail(fmt::format("register '{}' in the tensor IR (registers are the loop IR's)", e.name));
        break;
      case Expr::Kind::Field:
        if (e.args.empty() || e.args.size() > 2) arity(e, 1);
        break;
      case Expr::Kind::Call: break;
      case Expr::Kind::Reduce: {
        if (e.axes.empty()) fail("a reduction over no axis");
        if (e.where.size() > 1) fail(fmt::format("a reduction with {} predicates", e.where.size()));
        for (const Axis& a : e.axes) size(a.size);
        const size_t outer = scope.size();
        for (const Axis& a : e.axes) scope.push_back(a.name);
        for (const Expr& w : e.where) expr(w, scope);
        for (const Expr& a : e.args) expr(a, scope);
        scope.resize(outer);
        return;
      }
    }
    for (const Expr& a : e.args) expr(a, scope);
    for (const Expr& w : e.where) expr(w, scope);
  }

  void stmt(const Stmt& s) {
    where = s.name;
    const Tensor* t = program.find(s.name);
    if (!t) {
      fail("writes a tensor the op does not declare");
    } else {
      if (t->role == Tensor::Role::Input) fail("writes an input");
      if (s.vars.size() != t->dims.size())
        fail(fmt::format("writes with {} index variables; the tensor has rank {}", s.vars.size(), t->dims.size()));
    }
    std::vector<std::string> scope;
    for (const Axis& v : s.vars) {
      if (std::find(scope.begin(), scope.end(), v.name) != scope.end())
        fail(fmt::format("index variable '{}' twice", v.name));
      scope.push_back(v.name);
      size(v.size);
    }
    expr(s.value, scope);
    written.insert(s.name);
  }
};

}  // namespace

std::vector<std::string> verify_program(const Program& program) {
  Checker c{program, {program.sizes.begin(), program.sizes.end()}, {}, {}, ""};
  std::set<std::string> names;
  for (const Tensor& t : program.tensors) {
    c.where = t.name;
    if (!names.insert(t.name).second) c.fail("declared twice");
    for (const std::string& d : t.dims) c.size(d);
  }
  for (const Stmt& s : program.stmts) c.stmt(s);
  return c.problems;
}

}  // namespace emmy::tir
