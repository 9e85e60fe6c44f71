// Reverse-mode derivatives of ops (`op f_bwd = grad(f, x);`, docs/language.md "Derived ops"): the
// internal interface between derive_grads.cpp and the passes it runs, each in its own file:
//   grad_flatten.cpp   the forward op as straight-line statements (calls inlined, bare names
//                      indexed, each reduction the whole value of a statement of its own)
//   grad_invariant.cpp which reductions the outputs do not depend on (o(s + c) = o(s) for a max)
//   grad_reverse.cpp   the adjoint statements, from the rules of grad_rules.cpp
//   grad_monoid.cpp    a user monoid's combine as expressions, and its adjoints
//   grad_expr.cpp      expression builders that simplify as they build, and the source printer
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "sema/sema.hpp"

namespace emmy::sema::grad {

// ---- expressions (grad_expr.cpp) -------------------------------------------------------
// Builders of unlocated expressions (the derived op is printed as source and parsed again, so
// its ranges and ids come from that text). The arithmetic ones fold 0, 1 and double negation.
ast::Expr num(double v);   // an integer literal where v is whole (it adapts to the other operand)
ast::Expr real(double v);  // a float literal always: 1.0
ast::Expr name(std::string n);
ast::Expr read(const std::string& tensor, const std::vector<std::string>& vars);
ast::Expr read_at(const std::string& tensor, std::vector<ast::Expr> indices);
ast::Expr call(std::string fn, std::vector<ast::Expr> args);
ast::Expr compare(std::string op, ast::Expr a, ast::Expr b);
ast::Expr all_of(std::vector<ast::Expr> conditions);  // a && b && ...; `true` for none
ast::Expr reduce(std::string monoid, std::vector<std::string> axes, std::optional<ast::Expr> where, ast::Expr body);
ast::Expr add(ast::Expr a, ast::Expr b);
ast::Expr sub(ast::Expr a, ast::Expr b);
ast::Expr mul(ast::Expr a, ast::Expr b);
ast::Expr div(ast::Expr a, ast::Expr b);
ast::Expr neg(ast::Expr a);
bool is_number(const ast::Expr& e, double v);
// Every Name in `renames` replaced, and reduction axes, but not the tensor a read names.
ast::Expr rename(const ast::Expr& e, const std::map<std::string, std::string>& renames);
// Rewrites `e` bottom-up where `f` has a replacement for a node (the node's operands are not
// visited then).
ast::Expr rewrite(const ast::Expr& e, const std::function<std::optional<ast::Expr>(const ast::Expr&)>& f);
// Every Name `var` replaced by `value` (reduction axes are fresh, so none captures it; an index
// variable never has a tensor's name).
ast::Expr substitute(const ast::Expr& e, const std::string& var, const ast::Expr& value);
// Whether `v` is a plain index of some tensor read in `e` (sema can size it there).
bool indexes(const ast::Expr& e, const std::string& v);
// The names an expression mentions (Names, reduction axes and the bases of reads).
void names_in(const ast::Expr& e, std::set<std::string>& out);
// .emmy source of an expression, parenthesized only where precedence needs it.
std::string source(const ast::Expr& e);

// ---- the forward op, flattened (grad_flatten.cpp) ----------------------------------------
struct Tensor {
  std::string name;
  bool differentiable = false;  // a float value (not an integer, a bool or a monoid carrier)
  std::string carrier;          // a monoid carrier's monoid (derivatives through one: not yet)
  size_t rank = 0;
  std::vector<std::string> vars;  // a statement's index variables; an input's chosen by flatten
  std::string declared;           // its type as a parameter declares it: "f16[B, H, S, D]" ("": a carrier)
};

struct Line {
  bool is_let = false;
  std::string name;
  std::vector<std::string> vars;             // the statement's index variables, plain names
  ast::Expr value;                           // pointwise, or one reduction whose operands are pointwise
  std::map<std::string, std::string> sizes;  // of its variables and its reduction's axes (source)
};

struct Straight {
  std::vector<Line> lines;
  std::map<std::string, Tensor> tensors;  // inputs and every tensor a line defines
  std::vector<std::string> inputs, outputs;
  std::set<std::string> names;  // every name in use (tensors, lets, sizes, variables)
};

// A construct with no derivative rule (or a derivation that cannot be expressed), at its place.
struct Failure {
  SourceRange at;
  std::string message;
  std::string hint;
};

// The checked op of a name (the forward op's callees), or nullptr.
using CheckedLookup = std::function<const CheckedOp*(const std::string&)>;

Straight flatten(const CheckedOp& op, const CheckedLookup& callees);

// ---- invariance (grad_invariant.cpp) ----------------------------------------------------
// Whether every output of `f` is unchanged when the tensor line `candidate` defines is shifted
// by a constant (t -> t + c): then no output depends on t, and its adjoint is zero.
bool outputs_shift_invariant(const Straight& f, const std::string& candidate);

// ---- user monoids (grad_monoid.cpp) -------------------------------------------------------
// A carrier's fields as expressions, by name; a vector field's as its element at the variable
// VectorVars names for it (o -> e: a.o[e]).
using Fields = std::map<std::string, ast::Expr>;
using VectorVars = std::map<std::string, std::string>;
// Why reverse mode cannot go through the monoid's combine yet, or nullopt.
std::optional<std::string> combine_unsupported(const ast::MonoidDecl& m);
// An element's fields: lift(args), or the arguments themselves for a monoid without a lift (a
// vector field's slice `v[j, :]` taken at its variable: v[j, e]).
Fields lift_at(const ast::MonoidDecl& m, const std::vector<ast::Expr>& args, const VectorVars& vv);
// combine(a, b), field by field.
Fields combine_at(const ast::MonoidDecl& m, const Fields& a, const Fields& b, const VectorVars& vv);
// Reverse mode through combine(a, b): given the adjoints of its result's fields (`seeds`), those of
// a's fields and of b's (fields no adjoint reaches are absent); what a scalar field receives from
// a vector field's elements is summed over them.
std::variant<std::pair<Fields, Fields>, Failure> combine_adjoints(const ast::MonoidDecl& m, const Fields& a,
                                                                  const Fields& b, const Fields& seeds,
                                                                  const VectorVars& vv);

// ---- the derivative (grad_reverse.cpp) ----------------------------------------------------
struct Request {
  std::string name;                                       // the derived op's
  std::vector<std::string> wrt;                           // inputs of the forward op, float
  std::string of;                                         // the forward op's name, for the doc comment
  std::vector<std::string> saved;                         // tensors of the flat op taken as inputs, not recomputed
  std::map<std::string, const ast::MonoidDecl*> monoids;  // the user monoids in scope
};

// The derived op's source text: `op NAME(inputs, saved, d<outputs>) -> (d<wrt>) { ... }`.
std::variant<std::string, Failure> derive(const Straight& f, const Request& request);

// The adjoint's name of a tensor: "d" + name, "d_" + name where that is taken, then numbered.
std::string adjoint_name(const std::string& tensor, const std::set<std::string>& taken);

}  // namespace emmy::sema::grad
